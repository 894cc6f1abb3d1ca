// Reused sections (sim/core/reuse_accounts.h) on a hand-built program: which
// instructions belong to a section, what its counters and time add, and what
// its extra instances add at the end, each derived by hand.
#include "sim/core/reuse_accounts.h"

#include <gtest/gtest.h>

#include "isa/assembler.h"

namespace tpusim {
namespace {

constexpr const char* kProgram = R"(.buffer a vmem f32 [8, 128] offset=0
.reuse "fusion.3" extra=4
vpu.add dst=a a=a b=a @ "fusion.2"
vpu.add dst=a a=a b=a @ "fusion.3"
vpu.mul dst=a a=a b=a @ "fusion.3/tail"
)";

TEST(ReuseAccounts, ExtraInstancesAddTheirSectionsCountersTimeAndRows) {
  auto prog = isa::assemble(kProgram, "t.tasm");
  ASSERT_TRUE(prog.ok());
  ReuseAccounts r(*prog);
  ASSERT_TRUE(r.active());
  const std::uint32_t other = prog->code[0].provenance, head = prog->code[1].provenance,
                      tail = prog->code[2].provenance;
  EXPECT_EQ(r.section(other), -1);
  EXPECT_EQ(r.section(head), 0);
  EXPECT_EQ(r.section(tail), 0);  // "fusion.3/…" belongs to fusion.3

  StatsRegistry stats;
  Stat& cycles = stats.add("core0.vpu.busy_cycles", StatUnit::kCycles, "");
  Stat& hbm = stats.add("chip0.hbm.bytes", StatUnit::kBytes, "");
  Stat& other_chip = stats.add("chip1.hbm.bytes", StatUnit::kBytes, "");
  r.bind(stats, "core0", {"chip0.hbm."});
  r.count(&cycles, 10, r.section(other));  // not a section's
  r.count(&cycles, 7, r.section(head));
  r.snapshot();
  hbm += 1000;
  other_chip += 5;  // not bound: never scaled
  r.add_since(0);
  cycles += 3;  // a skipped loop inside the section added 3 (its caller adds them)...
  r.add_gains(0, {&cycles}, {3});  // ...and they are the section's

  // Time: the frontier is in fusion.3 from compute 2 to 5 and comm 1 to 1.5.
  r.enter(0, CoreReadings{2, 1, 0, std::nullopt});
  r.enter(-1, CoreReadings{5, 1.5, 0, std::nullopt});
  std::vector<ProvenanceStats> prov(prog->strings.size());
  prov[other].attributed_s = 1;
  prov[head].attributed_s = 2;
  prov[tail].attributed_s = 0.5;
  prov[head].flops = 100;
  prov[tail].instructions = 1;
  SkippedTime skipped;
  int repeats = 0;
  const auto rows = r.apply(prov, skipped, [&](const FabricCounters&, const FabricCounters&, std::int64_t) { ++repeats; });

  // One instance is 2.5 s of attributed time; 4 more add 10 s.
  ASSERT_EQ(rows.size(), 1U);
  EXPECT_EQ(rows[0].label, "fusion.3");
  EXPECT_EQ(rows[0].instances, 5);
  EXPECT_DOUBLE_EQ(rows[0].instance_s, 2.5);
  EXPECT_DOUBLE_EQ(rows[0].added_s, 10);
  EXPECT_DOUBLE_EQ(skipped.offset_s, 10);
  EXPECT_DOUBLE_EQ(skipped.compute_s, 4 * 3.0);
  EXPECT_DOUBLE_EQ(skipped.comm_s, 4 * 0.5);
  // Counters: the section's share (7 + 3 cycles, 1000 bytes) x 4 more.
  EXPECT_DOUBLE_EQ(cycles.value, 10 + 7 + 3 + 4 * 10.0);
  EXPECT_DOUBLE_EQ(hbm.value, 1000 + 4 * 1000.0);
  EXPECT_DOUBLE_EQ(other_chip.value, 5);
  // Rows: the section's grow 5-fold, the others stay.
  EXPECT_DOUBLE_EQ(prov[other].attributed_s, 1);
  EXPECT_DOUBLE_EQ(prov[head].attributed_s, 10);
  EXPECT_DOUBLE_EQ(prov[head].flops, 500);
  EXPECT_EQ(prov[tail].instructions, 5U);
  EXPECT_EQ(repeats, 0);  // no fabric readings: nothing to repeat
}

TEST(ReuseAccounts, FabricCountersOfASectionsWindowsRepeat) {
  auto prog = isa::assemble(kProgram, "t.tasm");
  ASSERT_TRUE(prog.ok());
  ReuseAccounts r(*prog);
  StatsRegistry stats;
  r.bind(stats, "core0", {});
  FabricCounters a, b;
  a.dcn_busy_s = 100;
  b.dcn_busy_s = 300;
  r.enter(0, CoreReadings{0, 0, 0, a});
  r.enter(-1, CoreReadings{0, 0, 1, b});
  std::vector<ProvenanceStats> prov(prog->strings.size());
  SkippedTime skipped;
  std::vector<std::int64_t> times;
  double added_dcn_s = 0;
  r.apply(prov, skipped, [&](const FabricCounters& from, const FabricCounters& to, std::int64_t n) {
    times.push_back(n);
    added_dcn_s += static_cast<double>(n) * (to.dcn_busy_s - from.dcn_busy_s);
  });
  EXPECT_EQ(times, std::vector<std::int64_t>{4});
  EXPECT_DOUBLE_EQ(added_dcn_s, 800);
  EXPECT_DOUBLE_EQ(skipped.exposed_s, 4.0);
}

TEST(ReuseAccounts, AProgramWithoutSectionsAccountsNothing) {
  auto prog = isa::assemble(".buffer a vmem f32 [8, 128] offset=0\nvpu.add dst=a a=a b=a\n", "t.tasm");
  ASSERT_TRUE(prog.ok());
  ReuseAccounts r(*prog);
  EXPECT_FALSE(r.active());
  EXPECT_EQ(r.section(prog->code[0].provenance), -1);
  StatsRegistry stats;
  Stat& s = stats.add("core0.x", StatUnit::kCount, "");
  r.count(&s, 2, -1);
  EXPECT_DOUBLE_EQ(s.value, 2);
  std::vector<ProvenanceStats> prov(prog->strings.size());
  SkippedTime skipped;
  EXPECT_TRUE(r.apply(prov, skipped, {}).empty());
}

}  // namespace
}  // namespace tpusim
