// Convolutions as the compiler sees them: the GEMM a convolution is on the
// MXU (implicit GEMM per feature group), and whether it is depthwise (one
// input feature per group: no contraction over features to feed the MXU,
// so it runs on the VPU). Read from dim_labels, so any layout (b01f, bf01,
// ...) gives the same figures. docs/lowering.md, "Convolutions".
#pragma once

#include <cstdint>

#include "isa/hlo/ir.h"

namespace tpusim::lower {

// A convolution as `groups` independent GEMMs [m, k] x [k, n]: m = batch x
// output spatial, k = window x input features per group, n = output
// features per group.
struct ConvGemm {
  std::int64_t groups = 1, m = 1, k = 1, n = 1;
  std::int64_t window = 1;  // kernel spatial elements
};
ConvGemm conv_gemm(const hlo::Instruction& conv);

// One input feature per group and more than one group: XLA's depthwise
// convolution (feature_group_count = input features).
bool is_depthwise(const hlo::Instruction& conv);

}  // namespace tpusim::lower
