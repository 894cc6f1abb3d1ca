// SPMD runs on simulated systems (sim/spmd.h): full mode (a TensorCore per
// chip, collectives synchronized per replica group) and symmetric mode (chip 0
// plus the network). Every simulation runs in a forked child (SystemC
// elaborates once per process), so one test may compare both modes.
// Expected times come from the collective cost forms' closed forms and the presets'
// link, HBM and clock figures, derived in the comments.
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "common/isolated.h"
#include "sim/spmd.h"

namespace tpusim {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Runs simulate_spmd in a child and returns what the tests look at.
json run_spmd(const std::string& preset, const std::vector<std::string>& sets, const std::vector<std::string>& tasm,
              std::optional<SpmdMode> mode) {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        auto cfg = load_config(preset, sets);
        if (!cfg.ok()) return json{{"error", format_all(cfg.errors())}}.dump();
        std::vector<isa::Program> programs;
        for (const auto& t : tasm) {
          auto p = isa::assemble(t, "test.tasm");
          if (!p.ok()) return json{{"error", format_all(p.errors())}}.dump();
          programs.push_back(std::move(p).value());
        }
        SpmdOptions o;
        o.mode = mode;
        auto r = simulate_spmd(cfg->chip, std::move(programs), o);
        if (!r.ok()) return json{{"error", format_all(r.errors())}}.dump();
        json j;
        j["finished"] = r->sim.finished;
        j["step"] = r->sim.seconds;
        j["mode"] = spmd_mode_name(r->mode);
        j["chips"] = r->chips;
        j["blocked"] = r->sim.blocked;
        j["network_runs"] = r->network_runs;
        j["stat_runs"] = r->sim.stats.value("system.network_runs");
        j["stat_x_busy"] = r->sim.stats.value("system.ici.x.busy_s");
        j["hbm_read"] = r->sim.stats.value("chip0.hbm.read_bytes");
        j["hbm_write"] = r->sim.stats.value("chip0.hbm.write_bytes");
        double attributed = 0;
        for (const auto& p : r->sim.provenance) attributed += p.stats.attributed_s;
        j["attributed"] = attributed;
        for (const auto& c : r->chip_times) {
          j["times"].push_back({c.seconds, c.compute_s, c.communication_s, c.exposed_s});
        }
        for (const auto& c : r->collectives) {
          j["rows"].push_back({{"op", c.op}, {"group", c.group_size}, {"count", c.count}, {"time", c.seconds},
                               {"algorithm", c.algorithm}});
        }
        return j.dump();
      },
      error);
  EXPECT_TRUE(out.has_value()) << error;
  if (!out) return json{{"error", error}};
  return json::parse(*out);
}

double step_of(const json& j) {
  EXPECT_FALSE(j.contains("error")) << j.value("error", "");
  return j.value("step", -1.0);
}

// 16 MiB of bf16 (V), all-reduced over every chip.
const char* kAllReduce =
    ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
    "collective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\n";
constexpr double kV = 1024.0 * 8192 * 2;

// v5e ring of 8: 2·(N-1)/N·V/(2w), w = 4.5e10, plus 2 phases × ceil(7/2) hops of 1 us.
const double kRing8AllReduce = 2 * 7.0 / 8.0 * kV / 9e10 + 8e-6;

// 32 MiB HBM -> VMEM on v5e: 33,554,432 / 819e9 = 40.97 us (+ 0.3 us latency).
const double kDma32 = 33554432.0 / 819e9 + 0.3e-6;
const char* kDmaBuffers = ".buffer c hbm f32 [2048, 4096]\n.buffer cv vmem f32 [2048, 4096]\n.semaphore d\n";

const std::vector<std::string> kRing8{"system.topology=[8]", "system.wraparound=[true]"};

TEST(Spmd, AutoModeIsFullOnSmallSystemsAndAllReduceMatchesClosedForm) {
  const json j = run_spmd("v5e", kRing8, {kAllReduce}, std::nullopt);
  const double step = step_of(j);
  EXPECT_EQ(j["mode"], "full");
  EXPECT_EQ(j["chips"], 8);
  ASSERT_EQ(j["times"].size(), 8u);
  EXPECT_NEAR(step, kRing8AllReduce, 0.05 * kRing8AllReduce);
  // Lockstep chips all end together.
  for (const auto& t : j["times"]) EXPECT_NEAR(t[0].get<double>(), step, 1e-9);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["op"], "all-reduce");
  EXPECT_EQ(j["rows"][0]["group"], 8);
  EXPECT_EQ(j["rows"][0]["count"], 1);
}

