#include "common/csv.h"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "common/units.h"

namespace tpusim {

int CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::vector<Diagnostic> CsvTable::require(const std::vector<std::string>& names) const {
  std::vector<std::string> missing;
  for (const auto& n : names) {
    if (column(n) < 0) missing.push_back(n);
  }
  if (missing.empty()) return {};
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  std::string expected;
  for (const auto& n : names) expected += (expected.empty() ? "" : ",") + n;
  return {Diagnostic{file, 1, 1, fmt::format("missing column(s) {}; expected a header with {}", list, expected), ""}};
}

const std::string& CsvTable::text(const CsvRecord& r, std::string_view name) const {
  static const std::string kEmpty;
  const int c = column(name);
  if (c < 0 || static_cast<size_t>(c) >= r.fields.size()) return kEmpty;
  return r.fields[static_cast<size_t>(c)];
}

Diagnostic CsvTable::error_at(const CsvRecord& r, std::string_view name, std::string message) const {
  const int c = column(name);
  const int col = c >= 0 && static_cast<size_t>(c) < r.columns.size() ? r.columns[static_cast<size_t>(c)] : 1;
  return Diagnostic{file, r.line, col, std::move(message), ""};
}

Result<double> CsvTable::number(const CsvRecord& r, std::string_view name) const {
  const int c = column(name);
  double v = 0;
  if (c < 0 || static_cast<size_t>(c) >= r.fields.size() || !parse_number(r.fields[static_cast<size_t>(c)], v)) {
    return error_at(r, name, fmt::format("column '{}' must be a number, got '{}'", name, text(r, name)));
  }
  return v;
}

Result<CsvTable> parse_csv(std::string_view text, std::string_view file_name) {
  CsvTable t;
  t.file = file_name;
  std::vector<Diagnostic> errors;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') {
      if (nl == text.size()) break;
      continue;
    }
    CsvRecord rec;
    rec.line = line_no;
    std::string field;
    bool quoted = false;
    int field_col = 1;
    bool bad = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char ch = line[i];
      if (quoted) {
        if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else if (ch == '"') {
          quoted = false;
        } else {
          field += ch;
        }
      } else if (ch == '"' && field.empty()) {
        quoted = true;
      } else if (ch == ',') {
        rec.fields.push_back(field);
        rec.columns.push_back(field_col);
        field.clear();
        field_col = static_cast<int>(i) + 2;
      } else {
        field += ch;
      }
    }
    if (quoted) {
      errors.push_back(Diagnostic{t.file, line_no, field_col, "unterminated quoted field", std::string(line)});
      bad = true;
    }
    rec.fields.push_back(field);
    rec.columns.push_back(field_col);
    for (auto& f : rec.fields) {
      while (!f.empty() && f.front() == ' ') f.erase(f.begin());
      while (!f.empty() && f.back() == ' ') f.pop_back();
    }
    if (!bad) {
      if (t.header.empty()) {
        t.header = rec.fields;
      } else if (rec.fields.size() != t.header.size()) {
        errors.push_back(Diagnostic{t.file, line_no, 1,
                                    fmt::format("expected {} fields (as in the header), got {}", t.header.size(),
                                                rec.fields.size()),
                                    std::string(line)});
      } else {
        t.records.push_back(std::move(rec));
      }
    }
    if (nl == text.size()) break;
  }
  if (t.header.empty()) errors.push_back(Diagnostic{t.file, 0, 0, "empty file: expected a header row", ""});
  if (!errors.empty()) return errors;
  return t;
}

Result<CsvTable> read_csv_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Diagnostic{path, 0, 0, "cannot open file", ""};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_csv(ss.str(), path);
}

bool parse_tolerance(std::string_view text, double& out) {
  std::string s(text);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  bool percent = false;
  if (!s.empty() && s.back() == '%') {
    percent = true;
    s.pop_back();
  }
  double v = 0;
  if (!parse_number(s, v) || v < 0) return false;
  out = percent ? v / 100 : v;
  return true;
}

}  // namespace tpusim
