// Huge dots (LowerOptions::dot_chunk_max_steps): a dot of more MXU steps
// than the limit is equal chunks of its own block grid inside `repeat`, so
// its program stays small and its simulated time is the unrolled one's; a
// dot that cannot be chunked stops at the instruction limit before its
// program takes memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sstream>
#include <tuple>

#include "common/isolated.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/simulate.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

using ::testing::HasSubstr;

std::string dot_module(std::int64_t m, std::int64_t k, std::int64_t n) {
  const auto s = [](std::int64_t v) { return std::to_string(v); };
  return "HloModule d\nENTRY e {\n  a = bf16[" + s(m) + "," + s(k) + "] parameter(0)\n  b = bf16[" + s(k) + "," + s(n) +
         "] parameter(1)\n  ROOT d = bf16[" + s(m) + "," + s(n) +
         "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n";
}

struct DotRun {
  double seconds = 0;
  std::size_t instructions = 0;
  std::string tiling;  // the report's tilings, ';' between
  std::int64_t vmem_end = 0;  // the end of the highest VMEM buffer (offset + bytes)
};

// From a run's tilings: MXU steps (blocks x k steps, times the chunk
// count) and pipeline restarts (one per chunk and per unchunked piece).
struct Steps {
  std::int64_t steps = 0, restarts = 0;
};
Steps count_steps(const std::string& tilings) {
  Steps s;
  std::stringstream list(tilings);
  for (std::string t; std::getline(list, t, ';');) {
    const auto field = [&](const std::string& key) -> std::int64_t {
      const auto at = t.find(" " + key + "=");
      return at == std::string::npos ? 0 : std::stoll(t.substr(at + key.size() + 2));
    };
    const auto up = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
    std::int64_t copies = 1;
    if (const auto at = t.find(" chunks="); at != std::string::npos) {
      const std::string grid = t.substr(at + 8);
      copies = std::stoll(grid) * std::stoll(grid.substr(grid.find('x') + 1));
    }
    s.steps += copies * up(field("M"), field("tm")) * up(field("N"), field("tn")) * up(field("K"), field("tk"));
    s.restarts += copies;
  }
  return s;
}

// Lowered (with `limit` steps per chunk) and simulated in a child process.
DotRun lower_and_run(const std::string& text, std::int64_t limit) {
  std::string error;
  const auto out = run_isolated(
      [&]() -> std::string {
        const ChipConfig c = tpusim::testing::preset("v5e");
        auto m = hlo::parse_hlo_module(text, "d.hlo");
        LowerOptions o;
        o.dot_chunk_max_steps = limit;
        auto l = lower_module(**m, c, o);
        if (!l.ok()) return "error " + format_all(l.errors());
        const std::size_t n = l->program.code.size();
        const auto verified = isa::verify(l->program, c);
        if (!verified.ok()) return "error verify " + format_all(verified.diagnostics()).substr(0, 500);
        std::string tiling;
        for (const auto& t : l->report.tilings) tiling += (tiling.empty() ? "" : ";") + t;
        auto r = simulate(c, l->program);
        if (!r.ok() || !r->finished) return "error simulate";
        std::ostringstream os;
        os.precision(17);
        std::int64_t end = 0;
        for (const auto& b : l->program.buffers) {
          if (b.space != isa::MemSpace::kVmem) continue;
          end = std::max(end, b.offset + isa::dtype_bytes(b.dtype, b.shape[0] * b.shape[1]));
        }
        os << r->seconds << " " << n << " " << end << " " << tiling;
        return os.str();
      },
      error);
  EXPECT_TRUE(out && !out->starts_with("error")) << error << (out ? *out : "");
  DotRun run;
  if (out && !out->starts_with("error")) {
    std::istringstream is(*out);
    is >> run.seconds >> run.instructions >> run.vmem_end;
    std::getline(is, run.tiling);
  }
  return run;
}