TEST(Spmd, MultisliceAllReduceIsHierarchicalUnlessConfiguredOtherwise) {
  // 2 slices of a v5e 4-ring (8 chips), V = 16 MiB over every chip. auto =
  // hierarchical: RS over ICI 3/4·V/(2w) + 2h = 139.81 + 2 = 141.81 us; DCN
  // RS + AG on V/4 between the 2 peers, each 1/2·(V/4)/3.125e9 + 10 us =
  // 681.09 us (dcn: 25 Gbps per chip in the v5e preset, latency set to 10 us);
  // AG over ICI 141.81 us: 1645.8 us, plus the VPU reductions (< 1%).
  const std::vector<std::string> sets{"system.topology=[4]", "system.wraparound=[true]", "system.slices=2",
                                      "dcn.latency=10us"};
  const json j = run_spmd("v5e", sets, {kAllReduce}, SpmdMode::kFull);
  const double expected = 2 * (0.75 * kV / 9e10 + 2e-6) + 2 * (0.5 * (kV / 4) / 3.125e9 + 10e-6);
  EXPECT_NEAR(step_of(j), expected, 0.02 * expected);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["algorithm"], "hierarchical(per-axis-ring(x:ring)+dcn:line(2))");
  // system.collective_algorithm=flat-ring: one ring over chips 0..7 whose
  // hops 3->4 and 7->0 cross DCN with a whole V/8 shard every step.
  auto flat_sets = sets;
  flat_sets.push_back("system.collective_algorithm=flat-ring");
  const json flat = run_spmd("v5e", flat_sets, {kAllReduce}, SpmdMode::kFull);
  ASSERT_EQ(flat["rows"].size(), 1u);
  EXPECT_EQ(flat["rows"][0]["algorithm"], "flat-ring");
  EXPECT_GT(step_of(flat), 1.5 * expected);
}

TEST(Spmd, AsyncCollectiveOverlapsIndependentWorkAsTheSemaphoresSay) {
  // Overlapped: the collective is issued, a 32 MiB DMA runs meanwhile, then
  // both are waited for: step = max(collective, DMA) = the collective.
  // Serialized: wait for the collective before the DMA: step = their sum.
  const std::string overlap = std::string(kDmaBuffers) +
                              ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                              "collective.all_reduce dst=b src=a sem=s\ndma.start dst=cv src=c sem=d\n"
                              "sem.wait sem=d\nsem.wait sem=s\n";
  const std::string serial = std::string(kDmaBuffers) +
                             ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                             "collective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\n"
                             "dma.start dst=cv src=c sem=d\nsem.wait sem=d\n";
  const json o = run_spmd("v5e", kRing8, {overlap}, SpmdMode::kSymmetric);
  const json s = run_spmd("v5e", kRing8, {serial}, SpmdMode::kSymmetric);
  EXPECT_NEAR(step_of(o), kRing8AllReduce, 0.05 * kRing8AllReduce);
  EXPECT_NEAR(step_of(s), kRing8AllReduce + kDma32, 0.05 * (kRing8AllReduce + kDma32));
  EXPECT_NEAR(step_of(s) - step_of(o), kDma32, 0.05 * kDma32);
  // Exposed communication: overlapped, the DMA hides kDma32 of it.
  const auto& ot = o["times"][0];
  EXPECT_NEAR(ot[1].get<double>(), kDma32, 0.05 * kDma32);                      // compute (the DMA)
  EXPECT_NEAR(ot[3].get<double>(), ot[2].get<double>() - kDma32, 0.05 * kDma32);  // exposed
  const auto& st = s["times"][0];
  EXPECT_NEAR(st[3].get<double>(), st[2].get<double>(), 1e-9);  // serialized: all of it exposed
}

