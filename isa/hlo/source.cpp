#include "isa/hlo/source.h"

#include <algorithm>

namespace tpusim::hlo {

Diagnostic make_diagnostic(std::string_view file, std::string_view text, std::uint32_t offset,
                           std::string message) {
  if (offset > text.size()) offset = static_cast<std::uint32_t>(text.size());
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::size_t line_end = text.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = text.size();
  std::string_view src = text.substr(line_start, line_end - line_start);
  if (!src.empty() && src.back() == '\r') src.remove_suffix(1);
  // Very long lines (one-line modules, huge constants) are cut so the
  // diagnostic stays readable; the caret column stays exact.
  constexpr std::size_t kMaxLine = 400;
  Diagnostic d;
  d.file = std::string(file);
  d.line = line;
  d.column = static_cast<int>(offset - line_start) + 1;
  d.message = std::move(message);
  d.source_line = std::string(src.substr(0, std::max(kMaxLine, offset - line_start + 40)));
  return d;
}

}  // namespace tpusim::hlo
