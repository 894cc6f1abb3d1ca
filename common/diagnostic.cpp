#include "common/diagnostic.h"

#include <fmt/format.h>

namespace tpusim {

std::string Diagnostic::format() const {
  std::string out;
  if (line > 0 && column > 0) {
    out = fmt::format("{}:{}:{}: error: {}", file, line, column, message);
  } else if (line > 0) {
    out = fmt::format("{}:{}: error: {}", file, line, message);
  } else {
    out = fmt::format("{}: error: {}", file, message);
  }
  if (!source_line.empty()) {
    out += "\n  " + source_line + "\n  ";
    // Keep tabs so the caret lines up under the offending column.
    for (int i = 1; i < column && i <= static_cast<int>(source_line.size()); ++i) {
      out += source_line[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
    }
    out += '^';
  }
  return out;
}

std::string format_all(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    out += d.format();
    out += '\n';
  }
  return out;
}

std::string_view line_of(std::string_view text, int line) {
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = text.find('\n', start);
  if (end == std::string_view::npos) end = text.size();
  std::string_view s = text.substr(start, end - start);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

}  // namespace tpusim