TEST(Spmd, ACollectiveReadsAndWritesItsChipsHbm) {
  // ici.hbm_traffic on the ring of 8 (f = 7/8), V = 16 MiB: what chip 0's
  // HBM model served, against collective_hbm_bytes' forms (to the byte per
  // 1 MiB chunk: each chunk's share is rounded up).
  const double f = 7.0 / 8.0;
  const std::string gather =
      ".buffer a hbm bf16 [128, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
      "collective.all_gather dst=b src=a sem=s\nsem.wait sem=s\n";
  const json ag = run_spmd("v5e", kRing8, {gather}, SpmdMode::kSymmetric);
  EXPECT_NEAR(ag["hbm_read"].get<double>(), kV, 1e-5 * kV);  // f·V sent + its own V/8 copied
  EXPECT_NEAR(ag["hbm_write"].get<double>(), kV, 1e-5 * kV);
  // All-reduce: reduce-scatter (sent, received, and each received message
  // reduced with the local chunk) then all-gather in place.
  const json ar = run_spmd("v5e", kRing8, {kAllReduce}, SpmdMode::kSymmetric);
  EXPECT_NEAR(ar["hbm_read"].get<double>(), 4 * f * kV, 1e-5 * kV);
  EXPECT_NEAR(ar["hbm_write"].get<double>(), 3 * f * kV, 1e-5 * kV);
  auto sets = kRing8;
  sets.push_back("ici.hbm_traffic=transfers");
  const json transfers = run_spmd("v5e", sets, {kAllReduce}, SpmdMode::kFull);
  EXPECT_NEAR(transfers["hbm_read"].get<double>(), 2 * f * kV, 1e-5 * kV);
  EXPECT_NEAR(transfers["hbm_write"].get<double>(), 2 * f * kV, 1e-5 * kV);
  sets.back() = "ici.hbm_traffic=none";
  const json none = run_spmd("v5e", sets, {kAllReduce}, SpmdMode::kFull);
  EXPECT_EQ(none["hbm_read"].get<double>(), 0.0);
  EXPECT_EQ(none["hbm_write"].get<double>(), 0.0);
  // Its HBM time (7·f·V / 819 GB/s = 125 us) fits in its network time: alone
  // it does not lengthen the collective.
  EXPECT_NEAR(step_of(ar), kRing8AllReduce, 0.02 * kRing8AllReduce);
  EXPECT_NEAR(step_of(ar), step_of(none), 0.01 * step_of(none));
}

TEST(Spmd, ACollectivesHbmTrafficSlowsTheDmasSharingTheHbm) {
  // Twelve 32 MiB HBM -> VMEM DMAs (402.7 MB, 491.6 us alone at 819 GB/s)
  // run beside the all-reduce (334 us on the network), whose 7·f·V =
  // 102.8 MB of HBM traffic the FIFO device serves between them: the HBM
  // is busy the whole time, so the step is (DMA + collective bytes) / 819
  // GB/s = 617 us. Without the traffic: the DMAs alone.
  std::string both = std::string(kDmaBuffers) +
                     ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                     "collective.all_reduce dst=b src=a sem=s\n";
  for (int i = 0; i < 12; ++i) both += "dma.start dst=cv src=c sem=d\n";
  for (int i = 0; i < 12; ++i) both += "sem.wait sem=d\n";
  both += "sem.wait sem=s\n";
  const double dma = 12 * 33554432.0;
  const double collective = 7 * (7.0 / 8.0) * kV;
  const json shared = run_spmd("v5e", kRing8, {both}, SpmdMode::kSymmetric);
  const double expected = (dma + collective) / 819e9;
  EXPECT_NEAR(step_of(shared), expected, 0.02 * expected);
  auto sets = kRing8;
  sets.push_back("ici.hbm_traffic=none");
  const json alone = run_spmd("v5e", sets, {both}, SpmdMode::kSymmetric);
  EXPECT_NEAR(step_of(alone), dma / 819e9, 0.02 * dma / 819e9);
}

// The ring of 8 all-reducing kAllReduce, chip 5 first waiting for a 32 MiB DMA.
std::vector<std::string> ring8_with_late_chip5() {
  std::vector<std::string> programs(8, kAllReduce);
  programs[5] = std::string(kDmaBuffers) +
                ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
                "dma.start dst=cv src=c sem=d\nsem.wait sem=d\n"
                "collective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\n";
  return programs;
}

