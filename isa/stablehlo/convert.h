// StableHLO op tree (mlir.h) -> HLO text, as XLA's StableHLO-to-HLO
// conversion writes it (same opcodes and shapes; default layouts). The main
// function becomes ENTRY, other functions and op regions become
// computations. Each HLO line records the MLIR token it came from, so the
// HLO parser's diagnostics can point at the .mlir file.
#pragma once

#include <string>
#include <vector>

#include "isa/stablehlo/mlir.h"

namespace tpusim::stablehlo {

struct HloText {
  std::string text;
  std::vector<Token> origin;  // per HLO line (0-based): the MLIR token it came from
  std::vector<std::string> notes;  // what the conversion decided (e.g. shardings without collectives)
  // A partitioned program (collectives, or device counts printed from HLO):
  // it keeps its device counts.
  bool partitioned = false;
};

Result<HloText> convert_to_hlo(const MlirModule& module, std::string_view source, const std::string& file);
// Every module of a file, one HLO module after another.
Result<HloText> convert_to_hlo(const std::vector<MlirModule>& modules, std::string_view source, const std::string& file);

}  // namespace tpusim::stablehlo
