// VPU, XLU, EUP and DMA timing against hand-derived numbers.
#include <gtest/gtest.h>

#include "sim/timing/dma_timing.h"
#include "sim/timing/vpu_timing.h"
#include "sim/timing/xlu_timing.h"

namespace tpusim {
namespace {

VpuConfig test_vpu() {
  VpuConfig v;
  v.sublanes = 8;
  v.lanes = 128;
  v.alus_per_lane = 2;
  v.vreg_loads_per_cycle = 1;
  v.vreg_stores_per_cycle = 1;
  v.latency = VpuLatency{2, 4, 16, 3, 2};  // alu, mul, div, convert, compare
  return v;
}

TEST(VpuTiming, VregsPerTilePackNarrowDtypesAlongSublanes) {
  const VpuConfig v = test_vpu();
  // 256x512 f32: ceil(256/8)=32 sublane groups x ceil(512/128)=4 lane groups.
  EXPECT_EQ(vregs_for_tile(v, 256, 512, isa::DType::kF32), 128);
  // bf16 packs 2 per 32-bit element: ceil(256/16)=16 x 4 = 64.
  EXPECT_EQ(vregs_for_tile(v, 256, 512, isa::DType::kBf16), 64);
  // int8 packs 4: 8 x 4 = 32; int4 packs 8: 4 x 4 = 16.
  EXPECT_EQ(vregs_for_tile(v, 256, 512, isa::DType::kInt8), 32);
  EXPECT_EQ(vregs_for_tile(v, 256, 512, isa::DType::kInt4), 16);
  // Ragged 9x129 f32 needs 2x2 partial vregs.
  EXPECT_EQ(vregs_for_tile(v, 9, 129, isa::DType::kF32), 4);
  EXPECT_EQ(vregs_for_tile(v, 0, 129, isa::DType::kF32), 0);
}

TEST(VpuTiming, ElementwiseIsBoundByLoadsWhenOperandsComeFromVmem) {
  // add over 128 vregs, two operands loaded, one stored:
  // ALU ceil(128/2)=64, loads 128*2/1=256, stores 128/1=128 -> issue 256;
  // done = 256 - 1 + alu latency 2 = 257.
  const auto t = vpu_elementwise_timing(test_vpu(), {128, isa::VpuOp::kAdd, 2, 1});
  EXPECT_EQ(t.issue, 256u);
  EXPECT_EQ(t.done, 257u);
  EXPECT_EQ(t.limit, Resource::kVpuLoadStore);  // the report's limiter: loads, not the ALUs
}

TEST(VpuTiming, ElementwiseInRegistersIsAluBoundWithClassLatency) {
  // fma over 128 vregs in registers: issue ceil(128/2)=64; mul class latency 4:
  // done = 63 + 4 = 67.
  const auto fma = vpu_elementwise_timing(test_vpu(), {128, isa::VpuOp::kFma, 0, 0});
  EXPECT_EQ(fma.issue, 64u);
  EXPECT_EQ(fma.done, 67u);
  EXPECT_EQ(fma.limit, Resource::kVpuAlu);
  // div over 10 vregs: issue 5, done 4 + 16 = 20.
  const auto div = vpu_elementwise_timing(test_vpu(), {10, isa::VpuOp::kDiv, 0, 0});
  EXPECT_EQ(div.issue, 5u);
  EXPECT_EQ(div.done, 20u);
  // convert (latency 3) and select (compare class, latency 2) over 1 vreg.
  EXPECT_EQ(vpu_elementwise_timing(test_vpu(), {1, isa::VpuOp::kConvert, 0, 0}).done, 3u);
  EXPECT_EQ(vpu_elementwise_timing(test_vpu(), {1, isa::VpuOp::kSelect, 0, 0}).done, 2u);
  EXPECT_EQ(vpu_elementwise_timing(test_vpu(), {0, isa::VpuOp::kAdd, 2, 1}).done, 0u);
}

TEST(VpuTiming, ReduceIsThroughputOrDependencyBound) {
  // 256x128 f32 = 32 vregs in one lane group: 31 vreg combines + log2(8)=3
  // intra-vreg steps = 34 combines / 2 ALUs = 17 cycles, + 32 loads = 49.
  // Depth ceil(log2 32)=5 + 3 = 8 levels x alu latency 2 = 16 < 49 -> done 49.
  VpuConfig v = test_vpu();
  auto t = vpu_reduce_timing(v, 256, 128, isa::DType::kF32, true);
  EXPECT_EQ(t.issue, 49u);
  EXPECT_EQ(t.done, 49u);
  // In registers: issue 17; with alu latency 4 the chain is 8 x 4 = 32 > 17.
  v.latency.alu = 4;
  t = vpu_reduce_timing(v, 256, 128, isa::DType::kF32, false);
  EXPECT_EQ(t.issue, 17u);
  EXPECT_EQ(t.done, 32u);
}

TEST(XluTiming, ThroughputAndLatency) {
  XluConfig x;
  x.count = 2;
  x.vregs_per_cycle = 0.5;  // one vreg every 2 cycles
  x.latency = 10;
  // 16 vregs at 0.5/cycle = 32 cycles issue; done 31 + 10 = 41.
  const auto t = xlu_timing(x, 16);
  EXPECT_EQ(t.issue, 32u);
  EXPECT_EQ(t.done, 41u);
  EXPECT_EQ(throughput_cycles(3, 2.0), 2u);  // ceil(1.5)
  EXPECT_EQ(xlu_timing(x, 0).done, 0u);
}

TEST(EupTiming, ThroughputAndLatency) {
  EupConfig e;
  e.vregs_per_cycle = 1;
  e.latency = 20;
  // 64 vregs: issue 64, done 63 + 20 = 83.
  const auto t = eup_timing(e, 64);
  EXPECT_EQ(t.issue, 64u);
  EXPECT_EQ(t.done, 83u);
}

struct DmaFixture {
  DmaConfig dma{1, 1024, 512};  // engines, outstanding, chunk bytes
  HbmConfig hbm;
  VmemConfig vmem;
  DmaFixture() {
    hbm.bandwidth = 1e12;  // 1 TB/s, 8 channels of 100 GB/s after 0.8 efficiency
    hbm.efficiency = 0.8;
    hbm.channels = 8;
    hbm.access_granularity = 64;
    hbm.latency = 500e-9;  // 500 cycles at 1 GHz
    vmem.capacity = 1 << 20;
    vmem.ports = 4;
    vmem.bytes_per_cycle = 4096;  // 1024 B per port per cycle
  }
};

TEST(DmaTiming, DenseHbmToVmemIsBandwidthBound) {
  DmaFixture f;
  // 1 MiB dense: 16384 bursts of 64 B, 2048 per channel = 131072 B per channel
  // at 1e11 B/s = 1310.72 ns -> 1311 cycles; VMEM 1 MiB / 1024 = 1024 cycles;
  // requests 2048 / 1024 outstanding = 2 rounds -> window 1 x 500 = 500.
  // done = 500 + max(1311, 1024, 500) = 1811.
  const StridedTile tile{1, 1 << 20, 1 << 20, 0};
  const auto t = dma_hbm_vmem_timing(f.dma, f.hbm, f.vmem, 1e9, tile);
  EXPECT_EQ(t.done, 1811u);
  // The engine is free for its next transfer once the last request left.
  EXPECT_EQ(t.issue, 1311u);
}

TEST(DmaTiming, FewOutstandingRequestsBoundByLatency) {
  DmaFixture f;
  f.dma.outstanding = 256;
  // 2048 requests / 256 = 8 rounds -> window 7 x 500 = 3500; done 500 + 3500.
  const StridedTile tile{1, 1 << 20, 1 << 20, 0};
  EXPECT_EQ(dma_hbm_vmem_timing(f.dma, f.hbm, f.vmem, 1e9, tile).done, 4000u);
}

TEST(DmaTiming, VmemToVmemUsesTwoPorts) {
  DmaFixture f;
  // 64 KiB read + 64 KiB written = 131072 B through 2 ports x 1024 B = 64 cycles.
  EXPECT_EQ(dma_vmem_vmem_timing(f.vmem, 65536).done, 64u);
}

TEST(DmaTiming, HostTransferIsLatencyPlusBytesOverTheLinkBandwidth) {
  HostLinkConfig h;
  h.bandwidth = 16e9;
  h.latency = 1e-6;
  // 32 MiB at 16 GB/s: 2.097 ms, plus 1 us.
  EXPECT_DOUBLE_EQ(host_transfer_seconds(h, 32 << 20), 1e-6 + 33554432.0 / 16e9);
  EXPECT_EQ(host_transfer_seconds(h, 0), 0.0);
}

}  // namespace
}  // namespace tpusim