TEST(Spmd, FullModeCollectiveCompletesAtTheLastMembersIssuePlusNetworkTime) {
  // Device 5 first waits for a 32 MiB DMA; the others issue at once and wait.
  // Everyone completes at kDma32 + the all-reduce time.
  const std::vector<std::string> programs = ring8_with_late_chip5();
  const json j = run_spmd("v5e", kRing8, programs, SpmdMode::kFull);
  const double expect = kDma32 + kRing8AllReduce;
  EXPECT_NEAR(step_of(j), expect, 0.05 * expect);
  ASSERT_EQ(j["times"].size(), 8u);
  for (const auto& t : j["times"]) EXPECT_NEAR(t[0].get<double>(), step_of(j), 1e-7);
  // Chip 0 waited for chip 5 the whole time: all communication, all exposed.
  EXPECT_NEAR(j["times"][0][3].get<double>(), expect, 0.05 * expect);
  EXPECT_NEAR(j["times"][5][1].get<double>(), kDma32, 0.05 * kDma32);
}

TEST(Spmd, FullModeLateMemberTimingHoldsWithOneCollectiveInFlight) {
  // The same late member with one ICI queue per chip: the early members
  // resume when chip 5 issues and complete with it (their cached time must
  // follow the fabric's wait), so every chip ends at kDma32 + the all-reduce.
  const std::vector<std::string> programs = ring8_with_late_chip5();
  std::vector<std::string> sets = kRing8;
  sets.push_back("ici.concurrent_collectives=1");
  const json j = run_spmd("v5e", sets, programs, SpmdMode::kFull);
  const double expect = kDma32 + kRing8AllReduce;
  EXPECT_NEAR(step_of(j), expect, 0.05 * expect);
  ASSERT_EQ(j["times"].size(), 8u);
  for (const auto& t : j["times"]) EXPECT_NEAR(t[0].get<double>(), step_of(j), 1e-7);
}

TEST(Spmd, FullModeReportsAMemberThatNeverIssuesInsteadOfHanging) {
  std::vector<std::string> programs(8, kAllReduce);
  programs[3] = ".buffer a hbm bf16 [8, 128]\n";
  const json j = run_spmd("v5e", kRing8, programs, SpmdMode::kFull);
  ASSERT_FALSE(j.contains("error")) << j.value("error", "");
  EXPECT_FALSE(j["finished"].get<bool>());
  std::string blocked;
  for (const auto& b : j["blocked"]) blocked += b.get<std::string>() + "\n";
  EXPECT_THAT(blocked, HasSubstr("devices 0, 1, 2, 4, 5, 6, 7 issued it and wait for devices 3"));
  EXPECT_THAT(blocked, HasSubstr("test.tasm:4:1: collective"));
  EXPECT_THAT(blocked, HasSubstr("chip 0: ici waits for the other members of its replica group"));
}

TEST(Spmd, SymmetricModeIsAutomaticAbove256Chips) {
  // 8x8x8 v5p mesh (512 chips; wraparound stated off, the v5p rule would
  // wrap this full-cube slice), all-reduce along x lines of 8 (no
  // wraparound): 2·7/8·V/w with w = 9e10, plus 2 × 7 hops of 1 us.
  std::string groups = "[";
  for (int g = 0; g < 64; ++g) {
    groups += g ? ",[" : "[";
    for (int x = 0; x < 8; ++x) groups += fmt::format("{}{}", x ? "," : "", g * 8 + x);
    groups += "]";
  }
  groups += "]";
  const std::string prog =
      ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
      "collective.all_reduce dst=b src=a groups=" + groups + " sem=s\nsem.wait sem=s\n";
  const json j = run_spmd("v5p", {"system.topology=[8,8,8]", "system.wraparound=[]"}, {prog}, std::nullopt);
  const double expect = 2 * 7.0 / 8.0 * kV / 9e10 + 14e-6;
  EXPECT_EQ(j["mode"], "symmetric");
  EXPECT_EQ(j["chips"], 512);
  EXPECT_EQ(j["times"].size(), 1u);
  EXPECT_NEAR(step_of(j), expect, 0.05 * expect);
  EXPECT_THAT(j["rows"][0]["algorithm"].get<std::string>(), HasSubstr("x:line"));
}

