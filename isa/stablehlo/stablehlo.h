// StableHLO (MLIR text) in: detect it, convert it to HLO text (convert.h)
// and parse that with isa/hlo, so shapes, costs and verification stay in
// one place. Diagnostics of the HLO parser point back at the .mlir file.
#pragma once

#include <string>
#include <string_view>

#include "isa/hlo/parser.h"

namespace tpusim::stablehlo {

// MLIR text: the first token (after comments and `#loc` lines) is `module`
// or `func.func`, or the text holds `stablehlo.` ops.
bool looks_like_mlir(std::string_view text);

// The HLO text of a StableHLO module, or the first error (file:line:col).
Result<std::string> stablehlo_to_hlo_text(std::string_view text, const std::string& file);

// Converts and parses. Errors are located in the .mlir text. `notes` gets
// what the conversion decided ("file: note: ..." lines), e.g. that a module
// with shardings but no collectives is a single-device program.
hlo::ParsedFile parse_stablehlo(std::string text, std::string file, const hlo::ParseOptions& options = {},
                                std::string* notes = nullptr);

// HLO or StableHLO by content; an unreadable file is one error entry.
hlo::ParsedFile parse_model_file(const std::string& path, const hlo::ParseOptions& options = {},
                                 std::string* notes = nullptr);

}  // namespace tpusim::stablehlo
