// A fused element-wise chain keeps its intermediate values in vector
// registers (core.vpu.vregs): only its first op loads from VMEM and only its
// last stores, so the VPU's ALUs (core.vpu.alus_per_lane) set the pace of
// the ops between. Without room in the register file every op loads and
// stores through VMEM, as before registers were modelled.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "common/isolated.h"
#include "common/units.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/simulate.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

constexpr int kOps = 24;

// p -> x0 = p * 1.5 -> x1 = x0 + 1.5 -> ... -> x23 (the root), f32[1024,1024].
std::string chain_module() {
  std::string t = "HloModule chain\nfused {\n  p = f32[1024,1024] parameter(0)\n  c = f32[] constant(1.5)\n"
                  "  b = f32[1024,1024] broadcast(c), dimensions={}\n";
  std::string prev = "p";
  for (int i = 0; i < kOps; ++i) {
    t += std::string(i + 1 == kOps ? "  ROOT " : "  ") + "x" + std::to_string(i) + " = f32[1024,1024] " +
         (i % 2 == 0 ? "multiply(" : "add(") + prev + ", b)\n";
    prev = fmt::format("x{}", i);
  }
  return t + "}\nENTRY e {\n  a = f32[1024,1024] parameter(0)\n"
             "  ROOT f = f32[1024,1024] fusion(a), kind=kLoop, calls=fused\n}\n";
}

ChipConfig chip(std::int64_t alus, std::int64_t vregs) {
  ChipConfig c = tpusim::testing::preset("v5e");
  c.core.vpu.alus_per_lane = alus;
  if (vregs > 0) c.core.vpu.vregs = vregs;
  return c;
}

TEST(RegisterChain, IntermediatesAreRegistersAndTheSlotsVmem) {
  const ChipConfig c = chip(4, 0);
  auto m = hlo::parse_hlo_module(chain_module(), "chain.hlo");
  ASSERT_TRUE(m.ok());
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  EXPECT_TRUE(isa::verify(l->program, c).ok());
  int vregs = 0, vmem = 0;
  for (const auto& b : l->program.buffers) {
    vregs += b.space == isa::MemSpace::kVreg ? 1 : 0;
    vmem += b.space == isa::MemSpace::kVmem ? 1 : 0;
  }
  // Two chain values alternate, plus the broadcast constant; the input and
  // output chunks keep two VMEM slots each (double-buffered DMAs).
  EXPECT_EQ(vregs, 3);
  EXPECT_EQ(vmem, 4);
}

struct ChainRun {
  double vpu_cycles = -1, seconds = 0;
  std::int64_t chunk_rows = 0;
};

// Lowered and simulated in a child process (one simulation per process).
ChainRun run(std::int64_t alus, std::int64_t vregs) {
  std::string error;
  const auto out = run_isolated(
      [&]() -> std::string {
        const ChipConfig c = chip(alus, vregs);
        auto m = hlo::parse_hlo_module(chain_module(), "chain.hlo");
        if (!m.ok()) return "error parse";
        auto l = lower_module(**m, c);
        if (!l.ok()) return "error " + format_all(l.errors());
        std::int64_t rows = 0;
        for (const auto& b : l->program.buffers) {
          if (b.name == "in0.s0") rows = b.rows();
        }
        auto r = simulate(c, l->program);
        if (!r.ok() || !r->finished) return "error simulate";
        std::ostringstream os;
        os.precision(17);
        os << r->stats.value("chip0.core0.vpu.busy_cycles") << " " << r->seconds << " " << rows;
        return os.str();
      },
      error);
  EXPECT_TRUE(out && !out->starts_with("error")) << error << (out ? *out : "");
  ChainRun result;
  if (out && !out->starts_with("error")) {
    std::istringstream is(*out);
    is >> result.vpu_cycles >> result.seconds >> result.chunk_rows;
  }
  return result;
}

// Per chunk of r rows (v = r/8 x 1024/128 f32 vregs per value), from the
// VPU's slots (v5e: 3 loads and 1 store per cycle, A ALUs per lane):
//   first op:  max(ceil(v/A), ceil(v/3))   loads the chunk's input
//   22 ops:    ceil(v/A) each              registers only
//   last op:   max(ceil(v/A), v)           stores into the output slot
std::int64_t chain_cycles(std::int64_t alus, std::int64_t chunk_rows) {
  const std::int64_t v = chunk_rows / 8 * (1024 / 128), chunks = 1024 / chunk_rows;
  const std::int64_t alu = ceil_div(v, alus);
  return chunks * (std::max(alu, ceil_div(v, 3)) + (kOps - 2) * alu + std::max(alu, v));
}

TEST(RegisterChain, AlusPerLaneSetThePaceOfTheChain) {
  double last_seconds = 0;
  for (const std::int64_t alus : {1, 2, 4, 8}) {
    SCOPED_TRACE(alus);
    const ChainRun r = run(alus, 0);
    ASSERT_GT(r.chunk_rows, 0);
    EXPECT_DOUBLE_EQ(r.vpu_cycles, static_cast<double>(chain_cycles(alus, r.chunk_rows)));
    // At 1 ALU the chain is VPU-bound (24 x 1024 vregs at 1.5 GHz = 16.4 us
    // against 8 MiB over 819 GB/s = 10.2 us): a second ALU speeds it up.
    if (alus == 2) {
      EXPECT_LT(r.seconds, 0.8 * last_seconds);
    } else if (alus > 2) {
      EXPECT_LE(r.seconds, last_seconds);
    }
    last_seconds = r.seconds;
  }
}

TEST(RegisterChain, WithoutRoomInTheRegisterFileEveryOpStores) {
  // core.vpu.vregs = 2: both go to the input's and output's strips, so the
  // values spill to VMEM: every op stores its v vregs (1 per cycle), at any
  // ALU count.
  const ChainRun r = run(8, 2);
  ASSERT_GT(r.chunk_rows, 0);
  const std::int64_t v = r.chunk_rows / 8 * (1024 / 128), chunks = 1024 / r.chunk_rows;
  EXPECT_DOUBLE_EQ(r.vpu_cycles, static_cast<double>(chunks * kOps * v));
}

}  // namespace
}  // namespace tpusim::lower
