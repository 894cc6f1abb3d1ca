// HLO module (isa/hlo IR) -> StableHLO MLIR text in MLIR's generic op
// syntax, following what XLA's HLO-to-MHLO importer writes: ops with a
// StableHLO equivalent print as `stablehlo.*` with the specification's
// attribute names, the rest as `mhlo.*` (fusion with its region and
// fusion_kind, copy, bitcast, async pairs, ...); shardings as
// `mhlo.sharding`, non-default layouts as `xla_shape`, custom-call and
// other backend configs as `backend_config`, HLO attributes without an
// MLIR form as `hlo.<name> = "<HLO text>"`. The reader (convert.h) takes all
// of it back, so HLO -> StableHLO -> HLO keeps the cost.
#pragma once

#include <string>

#include "isa/hlo/ir.h"

namespace tpusim::stablehlo {

std::string print_stablehlo(const hlo::Module& module);

}  // namespace tpusim::stablehlo
