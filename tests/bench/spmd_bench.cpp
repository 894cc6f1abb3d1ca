// Multi-chip simulation cost and its growth with the chip count: the shipped 8-way tensor-parallel transformer layer
// (workloads/hlo/sharded/) on v5p systems of 1, 8, 64, 256 and 4096 chips,
// in symmetric mode (chip 0 simulated, every collective on the whole
// network) and in full mode (every chip simulated) up to 64 chips; full mode
// at 256 chips (~100 s) only with BENCH_LONG=1 in the environment.
// Systems: 1 = the single-chip path (`tpusim run` without --system: the
// collectives take the placeholder estimate), 8 = 2x2x2 (axes of 2 never
// wrap), 64 = 4x4x4, 256 = 8x8x4, 4096 = 16x16x16, the last three tori.
// Each run is a forked child (one SystemC elaboration per process) that times
// lowering + simulation and reports its peak resident memory; fork costs are
// not counted (manual time).
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <sstream>

#include "common/config_loader.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "common/isolated.h"
#include "sim/simulate.h"
#include "sim/spmd.h"
#include "tests/bench/proc_status.h"

namespace tpusim {
namespace {

struct SpmdMeasured {
  double wall_s = 0;
  double step_s = 0;
  double max_rss_mib = 0;
  double network_runs = 0;
};

std::vector<std::string> system_sets(std::int64_t chips) {
  const char* const wrap = "system.wraparound=[true,true,true]";
  switch (chips) {
    case 1: return {};
    case 8: return {"system.topology=[2,2,2]"};
    case 64: return {"system.topology=[4,4,4]", wrap};
    case 256: return {"system.topology=[8,8,4]", wrap};
    case 4096: return {"system.topology=[16,16,16]", wrap};
    default: return {"unsupported chip count"};
  }
}

SpmdMeasured measure_layer(std::int64_t chips, SpmdMode mode) {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        bench::reset_peak_rss();
        const auto t0 = std::chrono::steady_clock::now();
        auto cfg = load_config("v5p", system_sets(chips));
        auto parsed = hlo::parse_hlo_file(std::string(TPUSIM_SOURCE_DIR) +
                                          "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo");
        if (!cfg.ok() || parsed.modules.empty() || !parsed.modules[0].ok()) return "error";
        auto lowered = lower::lower_module(*parsed.modules[0].value(), cfg->chip);
        if (!lowered.ok()) return "error";
        double step_s = 0, network_runs = 0;
        if (chips == 1) {
          auto r = simulate(cfg->chip, std::move(lowered->program));
          if (!r.ok() || !r->finished) return "error";
          step_s = r->seconds;
        } else {
          std::vector<isa::Program> programs;
          programs.push_back(std::move(lowered->program));
          SpmdOptions o;
          o.mode = mode;
          auto r = simulate_spmd(cfg->chip, std::move(programs), o);
          if (!r.ok() || !r->sim.finished) return "error";
          step_s = r->sim.seconds;
          network_runs = static_cast<double>(r->network_runs);
        }
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return fmt::format("{} {} {} {}", wall, step_s, bench::proc_status_bytes("VmHWM:") / (1024.0 * 1024.0),
                           network_runs);
      },
      error);
  SpmdMeasured m;
  if (!out || *out == "error") return m;
  std::istringstream in(*out);
  in >> m.wall_s >> m.step_s >> m.max_rss_mib >> m.network_runs;
  return m;
}

void report(benchmark::State& state, SpmdMode mode) {
  const std::int64_t chips = state.range(0);
  for (auto _ : state) {
    const SpmdMeasured m = measure_layer(chips, mode);
    if (m.wall_s <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["growth_size"] = static_cast<double>(chips);
    state.counters["step_time_us"] = m.step_s * 1e6;
    state.counters["max_rss_MiB"] = m.max_rss_mib;
    state.counters["network_runs"] = m.network_runs;
  }
}

// Targets: 4096 chips <= 30 s wall on one core and <= 2 GiB.
// Growth: one chip simulation (constant) plus one network run per distinct
// collective, whose packet events grow with the chips: slope <= 1.
void BM_SymmetricChips(benchmark::State& state) { report(state, SpmdMode::kSymmetric); }
BENCHMARK(BM_SymmetricChips)
    ->ArgName("chips")->Arg(1)->Arg(8)->Arg(64)->Arg(256)->Arg(4096)
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

// Target: 64 chips <= 60 s wall. Growth: one TensorCore simulation
// per chip plus network events that grow with the chips: slope ~1.
void BM_FullChips(benchmark::State& state) { report(state, SpmdMode::kFull); }
BENCHMARK(BM_FullChips)
    ->ArgName("chips")
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (std::int64_t chips : {1, 8, 64}) b->Arg(chips);
      const char* long_runs = std::getenv("BENCH_LONG");
      if (long_runs != nullptr && std::string(long_runs) == "1") b->Arg(256);
    })
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace tpusim