// What a pipeline restart costs at most: one step's operand tiles in, its
// matmuls, and one output block out through HBM (bf16, 2 bytes an
// element), plus an HBM latency each way (v5e).
double restart_seconds(const std::string& tiling) {
  const auto field = [&](const std::string& key) {
    return std::stod(tiling.substr(tiling.find(" " + key + "=") + key.size() + 2));
  };
  const ChipConfig c = tpusim::testing::preset("v5e");
  const double tm = field("tm"), tn = field("tn"), tk = field("tk");
  const double peak = static_cast<double>(c.core.mxu.count * c.core.mxu.rows * c.core.mxu.cols) * 2 * c.clock;
  return 2 * (tm * tk + tk * tn + tm * tn) / (c.hbm.bandwidth * c.hbm.efficiency) + 2 * tm * tn * tk / peak +
         2 * c.hbm.latency;
}

TEST(DotChunks, ChunkedDotTakesTheUnrolledTimePlusARestartPerChunk) {
  // [4096 x 2048] x [2048 x 4096] on v5e, in chunks of a half and of an
  // eighth of its k steps (whatever tiles the cost model picks).
  const std::string text = dot_module(4096, 2048, 4096);
  const DotRun full = lower_and_run(text, 1 << 20);
  EXPECT_THAT(full.tiling, ::testing::Not(HasSubstr("chunks=")));
  const std::int64_t steps = count_steps(full.tiling).steps;
  ASSERT_GE(steps, 16) << full.tiling;
  for (const std::int64_t limit : {steps / 2, steps / 8}) {
    const DotRun chunked = lower_and_run(text, limit);
    const auto at = chunked.tiling.find(" chunks=");
    ASSERT_NE(at, std::string::npos) << chunked.tiling;
    const std::string grid = chunked.tiling.substr(at + 8);
    const std::int64_t chunks = std::stoll(grid) * std::stoll(grid.substr(grid.find('x') + 1));
    // Chunks of at most `limit` steps each, covering every step.
    EXPECT_GE(chunks * limit, steps) << chunked.tiling;
    EXPECT_EQ(count_steps(chunked.tiling).steps, steps) << chunked.tiling;
    // One chunk's program: the instructions shrink with the chunk count.
    EXPECT_LT(chunked.instructions * static_cast<std::size_t>(chunks) / 2, full.instructions) << limit;
    // Each chunk fills and drains its own pipeline.
    EXPECT_GE(chunked.seconds, full.seconds) << limit;
    EXPECT_LE(chunked.seconds - full.seconds, static_cast<double>(chunks) * restart_seconds(full.tiling)) << limit;
  }
}

TEST(DotChunks, AHugeDotOfNoMultipleOfItsTilesIsASmallProgram) {
  // 1e6 is no multiple of the power-of-two tiles: row chunks in a loop, the
  // leftover strips chunked again; 4.7e8 MXU steps (unrolled, the program
  // grew past 9 GB) in a program well under max_instructions whose loops
  // multiply out to the whole dot. (Simulating every iteration would take
  // hours: the run asks for --loops extrapolate, tests/app/cli.)
  auto m = hlo::parse_hlo_module(dot_module(1000000, 1000000, 1000000), "huge.hlo");
  ASSERT_TRUE(m.ok());
  const ChipConfig c = tpusim::testing::preset("v5e");
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  EXPECT_LT(l->program.code.size(), 1'000'000u);
  const Steps s = count_steps([&] {
    std::string all;
    for (const auto& t : l->report.tilings) all += (all.empty() ? "" : ";") + t;
    return all;
  }());
  // Every block of the tiling, once: the chunks and strips tile the output.
  const auto first = l->report.tilings.front();
  const auto field = [&](const std::string& key) {
    return std::stoll(first.substr(first.find(" " + key + "=") + key.size() + 2));
  };
  const auto up = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  EXPECT_EQ(s.steps, up(1000000, field("tm")) * up(1000000, field("tn")) * up(1000000, field("tk")));
}