TEST(Spmd, RepeatedCollectivesAreSimulatedOnTheNetworkOnce) {
  const std::string prog =
      ".buffer a hbm bf16 [64, 1024]\n.buffer b hbm bf16 [64, 1024]\n.semaphore s\n"
      "repeat count=20\ncollective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\nend\n";
  const json j = run_spmd("v5e", kRing8, {prog}, SpmdMode::kSymmetric);
  step_of(j);
  EXPECT_EQ(j["network_runs"], 1);
  EXPECT_EQ(j["stat_runs"], 1.0);
  EXPECT_EQ(j["rows"][0]["count"], 20);
  // Link busy time counts every execution: per all-reduce on a ring of 8,
  // each chip receives 2·(N-1)/N·V over one link per byte (V = 128 KiB here),
  // so the x links are busy 8 · 2 · 7/8 · V / w summed; times 20.
  const double v = 64.0 * 1024 * 2;
  EXPECT_NEAR(j["stat_x_busy"].get<double>(), 20 * 8 * 2 * 7.0 / 8.0 * v / 4.5e10,
              0.02 * 20 * 8 * 2 * 7.0 / 8.0 * v / 4.5e10);
  EXPECT_NEAR(step_of(j), 20 * j["rows"][0]["time"].get<double>(), 0.02 * step_of(j));
}

TEST(Spmd, ReplicaGroupsThatDoNotFitTheSystemAreAnError) {
  const std::string prog =
      ".buffer a hbm bf16 [8, 128]\n.semaphore s\ncollective.all_reduce dst=a src=a groups=[[0,1,2]] sem=s\n"
      "sem.wait sem=s\n";
  const json j = run_spmd("v5e", kRing8, {prog}, SpmdMode::kSymmetric);
  ASSERT_TRUE(j.contains("error"));
  EXPECT_THAT(j["error"].get<std::string>(), HasSubstr("test.tasm:3:1: collective"));
  EXPECT_THAT(j["error"].get<std::string>(), HasSubstr("does not divide the system's 8 chips"));
}

// Full and symmetric mode on the same program and system: step times within 2%.
void expect_modes_agree(const std::string& preset, const std::vector<std::string>& sets, const std::string& prog) {
  const json full = run_spmd(preset, sets, {prog}, SpmdMode::kFull);
  const json sym = run_spmd(preset, sets, {prog}, SpmdMode::kSymmetric);
  EXPECT_EQ(full["mode"], "full");
  EXPECT_EQ(sym["mode"], "symmetric");
  EXPECT_GT(step_of(sym), 0);
  EXPECT_NEAR(step_of(full), step_of(sym), 0.02 * step_of(sym));
}

// Compute between collectives: a 1024-row matmul per 128x128 weight tile
// and VPU work, then an all-reduce over x lines and an all-gather over y.
std::string mixed_2d_program(const std::string& x_groups, const std::string& y_groups) {
  return ".buffer w hbm bf16 [128, 128]\n.buffer x hbm bf16 [1024, 128]\n"
         ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [1024, 128]\n.buffer z vmem f32 [1024, 128]\n"
         ".buffer p hbm bf16 [512, 4096]\n.buffer q hbm bf16 [512, 4096]\n"
         ".buffer g hbm bf16 [512, 4096]\n.buffer h hbm bf16 [2048, 4096]\n"
         ".semaphore r\n.semaphore s\n"
         "dma.start dst=wv src=w sem=r\ndma.start dst=xv src=x sem=r\nsem.wait sem=r count=2\n"
         "mxu.load_weights src=wv\nrepeat count=8\nmxu.matmul lhs=xv mode=overwrite\nmxu.pop dst=z\n"
         "vpu.add dst=z a=z b=z\nend\n"
         "collective.all_reduce dst=q src=p groups=" + x_groups + " sem=s\n"
         "collective.all_gather dst=h src=g groups=" + y_groups + " sem=s\n"
         "repeat count=8\nmxu.matmul lhs=xv mode=overwrite\nmxu.pop dst=z\nend\n"
         "sem.wait sem=s count=2\n";
}

