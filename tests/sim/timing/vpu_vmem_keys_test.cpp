// core.vpu.alus_per_lane and core.vmem.ports each move the
// timing functions that read them, in the direction their descriptions say.
#include <gtest/gtest.h>

#include "common/config.h"
#include "sim/timing/vmem_timing.h"
#include "sim/timing/vpu_timing.h"

namespace tpusim {
namespace {

VpuConfig vpu_with_alus(std::int64_t alus) {
  VpuConfig v;
  v.sublanes = 8;
  v.lanes = 128;
  v.alus_per_lane = alus;
  v.vreg_loads_per_cycle = 1;
  v.vreg_stores_per_cycle = 1;
  v.latency = VpuLatency{2, 4, 16, 3, 2};
  return v;
}

TEST(VpuVmemKeys, AlusPerLaneBoundRegisterOnlyOps) {
  // 64 result vregs kept in registers: the ALUs alone set the issue time,
  // 64 / alus_per_lane cycles.
  const VpuElementwise op{64, isa::VpuOp::kAdd, 0, 0};
  EXPECT_EQ(vpu_elementwise_timing(vpu_with_alus(1), op).issue, 64u);
  EXPECT_EQ(vpu_elementwise_timing(vpu_with_alus(4), op).issue, 16u);
  EXPECT_EQ(vpu_elementwise_timing(vpu_with_alus(8), op).issue, 8u);
}

TEST(VpuVmemKeys, AlusPerLaneHiddenBehindOneStorePerCycle) {
  // Stored results: one store slot per cycle gives 64 cycles whatever the
  // ALU count (why element-wise kernels that stream VMEM do not move).
  const VpuElementwise op{64, isa::VpuOp::kAdd, 0, 1};
  EXPECT_EQ(vpu_elementwise_timing(vpu_with_alus(1), op).issue, 64u);
  EXPECT_EQ(vpu_elementwise_timing(vpu_with_alus(8), op).issue, 64u);
}

TEST(VpuVmemKeys, VmemPortsSplitTheBandwidth) {
  // 16384 B/cycle split over `ports` ports: 64 KiB through one port takes
  // 65536 / (16384 / ports) cycles; through all ports, 4 cycles.
  VmemConfig m;
  m.bytes_per_cycle = 16384;
  m.ports = 1;
  EXPECT_EQ(vmem_access_cycles(m, 65536, 1), 4u);
  m.ports = 4;
  EXPECT_EQ(vmem_access_cycles(m, 65536, 1), 16u);
  EXPECT_EQ(vmem_access_cycles(m, 65536, 4), 4u);
}

}  // namespace
}  // namespace tpusim
