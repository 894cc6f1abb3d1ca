// VPU (vector unit) timing: pure functions of VpuConfig. The VPU works on
// vector registers of sublanes × lanes 32-bit elements; every (sublane,
// lane) has alus_per_lane ALUs, so it completes alus_per_lane whole-vreg
// operations per cycle. Narrower dtypes pack along the sublanes (bf16: two
// values per 32-bit element, the TPU (16,128) bf16 tile).
#pragma once

#include <cstdint>

#include "common/config.h"
#include "isa/types.h"
#include "sim/timing/unit_timing.h"

namespace tpusim {

// Vector registers a rows × cols tile of `dtype` occupies:
// ceil(rows / (sublanes · 32/bits)) · ceil(cols / lanes).
std::int64_t vregs_for_tile(const VpuConfig& vpu, std::int64_t rows, std::int64_t cols,
                            isa::DType dtype);

struct VpuElementwise {
  std::int64_t vregs = 0;          // result vregs
  isa::VpuOp op = isa::VpuOp::kAdd;
  int vmem_inputs = 0;             // operands loaded from VMEM (per result vreg)
  int vmem_outputs = 1;            // results stored to VMEM (per result vreg)
};

// issue = max(ceil(vregs / alus_per_lane),                 // ALU throughput
//             ceil(vregs · vmem_inputs / vreg_loads_per_cycle),
//             ceil(vregs · vmem_outputs / vreg_stores_per_cycle));
// done = issue - 1 + latency of the op's class.
OpTiming vpu_elementwise_timing(const VpuConfig& vpu, const VpuElementwise& op);

// Reduction of a rows × cols tile along rows (sublanes and vregs) to one row:
// per column group of `lanes`, (r - 1) vreg combines for its r vregs plus
// log2(sublanes) rotate-and-combine steps inside the last vreg.
// issue = ceil(total combines / alus_per_lane) + loads of the r vregs
// (ceil(vregs / vreg_loads_per_cycle)) when the input is in VMEM;
// done = max(issue, depth · alu latency) with depth = ceil(log2 r) + log2(sublanes):
// the tree is either throughput- or dependency-bound.
OpTiming vpu_reduce_timing(const VpuConfig& vpu, std::int64_t rows, std::int64_t cols,
                           isa::DType dtype, bool input_in_vmem = true);

// ceil(log2(v)) for v >= 1.
std::int64_t ceil_log2(std::int64_t v);

}  // namespace tpusim