// Dots whose extents are no multiple of a chunk, and transposed operands:
// the chunks cover the largest whole region of blocks, the strips left over
// are the remaining blocks at their place; the total is the unrolled time
// within what the pipeline restarts cost.
TEST(DotChunks, StripsAndTransposedOperandsTakeTheUnrolledTime) {
  const auto module = [](std::int64_t m, std::int64_t k, std::int64_t n, bool lhs_t, bool rhs_t) {
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    const std::string a = lhs_t ? s(k) + "," + s(m) : s(m) + "," + s(k);
    const std::string b = rhs_t ? s(n) + "," + s(k) : s(k) + "," + s(n);
    return "HloModule d\nENTRY e {\n  a = bf16[" + a + "] parameter(0)\n  b = bf16[" + b +
           "] parameter(1)\n  ROOT d = bf16[" + s(m) + "," + s(n) + "] dot(a, b), lhs_contracting_dims={" +
           (lhs_t ? "0" : "1") + "}, rhs_contracting_dims={" + (rhs_t ? "1" : "0") + "}\n}\n";
  };
  for (const auto& [m, k, n, lt, rt] :
       {std::tuple{7000, 2048, 6000, false, false}, std::tuple{6144, 1024, 5000, true, false},
        std::tuple{5000, 1024, 6144, false, true}}) {
    const std::string text = module(m, k, n, lt, rt);
    const DotRun full = lower_and_run(text, 1 << 20);
    const Steps fs = count_steps(full.tiling);
    // Chunks of an eighth of the dot's k steps.
    const DotRun chunked = lower_and_run(text, std::max<std::int64_t>(2, fs.steps / 8));
    const Steps cs = count_steps(chunked.tiling);
    ASSERT_EQ(fs.restarts, 1) << full.tiling;
    EXPECT_THAT(chunked.tiling, HasSubstr("chunks=")) << chunked.tiling;
    // The chunks and strips cover the unrolled dot's blocks exactly, in a
    // program of a fraction of the unrolled one.
    EXPECT_EQ(cs.steps, fs.steps) << chunked.tiling;
    EXPECT_LT(chunked.instructions * 3, full.instructions) << chunked.tiling;
    // The chunk and the strips run one after another in the same VMEM.
    EXPECT_LE(chunked.vmem_end, full.vmem_end) << chunked.tiling;
    // Each restart fills and drains a pipeline (restart_seconds).
    EXPECT_LE(std::abs(chunked.seconds - full.seconds), static_cast<double>(cs.restarts) * restart_seconds(full.tiling))
        << chunked.tiling;
  }
}

}  // namespace
}  // namespace tpusim::lower

// Stream kernels of many chunks (LowerOptions::stream_repeat_min_chunks):
// the steady middle as `repeat` of a pair of chunks takes the unrolled time.
namespace tpusim::lower {
namespace {

TEST(StreamRepeat, ManyChunksAsALoopTakeTheUnrolledTime) {
  // f32[8192, 4096] x 2 + add: 128 MiB per array in chunks of about
  // stream_chunk_bytes (1 MiB): over a hundred chunks, looped above 8.
  const std::string text = R"(HloModule s
ENTRY e {
  a = f32[8192,4096] parameter(0)
  b = f32[8192,4096] parameter(1)
  ROOT c = f32[8192,4096] add(a, b)
})";
  const auto run = [&](std::int64_t min_chunks) {
    std::string error;
    const auto out = run_isolated(
        [&]() -> std::string {
          const ChipConfig c = tpusim::testing::preset("v5e");
          auto m = hlo::parse_hlo_module(text, "s.hlo");
          LowerOptions o;
          o.stream_repeat_min_chunks = min_chunks;
          auto l = lower_module(**m, c, o);
          if (!l.ok()) return "error";
          const std::size_t n = l->program.code.size();
        const auto verified = isa::verify(l->program, c);
        if (!verified.ok()) return "error verify " + format_all(verified.diagnostics()).substr(0, 500);
          auto r = simulate(c, l->program);
          if (!r.ok() || !r->finished) return "error";
          std::ostringstream os;
          os.precision(17);
          os << r->seconds << " " << n;
          return os.str();
        },
        error);
    EXPECT_TRUE(out && *out != "error") << error;
    std::pair<double, std::size_t> v{0, 0};
    if (out && *out != "error") std::istringstream(*out) >> v.first >> v.second;
    return v;
  };
  const auto unrolled = run(1 << 30);
  const auto looped = run(8);
  EXPECT_LT(looped.second * 10, unrolled.second);  // a few chunks' instructions instead of all
  // HBM-bound: 3 x 128 MiB at v5e's 819 GB/s is 492 us either way.
  EXPECT_NEAR(looped.first, unrolled.first, 0.005 * unrolled.first);
  EXPECT_GT(unrolled.first, 3.0 * 128 * 1024 * 1024 / 819e9);
}

}  // namespace
}  // namespace tpusim::lower
