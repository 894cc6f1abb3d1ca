// `tpusim validate systolic FILE.csv`: each row is one GEMM A[M,K]·B[K,N] on a
// bare rows×cols array (SCALE-Sim's compute model: no weight double-buffering,
// no memory stalls). The row is compiled into mxu.load_weights / mxu.matmul
// instructions, one pair per fold, and run through the SystemC Mxu unit — the
// same code path `tpusim run` uses — in its own process.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "common/config.h"
#include "common/diagnostic.h"
#include "isa/program.h"

namespace tpusim {

struct SystolicCase {
  std::int64_t m = 0, k = 0, n = 0, rows = 0, cols = 0;
  std::string dataflow;  // ws | os | is
};

// The chip a row runs on: the v5e preset reduced to one bare rows×cols MXU.
Result<ChipConfig> systolic_chip(const SystolicCase& c);
// One fold per (row fold, column fold) of the dataflow's mapping.
isa::Program systolic_program(const SystolicCase& c);
// Simulated compute cycles in SCALE-Sim's convention ("Total Cycles" = index
// of the last cycle); runs the simulation in a child process.
Result<double> simulate_systolic(const SystolicCase& c);

// Evaluates every row; returns 0 all within tolerance, 1 a row outside, 2 bad input.
int validate_systolic_csv(const std::string& path, double tolerance, bool json, std::ostream& out, std::ostream& err);

}  // namespace tpusim
