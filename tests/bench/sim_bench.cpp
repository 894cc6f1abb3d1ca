// Simulator speed and the chip model's headline efficiencies.
// Each simulation runs in a forked child (SystemC elaborates once per
// process); the child times simulate() alone and reports back, so fork and
// exec costs are not counted (manual time).
#include <benchmark/benchmark.h>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "common/config_loader.h"
#include "isa/assembler.h"
#include "common/isolated.h"
#include "sim/simulate.h"
#include "tests/bench/proc_status.h"

namespace tpusim {
namespace {

struct Measured {
  double wall_s = 0;
  double sim_s = 0;
  double instructions = 0;
  double mxu_flops = 0;
  double hbm_bytes = 0;
  double peak_flops = 0;
  double hbm_bw = 0;
  double static_instructions = 0;
  double held_bytes = 0;      // peak resident memory while simulating, above the start (program + simulator)
  double assemble_bytes = 0;  // peak resident memory while assembling, above the start
};

using bench::proc_status_bytes;

Measured measure(const std::string& tasm, const std::string& chip = "v5e") {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        auto cfg = load_config(chip);
        // Peak resident memory per phase: "clear_refs 5" resets VmHWM to the
        // current RSS (Linux), so VmHWM after a phase is that phase's peak.
        auto reset_peak = [] { bench::reset_peak_rss(); };
        reset_peak();
        const double rss0 = proc_status_bytes("VmRSS:");
        auto prog = isa::assemble(tasm, "bench.tasm");
        if (!cfg.ok() || !prog.ok()) return "error";
        const double static_instructions = static_cast<double>(prog->code.size());
        const double assembled = std::max(0.0, proc_status_bytes("VmHWM:") - rss0);
        reset_peak();
        const auto t0 = std::chrono::steady_clock::now();
        auto r = simulate(cfg->chip, std::move(prog).value());
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!r.ok() || !r->finished) return "error";
        const double held = std::max(0.0, proc_status_bytes("VmHWM:") - rss0);
        const DerivedFigures d = derive(cfg->chip);
        return fmt::format("{} {} {} {} {} {} {} {} {} {}", wall, r->seconds, r->stats.value("chip0.core0.instructions"),
                           r->stats.sum("chip0.core0.mxu", ".flops"),
                           r->stats.value("chip0.hbm.read_bytes") + r->stats.value("chip0.hbm.write_bytes"),
                           d.peak_flops_bf16 / static_cast<double>(cfg->chip.tensorcores), cfg->chip.hbm.bandwidth,
                           static_instructions, held, assembled);
      },
      error);
  Measured m;
  if (!out || *out == "error") return m;
  std::istringstream in(*out);
  in >> m.wall_s >> m.sim_s >> m.instructions >> m.mxu_flops >> m.hbm_bytes >> m.peak_flops >> m.hbm_bw >>
      m.static_instructions >> m.held_bytes >> m.assemble_bytes;
  return m;
}

// A mixed MXU/VPU/DMA loop: per iteration a 4 KiB DMA into VMEM, a 128-row
// matmul, a VPU add and a transcendental, with a semaphore wait every iteration.
// `unrolled`: the body written out `iterations` times instead of a repeat
// loop, so every dynamic instruction is also an instruction the program holds.
std::string mixed_program(std::int64_t iterations, bool unrolled = false) {
  const std::string body =
      "  dma.start dst=dst src=src sem=s\n  mxu.matmul lhs=xv\n  vpu.add dst=a a=a b=b\n  eup.exp dst=b src=b\n"
      "  sem.wait sem=s\n";
  std::string loop;
  if (unrolled) {
    loop.reserve(body.size() * static_cast<std::size_t>(iterations));
    for (std::int64_t i = 0; i < iterations; ++i) loop += body;
  } else {
    loop = fmt::format("repeat count={}\n{}end\n", iterations, body);
  }
  return ".buffer src hbm f32 [8, 128]\n.buffer dst vmem f32 [8, 128]\n"
         ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [128, 128]\n.buffer yv vmem f32 [128, 128]\n"
         ".buffer a vmem f32 [8, 128]\n.buffer b vmem f32 [8, 128]\n.semaphore s\n"
         "mxu.load_weights src=wv\n" +
         loop + "mxu.pop dst=yv\n";
}

