// The simulated system (DESIGN.md: System > Chip[N] > TensorCore), built in
// one place from the config: the chips with their cores and HBM, and for a
// multi-chip system the collective fabric over the topology's network. A
// single-chip run is a one-chip system without a network (its collectives
// take the placeholder cost of instruction_cost()).
//
// Full mode simulates every chip; symmetric mode chip 0 alone, each
// collective timed with all chips issuing it at once (sim/spmd.h).
// SystemC elaborates once per process (DESIGN.md principle 7): one
// run_system() per process.
#pragma once

#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "isa/program.h"
#include "sim/spmd.h"

namespace tpusim {

// programs[chip][core]: one chip entry (every chip runs it) or one per chip
// (full mode); one core entry (core 0 runs, the others idle) or one per
// TensorCore (megacore). `network`: the chips talk through the collective
// fabric on the network of chip.system (options.mode and .algorithm apply);
// false: one chip alone (one chip entry).
Result<SpmdResult> run_system(const ChipConfig& chip, std::vector<std::vector<isa::Program>> programs,
                              const SpmdOptions& options, bool network);

}  // namespace tpusim
