#include "isa/stablehlo/stablehlo.h"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "isa/stablehlo/convert.h"

namespace tpusim::stablehlo {
namespace {

// Moves a diagnostic on the generated HLO text to the MLIR token that line came from.
Diagnostic to_mlir(Diagnostic d, const HloText& hlo, std::string_view mlir, const std::string& file) {
  const auto line = static_cast<std::size_t>(d.line > 0 ? d.line - 1 : 0);
  if (line >= hlo.origin.size() || hlo.origin[line].line == 0) {
    d.file = file;
    return d;
  }
  const Token& t = hlo.origin[line];
  const std::string hlo_line(line_of(hlo.text, d.line));
  return {file, static_cast<int>(t.line), static_cast<int>(t.column),
          fmt::format("{} (in the HLO converted from this op: '{}')", d.message, hlo_line.substr(hlo_line.find_first_not_of(' '))),
          std::string(line_of(mlir, static_cast<int>(t.line)))};
}

}  // namespace

bool looks_like_mlir(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
    } else if (text.substr(i, 2) == "//" || text.substr(i, 4) == "#loc") {
      i = text.find('\n', i);
      if (i == std::string_view::npos) return false;
    } else {
      break;
    }
  }
  const std::string_view rest = text.substr(std::min(i, text.size()));
  if (rest.starts_with("module") || rest.starts_with("func.func")) return true;
  return text.find("stablehlo.") != std::string_view::npos && !rest.starts_with("HloModule");
}

Result<std::string> stablehlo_to_hlo_text(std::string_view text, const std::string& file) {
  auto module = parse_mlir(text, file);
  if (!module.ok()) return module.errors();
  auto hlo = convert_to_hlo(*module, text, file);
  if (!hlo.ok()) return hlo.errors();
  return std::move(hlo->text);
}

hlo::ParsedFile parse_stablehlo(std::string text, std::string file, const hlo::ParseOptions& options,
                                std::string* notes) {
  hlo::ParsedFile failed;
  auto module = parse_mlir(text, file);
  if (!module.ok()) {
    failed.modules.emplace_back(module.errors());
    return failed;
  }
  auto converted = convert_to_hlo(*module, text, file);
  if (!converted.ok()) {
    failed.modules.emplace_back(converted.errors());
    return failed;
  }
  if (notes != nullptr) {
    if (text.find("mhlo.sharding") != std::string::npos && converted->notes.empty() && !converted->partitioned) {
      converted->notes.push_back("parameters carry mhlo.sharding but the module has no collectives: a single-device "
                                 "program, simulated on one chip");
    }
    for (const auto& n : converted->notes) *notes += fmt::format("{}: note: {}\n", file, n);
  }
  hlo::ParsedFile parsed = hlo::parse_hlo(converted->text, file + " (converted to HLO)", options);
  for (auto& m : parsed.modules) {
    if (m.ok()) continue;
    std::vector<Diagnostic> mapped;
    for (auto& d : m.errors()) mapped.push_back(to_mlir(d, *converted, text, file));
    m = std::move(mapped);
  }
  return parsed;
}

hlo::ParsedFile parse_model_file(const std::string& path, const hlo::ParseOptions& options, std::string* notes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    hlo::ParsedFile failed;
    failed.modules.emplace_back(Diagnostic{path, 0, 0, "cannot open file", ""});
    return failed;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (path.ends_with(".mlir") || looks_like_mlir(text)) return parse_stablehlo(std::move(text), path, options, notes);
  return hlo::parse_hlo(std::move(text), path, options);
}

}  // namespace tpusim::stablehlo
