// End-to-end runs of small programs on the SystemC TensorCore. Each TEST is
// its own process under ctest (SystemC elaborates once per process). Expected
// cycle counts are derived in the comments from the preset's figures, not
// from the simulator's code.
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <sstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config_loader.h"
#include "common/isolated.h"
#include "isa/assembler.h"
#include "sim/simulate.h"

namespace tpusim {
namespace {

using ::testing::HasSubstr;

SimResult run(const std::string& tasm, const std::string& chip = "v5e", std::vector<std::string> sets = {}) {
  auto cfg = load_config(chip, sets);
  EXPECT_TRUE(cfg.ok()) << (cfg.ok() ? "" : format_all(cfg.errors()));
  auto prog = isa::assemble(tasm, "test.tasm");
  EXPECT_TRUE(prog.ok()) << (prog.ok() ? "" : format_all(prog.errors()));
  auto r = simulate(cfg->chip, std::move(prog).value());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return std::move(r).value();
}

double cycles_of(double seconds, double hz) { return std::ceil(seconds * hz - 1e-9); }

TEST(TensorCore, DenseDmaTakesLatencyPlusBytesOverHbmBandwidth) {
  // v5e: 1 MiB HBM -> VMEM. HBM latency 300 ns = 450 cycles at 1.5 GHz;
  // 1048576 B / 819 GB/s = 1.2803 us = 1921 cycles (rounded up); the DMA
  // window (256 requests of 4 KiB, 64 in flight) and VMEM (256 cycles) are
  // shorter. Plus 1 cycle of dispatch latency.
  const SimResult r = run(
      ".buffer a hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024]\n.semaphore s\n"
      "dma.start dst=av src=a sem=s\nsem.wait sem=s\n");
  ASSERT_TRUE(r.finished);
  const double expect = 1 + cycles_of(300e-9, 1.5e9) + cycles_of(1048576 / 819e9, 1.5e9);
  EXPECT_NEAR(r.cycles, expect, 2);
  EXPECT_DOUBLE_EQ(r.stats.value("chip0.hbm.read_bytes"), 1048576);
}

TEST(TensorCore, DelayStallsIssueForExactlyItsCycles) {
  // An otherwise idle core: one VPU add after the delay. The add waits for
  // the delay's end, so a delay of N cycles adds N cycles (N / 1.5 GHz on
  // v5e) to the same program with a delay of 0, and the sequencer counts
  // them as delay stalls. One simulation per process: each runs in a child.
  constexpr std::int64_t kN = 1234;
  const auto with_delay = [](std::int64_t n) {
    std::string error;
    const auto out = run_isolated(
        [n] {
          const SimResult r = run(".buffer v vmem f32 [8, 128] offset=0\ndelay cycles=" + std::to_string(n) +
                                  "\nvpu.add dst=v a=v b=v\n");
          return fmt::format("{} {:.17g} {}", r.cycles, r.seconds,
                             r.stats.value("chip0.core0.sequencer.stall_delay_cycles"));
        },
        error);
    EXPECT_TRUE(out.has_value()) << error;
    std::array<double, 3> v{};
    std::istringstream in(out.value_or(""));
    in >> v[0] >> v[1] >> v[2];
    return v;
  };
  const auto none = with_delay(0), delayed = with_delay(kN);
  EXPECT_GT(none[0], 0);
  EXPECT_DOUBLE_EQ(delayed[0] - none[0], static_cast<double>(kN));
  EXPECT_NEAR(delayed[1] - none[1], static_cast<double>(kN) / 1.5e9, 1e-12);  // SystemC's 1 ps resolution
  EXPECT_DOUBLE_EQ(none[2], 0);
  EXPECT_DOUBLE_EQ(delayed[2], static_cast<double>(kN));
}

TEST(TensorCore, MxuFenceWaitsForTheMatmulsButNotTheDmas) {
  // v5e: a 1 MiB DMA (about 2370 cycles, test above) is in flight while MXU 0
  // loads a 128 x 128 weight tile (128 cycles, one row per cycle) and streams
  // 128 rows through it (128 cycles + 127 + 127 of skew and drain: the last
  // result lands 382 cycles after the first row). An mxu.fence issued right
  // after them stalls issue until that last result, about 128 + 382 = 510
  // cycles (within the few cycles of dispatch latency), not until the DMA's
  // end; the VPU add behind it starts after the fence.
  const std::string head =
      ".buffer a hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024] offset=0\n"
      ".buffer w vmem bf16 [128, 128] offset=1048576\n.buffer x vmem bf16 [128, 128] offset=1081344\n"
      ".buffer v vmem f32 [8, 128] offset=1114112\n.semaphore s\n"
      "dma.start dst=av src=a sem=s\nmxu.load_weights mxu=0 src=w\nmxu.matmul mxu=0 lhs=x acc=0 mode=overwrite\n";
  const auto stall = [&](const std::string& fence) {
    std::string error;
    const auto out = run_isolated(
        [&] {
          const SimResult r = run(head + fence + "vpu.add dst=v a=v b=v\nsem.wait sem=s\n");
          return fmt::format("{} {}", r.cycles, r.stats.value("chip0.core0.sequencer.stall_mxu_fence_cycles"));
        },
        error);
    EXPECT_TRUE(out.has_value()) << error;
    std::array<double, 2> v{};
    std::istringstream in(out.value_or(""));
    in >> v[0] >> v[1];
    return v;
  };
  const auto without = stall(""), with = stall("mxu.fence\n");
  EXPECT_DOUBLE_EQ(without[1], 0);
  EXPECT_NEAR(with[1], 128 + 382, 6);
  // The DMA still ends the program: the fence did not wait for it.
  EXPECT_DOUBLE_EQ(with[0], without[0]);
  EXPECT_GT(with[0], 2000);
}

TEST(TensorCore, DerivedStatsAreFormulasOverTheRunsCounters) {
  // 1 MiB HBM -> VMEM on v5e: every derived figure, recomputed here from
  // the plain counters and the preset's figures.
  const SimResult r = run(
      ".buffer a hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024]\n.semaphore s\n"
      "dma.start dst=av src=a sem=s\nsem.wait sem=s\n");
  ASSERT_TRUE(r.finished);
  const StatsRegistry& s = r.stats;
  EXPECT_DOUBLE_EQ(s.value("system.seconds"), r.seconds);
  EXPECT_DOUBLE_EQ(s.value("system.cycles"), r.cycles);
  const double bytes = s.value("chip0.hbm.read_bytes") + s.value("chip0.hbm.write_bytes");
  EXPECT_DOUBLE_EQ(s.value("chip0.hbm.bytes"), 1048576);
  EXPECT_DOUBLE_EQ(s.value("chip0.hbm.bytes_per_s"), bytes / r.seconds);
  EXPECT_DOUBLE_EQ(s.value("chip0.hbm.bandwidth_utilization"), bytes / (r.seconds * 819e9));
  EXPECT_GT(s.value("chip0.hbm.bandwidth_utilization"), 0.5);  // latency is the rest
  EXPECT_DOUBLE_EQ(s.value("chip0.core0.dma0.utilization"), s.value("chip0.core0.dma0.busy_cycles") / r.cycles);
  EXPECT_DOUBLE_EQ(s.value("chip0.vmem.utilization"), s.value("chip0.core0.vmem.busy_cycles") / r.cycles);
  // v5e: 4 MXUs of 128 x 128 at 1.5 GHz, 2 FLOPs per MAC: 197 TFLOP/s bf16.
  EXPECT_DOUBLE_EQ(s.value("chip0.mxu.peak_flops_per_s"), 4.0 * 128 * 128 * 2 * 1.5e9);
  EXPECT_DOUBLE_EQ(s.value("chip0.mxu.flop_utilization"), 0);  // no MXU work
  EXPECT_EQ(s.formulas().count("chip0.mxu.flop_utilization"), 1u);
}

TEST(TensorCore, ConcurrentDmasShareHbmBandwidth) {
  // Two 1 MiB copies on two engines: the HBM device serves 2 MiB, so the
  // pair takes latency + 2 MiB / 819 GB/s = 0.3 + 2.5606 us, not 0.3 + 1.28.
  const SimResult r = run(
      ".buffer a hbm f32 [256, 1024]\n.buffer b hbm f32 [256, 1024]\n"
      ".buffer av vmem f32 [256, 1024]\n.buffer bv vmem f32 [256, 1024]\n.semaphore s\n"
      "dma.start dst=av src=a sem=s\ndma.start dst=bv src=b sem=s\nsem.wait sem=s count=2\n");
  ASSERT_TRUE(r.finished);
  const double expect_s = 300e-9 + 2 * 1048576 / 819e9;
  EXPECT_NEAR(r.seconds, expect_s, 5e-9);
  // Effective bandwidth: 2 MiB over the transfer part ~ 819 GB/s.
  EXPECT_GT(2 * 1048576 / (r.seconds - 300e-9), 0.99 * 819e9);
}

TEST(TensorCore, OneEnginePipelinesItsTransfers) {
  // v5e with one DMA engine: 32 reads of 32 KiB (8 rows of f32[1024]). The
  // engine issues each transfer's requests and takes the next while the data
  // is on its way, so the run takes one HBM latency plus 32 x 32 KiB at
  // 819 GB/s (1.28 us), not 32 latencies (9.6 us). The last semaphore signal
  // comes with the last transfer's data.
  std::string tasm = ".buffer h hbm f32 [256, 1024]\n.buffer v vmem f32 [256, 1024]\n.semaphore s\n";
  for (int i = 0; i < 32; ++i) tasm += fmt::format("dma.start dst=v[{0}:{1}, 0:1024] src=h[{0}:{1}, 0:1024] sem=s\n", 8 * i, 8 * i + 8);
  tasm += "sem.wait sem=s count=32\n";
  const SimResult r = run(tasm, "v5e", {"core.dma.engines=1"});
  ASSERT_TRUE(r.finished);
  const double expect_s = 300e-9 + 32 * 32768 / 819e9;
  EXPECT_NEAR(r.seconds, expect_s, 0.02 * expect_s);
}

TEST(TensorCore, DoubleBufferedMatmulStreamIsMxuBound) {
  // v5e MXU 128x128, weights double-buffered: load 128 cycles, then 100
  // matmuls of 128 rows stream back to back (12800 cycles), the last drains
  // through (128-1)+(128-1) = 254 cycles, the pop moves 128/8 x 128/128 = 16
  // vregs. Plus 1 cycle dispatch latency: 1 + 128 + 12800 + 254 + 16 = 13199.
  const SimResult r = run(
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n.buffer yv vmem f32 [128, 128]\n"
      "mxu.load_weights src=wv\nrepeat count=100\nmxu.matmul lhs=xv\nend\nmxu.pop dst=yv\n");
  ASSERT_TRUE(r.finished);
  EXPECT_NEAR(r.cycles, 13199, 3);
  // 100 x 2 x 128 x 128 x 128 FLOPs.
  EXPECT_DOUBLE_EQ(r.stats.value("chip0.core0.mxu0.flops"), 100.0 * 2 * 128 * 128 * 128);
}

TEST(TensorCore, WeightLoadsWithoutDoubleBufferingSerialize) {
  // Ten folds (load, matmul of 128 rows) on a bare array: each fold waits for
  // the previous to drain, so a fold costs load 128 + stream 128 + drain 254
  // = 510 cycles (SCALE-Sim's 2R + C + M - 2), 10 folds = 5100, plus 1
  // dispatch cycle. Double-buffered, loads hide under streaming:
  // 1 + 128 + 10 x 128 + 254 = 1663.
  const std::string prog =
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n"
      "repeat count=10\nmxu.load_weights src=wv\nmxu.matmul lhs=xv\nend\n";
  const SimResult bare = run(prog, "v5e", {"core.mxu.double_buffered_weights=false"});
  ASSERT_TRUE(bare.finished);
  EXPECT_NEAR(bare.cycles, 5101, 3);
}

TEST(TensorCore, WeightLoadsHideUnderStreamingWhenDoubleBuffered) {
  const std::string prog =
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n"
      "repeat count=10\nmxu.load_weights src=wv\nmxu.matmul lhs=xv\nend\n";
  const SimResult db = run(prog, "v5e");
  ASSERT_TRUE(db.finished);
  EXPECT_NEAR(db.cycles, 1663, 3);
}

TEST(TensorCore, VpuElementwiseIsStoreBound) {
  // f32 [1024,1024] add: 1024 vregs. Per cycle the VPU stores 1 vreg, loads
  // 3 and computes 4: stores bind, 1024 cycles, + 2-cycle latency - 1, + 1
  // dispatch = 1026. VMEM: 3 x 4 MiB / 16384 B per cycle = 768 cycles < 1025.
  const SimResult r = run(
      ".buffer a vmem f32 [1024, 1024]\n.buffer b vmem f32 [1024, 1024]\n.buffer c vmem f32 [1024, 1024]\n"
      "vpu.add dst=c a=a b=b\n");
  ASSERT_TRUE(r.finished);
  EXPECT_NEAR(r.cycles, 1026, 2);
  EXPECT_DOUBLE_EQ(r.stats.value("chip0.core0.vpu.flops"), 1024.0 * 1024);
}

TEST(TensorCore, ReadAfterWriteWaitsForTheProducer) {
  // The VPU add reads what the MXU pop writes: it starts only after the pop.
  // load 128 + matmul issue 128 + drain 254 + pop 16 = 526 cycles, then the add
  // over 128x128 f32 (16 vregs: 16 store cycles + 1) = 17: 1 + 526 + 17 = 544.
  const SimResult r = run(
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n.buffer yv vmem f32 [128, 128]\n"
      ".buffer zv vmem f32 [128, 128]\n"
      "mxu.load_weights src=wv\nmxu.matmul lhs=xv\nmxu.pop dst=yv\nvpu.add dst=zv a=yv b=yv\n");
  ASSERT_TRUE(r.finished);
  EXPECT_NEAR(r.cycles, 544, 3);
  EXPECT_GT(r.stats.value("chip0.core0.vpu.dependency_stall_cycles"), 500);
}

TEST(TensorCore, DeadlockIsReportedWithTheBlockedInstruction) {
  const SimResult r = run(".semaphore never\n.buffer a vmem f32 [8, 128]\nsem.wait sem=never\nvpu.copy dst=a a=a\n");
  EXPECT_FALSE(r.finished);
  ASSERT_FALSE(r.blocked.empty());
  EXPECT_THAT(r.blocked.front(), HasSubstr("semaphore 'never'"));
  EXPECT_THAT(r.blocked.front(), HasSubstr("test.tasm:3:1"));
}

TEST(TensorCore, ProvenanceTimeSumsToTotal) {
  const SimResult r = run(
      ".buffer a hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024]\n.buffer bv vmem f32 [256, 1024]\n"
      ".semaphore s\n.provenance \"copy\"\ndma.start dst=av src=a sem=s\nsem.wait sem=s\n"
      ".provenance \"neg\"\nvpu.neg dst=bv a=av\n");
  ASSERT_TRUE(r.finished);
  double sum = 0;
  for (const auto& p : r.provenance) sum += p.stats.attributed_s;
  EXPECT_NEAR(sum, r.seconds, 1e-12);
  ASSERT_GE(r.provenance.size(), 2u);
  EXPECT_EQ(r.provenance.front().name, "copy");  // the DMA dominates
}

TEST(TensorCore, AnOverlappedCollectiveKeepsOnlyItsExposedTime) {
  // An all-reduce starts, 10 double-buffered matmul folds run while it flies
  // (1 + 128 + 10 x 128 + 254 = 1663 cycles, tensor_core_test's derivation
  // above), then the program waits for it. The matmuls keep their own time
  // (they are not hidden behind the collective in the per-op table); the
  // collective is charged what is left: the total minus the matmuls' time.
  const SimResult r = run(
      ".buffer a hbm bf16 [1024, 1024]\n.buffer b hbm bf16 [1024, 1024]\n"
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n.semaphore s\n"
      ".provenance \"ar\"\ncollective.all_reduce dst=b src=a sem=s\n"
      ".provenance \"mm\"\nmxu.load_weights src=wv\nrepeat count=10\nmxu.matmul lhs=xv\nend\n"
      ".provenance \"ar\"\nsem.wait sem=s\n");
  ASSERT_TRUE(r.finished);
  std::map<std::string, double> t;
  double sum = 0;
  for (const auto& p : r.provenance) {
    t[p.name] = p.stats.attributed_s;
    sum += p.stats.attributed_s;
  }
  EXPECT_NEAR(sum, r.seconds, 1e-12);
  const double mm_s = 1663 / 1.5e9;
  ASSERT_GT(r.seconds, 2 * mm_s);  // the collective is the longer of the two
  EXPECT_NEAR(t["mm"], mm_s, 3 / 1.5e9);
  EXPECT_NEAR(t["ar"], r.seconds - mm_s, 3 / 1.5e9);
}

}  // namespace
}  // namespace tpusim
