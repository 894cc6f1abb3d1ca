// Compiler speed (lowering time per 1k HLO instructions) and the
// end-to-end `tpusim run model.hlo` cost of the shipped transformer layer
// (target: compile + simulate in <= 2 s wall on one core, <= 1 GiB peak).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <fmt/format.h>
#include <sstream>
#include <string>

#include "common/config_loader.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "common/isolated.h"
#include "sim/simulate.h"

namespace tpusim {
namespace {

const char* const kModules[] = {
    "workloads/hlo/transformer_layer_fwd.after_optimizations.hlo",
    "workloads/hlo/transformer_layer_fwd.before_optimizations.hlo",
    "workloads/hlo/mlp_train_step.hlo",
    "workloads/hlo/decode_step.hlo",
};

std::size_t hlo_instructions(const hlo::Module& m) {
  std::size_t n = 0;
  for (const hlo::Computation* c : m.computations()) n += c->instructions().size();
  return n;
}

// Lowering only (the module is parsed once, outside the timed loop).
void BM_LowerPer1kHloInstructions(benchmark::State& state) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/" + kModules[state.range(0)];
  auto parsed = hlo::parse_hlo_file(path);
  auto cfg = load_config("v5e");
  if (parsed.modules.empty() || !parsed.modules[0].ok() || !cfg.ok()) {
    state.SkipWithError("cannot parse the module or load v5e");
    return;
  }
  const hlo::Module& m = *parsed.modules[0].value();
  std::size_t isa_instructions = 0;
  double total_s = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto l = lower::lower_module(m, cfg->chip);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    total_s += s;
    if (!l.ok()) {
      state.SkipWithError("lowering failed");
      return;
    }
    isa_instructions = l->program.code.size();
    benchmark::DoNotOptimize(l);
  }
  const double n = static_cast<double>(hlo_instructions(m));
  state.SetLabel(std::string(kModules[state.range(0)]).substr(std::string("workloads/hlo/").size()));
  state.counters["hlo_instructions"] = n;
  state.counters["isa_instructions"] = static_cast<double>(isa_instructions);
  // Milliseconds per lowering / (HLO instructions / 1000).
  state.counters["ms_per_1k_hlo"] = 1e3 * total_s / static_cast<double>(state.iterations()) / (n / 1000.0);
}
BENCHMARK(BM_LowerPer1kHloInstructions)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMillisecond);

// Cost growth of lowering: a synthetic module whose entry is a
// chain of `blocks` x (dot, add, tanh, multiply) on bf16[256,256] (4 HLO
// instructions per block, each reading the previous result and the
// parameters), so the HLO instruction count scales while every op stays the
// same size. Lowering visits each instruction once and emits a bounded number
// of ISA instructions per tile, so the expected growth is linear (slope 1).
std::string chain_module(std::int64_t blocks) {
  std::string t = "HloModule growth_chain\n\nENTRY %main (p0: bf16[256,256], p1: bf16[256,256]) -> bf16[256,256] {\n"
                  "  %p0 = bf16[256,256]{1,0} parameter(0)\n  %p1 = bf16[256,256]{1,0} parameter(1)\n";
  std::string prev = "%p0";
  for (std::int64_t b = 0; b < blocks; ++b) {
    t += fmt::format(
        "  %d{0} = bf16[256,256]{{1,0}} dot(bf16[256,256]{{1,0}} {1}, bf16[256,256]{{1,0}} %p1), "
        "lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n"
        "  %a{0} = bf16[256,256]{{1,0}} add(bf16[256,256]{{1,0}} %d{0}, bf16[256,256]{{1,0}} %p0)\n"
        "  %t{0} = bf16[256,256]{{1,0}} tanh(bf16[256,256]{{1,0}} %a{0})\n"
        "  %m{0} = bf16[256,256]{{1,0}} multiply(bf16[256,256]{{1,0}} %t{0}, bf16[256,256]{{1,0}} %p1)\n",
        b, prev);
    prev = fmt::format("%m{}", b);
  }
  t += fmt::format("  ROOT %out = bf16[256,256]{{1,0}} copy(bf16[256,256]{{1,0}} {})\n}}\n", prev);
  return t;
}

void BM_LowerGrowth(benchmark::State& state) {
  auto parsed = hlo::parse_hlo(chain_module(state.range(0)), "growth_chain.hlo");
  auto cfg = load_config("v5e");
  if (parsed.modules.empty() || !parsed.modules[0].ok() || !cfg.ok()) {
    state.SkipWithError("cannot parse the synthetic module or load v5e");
    return;
  }
  const hlo::Module& m = *parsed.modules[0].value();
  std::size_t isa_instructions = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto l = lower::lower_module(m, cfg->chip);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!l.ok()) {
      state.SkipWithError("lowering failed");
      return;
    }
    isa_instructions = l->program.code.size();
    benchmark::DoNotOptimize(l);
  }
  state.counters["growth_size"] = static_cast<double>(hlo_instructions(m));
  state.counters["isa_instructions"] = static_cast<double>(isa_instructions);
}
// 4 HLO instructions per block: 103 ... 1603 HLO instructions (16x).
BENCHMARK(BM_LowerGrowth)->Arg(25)->Arg(50)->Arg(100)->Arg(200)->Arg(400)->UseManualTime()->Unit(benchmark::kMillisecond);

// parse + lower + verify + simulate, as `tpusim run model.hlo` does, in a
// forked child (one SystemC elaboration per process); the child reports its
// wall time and peak RSS.
void BM_RunTransformerLayer(benchmark::State& state) {
  const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/" + kModules[0];
  double rss_bytes = 0, step_s = 0;
  for (auto _ : state) {
    std::string error;
    auto out = run_isolated(
        [&]() -> std::string {
          const auto t0 = std::chrono::steady_clock::now();
          auto cfg = load_config("v5e");
          auto parsed = hlo::parse_hlo_file(path);
          if (!cfg.ok() || parsed.modules.empty() || !parsed.modules[0].ok()) return "error";
          auto l = lower::lower_module(*parsed.modules[0].value(), cfg->chip);
          if (!l.ok() || !isa::verify(l->program, cfg->chip).ok()) return "error";
          auto r = simulate(cfg->chip, std::move(l->program));
          if (!r.ok() || !r->finished) return "error";
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          struct rusage u {};
          getrusage(RUSAGE_SELF, &u);
          return fmt::format("{} {} {}", wall, static_cast<double>(u.ru_maxrss) * 1024.0, r->seconds);
        },
        error);
    if (!out || *out == "error") {
      state.SkipWithError("the run failed");
      return;
    }
    double wall = 0;
    std::istringstream in(*out);
    in >> wall >> rss_bytes >> step_s;
    state.SetIterationTime(wall);
  }
  state.counters["peak_rss_bytes"] = rss_bytes;
  state.counters["simulated_step_s"] = step_s;
}
BENCHMARK(BM_RunTransformerLayer)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace tpusim
