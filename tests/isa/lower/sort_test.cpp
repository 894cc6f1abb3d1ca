// Sort lowers to a bitonic network on the VPU over chunks of whole segments
// (docs/lowering.md, "Sort"): arrays far larger than VMEM stream through it,
// and the simulated time follows the network's stage count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/simulate.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

// f32 keys with s32 values (an argsort's iota), rows x n, sorted along n.
std::string sort_module(std::int64_t rows, std::int64_t n) {
  const std::string k = "f32[" + std::to_string(rows) + "," + std::to_string(n) + "]";
  const std::string v = "s32[" + std::to_string(rows) + "," + std::to_string(n) + "]";
  return "HloModule sort_rows\n"
         "less {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
         "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
         "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
         "ENTRY e {\n  k = " + k + " parameter(0)\n  v = " + v + " parameter(1)\n"
         "  ROOT s = (" + k + ", " + v + ") sort(k, v), dimensions={1}, to_apply=less\n}\n";
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Cycles of one VPU op writing `out_vregs` result vregs from `inputs`
// operand tiles of `in_vregs` vregs in all: the core completes
// alus_per_lane vreg ops, vreg_loads_per_cycle loads (sim/timing/vpu_timing.h
// counts a result-shaped load per operand) and vreg_stores_per_cycle stores
// per cycle, and moves vmem.bytes_per_cycle bytes of VMEM (a 32-bit vreg is
// sublanes x lanes x 4 B); the busiest of the four sets the pace.
std::int64_t vpu_op_cycles(const CoreConfig& core, std::int64_t out_vregs, std::int64_t inputs,
                           std::int64_t in_vregs) {
  const VpuConfig& v = core.vpu;
  const std::int64_t vreg_bytes = v.sublanes * v.lanes * 4;
  const auto vmem_bytes_per_cycle = static_cast<std::int64_t>(core.vmem.bytes_per_cycle);
  return std::max({ceil_div(out_vregs, v.alus_per_lane), ceil_div(out_vregs * inputs, v.vreg_loads_per_cycle),
                   ceil_div(out_vregs, v.vreg_stores_per_cycle),
                   ceil_div((in_vregs + out_vregs) * vreg_bytes, vmem_bytes_per_cycle)});
}

// f32 keys, s32 values: 4096 x 4096 of each is 64 MiB; the two inputs and
// two outputs held whole (256 MiB) are twice a v5e core's 128 MiB VMEM.
//
// The network: n = 4096 = 2^12, so L = 12 and L(L+1)/2 = 78 stages. Each
// stage, on a chunk of r rows (64: 4096 / 256 target chunks, rounded up to
// the smallest row tile; any multiple of 32 rows gives the same sum):
// - the comparator (one compare) over the pairs: reads two [r, n/2] f32
//   halves (r/8 x 16 vregs each), writes [r, n/2] pred (4 pred rows per
//   32-bit sublane: r/32 x 16 vregs);
// - per operand (keys, values), two selects (one per half of the pair):
//   each writes [r, n/2] of 32-bit values (r/8 x 16 vregs) from the mask
//   and both halves.
// Sum over stages and chunks / clock is the VPU time; the HBM traffic
// (256 MiB) overlaps it (double-buffered chunks) except the first load and
// last store.
TEST(Sort, BitonicNetworkOverArraysLargerThanVmemOnV5e) {
  const ChipConfig c = tpusim::testing::preset("v5e");
  const std::int64_t rows = 4096, n = 4096;
  ASSERT_GT(4 * rows * n * 4, static_cast<std::int64_t>(c.core.vmem.capacity));
  auto m = hlo::parse_hlo_module(sort_module(rows, n), "sort.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  const auto rep = isa::verify(l->program, c);
  ASSERT_TRUE(rep.ok()) << format_all(rep.diagnostics()).substr(0, 2000);
  EXPECT_EQ(l->report.count(NoteKind::kApprox), 0u);

  const std::int64_t stages = 12 * 13 / 2, chunk_rows = 64;
  const VpuConfig& v = c.core.vpu;
  const std::int64_t half_cols = ceil_div(n / 2, v.lanes);
  const std::int64_t half = ceil_div(chunk_rows, v.sublanes) * half_cols;       // 32-bit [r, n/2]
  const std::int64_t mask = ceil_div(chunk_rows, v.sublanes * 4) * half_cols;  // pred [r, n/2]
  const std::int64_t compare = vpu_op_cycles(c.core, mask, 2, 2 * half);
  const std::int64_t select = vpu_op_cycles(c.core, half, 3, mask + 2 * half);
  const std::int64_t chunks = rows / chunk_rows;
  const double vpu_s = static_cast<double>(chunks * stages * (compare + 2 * 2 * select)) / c.clock;

  auto r = simulate(c, l->program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  double hbm_bytes = 0;
  for (const auto& row : r->provenance) hbm_bytes += row.stats.hbm_bytes;
  std::printf("sort f32+s32 [%lld, %lld] on v5e: simulated %.6f ms, bitonic VPU formula %.6f ms (ratio %.4f)\n",
              static_cast<long long>(rows), static_cast<long long>(n), r->seconds * 1e3, vpu_s * 1e3,
              r->seconds / vpu_s);
  EXPECT_DOUBLE_EQ(hbm_bytes, 2.0 * 2 * rows * n * 4);  // keys and values, each read and written once
  // Stated tolerance: at least the VPU time, within 3% of it (the exposed
  // first load and last store, and one op latency per dependent op).
  EXPECT_GE(r->seconds, vpu_s);
  EXPECT_LE(r->seconds, 1.03 * vpu_s);
}

// A sort along the leading dimension of [n, 256]: its one segment (the
// whole array) is a column block of n rows, so a chunk holds all of it.
TEST(Sort, ChunksHoldWholeSegmentsAlongALeadingDimension) {
  const ChipConfig c = tpusim::testing::preset("v5e");
  const std::string text = R"(HloModule sort_cols
less {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  k = f32[8,4096,256] parameter(0)
  ROOT s = f32[8,4096,256] sort(k), dimensions={1}, to_apply=less
})";
  auto m = hlo::parse_hlo_module(text, "sort.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  EXPECT_TRUE(isa::verify(l->program, c).ok());
  EXPECT_EQ(l->report.count(NoteKind::kApprox), 0u);
  // Every input DMA moves whole segments: a multiple of 4096 rows.
  for (const auto& i : l->program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      if (l->program.buffers[d->src.buffer].space == isa::MemSpace::kHbm) {
        EXPECT_EQ(d->src.rows % 4096, 0);
      }
    }
  }
}

// A bf16 sort whose comparator has arithmetic (jax's total order: NaN and
// -0 canonicalized with selects and a max before the compare) verifies on a
// VPU without a bf16 ALU (v5e: the arithmetic runs on f32 copies of both
// halves, two converts per stage) and natively on v6e (no converts).
TEST(Sort, Bf16ComparatorArithmeticFollowsTheChipsVpu) {
  const std::string text = R"(HloModule sort_bf16
total_order {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  z = bf16[] constant(0)
  ma = bf16[] maximum(a, z)
  mb = bf16[] maximum(b, z)
  ROOT lt = pred[] compare(ma, mb), direction=LT
}
ENTRY e {
  k = bf16[64,1024] parameter(0)
  ROOT s = bf16[64,1024] sort(k), dimensions={1}, to_apply=total_order
})";
  const auto converts = [](const isa::Program& p) {
    return std::count_if(p.code.begin(), p.code.end(), [](const isa::Instruction& i) {
      const auto* e = std::get_if<isa::VpuElementwise>(&i.op);
      return e != nullptr && e->op == isa::VpuOp::kConvert;
    });
  };
  // n = 1024 = 2^10: 55 stages.
  const std::int64_t stages = 10 * 11 / 2;
  for (const char* name : {"v5e", "v6e"}) {
    const ChipConfig c = tpusim::testing::preset(name);
    auto m = hlo::parse_hlo_module(text, "sort.hlo");
    ASSERT_TRUE(m.ok()) << format_all(m.errors());
    auto l = lower_module(**m, c);
    ASSERT_TRUE(l.ok()) << format_all(l.errors());
    const auto rep = isa::verify(l->program, c);
    EXPECT_TRUE(rep.ok()) << name << ": " << format_all(rep.diagnostics()).substr(0, 1000);
    if (c.core.vpu.bf16_alu) {
      EXPECT_EQ(converts(l->program), 0) << name;
    } else {
      EXPECT_GE(converts(l->program), 2 * stages) << name;  // two per stage and chunk
    }
  }
}

// Rows shorter than two vreg rows' worth of lanes (n = 3, or 100: half a
// row is no whole number of lanes) cannot be cut into tile halves: each
// element meets its partner by a lane rotation of the whole tile (XLU), and
// one select over the whole tile per operand does the exchange. n = 100
// pads to 128 = 2^7: 28 stages; n = 3 pads to 4: 3 stages. Per stage: the
// keys' rotation for the compare, then per operand (keys, values) a
// rotation and a select.
TEST(Sort, PairsWithinAVregRowMeetByLaneRotation) {
  for (const auto& [n, stages] : {std::pair{3, 3}, std::pair{100, 28}}) {
    const ChipConfig c = tpusim::testing::preset("v5e");
    auto m = hlo::parse_hlo_module(sort_module(16, n), "sort.hlo");
    ASSERT_TRUE(m.ok()) << format_all(m.errors());
    auto l = lower_module(**m, c);
    ASSERT_TRUE(l.ok()) << format_all(l.errors());
    const auto rep = isa::verify(l->program, c);
    EXPECT_TRUE(rep.ok()) << n << ": " << format_all(rep.diagnostics()).substr(0, 1000);
    const auto count = [&](auto pred) { return std::count_if(l->program.code.begin(), l->program.code.end(), pred); };
    EXPECT_EQ(count([](const isa::Instruction& i) { return std::holds_alternative<isa::XluPermute>(i.op); }),
              3 * stages)
        << n;
    EXPECT_EQ(count([](const isa::Instruction& i) {
                const auto* e = std::get_if<isa::VpuElementwise>(&i.op);
                return e != nullptr && e->op == isa::VpuOp::kSelect;
              }),
              2 * stages)
        << n;
  }
}

}  // namespace
}  // namespace tpusim::lower
