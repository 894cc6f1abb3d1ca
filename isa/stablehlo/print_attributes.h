// The printer's side of spec_attributes.h: an HLO instruction's attributes
// written as the StableHLO specification's attributes, in the generic form
// JAX prints (`edge_padding_low = array<i64: 0, 1>`, `dimension_numbers =
// #stablehlo.gather<...>`, `replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>`,
// ...). The reader (spec_attributes.h, convert.cpp) takes each of them back.
#pragma once

#include <string>
#include <vector>

#include "isa/hlo/ir.h"

namespace tpusim::stablehlo {

struct SpecAttributes {
  std::vector<std::string> attrs;   // "name = value" entries of the op's attribute dictionary
  std::vector<std::string> covers;  // the HLO attribute names they stand for (not printed as `hlo.*`)
};

// pad, dynamic-slice, gather, scatter, sort, convolution, reduce-window,
// select-and-scatter, the collectives (all-reduce, all-gather,
// reduce-scatter, all-to-all, collective-permute, collective-broadcast),
// reduce-precision, batch-norm-*, cholesky, triangular-solve, fft, the
// operand precisions of dot and convolution, a custom call's api_version,
// rng-bit-generator's algorithm; nothing
// for other ops. A value the specification cannot say (replica groups in
// mesh form) is left uncovered.
SpecAttributes print_spec_attributes(const hlo::Instruction& inst, const hlo::Module& module);

}  // namespace tpusim::stablehlo