TEST(Spmd, FullAndSymmetricAgreeOn16ChipTorus) {
  // 4x4 v5e torus: x lines {0,1,2,3}, …; y lines {0,4,8,12}, ….
  const std::string x = "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]";
  const std::string y = "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]";
  expect_modes_agree("v5e", {"system.topology=[4,4]", "system.wraparound=[true,true]"}, mixed_2d_program(x, y));
}

TEST(Spmd, FullModeRunningAheadMatchesLockstepWithLateMembersAndConcurrentCollectives) {
  // Chips run ahead of the kernel's clock and synchronize at each collective
  // (sim/core_scheduler.h); with simulation.run_ahead=false they follow it
  // at every step. The fabric sees the same issues at the same times either
  // way: two concurrent collectives per chip on a 4x4 torus, chip 6 late by
  // a 32 MiB DMA. Every figure the run reports must be identical.
  const std::string x = "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]";
  const std::string y = "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]";
  const std::string prog = mixed_2d_program(x, y);
  std::vector<std::string> programs(16, prog);
  std::size_t first_op = 0;  // after the declarations
  while (prog[first_op] == '.') first_op = prog.find('\n', first_op) + 1;
  programs[6] = std::string(kDmaBuffers) + prog.substr(0, first_op) + "dma.start dst=cv src=c sem=d\nsem.wait sem=d\n" +
                prog.substr(first_op);
  std::vector<std::string> sets{"system.topology=[4,4]", "system.wraparound=[true,true]"};
  const json ahead = run_spmd("v5e", sets, programs, SpmdMode::kFull);
  sets.push_back("simulation.run_ahead=false");
  const json lockstep = run_spmd("v5e", sets, programs, SpmdMode::kFull);
  ASSERT_GT(step_of(ahead), kDma32);  // chip 6 held the others back
  EXPECT_EQ(ahead.dump(), lockstep.dump());
}

TEST(Spmd, FullAndSymmetricAgreeOn64ChipMesh) {
  // 4x4x4 v5p mesh; the 16-chip groups repeat as 4 data-parallel copies (z).
  const std::string x = "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]";
  const std::string y = "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]";
  expect_modes_agree("v5p", {"system.topology=[4,4,4]"}, mixed_2d_program(x, y));
}

TEST(Spmd, FullAndSymmetricAgreeOnTheShippedTensorParallelLayer) {
  // workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo on a v5p ring of 8.
  std::string error;
  auto run = [&](SpmdMode mode) {
    auto out = run_isolated(
        [&]() -> std::string {
          const std::vector<std::string> sets{"system.topology=[8]", "system.wraparound=[true]"};
          auto cfg = load_config("v5p", sets);
          auto parsed = hlo::parse_hlo_file(std::string(TPUSIM_SOURCE_DIR) +
                                            "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo");
          if (!cfg.ok() || parsed.modules.empty() || !parsed.modules[0].ok()) return "error";
          auto lowered = lower::lower_module(*parsed.modules[0].value(), cfg->chip);
          if (!lowered.ok()) return "error";
          std::vector<isa::Program> programs;
          programs.push_back(std::move(lowered->program));
          SpmdOptions o;
          o.mode = mode;
          auto r = simulate_spmd(cfg->chip, std::move(programs), o);
          if (!r.ok() || !r->sim.finished) return "error";
          return fmt::format("{} {} {}", r->sim.seconds, r->collectives.size(),
                             r->collectives.empty() ? 0 : r->collectives[0].count);
        },
        error);
    EXPECT_TRUE(out.has_value()) << error;
    return out.value_or("error");
  };
  std::istringstream full(run(SpmdMode::kFull)), sym(run(SpmdMode::kSymmetric));
  double tf = 0, ts = 0;
  int rows_f = 0, rows_s = 0, count_f = 0, count_s = 0;
  full >> tf >> rows_f >> count_f;
  sym >> ts >> rows_s >> count_s;
  ASSERT_GT(ts, 0);
  EXPECT_NEAR(tf, ts, 0.02 * ts);
  // The two all-reduces of bf16[1,2048,4096] (16 MiB) are one distinct row.
  EXPECT_EQ(rows_s, 1);
  EXPECT_EQ(count_s, 2);
  EXPECT_EQ(count_f, 2);
}

