// Megacore chips (v4, v5p): several TensorCores, one program each, sharing
// the chip's HBM and meeting at core.barrier. Each TEST is its own process
// under ctest (one SystemC elaboration per process). Expected times are
// derived in the comments from the preset's figures (the same derivations as
// tensor_core_test.cpp's single-core cases).
#include <cmath>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "sim/simulate.h"

namespace tpusim {
namespace {

using ::testing::HasSubstr;

// v5e's core, HBM and clock, made a two-core megacore chip.
const std::vector<std::string> kTwoCores = {"tensorcores=2", "megacore=true"};

SimResult run_cores(const std::vector<std::string>& tasm) {
  auto cfg = load_config("v5e", kTwoCores);
  EXPECT_TRUE(cfg.ok()) << (cfg.ok() ? "" : format_all(cfg.errors()));
  std::vector<isa::Program> programs;
  for (std::size_t c = 0; c < tasm.size(); ++c) {
    auto p = isa::assemble(tasm[c], "core" + std::to_string(c) + ".tasm");
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : format_all(p.errors()));
    programs.push_back(std::move(p).value());
  }
  auto r = simulate_cores(cfg->chip, std::move(programs));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return std::move(r).value();
}

double cycles_of(double seconds, double hz) { return std::ceil(seconds * hz - 1e-9); }

const char* kOneMiBCopy =
    ".buffer a hbm f32 [256, 1024]\n.buffer b hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024]\n.semaphore s\n"
    "dma.start dst=av src=%s sem=s\nsem.wait sem=s\n";

std::string copy_of(const char* buffer) {
  char text[512];
  std::snprintf(text, sizeof text, kOneMiBCopy, buffer);
  return text;
}

TEST(Megacore, CoresShareTheChipsHbmBandwidth) {
  // Each core copies its own 1 MiB from HBM at the same time: the one HBM
  // device serves 2 MiB, so both finish after latency + 2 MiB / 819 GB/s =
  // 0.3 + 2.5606 us (alone, a core's copy takes 0.3 + 1.2803 us).
  const SimResult r = run_cores({copy_of("a"), copy_of("b")});
  ASSERT_TRUE(r.finished);
  EXPECT_NEAR(r.seconds, 300e-9 + 2 * 1048576 / 819e9, 5e-9);
  EXPECT_DOUBLE_EQ(r.stats.value("chip0.hbm.read_bytes"), 2 * 1048576.0);
  EXPECT_DOUBLE_EQ(r.stats.value("chip0.core0.dma0.bytes") + r.stats.value("chip0.core0.dma1.bytes") +
                       r.stats.value("chip0.core1.dma0.bytes") + r.stats.value("chip0.core1.dma1.bytes"),
                   2 * 1048576.0);
}

TEST(Megacore, CoreBarrierWaitsForTheSlowestCore) {
  // Core 0: weights + 100 double-buffered matmuls of 128 rows on the 128x128
  // MXU, 1 + 128 + 12800 + 254 = 13183 cycles (tensor_core_test's derivation
  // without the pop), then core.barrier. Core 1 reaches its barrier at once
  // and then copies 1 MiB: 1 + 450 + 1921 = 2372 cycles after the barrier
  // opens (HBM latency 300 ns, 1 MiB / 819 GB/s, 1 dispatch cycle).
  const std::string mxu =
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n"
      "mxu.load_weights src=wv\nrepeat count=100\nmxu.matmul lhs=xv\nend\ncore.barrier\n";
  const std::string late_copy =
      ".buffer a hbm f32 [256, 1024]\n.buffer av vmem f32 [256, 1024]\n.semaphore s\n"
      "core.barrier\ndma.start dst=av src=a sem=s\nsem.wait sem=s\n";
  const SimResult r = run_cores({mxu, late_copy});
  ASSERT_TRUE(r.finished);
  const double mxu_cycles = 1 + 128 + 100 * 128 + 254;
  const double copy_cycles = 1 + cycles_of(300e-9, 1.5e9) + cycles_of(1048576 / 819e9, 1.5e9);
  EXPECT_NEAR(r.cycles, mxu_cycles + copy_cycles, 4);
  // Core 1 waited at its barrier for core 0's matmuls.
  EXPECT_NEAR(r.stats.value("chip0.core1.sequencer.stall_core_barrier_cycles"), mxu_cycles, 4);
  EXPECT_NEAR(r.stats.value("chip0.core0.cycles"), mxu_cycles, 4);
}

TEST(Megacore, CoreBarrierLeavesCollectivesInFlight) {
  // A collective is issued before the barrier and waited on after it: the
  // barrier drains the core's other units but not the ICI, so core 1 is
  // released at once (one chip: the placeholder collective time) and core 0
  // is not held until the collective completes.
  const std::string with_collective =
      ".buffer a hbm bf16 [1024, 1024]\n.buffer b hbm bf16 [1024, 1024]\n.semaphore s\n"
      "collective.all_reduce dst=b src=a sem=s\ncore.barrier\nsem.wait sem=s\n";
  const SimResult r = run_cores({with_collective, "core.barrier\n"});
  ASSERT_TRUE(r.finished);
  EXPECT_LT(r.stats.value("chip0.core1.sequencer.stall_core_barrier_cycles"), 10);
  EXPECT_GT(r.stats.value("chip0.core0.cycles"), 100);
}

TEST(Megacore, MismatchedCoreBarriersAreReportedAsADeadlock) {
  // Core 0 meets two barriers, core 1 only one: core 0 can never pass its
  // second. The run ends with the waiting party named, never a hang.
  const SimResult r = run_cores({"core.barrier\ncore.barrier\n", "core.barrier\n"});
  EXPECT_FALSE(r.finished);
  ASSERT_FALSE(r.blocked.empty());
  EXPECT_THAT(r.blocked[0], HasSubstr("core 0"));
  EXPECT_THAT(r.blocked[0], HasSubstr("other TensorCores to reach core.barrier"));
}

TEST(Megacore, ProgramCountMustMatchTheChipsTensorCores) {
  const std::vector<std::string> three = {"tensorcores=3", "megacore=true"};
  auto cfg = load_config("v5e", three);
  ASSERT_TRUE(cfg.ok());
  std::vector<isa::Program> two(2);
  auto r = simulate_cores(cfg->chip, std::move(two));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(format_all(r.errors()), HasSubstr("2 programs for a chip of 3 TensorCores"));
}

}  // namespace
}  // namespace tpusim
