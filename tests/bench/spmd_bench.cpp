// Multi-chip simulation speed (issue 7): the shipped 8-way tensor-parallel
// transformer layer in symmetric mode on a 16x16x16 (4096-chip) v5p torus,
// and in full mode on a 4x4x4 (64-chip) v5p mesh. Each run is a forked child
// (one SystemC elaboration per process) that times lowering + simulation and
// reports its peak resident memory; fork costs are not counted (manual time).
#include <benchmark/benchmark.h>
#include <chrono>
#include <fmt/format.h>
#include <sstream>
#include <sys/resource.h>

#include "common/config_loader.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "sim/isolated.h"
#include "sim/spmd.h"

namespace tpusim {
namespace {

struct SpmdMeasured {
  double wall_s = 0;
  double step_s = 0;
  double max_rss_mib = 0;
  double network_runs = 0;
};

SpmdMeasured measure_layer(const std::vector<std::string>& sets, SpmdMode mode) {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        const auto t0 = std::chrono::steady_clock::now();
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
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!r.ok() || !r->sim.finished) return "error";
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        return fmt::format("{} {} {} {}", wall, r->sim.seconds, static_cast<double>(ru.ru_maxrss) / 1024.0,
                           r->network_runs);
      },
      error);
  SpmdMeasured m;
  if (!out || *out == "error") return m;
  std::istringstream in(*out);
  in >> m.wall_s >> m.step_s >> m.max_rss_mib >> m.network_runs;
  return m;
}

void report(benchmark::State& state, const std::vector<std::string>& sets, SpmdMode mode) {
  for (auto _ : state) {
    const SpmdMeasured m = measure_layer(sets, mode);
    if (m.wall_s <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["step_time_us"] = m.step_s * 1e6;
    state.counters["max_rss_MiB"] = m.max_rss_mib;
    state.counters["network_runs"] = m.network_runs;
  }
}

// Target (issue 7): <= 30 s wall on one core and <= 2 GiB.
void BM_SymmetricTransformerLayer4096Chips(benchmark::State& state) {
  report(state, {"system.topology=[16,16,16]", "system.wraparound=[true,true,true]"}, SpmdMode::kSymmetric);
}
BENCHMARK(BM_SymmetricTransformerLayer4096Chips)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

// Target (issue 7): <= 60 s wall.
void BM_FullTransformerLayer64Chips(benchmark::State& state) {
  report(state, {"system.topology=[4,4,4]"}, SpmdMode::kFull);
}
BENCHMARK(BM_FullTransformerLayer64Chips)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace tpusim