// A chip runs ahead of the kernel's clock (sim/core_scheduler.h) unless
// simulation.run_ahead is false, when it follows the kernel's clock at
// every step. The order of events is the chip's own either way, so the chip
// alone, and a chip of a 2-chip system without collectives, in either mode,
// must give exactly the same time and every counter of its cores and HBM
// (the shipped MLP training step, whose dots, elementwise ops and
// reductions keep DMA engines, HBM, MXUs and VPU busy at once; on v5p both
// TensorCores of the megacore share the HBM and meet at core.barrier).
std::string layer_stats(const std::string& preset, bool system, bool run_ahead) {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        const std::vector<std::string> sets{"system.topology=[2]", "system.wraparound=[false]",
                                            run_ahead ? "simulation.run_ahead=true" : "simulation.run_ahead=false"};
        auto cfg = load_config(preset, sets);
        auto parsed = hlo::parse_hlo_file(std::string(TPUSIM_SOURCE_DIR) +
                                          "/workloads/hlo/mlp_train_step.hlo");
        if (!cfg.ok() || parsed.modules.empty() || !parsed.modules[0].ok()) return "error";
        auto lowered = lower::lower_for_chip(*parsed.modules[0].value(), cfg->chip);
        if (!lowered.ok()) return "error";
        std::vector<isa::Program> programs;
        for (auto& l : *lowered) programs.push_back(std::move(l.program));
        auto r = simulate_system(cfg->chip, std::move(programs), system, SpmdOptions{SpmdMode::kFull, {}, {}});
        if (!r.ok() || !r->sim.finished) return "error";
        std::string text = fmt::format("seconds {}\n", r->sim.seconds);
        for (const auto& [name, stat] : r->sim.stats.all()) {
          // (A system chip has ici.concurrent_collectives ICI queues, idle here.)
          const bool ici = name.find(".ici") != std::string::npos;
          if (name.starts_with("chip0.") && name != "chip0.seconds" && !ici) {
            text += fmt::format("{} {}\n", name, stat.value);
          }
        }
        return text;
      },
      error);
  EXPECT_TRUE(out.has_value()) << error;
  return out.value_or("error");
}

TEST(Spmd, AChipRunningAheadMatchesTheSameChipFollowingTheKernelsClock) {
  const std::string alone = layer_stats("v5e", false, true);
  ASSERT_NE(alone, "error");
  EXPECT_GT(std::count(alone.begin(), alone.end(), '\n'), 40);
  EXPECT_EQ(alone, layer_stats("v5e", false, false));
  EXPECT_EQ(alone, layer_stats("v5e", true, false));
  EXPECT_EQ(alone, layer_stats("v5e", true, true));
}

TEST(Spmd, AMegacoreChipRunningAheadMatchesTheSameChipFollowingTheKernelsClock) {
  const std::string alone = layer_stats("v5p", false, true);
  ASSERT_NE(alone, "error");
  EXPECT_NE(alone.find("chip0.core1.mxu0.flops"), std::string::npos);  // both TensorCores ran
  EXPECT_EQ(alone, layer_stats("v5p", false, false));
  EXPECT_EQ(alone, layer_stats("v5p", true, false));
}

// Several collectives in flight (ici.concurrent_collectives, default 4):
// their transfers share the simulated links; 1 = one after another.
// Closed forms (docs/interconnect.md): a bidirectional ring of N chips,
// links w one way and h per hop, all-reduces V in
// 2·((N-1)/N·V/(2w) + ceil((N-1)/2)·h).
double ring_all_reduce(double n, double v, double w, double h) {
  return 2 * ((n - 1) / n * v / (2 * w) + std::ceil((n - 1) / 2) * h);
}

// Two all-reduces issued back to back, then both waited for.
std::string two_all_reduces(const std::string& shape_a, const std::string& groups_a, const std::string& shape_b,
                            const std::string& groups_b) {
  return ".buffer a hbm bf16 " + shape_a + "\n.buffer b hbm bf16 " + shape_a + "\n.buffer c hbm bf16 " + shape_b +
         "\n.buffer d hbm bf16 " + shape_b + "\n.semaphore s\n" + "collective.all_reduce dst=b src=a" + groups_a +
         " sem=s\ncollective.all_reduce dst=d src=c" + groups_b + " sem=s\nsem.wait sem=s count=2\n";
}

