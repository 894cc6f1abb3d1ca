#include "sim/timing/vpu_timing.h"

#include <algorithm>

#include "common/units.h"

namespace tpusim {
namespace {

std::int64_t at_least_1(std::int64_t v) { return std::max<std::int64_t>(1, v); }

}  // namespace

std::int64_t ceil_log2(std::int64_t v) {
  std::int64_t bits = 0;
  while ((std::int64_t{1} << bits) < v) ++bits;
  return bits;
}

std::int64_t vregs_for_tile(const VpuConfig& vpu, std::int64_t rows, std::int64_t cols,
                            isa::DType dtype) {
  if (rows <= 0 || cols <= 0) return 0;
  // Values narrower than 32 bits pack along the sublanes (bf16 (16,128) tiles).
  const std::int64_t packing = std::max<std::int64_t>(1, 32 / std::max<std::int64_t>(1, isa::dtype_bits(dtype)));
  return ceil_div(rows, at_least_1(vpu.sublanes) * packing) * ceil_div(cols, at_least_1(vpu.lanes));
}

std::string_view resource_name(Resource r) {
  switch (r) {
    case Resource::kMxuCompute: return "MXU";
    case Resource::kMxuWeights: return "MXU weights";
    case Resource::kVpuAlu: return "VPU ALU";
    case Resource::kVpuLoadStore: return "VPU ld/st";
    case Resource::kEup: return "EUP";
    case Resource::kXlu: return "XLU";
    case Resource::kHbm: return "HBM";
    case Resource::kVmem: return "VMEM";
    case Resource::kIci: return "ICI";
    case Resource::kHost: return "host link";
    case Resource::kCount: break;
  }
  return "?";
}

OpTiming vpu_elementwise_timing(const VpuConfig& vpu, const VpuElementwise& op) {
  OpTiming t;
  if (op.vregs <= 0) return t;
  const std::int64_t alu = ceil_div(op.vregs, at_least_1(vpu.alus_per_lane));
  const std::int64_t loads = ceil_div(op.vregs * op.vmem_inputs, at_least_1(vpu.vreg_loads_per_cycle));
  const std::int64_t stores = ceil_div(op.vregs * op.vmem_outputs, at_least_1(vpu.vreg_stores_per_cycle));
  t.issue = static_cast<Cycles>(std::max({alu, loads, stores}));
  t.limit = alu >= std::max(loads, stores) ? Resource::kVpuAlu : Resource::kVpuLoadStore;
  const auto latency = isa::vpu_latency(vpu.latency, isa::latency_class(op.op));
  t.done = pipelined_done(t.issue, static_cast<Cycles>(at_least_1(latency)));
  return t;
}

OpTiming vpu_reduce_timing(const VpuConfig& vpu, std::int64_t rows, std::int64_t cols,
                           isa::DType dtype, bool input_in_vmem) {
  OpTiming t;
  const std::int64_t vregs = vregs_for_tile(vpu, rows, cols, dtype);
  if (vregs == 0) return t;
  const std::int64_t groups = ceil_div(cols, at_least_1(vpu.lanes));
  const std::int64_t per_group = vregs / groups;
  const std::int64_t intra = ceil_log2(at_least_1(vpu.sublanes));
  const std::int64_t combines = groups * ((per_group - 1) + intra);
  std::int64_t issue = ceil_div(combines, at_least_1(vpu.alus_per_lane));
  const std::int64_t loads = input_in_vmem ? ceil_div(vregs, at_least_1(vpu.vreg_loads_per_cycle)) : 0;
  t.limit = issue >= loads ? Resource::kVpuAlu : Resource::kVpuLoadStore;
  issue += loads;
  const std::int64_t depth = ceil_log2(per_group) + intra;
  const std::int64_t chain = depth * at_least_1(vpu.latency.alu);
  t.issue = static_cast<Cycles>(std::max<std::int64_t>(issue, 1));
  t.done = static_cast<Cycles>(std::max(t.issue, static_cast<Cycles>(chain)));
  return t;
}

}  // namespace tpusim
