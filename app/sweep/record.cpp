#include "app/sweep/record.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace tpusim::sweep {

std::string record_key(std::string_view hash, std::string_view workload, std::string_view mode) {
  return fmt::format("{}\t{}\t{}", hash, workload, mode);
}

std::string record_key(const Record& r) {
  auto s = [&](const char* k) { return r.contains(k) && r[k].is_string() ? r[k].get<std::string>() : ""; };
  return record_key(s("config_hash"), s("workload"), s("mode"));
}

Record in_field_order(const Record& r) {
  static constexpr const char* kOrder[] = {"sweep",  "point",      "workload",   "mode",        "params",
                                           "values", "config_hash", "status",     "metrics",     "time_s",
                                           "area_proxy", "power_proxy", "error",  "wall_s"};
  Record out = Record::object();
  for (const char* k : kOrder) {
    if (r.contains(k)) out[k] = r[k];
  }
  for (const auto& [k, v] : r.items()) {
    if (!out.contains(k)) out[k] = v;
  }
  return out;
}

const nlohmann::json* find_path(const nlohmann::json& j, std::string_view path) {
  const nlohmann::json* cur = &j;
  std::string_view rest = path;
  while (!rest.empty()) {
    if (!cur->is_object()) return nullptr;
    // Longest prefix of `rest` (ending at a dot or the end) that is a key.
    const nlohmann::json* next = nullptr;
    std::size_t used = 0;
    for (std::size_t end = rest.size();; end = rest.rfind('.', end - 1)) {
      if (end == std::string_view::npos || end == 0) break;
      auto it = cur->find(std::string(rest.substr(0, end)));
      if (it != cur->end()) {
        next = &*it;
        used = end;
        break;
      }
    }
    if (next == nullptr) return nullptr;
    cur = next;
    rest = used < rest.size() ? rest.substr(used + 1) : std::string_view{};
  }
  if (cur->is_object() && cur->contains("value")) return &(*cur)["value"];
  return cur;
}

Result<ReadRecords> read_records(const std::vector<std::string>& paths) {
  ReadRecords out;
  for (const auto& path : paths) {
    std::ifstream in(path);
    if (!in) return Diagnostic{path, 0, 0, "cannot open results file", ""};
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty()) continue;
      try {
        Record r = Record::parse(line);
        if (!r.is_object()) throw std::runtime_error("not an object");
        out.records.push_back(std::move(r));
      } catch (const std::exception&) {
        // getline hit the end without a newline: the last write is unfinished.
        const bool unfinished = in.eof();
        out.skipped.push_back(Diagnostic{path, n, 1,
                                         unfinished ? "not a complete JSON record (an unfinished last line; skipped)"
                                                    : "corrupt line: not a JSON record (skipped)",
                                         ""});
        if (!unfinished) ++out.corrupt;
      }
    }
  }
  return out;
}

bool repair_jsonl_tail(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return true;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot open", path);
    return false;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty() || text.back() == '\n') return true;
  const std::size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  std::filesystem::resize_file(path, keep, ec);
  if (ec) {
    error = fmt::format("{}: cannot truncate the partial last line: {}", path, ec.message());
    return false;
  }
  return true;
}

}  // namespace tpusim::sweep