TEST(Spmd, ConcurrentAllReducesOnDisjointAxesTakeTheLongerOfTheirTimes) {
  // 4x4 v5e torus (w = 4.5e10, h = 1 us): 16 MiB over the x rings and 8 MiB
  // over the y rings. They share no link, so together they end with the
  // longer one, T_x = 283.6 us (T_y = 143.8 us); one at a time, T_x + T_y.
  const std::string x = " groups=[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]";
  const std::string y = " groups=[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]";
  const std::string prog = two_all_reduces("[1024, 8192]", x, "[512, 8192]", y);
  const double tx = ring_all_reduce(4, kV, 4.5e10, 1e-6);
  const double ty = ring_all_reduce(4, kV / 2, 4.5e10, 1e-6);
  const std::vector<std::string> torus{"system.topology=[4,4]", "system.wraparound=[true,true]"};
  auto serial_sets = torus;
  serial_sets.push_back("ici.concurrent_collectives=1");
  for (SpmdMode mode : {SpmdMode::kSymmetric, SpmdMode::kFull}) {
    const json together = run_spmd("v5e", torus, {prog}, mode);
    const json serial = run_spmd("v5e", serial_sets, {prog}, mode);
    EXPECT_NEAR(step_of(together), std::max(tx, ty), 0.03 * tx) << spmd_mode_name(mode);
    EXPECT_NEAR(step_of(serial), tx + ty, 0.03 * (tx + ty)) << spmd_mode_name(mode);
    // The per-op rows still sum to the step.
    EXPECT_TRUE(together["finished"].get<bool>());
    EXPECT_NEAR(together["attributed"].get<double>(), step_of(together), 1e-9);
  }
}

TEST(Spmd, ConcurrentAllReducesOnOneRingShareItsBandwidthButOverlapTheirLatency) {
  // v5e ring of 8 with h = 20 us, two all-reduces of V = 4 MiB each:
  // bandwidth term B = 2·7/8·V/(2w) = 81.6 us, latency term L = 2·4·h =
  // 160 us. Alone B + L; together every link carries both, so 2B + L =
  // 323.1 us; one at a time 2(B + L) = 483.1 us.
  const double v = 4.0 * 1024 * 1024;
  const double b = 2 * 7.0 / 8.0 * v / 9e10;
  const double l = 8 * 20e-6;
  EXPECT_NEAR(ring_all_reduce(8, v, 4.5e10, 20e-6), b + l, 1e-12);
  const std::string prog = two_all_reduces("[1024, 2048]", "", "[1024, 2048]", "");
  auto sets = kRing8;
  sets.push_back("ici.hop_latency=20 us");
  auto serial_sets = sets;
  serial_sets.push_back("ici.concurrent_collectives=1");
  const json sym = run_spmd("v5e", sets, {prog}, SpmdMode::kSymmetric);
  const json full = run_spmd("v5e", sets, {prog}, SpmdMode::kFull);
  const json serial = run_spmd("v5e", serial_sets, {prog}, SpmdMode::kSymmetric);
  EXPECT_NEAR(step_of(sym), 2 * b + l, 0.05 * (2 * b + l));
  EXPECT_NEAR(step_of(full), step_of(sym), 0.02 * step_of(sym));
  EXPECT_NEAR(step_of(serial), 2 * (b + l), 0.05 * 2 * (b + l));
  // The collective table keeps each one's time alone.
  ASSERT_EQ(sym["rows"].size(), 1u);
  EXPECT_NEAR(sym["rows"][0]["time"].get<double>(), b + l, 0.05 * (b + l));
  EXPECT_EQ(sym["rows"][0]["count"], 2);
  EXPECT_TRUE(sym["finished"].get<bool>());
  EXPECT_TRUE(full["finished"].get<bool>());
  EXPECT_NEAR(sym["attributed"].get<double>(), step_of(sym), 1e-9);
  EXPECT_NEAR(full["attributed"].get<double>(), step_of(full), 1e-9);
}

}  // namespace
}  // namespace tpusim
