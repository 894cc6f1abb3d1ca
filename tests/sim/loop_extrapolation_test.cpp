// Steady-state loop extrapolation (sim/loop_extrapolation.h): every case runs
// the same program with simulation.loops = full and = extrapolate (each in a
// forked child: one SystemC elaboration per process) and checks the stated
// bound (docs/lowering.md, "Control flow"): the extrapolated step time is
// within simulation.loop_tolerance (relative) of the full simulation's, and
// exact up to rounding when the iterations are identical from the start.
#include "sim/loop_extrapolation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "common/isolated.h"
#include "app/report/report.h"
#include "sim/simulate.h"
#include "sim/spmd.h"

namespace tpusim {
namespace {

using nlohmann::json;

// --- the steady-state test, without a simulation ---------------------------

BoundarySample sample(double issue_us, double retired_us, double busy, std::uint64_t state = 7) {
  return BoundarySample{issue_us * 1e-6, retired_us * 1e-6, busy, state};
}

TEST(SteadyState, EqualIterationsInTheSameStateAreSteady) {
  EXPECT_TRUE(steady_state(sample(10, 9, 100), sample(12, 11, 150), sample(14, 13, 200), 1e-3));
  // 2.001 us after 2.000 us: 5e-4 relative, within 1e-3 but not within 1e-4.
  EXPECT_TRUE(steady_state(sample(10, 9, 100), sample(12, 11, 150), sample(14.001, 13.001, 200), 1e-3));
  EXPECT_FALSE(steady_state(sample(10, 9, 100), sample(12, 11, 150), sample(14.001, 13.001, 200), 1e-4));
}

TEST(SteadyState, ChangedStateSlowerRetirementOrBusierUnitsAreNot) {
  // The queues filled up meanwhile (the sequencer is still running ahead).
  EXPECT_FALSE(steady_state(sample(10, 9, 100), sample(12, 11, 150, 7), sample(14, 13, 200, 8), 1e-3));
  // Issue is periodic but retirement falls behind (a backlog grows).
  EXPECT_FALSE(steady_state(sample(10, 9, 100), sample(12, 10, 150), sample(14, 11, 200), 1e-3));
  // The units did more work in the second iteration.
  EXPECT_FALSE(steady_state(sample(10, 9, 100), sample(12, 11, 150), sample(14, 13, 210), 1e-3));
  // No time passed: nothing to extrapolate from.
  EXPECT_FALSE(steady_state(sample(10, 9, 100), sample(10, 9, 100), sample(10, 9, 100), 1e-3));
}

TEST(LoopPolicy, SamplesOnlyLoopsWithIterationsLeftAfterDetection) {
  SimulationConfig c;
  EXPECT_FALSE(LoopPolicy::from(c).samples(1000));  // full by default
  c.loops = LoopMode::kExtrapolate;
  c.loop_warmup = 2;
  // Earliest detection after warm-up 2 + 2 compared iterations; one must remain.
  EXPECT_FALSE(LoopPolicy::from(c).samples(4));
  EXPECT_TRUE(LoopPolicy::from(c).samples(5));
}

// --- full vs extrapolated simulations --------------------------------------

// The figures compared between the two modes.
json summarize(const SimResult& r, const ChipConfig& chip) {
  json j;
  j["finished"] = r.finished;
  j["seconds"] = r.seconds;
  double attributed = 0, flops = 0, busy_s = 0;
  std::uint64_t instructions = 0;
  for (const auto& p : r.provenance) {
    attributed += p.stats.attributed_s;
    flops += p.stats.flops;
    busy_s += p.stats.busy_s;
    instructions += p.stats.instructions;
  }
  j["attributed_s"] = attributed;
  j["prov_flops"] = flops;
  j["prov_busy_s"] = busy_s;
  j["prov_instructions"] = instructions;
  double max_util = 0;
  for (const auto& [name, st] : r.stats.all()) {
    if (name.ends_with(".busy_cycles") && name.find(".core0.") != std::string::npos) {
      max_util = std::max(max_util, st.value / (r.seconds * chip.clock));
    }
  }
  j["max_unit_utilization"] = max_util;
  j["instructions"] = r.stats.value("chip0.core0.instructions");
  j["vpu_flops"] = r.stats.value("chip0.core0.vpu.flops");
  j["mxu_flops"] = r.stats.sum("chip0.core0.mxu", ".flops");
  j["hbm_read_bytes"] = r.stats.value("chip0.hbm.read_bytes");
  j["hbm_busy_s"] = r.stats.value("chip0.hbm.busy_s");
  j["loops"] = json::array();
  for (const auto& l : r.loops) {
    j["loops"].push_back({{"loop", l.label},
                          {"instances", l.instances},
                          {"total", l.total_iterations},
                          {"simulated", l.simulated_iterations},
                          {"iteration_s", l.iteration_s}});
  }
  j["notes"] = r.notes;
  return j;
}

// Runs a .tasm text or an .hlo file (lowered) on one chip, or on `system`
// chips (SPMD, full mode) when given.
json run_case(const std::string& source, const std::string& loops, std::vector<std::string> sets = {},
              const std::string& chip = "v5e", std::int64_t spmd_chips = 0) {
  sets.push_back("simulation.loops=" + loops);
  if (spmd_chips > 0) {
    sets.push_back(fmt::format("system.topology=[{}]", spmd_chips));
    sets.push_back("system.wraparound=[true]");
  }
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        auto cfg = load_config(chip, sets);
        if (!cfg.ok()) return json{{"error", format_all(cfg.errors())}}.dump();
        isa::Program program;
        if (source.ends_with(".hlo")) {
          auto parsed = hlo::parse_hlo_file(source);
          if (parsed.modules.empty() || !parsed.modules[0].ok()) return json{{"error", "parse " + source}}.dump();
          auto lowered = lower::lower_for_chip(*parsed.modules[0].value(), cfg->chip);
          if (!lowered.ok()) return json{{"error", format_all(lowered.errors())}}.dump();
          if (lowered->size() > 1) {  // megacore: one program per TensorCore
            std::vector<isa::Program> cores;
            for (auto& l : *lowered) cores.push_back(std::move(l.program));
            auto r = simulate_cores(cfg->chip, std::move(cores));
            if (!r.ok()) return json{{"error", format_all(r.errors())}}.dump();
            return summarize(*r, cfg->chip).dump();
          }
          program = std::move(lowered->front().program);
        } else {
          auto p = isa::assemble(source, "loop.tasm");
          if (!p.ok()) return json{{"error", format_all(p.errors())}}.dump();
          program = std::move(p).value();
        }
        if (spmd_chips > 0) {
          std::vector<isa::Program> programs;
          programs.push_back(std::move(program));
          SpmdOptions o;
          o.mode = SpmdMode::kFull;
          auto r = simulate_spmd(cfg->chip, std::move(programs), o);
          if (!r.ok()) return json{{"error", format_all(r.errors())}}.dump();
          json j = summarize(r->sim, cfg->chip);
          j["blocked"] = r->sim.blocked;
          for (const auto& c : r->collectives) j["collective_counts"].push_back(c.count);
          for (const auto& t : r->chip_times) j["chip_seconds"].push_back(t.seconds);
          j["max_compute_s"] = 0.0;
          for (const auto& t : r->chip_times) {
            j["max_compute_s"] = std::max(j["max_compute_s"].get<double>(), t.compute_s);
            j["comm_s"] = t.communication_s;
          }
          return j.dump();
        }
        auto r = simulate(cfg->chip, std::move(program));
        if (!r.ok()) return json{{"error", format_all(r.errors())}}.dump();
        return summarize(*r, cfg->chip).dump();
      },
      error);
  EXPECT_TRUE(out.has_value()) << error;
  if (!out) return json{{"error", error}};
  json j = json::parse(*out);
  EXPECT_FALSE(j.contains("error")) << j.value("error", "");
  EXPECT_TRUE(j.value("finished", false)) << j.dump();
  return j;
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Every report figure of the extrapolated run stays consistent: per-op rows
// sum to the step, no unit is busier than the step.
void expect_consistent(const json& x) {
  EXPECT_NEAR(x["attributed_s"].get<double>(), x["seconds"].get<double>(), 1e-9 * x["seconds"].get<double>());
  EXPECT_LE(x["max_unit_utilization"].get<double>(), 1.0 + 1e-9);
}

// A loop whose iterations are identical from the first: each DMAs 512 KiB
// from HBM, runs two VPU ops on it and drains (barrier), so every iteration
// starts from the same (empty) state. Extrapolation must reproduce the full
// simulation up to floating-point rounding.
const char* kIdentical =
    ".buffer a hbm f32 [128, 1024]\n.buffer av vmem f32 [128, 1024]\n.buffer bv vmem f32 [128, 1024]\n"
    ".semaphore s\n.provenance \"loop\"\nrepeat count=1000\n.provenance \"copy\"\n"
    "dma.start dst=av src=a sem=s\nsem.wait sem=s\n.provenance \"math\"\nvpu.mul dst=bv a=av b=av\n"
    "vpu.add dst=bv a=bv b=av\nbarrier\n.provenance \"loop\"\nend\n";

TEST(LoopExtrapolation, IdenticalIterationsExtrapolateExactly) {
  const json full = run_case(kIdentical, "full");
  const json x = run_case(kIdentical, "extrapolate");
  ASSERT_EQ(x["loops"].size(), 1u) << x.dump();
  EXPECT_EQ(x["loops"][0]["loop"], "loop");
  EXPECT_EQ(x["loops"][0]["total"], 1000);
  // Warm-up 2, then two iterations compared: detection after iteration 4.
  EXPECT_EQ(x["loops"][0]["simulated"], 4);
  EXPECT_TRUE(full["loops"].empty());
  for (const char* k : {"seconds", "attributed_s", "prov_busy_s", "hbm_busy_s"}) {
    EXPECT_NEAR(x[k].get<double>(), full[k].get<double>(), 1e-9 * full[k].get<double>()) << k;
  }
  // Counts are exact: 1000 x 3 unit instructions (the DMA and two VPU ops;
  // sem.wait and barrier stay in the sequencer), 1000 x 2 x 128 x 1024 VPU
  // FLOPs, 1000 x 512 KiB read.
  EXPECT_EQ(x["instructions"], full["instructions"]);
  EXPECT_DOUBLE_EQ(x["instructions"].get<double>(), 1000.0 * 3);
  EXPECT_DOUBLE_EQ(x["vpu_flops"].get<double>(), 1000.0 * 2 * 128 * 1024);
  EXPECT_DOUBLE_EQ(x["hbm_read_bytes"].get<double>(), 1000.0 * 512 * 1024);
  EXPECT_EQ(x["prov_instructions"], full["prov_instructions"]);
  expect_consistent(x);
  ASSERT_FALSE(x["notes"].empty());
  EXPECT_NE(x["notes"].back().get<std::string>().find("4 of 1000 iterations simulated"), std::string::npos);
}

// A software-pipelined loop: the DMA of the next chunk overlaps the VPU work
// on the current one (two slots), so iterations overlap and the first ones
// differ (the pipeline fills). Within the stated bound of the full run.
const char* kPipelined =
    ".buffer a hbm f32 [256, 1024]\n.buffer s0 vmem f32 [256, 1024]\n.buffer s1 vmem f32 [256, 1024]\n"
    ".buffer o vmem f32 [256, 1024]\n.semaphore d0\n.semaphore d1\n"
    "dma.start dst=s0 src=a sem=d0\n"
    "repeat count=400\n"
    "dma.start dst=s1 src=a sem=d1\nsem.wait sem=d0\nvpu.mul dst=o a=s0 b=s0\neup.exp dst=o src=o\n"
    "dma.start dst=s0 src=a sem=d0\nsem.wait sem=d1\nvpu.mul dst=o a=s1 b=s1\neup.exp dst=o src=o\n"
    "end\nsem.wait sem=d0\n";

TEST(LoopExtrapolation, PipelinedLoopIsWithinTheToleranceOfTheFullRun) {
  const json full = run_case(kPipelined, "full");
  const json x = run_case(kPipelined, "extrapolate");
  ASSERT_EQ(x["loops"].size(), 1u) << x.dump();
  EXPECT_LT(x["loops"][0]["simulated"].get<int>(), 400);
  EXPECT_LE(rel(x["seconds"], full["seconds"]), 1e-3);
  EXPECT_LE(rel(x["hbm_read_bytes"], full["hbm_read_bytes"]), 1e-3);
  EXPECT_LE(rel(x["prov_busy_s"], full["prov_busy_s"]), 1e-3);
  EXPECT_EQ(x["instructions"], full["instructions"]);
  expect_consistent(x);
}

// Nested loops: the inner loop is extrapolated in every outer iteration the
// simulator runs, and the outer loop once its (already extrapolated)
// iterations are steady.
TEST(LoopExtrapolation, NestedLoopsAreEachExtrapolated) {
  const std::string prog =
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n.buffer yv vmem f32 [128, 128]\n"
      ".provenance \"outer\"\nrepeat count=60\nmxu.load_weights src=wv\n.provenance \"inner\"\n"
      "repeat count=200\nmxu.matmul lhs=xv\nend\n.provenance \"outer\"\nmxu.pop dst=yv\nend\n";
  const json full = run_case(prog, "full");
  const json x = run_case(prog, "extrapolate");
  ASSERT_EQ(x["loops"].size(), 2u) << x.dump();
  EXPECT_LT(x["loops"][1]["simulated"].get<int>(), 60);  // the outer loop, extrapolated last
  EXPECT_LE(rel(x["seconds"], full["seconds"]), 1e-3);
  // 60 x 200 matmuls of 2 x 128^3 FLOPs.
  EXPECT_NEAR(x["mxu_flops"].get<double>(), 60.0 * 200 * 2 * 128 * 128 * 128, 1e-9 * full["mxu_flops"].get<double>());
  expect_consistent(x);
}

// Multi-chip: every chip must skip the same iterations (their all-reduces
// match by order), and the fabric's counts include the skipped ones.
TEST(LoopExtrapolation, FullModeChipsSkipTogetherAndCountSkippedCollectives) {
  const std::string prog =
      ".buffer a hbm bf16 [256, 1024]\n.buffer b hbm bf16 [256, 1024]\n.buffer av vmem bf16 [256, 1024]\n"
      ".semaphore s\n.semaphore d\nrepeat count=50\ndma.start dst=av src=a sem=d\nsem.wait sem=d\n"
      "vpu.mul dst=av a=av b=av\ncollective.all_reduce dst=b src=a sem=s\nsem.wait sem=s\nend\n";
  const json full = run_case(prog, "full", {}, "v5e", 4);
  const json x = run_case(prog, "extrapolate", {}, "v5e", 4);
  ASSERT_EQ(x["loops"].size(), 1u) << x.dump();
  EXPECT_LT(x["loops"][0]["simulated"].get<int>(), 50);
  EXPECT_TRUE(x["blocked"].empty());
  EXPECT_LE(rel(x["seconds"], full["seconds"]), 1e-3);
  for (const auto& t : x["chip_seconds"]) EXPECT_LE(rel(t.get<double>(), full["seconds"]), 1e-3);
  ASSERT_EQ(x["collective_counts"].size(), 1u);
  EXPECT_EQ(x["collective_counts"][0], 50);
  EXPECT_EQ(full["collective_counts"][0], 50);
  EXPECT_LE(rel(x["max_compute_s"], full["max_compute_s"]), 1e-3);
  EXPECT_LE(rel(x["comm_s"], full["comm_s"]), 1e-3);
  expect_consistent(x);
}

// A corpus module whose while loop has no known_trip_count: the trip count
// (2000) comes from the induction pattern, and extrapolation stays within the
// bound of the full simulation.
TEST(LoopExtrapolation, CorpusScanLoopWithinTheBound) {
  const std::string path = std::string(TPUSIM_SHARED_DIR) +
                           "/refs/hlo-corpus/files/openxla_xla__xla__backends__cpu__benchmarks__hlo__bench_scan_N2000_M3.hlo";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no HLO corpus at " << path;
  const json full = run_case(path, "full");
  const json x = run_case(path, "extrapolate");
  ASSERT_EQ(x["loops"].size(), 1u) << x.dump();
  EXPECT_EQ(x["loops"][0]["total"], 2000);
  EXPECT_LT(x["loops"][0]["simulated"].get<int>(), 100);
  EXPECT_LE(rel(x["seconds"], full["seconds"]), 1e-3);
  EXPECT_EQ(x["instructions"], full["instructions"]);
  expect_consistent(x);
}

// A megacore chip (v5p): each TensorCore runs its own program, and the two
// meet at every section's core.barrier. The HLO while around those sections
// is extrapolated on both cores at once (core 1 follows core 0), within the
// bound of the full run; the kernels' own loops run in full.
TEST(LoopExtrapolation, MegacoreWhileLoopSkipsOnBothCores) {
  const std::string text = R"(HloModule loop
body {
  p = (s32[], bf16[1024,1024], bf16[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  n = s32[] add(i, one)
  x = bf16[1024,1024] get-tuple-element(p), index=1
  w = bf16[1024,1024] get-tuple-element(p), index=2
  d = bf16[1024,1024] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = bf16[1024,1024] tanh(d)
  ROOT t = (s32[], bf16[1024,1024], bf16[1024,1024]) tuple(n, y, w)
}
cond {
  p = (s32[], bf16[1024,1024], bf16[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant(300)
  ROOT lt = pred[] compare(i, k), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  t = (s32[], bf16[1024,1024], bf16[1024,1024]) tuple(z, a, b)
  ROOT r = (s32[], bf16[1024,1024], bf16[1024,1024]) while(t), condition=cond, body=body
}
)";
  const auto path = std::filesystem::temp_directory_path() / fmt::format("tpusim_megacore_loop_{}.hlo", ::getpid());
  {
    std::ofstream(path) << text;
  }
  const json full = run_case(path.string(), "full", {}, "v5p");
  const json x = run_case(path.string(), "extrapolate", {}, "v5p");
  std::filesystem::remove(path);
  ASSERT_EQ(x["loops"].size(), 1u) << x.dump();
  EXPECT_EQ(x["loops"][0]["total"], 300);
  EXPECT_LT(x["loops"][0]["simulated"].get<int>(), 20);
  EXPECT_TRUE(full["loops"].empty());
  EXPECT_LE(rel(x["seconds"], full["seconds"]), 1e-3);
  EXPECT_LE(rel(x["hbm_read_bytes"], full["hbm_read_bytes"]), 1e-3);
  // 300 dots of 2 x 1024^3 FLOPs over both cores' MXUs (core 0's counters
  // hold its share; the step's provenance rows hold both).
  EXPECT_NEAR(x["prov_flops"].get<double>(), full["prov_flops"].get<double>(), 1e-6 * full["prov_flops"].get<double>());
  EXPECT_GE(x["prov_flops"].get<double>(), 300.0 * 2 * 1024 * 1024 * 1024);
  // Per-op rows follow core 0's timeline (which ends at the chip's last
  // barrier, a little before core 1 in full mode too): they match the full run's.
  EXPECT_LE(rel(x["attributed_s"], full["attributed_s"]), 1e-3);
  EXPECT_LE(x["max_unit_utilization"].get<double>(), 1.0 + 1e-9);
}

}  // namespace
}  // namespace tpusim