void BM_SimulatedInstructionsPerSecond(benchmark::State& state) {
  const std::string prog = mixed_program(state.range(0));
  for (auto _ : state) {
    const Measured m = measure(prog);
    if (m.wall_s <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["instructions"] = m.instructions;
    state.counters["instructions_per_s"] = m.instructions / m.wall_s;
    // Peak memory above the start per dynamic instruction: the simulator
    // keeps only what is in flight, so this falls as the run grows.
    state.counters["bytes_per_instruction"] = m.held_bytes / m.instructions;
    state.counters["growth_size"] = m.instructions;  // cost growth: wall vs instructions simulated
  }
}
// 50 k ... 2 M dynamic instructions (40x): the cost-growth series of the
// single-chip simulator (expected slope 1: event-driven, a bounded number of
// events per instruction, only in-flight state held).
BENCHMARK(BM_SimulatedInstructionsPerSecond)
    ->Arg(10000)->Arg(25000)->Arg(50000)->Arg(100000)->Arg(200000)->Arg(400000)
    ->UseManualTime()->Unit(benchmark::kMillisecond);

// The same program unrolled (no repeat): 5 instructions per iteration held
// by the program (sem.wait included). Memory per instruction held (target:
// <= 200 bytes) is the peak resident memory while simulating, above the
// process before the program was assembled, over the program's instruction
// count: the program itself plus the simulator's state. The assembler's own
// transient peak is reported beside it.
void BM_BytesPerInstructionHeld(benchmark::State& state) {
  const std::string prog = mixed_program(state.range(0), /*unrolled=*/true);
  for (auto _ : state) {
    const Measured m = measure(prog);
    if (m.wall_s <= 0 || m.static_instructions <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["instructions"] = m.static_instructions;
    state.counters["instructions_per_s"] = m.instructions / m.wall_s;
    state.counters["bytes_per_instruction"] = m.held_bytes / m.static_instructions;
    state.counters["assembler_peak_bytes_per_instruction"] = m.assemble_bytes / m.static_instructions;
  }
}
BENCHMARK(BM_BytesPerInstructionHeld)->Arg(60000)->Arg(100000)->UseManualTime()->Unit(benchmark::kMillisecond);

// A long bf16 matmul stream on all four v5e MXUs with double-buffered weights:
// 64 weight tiles per MXU, each streaming 8192 rows (a 8192 x 8192 x 8192 GEMM
// is 4096 such tiles; this is its per-core inner loop, operands in VMEM).
void BM_MxuPeakFraction(benchmark::State& state) {
  std::string prog =
      ".buffer wv vmem bf16 [128, 128]\n.buffer xv vmem bf16 [8192, 128]\n.buffer yv vmem f32 [8192, 128]\n";
  for (int mxu = 0; mxu < 4; ++mxu) prog += fmt::format("mxu.load_weights mxu={} src=wv\n", mxu);
  prog += fmt::format("repeat count={}\n", state.range(0));
  for (int mxu = 0; mxu < 4; ++mxu) {
    prog += fmt::format("  mxu.matmul mxu={} lhs=xv\n  mxu.load_weights mxu={} src=wv\n", mxu, mxu);
  }
  prog += "end\n";
  for (auto _ : state) {
    const Measured m = measure(prog);
    if (m.wall_s <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["fraction_of_peak"] = m.mxu_flops / (m.sim_s * m.peak_flops);
  }
}
BENCHMARK(BM_MxuPeakFraction)->Arg(64)->UseManualTime()->Unit(benchmark::kMillisecond);

// A streaming copy of 256 MiB HBM -> VMEM -> HBM in 4 MiB tiles on four DMA
// engines (two in, two out, double-buffered).
void BM_HbmStreamFraction(benchmark::State& state) {
  const std::string prog =
      ".buffer src hbm f32 [65536, 1024]\n.buffer dst hbm f32 [65536, 1024]\n"
      ".buffer b0 vmem f32 [1024, 1024]\n.buffer b1 vmem f32 [1024, 1024]\n"
      ".semaphore in0\n.semaphore in1\n.semaphore out0\n.semaphore out1\n"
      "dma.start dst=b0 src=src[0:1024, 0:1024] sem=in0\n"
      "dma.start dst=b1 src=src[1024:2048, 0:1024] sem=in1\n"
      "repeat count=32\n"
      "  sem.wait sem=in0\n  dma.start dst=dst[0:1024, 0:1024] src=b0 sem=out0\n"
      "  sem.wait sem=in1\n  dma.start dst=dst[1024:2048, 0:1024] src=b1 sem=out1\n"
      "  sem.wait sem=out0\n  dma.start dst=b0 src=src[2048:3072, 0:1024] sem=in0\n"
      "  sem.wait sem=out1\n  dma.start dst=b1 src=src[3072:4096, 0:1024] sem=in1\n"
      "end\nsem.wait sem=in0\nsem.wait sem=in1\n";
  for (auto _ : state) {
    const Measured m = measure(prog);
    if (m.wall_s <= 0) {
      state.SkipWithError("simulation failed");
      return;
    }
    state.SetIterationTime(m.wall_s);
    state.counters["fraction_of_hbm_bw"] = m.hbm_bytes / (m.sim_s * m.hbm_bw);
  }
}
BENCHMARK(BM_HbmStreamFraction)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpusim
