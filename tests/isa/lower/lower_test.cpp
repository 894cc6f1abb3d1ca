// isa/lower: hand-written modules with counts derived in comments, verifier
// cleanliness on the corpus, and a large dot simulated against its roofline.
#include "isa/lower/lower.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_loader.h"
#include "tests/isa/lower/preset.h"
#include "isa/hlo/analysis.h"
#include "isa/hlo/parser.h"
#include "isa/verifier.h"
#include "common/isolated.h"
#include "sim/simulate.h"
#include "tests/isa/lower/while_module.h"

namespace tpusim::lower {
namespace {

ChipConfig chip(const char* name = "v5e") { return tpusim::testing::preset(name); }

struct Counts {
  std::int64_t dmas = 0, dma_bytes = 0, vpu = 0, eup = 0, xlu = 0, matmuls = 0, loads = 0, pops = 0, repeats = 0,
               collectives = 0;
};

Counts count(const isa::Program& p) {
  Counts c;
  for (const auto& i : p.code) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, isa::DmaStart>) {
            ++c.dmas;
            c.dma_bytes += isa::dtype_bytes(p.buffers[o.src.buffer].dtype, std::int64_t{o.src.rows} * o.src.cols);
          } else if constexpr (std::is_same_v<T, isa::VpuElementwise> || std::is_same_v<T, isa::VpuReduce>) {
            ++c.vpu;
          } else if constexpr (std::is_same_v<T, isa::EupUnary>) {
            ++c.eup;
          } else if constexpr (std::is_same_v<T, isa::XluReduce> || std::is_same_v<T, isa::XluTranspose> ||
                               std::is_same_v<T, isa::XluPermute>) {
            ++c.xlu;
          } else if constexpr (std::is_same_v<T, isa::MxuMatmul>) {
            ++c.matmuls;
          } else if constexpr (std::is_same_v<T, isa::MxuLoadWeights>) {
            ++c.loads;
          } else if constexpr (std::is_same_v<T, isa::MxuPop>) {
            ++c.pops;
          } else if constexpr (std::is_same_v<T, isa::Repeat>) {
            ++c.repeats;
          } else if constexpr (std::is_same_v<T, isa::Collective>) {
            ++c.collectives;
          }
        },
        i.op);
  }
  return c;
}

Lowered lower_text(const std::string& text, const ChipConfig& c, LowerOptions opt = {}) {
  auto m = hlo::parse_hlo_module(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  auto r = lower_module(**m, c, opt);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return std::move(r).value();
}

isa::VerifyReport expect_verifies(const isa::Program& p, const ChipConfig& c) {
  auto rep = isa::verify(p, c);
  EXPECT_TRUE(rep.ok()) << format_all(rep.diagnostics()).substr(0, 4000);
  return rep;
}

TEST(Lower, ElementwiseAddStreamsInDoubleBufferedChunks) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  a = f32[1024,1024] parameter(0)
  b = f32[1024,1024] parameter(1)
  ROOT s = f32[1024,1024] add(a, b)
})",
                            c);
  // Chunk rows = 1 MiB / (1024 cols x 4 B) = 256 -> 4 chunks; each chunk
  // DMAs two inputs in and the sum out (12 DMAs, 3 x 4 MiB) and runs one
  // vpu.add written straight into the output staging tile.
  const Counts k = count(l.program);
  EXPECT_EQ(k.dmas, 12);
  EXPECT_EQ(k.dma_bytes, 3 * 4 * 1024 * 1024);
  EXPECT_EQ(k.vpu, 4);
  for (const auto& i : l.program.code) EXPECT_EQ(l.program.provenance(i), "s");
  expect_verifies(l.program, c);
}

// The ops of a program other than mxu.fence, in order.
std::vector<isa::Op> without_fences(const isa::Program& p) {
  std::vector<isa::Op> out;
  for (const auto& i : p.code) {
    if (!std::holds_alternative<isa::MxuFence>(i.op)) out.push_back(i.op);
  }
  return out;
}
std::size_t fences(const isa::Program& p) {
  return static_cast<std::size_t>(std::count_if(p.code.begin(), p.code.end(), [](const isa::Instruction& i) {
    return std::holds_alternative<isa::MxuFence>(i.op);
  }));
}

// core.mxu.step_sync: each k step of a dot starts with an mxu.fence, and
// nothing else changes. Tiles pinned at 256 x 512 x 512 on a 1024 x 2048
// x 1024 dot: 4 x 4 output blocks of 2 k steps, 32 steps, 32 fences.
TEST(Lower, StepSyncStartsEveryDotStepWithAnMxuFence) {
  const std::string text = R"(HloModule m
ENTRY e {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,2048] parameter(1)
  ROOT d = bf16[1024,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  LowerOptions o;
  o.dot_tile_m = 256;
  o.dot_tile_n = 512;
  o.dot_tile_k = 512;
  ChipConfig c = chip();
  c.core.mxu.step_sync = false;
  const auto free = lower_text(text, c, o);
  EXPECT_EQ(fences(free.program), 0u);
  c.core.mxu.step_sync = true;
  const auto sync = lower_text(text, c, o);
  EXPECT_EQ(fences(sync.program), 32u);
  EXPECT_TRUE(without_fences(sync.program) == without_fences(free.program));
  expect_verifies(sync.program, c);
}

// core.sequencer.kernel_overhead: every section (lowered op) starts with a
// `delay` of round(overhead x clock) cycles; at 0 (the nominal presets) the
// program has no delay at all.
TEST(Lower, KernelOverheadStartsEverySectionWithADelay) {
  const std::string text = R"(HloModule m
ENTRY e {
  a = f32[1024,1024] parameter(0)
  b = f32[1024,1024] parameter(1)
  s = f32[1024,1024] add(a, b)
  c = f32[1024,1024] copy(s)
  ROOT d = f32[1024,1024] dot(c, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  const auto delays = [](const isa::Program& p) {
    std::vector<std::int64_t> out;
    for (const auto& i : p.code) {
      if (const auto* d = std::get_if<isa::Delay>(&i.op)) out.push_back(d->cycles);
    }
    return out;
  };
  ChipConfig c = chip();
  ASSERT_EQ(c.core.sequencer.kernel_overhead, 0);
  const auto nominal = lower_text(text, c);
  EXPECT_TRUE(delays(nominal.program).empty());

  c.core.sequencer.kernel_overhead = 1.2345e-6;
  const std::int64_t cycles = std::llround(1.2345e-6 * c.clock);  // 1851.75 -> 1852 at 1.5 GHz
  const auto l = lower_text(text, c);
  EXPECT_GE(l.report.sections, 2u);
  EXPECT_EQ(delays(l.program), std::vector<std::int64_t>(l.report.sections, cycles));
  // Each is the first instruction of its op, and the rest is the nominal program.
  std::set<std::string> started;
  std::size_t nominal_pc = 0;
  for (const auto& i : l.program.code) {
    const std::string prov(l.program.provenance(i));
    if (started.insert(prov).second) {
      EXPECT_TRUE(std::holds_alternative<isa::Delay>(i.op)) << prov;
      continue;
    }
    ASSERT_LT(nominal_pc, nominal.program.code.size());
    EXPECT_TRUE(i.op == nominal.program.code[nominal_pc++].op) << prov;
  }
  EXPECT_EQ(nominal_pc, nominal.program.code.size());
  EXPECT_EQ(started.size(), l.report.sections);
  expect_verifies(l.program, c);
}

TEST(Lower, SoftmaxFusionUsesXluReduceAndEup) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
max_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
fused {
  p = f32[512,1024] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[512] reduce(p, ninf), dimensions={1}, to_apply=max_f32
  b = f32[512,1024] broadcast(mx), dimensions={0}
  d = f32[512,1024] subtract(p, b)
  ROOT e = f32[512,1024] exponential(d)
}
ENTRY e {
  a = f32[512,1024] parameter(0)
  ROOT f = f32[512,1024] fusion(a), kind=kLoop, calls=fused
})",
                            c);
  // 2 MiB per array -> chunks of 256 rows -> 2 chunks. Per chunk: one
  // xlu.reduce (max over lanes), one vpu.sub (broadcast column), one eup.exp
  // into the output tile; DMAs: 2 in + 2 out, 4 MiB total.
  const Counts k = count(l.program);
  EXPECT_EQ(k.xlu, 2);
  EXPECT_EQ(k.vpu, 2);
  EXPECT_EQ(k.eup, 2);
  EXPECT_EQ(k.dmas, 4);
  EXPECT_EQ(k.dma_bytes, 2 * 2 * 1024 * 1024);
  expect_verifies(l.program, c);
}

TEST(Lower, DotTilesToTheMxusAndCoversAllMacs) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  a = bf16[1024,2048] parameter(0)
  b = bf16[2048,512] parameter(1)
  ROOT d = bf16[1024,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                            c);
  // Every (128-row K slice, 128-col N slice) pair is streamed once per M
  // part: sum over matmuls of rows x K x N = M x K x N MACs.
  std::int64_t macs = 0;
  for (const auto& i : l.program.code) {
    if (const auto* mm = std::get_if<isa::MxuMatmul>(&i.op)) macs += std::int64_t{mm->lhs.rows} * mm->lhs.cols * 128;
  }
  EXPECT_EQ(macs, std::int64_t{1024} * 2048 * 512);
  const Counts k = count(l.program);
  EXPECT_EQ(k.loads, k.matmuls);
  EXPECT_GE(k.pops, 4);
  // Each operand at least once, the result once.
  EXPECT_GE(k.dma_bytes, 2 * (1024 * 2048 + 2048 * 512 + 1024 * 512));
  ASSERT_EQ(l.report.tilings.size(), 1u);
  expect_verifies(l.program, c);
}

TEST(Lower, TransposedAndBatchedDotOperands) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  a = bf16[4,256,512] parameter(0)
  b = bf16[4,384,512] parameter(1)
  ROOT d = f32[4,256,384] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}
})",
                            c);
  const Counts k = count(l.program);
  EXPECT_GT(k.xlu, 0);  // rhs [B, N, K] is transposed in VMEM by the XLU
  std::int64_t macs = 0;
  for (const auto& i : l.program.code) {
    if (const auto* mm = std::get_if<isa::MxuMatmul>(&i.op)) {
      const auto& w = l.program.buffers[mm->lhs.buffer];
      (void)w;
      macs += std::int64_t{mm->lhs.rows} * mm->lhs.cols;
    }
  }
  // rows x K summed over matmuls = B x M x K x (N / 128 column slices) = 4 x 256 x 512 x 3.
  EXPECT_EQ(macs, std::int64_t{4} * 256 * 512 * 3);
  expect_verifies(l.program, c);
}

TEST(Lower, WhileWithKnownTripCountBecomesRepeat) {
  const ChipConfig c = chip();
  const auto l = lower_text(tpusim::testing::while_module(tpusim::testing::kKnownTripCount10),
                            c);
  const Counts k = count(l.program);
  EXPECT_EQ(k.repeats, 1);
  const auto rep = isa::verify(l.program, c);
  EXPECT_TRUE(rep.ok()) << format_all(rep.diagnostics()).substr(0, 3000);
  EXPECT_GE(rep.summary.executed_instructions, 10u * 3u);
}

// The same loop without backend_config: the trip count comes from the
// induction variable (i = 0 .. 9 step 1 against `i < 10`: 10 iterations).
TEST(Lower, WhileTripCountFromTheInductionPattern) {
  const ChipConfig c = chip();
  const auto l = lower_text(tpusim::testing::while_module(""), c);
  std::int64_t repeat = -1;
  for (const auto& i : l.program.code) {
    if (const auto* r = std::get_if<isa::Repeat>(&i.op)) repeat = r->count;
  }
  EXPECT_EQ(repeat, 10);
  EXPECT_TRUE(l.report.approximations.empty()) << l.report.approximations.front();
}

// A KV-cache-like update: bf16[4,64,8,128] with a new row per sequence at a
// run-time position, bf16[4,1,8,128]. The cache has no other user, so it is
// updated in place. Its only partial dim is the position, so the update is
// one strided region: per sequence 8*128 contiguous elements, 64*8*128
// apart, written by one DMA as the 4 x 1024 tile at column 0 (start index 0)
// of the cache's [4, 64*8*128] view; only the update's 4*8*128*2 = 8 KiB is
// read; the result is the cache's own buffer.
TEST(Lower, DynamicUpdateSliceOfASoleUserIsInPlace) {
  const ChipConfig c = chip();
  const std::string text = R"(HloModule m
ENTRY e {
  cache = bf16[4,64,8,128] parameter(0)
  row = bf16[4,1,8,128] parameter(1)
  pos = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT u = bf16[4,64,8,128] dynamic-update-slice(cache, row, z, pos, z, z)
})";
  const auto l = lower_text(text, c);
  std::vector<isa::TileRef> into_cache;
  std::int64_t read = 0;
  for (const auto& i : l.program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& dst = l.program.buffers[d->dst.buffer];
      const auto& src = l.program.buffers[d->src.buffer];
      if (dst.name == "cache") into_cache.push_back(d->dst);
      if (src.space == isa::MemSpace::kHbm) read += isa::dtype_bytes(src.dtype, std::int64_t{d->src.rows} * d->src.cols);
    }
  }
  ASSERT_EQ(into_cache.size(), 0u);  // through the cache's view, not its own rows
  std::vector<std::pair<isa::TileRef, isa::Buffer>> into_view;
  for (const auto& i : l.program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& dst = l.program.buffers[d->dst.buffer];
      if (dst.space == isa::MemSpace::kHbm) into_view.emplace_back(d->dst, dst);
    }
  }
  ASSERT_EQ(into_view.size(), 1u);
  EXPECT_EQ(into_view[0].second.shape, (std::vector<std::int64_t>{4, 64 * 8 * 128}));
  EXPECT_EQ(l.program.buffers[l.program.storage(into_view[0].first.buffer)].name, "cache");
  EXPECT_EQ(into_view[0].first.row, 0);
  EXPECT_EQ(into_view[0].first.rows, 4);
  EXPECT_EQ(into_view[0].first.col, 0);
  EXPECT_EQ(into_view[0].first.cols, 8 * 128);
  EXPECT_EQ(read, 4 * 8 * 128 * 2);
  for (const auto& b : l.program.buffers) EXPECT_NE(b.name, "u") << "the result aliases the cache";
  expect_verifies(l.program, c);

  // With a second user of the cache the update cannot overwrite it: a copy
  // of the whole cache (4*64*8*128*2 = 512 KiB read) is streamed instead.
  const auto copy = lower_text(R"(HloModule m
ENTRY e {
  cache = bf16[4,64,8,128] parameter(0)
  row = bf16[4,1,8,128] parameter(1)
  pos = s32[] parameter(2)
  z = s32[] constant(0)
  u = bf16[4,64,8,128] dynamic-update-slice(cache, row, z, pos, z, z)
  n = bf16[4,64,8,128] negate(cache)
  ROOT t = (bf16[4,64,8,128], bf16[4,64,8,128]) tuple(u, n)
})",
                               c);
  std::int64_t cache_read = 0;
  for (const auto& i : copy.program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& src = copy.program.buffers[d->src.buffer];
      if (src.name == "cache" && copy.program.provenance(i) == "u") {
        cache_read += isa::dtype_bytes(src.dtype, std::int64_t{d->src.rows} * d->src.cols);
      }
    }
  }
  EXPECT_EQ(cache_read, 4 * 64 * 8 * 128 * 2);
}

TEST(Lower, UnsupportedOpsAreApproximatedAndLabelled) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  a = f32[1024] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[1024] reduce-window(a, z), window={size=3 pad=1_1}, to_apply=add
})",
                            c);
  ASSERT_FALSE(l.report.approximations.empty());
  EXPECT_NE(l.report.approximations[0].find("approx:reduce-window"), std::string::npos);
  bool labelled = false;
  for (const auto& i : l.program.code) labelled = labelled || l.program.provenance(i) == "approx:reduce-window r";
  EXPECT_TRUE(labelled);
  expect_verifies(l.program, c);
}

// Roofline bound of the module as `tpusim analyze` computes it.
double roofline_bound(const hlo::Module& m, const ChipConfig& c) {
  return hlo::roofline(m, hlo::RooflineRates::from_figures(derive(c))).total.bound_time_s;
}

// 4096^3 bf16 on v5e: 2 x 4096^3 = 1.374e11 FLOP at 196.6 TFLOP/s = 0.699 ms
// (compute-bound: 96 MiB at 819 GB/s = 0.123 ms). The MXU program must come
// out at or above that, and within 15%.
// XLA's in-place dynamic-update-slice fusion inside a loop: each of N
// iterations writes one f32 into the loop-carried f32[100000] buffer. The
// fusion updates the buffer in place: per iteration the update (one f32,
// 4 B) is read from HBM and written into the buffer (4 B): 8 B, so
// 8·N B over the loop, where a copy would move 2·400000 B per iteration.
TEST(LowerSim, InPlaceDynamicUpdateSliceFusionInALoopMovesOnlyTheSlice) {
  const ChipConfig c = chip();
  constexpr std::int64_t kTrips = 1000;
  const std::string text = R"(HloModule m
fused_update {
  buf = f32[100000] parameter(0)
  v = f32[] parameter(1)
  i = s32[] parameter(2)
  u = f32[1] reshape(v)
  ROOT d = f32[100000] dynamic-update-slice(buf, u, i)
}
body {
  p = (s32[], f32[100000]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  b = f32[100000] get-tuple-element(p), index=1
  v = f32[] convert(i)
  f = f32[100000] fusion(b, v, i), kind=kLoop, calls=fused_update
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[100000]) tuple(i1, f)
}
cond {
  p = (s32[], f32[100000]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(1000)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  zero = s32[] constant(0)
  x = f32[100000] parameter(0)
  t = (s32[], f32[100000]) tuple(zero, x)
  ROOT w = (s32[], f32[100000]) while(t), condition=cond, body=body
})";
  const auto l = lower_text(text, c);
  expect_verifies(l.program, c);
  auto r = simulate(c, l.program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  double hbm = 0;
  for (const auto& row : r->provenance) hbm += row.stats.hbm_bytes;
  std::printf("in-place DUS loop, %lld trips: %.0f HBM bytes, %.3f us simulated\n", static_cast<long long>(kTrips), hbm,
              r->seconds * 1e6);
  // Per iteration, every op of the body and condition moves its operands
  // and result once through VMEM: convert(i) 4 + 4, the fusion 4 + 4 (the
  // slice), add(i, 1) 4 + 4 + 4, compare(i, 1000) 4 + 4 + 1 (pred): 37 B.
  EXPECT_DOUBLE_EQ(hbm, 37.0 * kTrips);
}

// cuBLAS GEMM custom calls run as MXU programs of their
// dot_dimension_numbers: bf16 [256, 512] x [512, 128] is 2·256·128·512 =
// 33554432 FLOPs, the same with the lhs stored transposed ([512, 256],
// contracting dim 0) and for cuBLASLt's (result, workspace) tuple.
TEST(LowerSim, CublasGemmCustomCallIsAnMxuDot) {
  const ChipConfig c = chip();
  const std::string plain = R"(HloModule m
ENTRY e {
  a = bf16[256,512] parameter(0)
  b = bf16[512,128] parameter(1)
  ROOT g = bf16[256,128] custom-call(a, b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
})";
  const std::string transposed_lt = R"(HloModule m
ENTRY e {
  a = bf16[512,256] parameter(0)
  b = bf16[512,128] parameter(1)
  ROOT g = (bf16[256,128], s8[1048576]) custom-call(a, b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["0"],"rhs_contracting_dimensions":["0"]}}}
})";
  for (const std::string& text : {plain, transposed_lt}) {
    const auto l = lower_text(text, c);
    expect_verifies(l.program, c);
    EXPECT_GT(count(l.program).matmuls, 0);
    EXPECT_TRUE(l.report.approximations.empty()) << l.report.approximations.front();
    // One simulation per process: each runs in a child.
    std::string error;
    const auto out = run_isolated(
        [&] {
          auto r = simulate(c, l.program);
          if (!r.ok()) return format_all(r.errors());
          double flops = 0;
          for (const auto& row : r->provenance) flops += row.stats.flops;
          return std::to_string(static_cast<long long>(flops));
        },
        error);
    ASSERT_TRUE(out.has_value()) << error;
    EXPECT_EQ(*out, std::to_string(2LL * 256 * 128 * 512));
  }
}

TEST(LowerSim, LargeBf16DotNearRooflineOnV5e) {
  const ChipConfig c = chip("v5e");
  const std::string text = R"(HloModule big
ENTRY e {
  a = bf16[4096,4096] parameter(0)
  b = bf16[4096,4096] parameter(1)
  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  auto m = hlo::parse_hlo_module(text, "big.hlo");
  ASSERT_TRUE(m.ok());
  const double bound = roofline_bound(**m, c);
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok());
  expect_verifies(l->program, c);
  auto r = simulate(c, l->program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  std::printf("4096^3 bf16 dot on v5e: simulated %.6f ms, roofline %.6f ms, ratio %.4f; %s\n", r->seconds * 1e3,
              bound * 1e3, r->seconds / bound, l->report.tilings[0].c_str());
  EXPECT_GE(r->seconds, bound);
  EXPECT_LE(r->seconds, 1.15 * bound);
}

// Bytes each HBM buffer is read by the program's DMAs, by buffer name.
std::map<std::string, std::int64_t> hbm_reads(const isa::Program& p) {
  std::map<std::string, std::int64_t> read;
  for (const auto& i : p.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& src = p.buffers[d->src.buffer];
      if (src.space == isa::MemSpace::kHbm) {
        read[src.name] += isa::dtype_bytes(src.dtype, std::int64_t{d->src.rows} * d->src.cols);
      }
    }
  }
  return read;
}

// An f32 dot at XLA's DEFAULT precision (one bf16 MXU pass) large enough
// that f32 tiles would be re-read: the compiler converts each operand to
// bf16 by a pass of its own first, which reads each f32 operand exactly once
// and writes its bf16 copy once (8192 x 4096 x 4 B read, x 2 B written), and
// the dot then reads only the copies. Simulated, the step is the MXU's time
// for the products plus the passes at the HBM bandwidth (484 us), within 10%
// (converting the f32 tiles inside the dot took 576 us, 19% over it).
TEST(Lower, F32DotConvertsItsOperandsOnceWhenThatIsCheaper) {
  ChipConfig c = chip("v6e");
  c.core.mxu.step_sync = false;  // the bound below is the ideal stream (no per-step drain)
  const std::string f32 = R"(HloModule m
ENTRY e {
  a = f32[8192,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT d = f32[8192,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";
  const auto l = lower_text(f32, c);
  std::map<std::string, std::int64_t> read = hbm_reads(l.program);
  EXPECT_EQ(read["a"], std::int64_t{8192} * 4096 * 4);
  EXPECT_EQ(read["b"], std::int64_t{4096} * 4096 * 4);
  std::int64_t written = 0, copies_read = 0;
  for (const auto& i : l.program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& dst = l.program.buffers[d->dst.buffer];
      const auto& src = l.program.buffers[d->src.buffer];
      const std::int64_t n = std::int64_t{d->src.rows} * d->src.cols;
      if (dst.space == isa::MemSpace::kHbm && dst.name.find(".bf16") != std::string::npos) written += 2 * n;
      if (src.space == isa::MemSpace::kHbm && src.name.find(".bf16") != std::string::npos) copies_read += 2 * n;
    }
  }
  EXPECT_EQ(written, (std::int64_t{8192} * 4096 + std::int64_t{4096} * 4096) * 2);
  EXPECT_GT(copies_read, 0);
  expect_verifies(l.program, c);
  auto r = simulate(c, l.program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  const double mxu = 2.0 * 8192 * 4096 * 4096 / (c.core.mxu.count * c.core.mxu.rows * c.core.mxu.cols * 2 * c.clock);
  const double passes = (std::int64_t{8192} * 4096 + std::int64_t{4096} * 4096) * 6.0 / c.hbm.bandwidth;
  EXPECT_GT(r->seconds, mxu + passes * 0.9);
  EXPECT_LT(r->seconds, 1.1 * (mxu + passes));
}

// The convert passes' VMEM is given back before the dot's tiles take theirs:
// with a 64 MiB kernel budget on v6e (128 MiB VMEM), f32 8192^3 converts both
// operands first, and the passes' chunks (sized to the budget) and the dot's
// tiles (sized to it as well) would not both fit at once.
TEST(Lower, F32DotConvertPassesFreeTheirVmemForTheDot) {
  ChipConfig c = chip("v6e");
  c.core.vmem.scoped_limit = 64.0 * 1024 * 1024;
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  a = f32[8192,8192] parameter(0)
  b = f32[8192,8192] parameter(1)
  ROOT d = f32[8192,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})", c);
  bool converted = false;
  for (const auto& b : l.program.buffers) converted = converted || b.name.find(".bf16") != std::string::npos;
  EXPECT_TRUE(converted);
  expect_verifies(l.program, c);
}

// A dot fusion with a residual of the output's shape and a small bias: the
// residual is read from HBM exactly once (2048 x 2048 bf16 = 8 MiB), in tiles
// of the output blocks, and nothing of the contraction's inputs is read as an
// epilogue input.
TEST(Lower, DotEpilogueStreamsALargeResidualExactlyOnce) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
fused {
  a = bf16[2048,1024] parameter(0)
  b = bf16[1024,2048] parameter(1)
  r = bf16[2048,2048] parameter(2)
  bias = bf16[2048] parameter(3)
  d = bf16[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = bf16[2048,2048] broadcast(bias), dimensions={1}
  s = bf16[2048,2048] add(d, bb)
  ROOT t = bf16[2048,2048] add(s, r)
}
ENTRY e {
  x = bf16[2048,1024] parameter(0)
  w = bf16[1024,2048] parameter(1)
  res = bf16[2048,2048] parameter(2)
  bias = bf16[2048] parameter(3)
  ROOT f = bf16[2048,2048] fusion(x, w, res, bias), kind=kOutput, calls=fused
})",
                            c);
  std::map<std::string, std::int64_t> read = hbm_reads(l.program);
  EXPECT_EQ(read["res"], 2048 * 2048 * 2);
  EXPECT_EQ(read["bias"], 2048 * 2);
  EXPECT_GE(read["x"], 2048 * 1024 * 2);  // the contraction reads its inputs at least once
  expect_verifies(l.program, c);
}

// A dot fusion whose lhs is quantized in the fusion, convert(clamp(lo, x * s,
// hi)) to fp8 (what XLA makes of Qwix's quantized training when it fuses the
// quantization into its consumer dot): the contraction reads x itself (bf16,
// at least once), not as an epilogue input; the scale s is read once; each
// loaded x tile is converted to fp8 on the VPU and the MXU multiplies fp8
// tiles (TPU7x has an fp8 mode).
TEST(Lower, DotFusionQuantizingItsOperandReadsTheDataAndMultipliesInItsType) {
  const ChipConfig c = chip("v7");
  const auto l = lower_text(R"(HloModule m
fused {
  x = bf16[2048,1024] parameter(0)
  s = f32[2048] parameter(1)
  w = f8e4m3fn[1024,2048] parameter(2)
  xf = f32[2048,1024] convert(x)
  sb = f32[2048,1024] broadcast(s), dimensions={0}
  v = f32[2048,1024] multiply(xf, sb)
  lo = f32[2048,1024] broadcast(f32[] constant(-448)), dimensions={}
  hi = f32[2048,1024] broadcast(f32[] constant(448)), dimensions={}
  c = f32[2048,1024] clamp(lo, v, hi)
  q = f8e4m3fn[2048,1024] convert(c)
  d = f32[2048,2048] dot(q, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT o = bf16[2048,2048] convert(d)
}
ENTRY e {
  x = bf16[2048,1024] parameter(0)
  s = f32[2048] parameter(1)
  w = f8e4m3fn[1024,2048] parameter(2)
  ROOT f = bf16[2048,2048] fusion(x, s, w), kind=kOutput, calls=fused
})",
                            c);
  std::map<std::string, std::int64_t> read = hbm_reads(l.program);
  bool fp8_matmul = false;
  for (const auto& i : l.program.code) {
    if (const auto* mm = std::get_if<isa::MxuMatmul>(&i.op)) {
      fp8_matmul = fp8_matmul || l.program.buffers[mm->lhs.buffer].dtype == isa::DType::kFp8;
    }
  }
  EXPECT_GE(read["x"], 2048 * 1024 * 2);
  EXPECT_EQ(read["s"], 2048 * 4);
  EXPECT_GE(read["w"], 1024 * 2048);
  for (const auto& b : l.program.buffers) {
    if (b.name.rfind("epi", 0) == 0) {
      EXPECT_NE(b.dtype, isa::DType::kBf16) << b.name;  // x is no epilogue input
    }
  }
  EXPECT_TRUE(fp8_matmul);
  expect_verifies(l.program, c);
}

// A dot whose loaded tiles are converted before the MXU reads them keeps
// two converted copies (prepared a step ahead). TPU7x has no int8 MXU mode,
// so an s8 dot converts each tile to bf16, a copy twice the loaded tile's
// size: the tiling's VMEM count must include it, or the program outgrows
// the kernel's scoped limit (at 32 MiB it peaked at 38 MiB when the copies
// were left out of the count).
TEST(Lower, ADotConvertingItsTilesStaysWithinTheScopedVmemLimit) {
  ChipConfig c = chip("v7");
  ASSERT_EQ(isa::mxu_rate(c.core.mxu.rate, isa::DType::kInt8), 0);
  for (const double mib : {8.0, 16.0, 32.0}) {
    c.core.vmem.scoped_limit = mib * 1024 * 1024;
    const auto l = lower_text(R"(HloModule m
ENTRY e {
  a = s8[8192,8192] parameter(0)
  b = s8[8192,8192] parameter(1)
  ROOT d = s32[8192,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})",
                              c);
    const auto rep = expect_verifies(l.program, c);
    EXPECT_LE(rep.summary.peak_vmem_bytes, static_cast<std::int64_t>(c.core.vmem.scoped_limit))
        << mib << " MiB: " << l.report.tilings[0];
  }
}

// A stream kernel whose rows are too wide for VMEM (64 rows of 65536 with
// their f32 temporaries) and which reads three per-row vectors of 32768
// (a loss's per-token statistics): counted per row of the space, the
// vectors alone (3 x 128 KiB, 3 slots, 64 rows) pass the stream's share of
// TPU7x's 64 MiB, so no narrower view seemed to fit and the kernel kept rows
// that overflow VMEM. Held whole, they take 384 KiB once: the kernel runs as
// narrower rows (noted as an approximation) in a program that verifies.
TEST(Lower, WideRowsWithPerRowVectorsFoldWithinVmem) {
  const ChipConfig c = chip("v7");
  const auto l = lower_text(R"(HloModule m
fused {
  x = bf16[32768,65536] parameter(0)
  a = f32[32768] parameter(1)
  b = f32[32768] parameter(2)
  d = f32[32768] parameter(3)
  xf = f32[32768,65536] convert(x)
  ab = f32[32768,65536] broadcast(a), dimensions={0}
  bb = f32[32768,65536] broadcast(b), dimensions={0}
  db = f32[32768,65536] broadcast(d), dimensions={0}
  m = f32[32768,65536] multiply(xf, ab)
  s = f32[32768,65536] subtract(m, bb)
  t = f32[32768,65536] multiply(s, db)
  ROOT o = bf16[32768,65536] convert(t)
}
ENTRY e {
  x = bf16[32768,65536] parameter(0)
  a = f32[32768] parameter(1)
  b = f32[32768] parameter(2)
  d = f32[32768] parameter(3)
  ROOT f = bf16[32768,65536] fusion(x, a, b, d), kind=kLoop, calls=fused
})",
                            c);
  bool folded = false;
  for (const auto& a : l.report.approximations) folded = folded || a.find("streamed as rows of") != std::string::npos;
  EXPECT_TRUE(folded);
  expect_verifies(l.program, c);
}

// Single dots on other presets: at or above the roofline bound and within 15%
// of it (memory-bound skinny dots; the compute-bound v5e case is above).
//   v5e [16,8192]x[8192,8192]: 128 MiB of weights / 819 GB/s = 0.164 ms
//   (2.1 GFLOP / 196.6 TFLOP/s = 0.011 ms): memory-bound.
// The entry bodies of the single-dot cases: x[16,8192] @ W[8192,8192]
// (memory-bound: 128 MiB of weights) and 4096^3 (compute-bound).
constexpr const char* kSkinnyDot = R"(  a = bf16[16,8192] parameter(0)
  b = bf16[8192,8192] parameter(1)
  ROOT d = bf16[16,8192] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})";
constexpr const char* kSquareDot4096 = R"(  a = bf16[4096,4096] parameter(0)
  b = bf16[4096,4096] parameter(1)
  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})";

// Megacore presets (v5p) run one program per TensorCore (lower_for_chip).
void expect_dot_near_bound(const char* preset, const std::string& shapes) {
  const ChipConfig c = chip(preset);
  auto m = hlo::parse_hlo_module("HloModule m\nENTRY e {\n" + shapes + "\n}", "dot.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const double bound = roofline_bound(**m, c);
  auto l = lower_for_chip(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  std::vector<isa::Program> programs;
  for (const auto& core : *l) {
    expect_verifies(core.program, c);
    programs.push_back(core.program);
  }
  auto r = simulate_cores(c, std::move(programs));
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  std::printf("%s (%zu core programs): simulated %.6f ms, roofline %.6f ms, ratio %.4f; %s\n", preset, l->size(),
              r->seconds * 1e3, bound * 1e3, r->seconds / bound, l->front().report.tilings[0].c_str());
  EXPECT_GE(r->seconds, bound);
  EXPECT_LE(r->seconds, 1.15 * bound);
}

TEST(LowerSim, MemoryBoundSkinnyDotNearHbmBoundOnV5e) {
  expect_dot_near_bound("v5e", kSkinnyDot);
}

// v5p is a megacore chip: its roofline counts both TensorCores (459 TFLOP/s
// bf16, 2.765 TB/s HBM), so each core's program takes half the work.
//   4096^3 bf16: 1.374e11 FLOP / 459 TFLOP/s = 0.299 ms (96 MiB / 2.765 TB/s
//   = 0.036 ms): compute-bound.
//   [16,8192]x[8192,8192]: 128 MiB / 2.765 TB/s = 0.0485 ms: memory-bound.
TEST(LowerSim, LargeBf16DotNearRooflineOnMegacoreV5p) {
  expect_dot_near_bound("v5p", kSquareDot4096);
}

TEST(LowerSim, MemoryBoundSkinnyDotNearHbmBoundOnMegacoreV5p) {
  expect_dot_near_bound("v5p", kSkinnyDot);
}

// v6e: 2 MXUs of 256x256 at 3.5 GHz (918 TFLOP/s): 4096^3 bf16 = 1.374e11
// FLOP / 918 TFLOP/s = 0.150 ms; the tiles move ~168 MB at 1.638 TB/s
// (0.102 ms), so the operand loads and the output write-back must overlap
// the MXUs for the dot to stay within 15% of its bound.
TEST(LowerSim, LargeBf16DotNearRooflineOnV6e) {
  expect_dot_near_bound("v6e", kSquareDot4096);
}

TEST(LowerSim, MemoryBoundSkinnyDotNearHbmBoundOnV6e) {
  expect_dot_near_bound("v6e", kSkinnyDot);
}

// Lowers and simulates an HLO module in a forked child (one SystemC
// elaboration per process); its simulated seconds, or 0 with a failure.
double simulated_seconds(const std::string& text, const ChipConfig& c) {
  std::string error;
  auto out = run_isolated(
      [&]() -> std::string {
        auto m = hlo::parse_hlo_module(text, "module.hlo");
        if (!m.ok()) return "error";
        auto l = lower_module(**m, c);
        if (!l.ok()) return "error";
        auto r = simulate(c, l->program);
        if (!r.ok() || !r->finished) return "error";
        std::ostringstream os;
        os.precision(17);
        os << r->seconds;
        return os.str();
      },
      error);
  EXPECT_TRUE(out && *out != "error") << error;
  return out && *out != "error" ? std::stod(*out) : 0.0;
}

// The compute/memory crossover of x[B,D] @ W[D,F] (bf16, D = F = 4096) on v5e:
// the memory-bound asymptote T(B small) ~ W's bytes / HBM and the
// compute-bound slope T(B large) / B ~ 2DF / peak meet at
//   B* = (2DF / HBM) / (2DF / peak) = peak / HBM = 196.6e12 / 819e9 = 240,
// the chip's critical arithmetic intensity (scaling book A2). The simulated
// asymptotes must put B* there within 10%.
TEST(LowerSim, ComputeMemoryCrossoverAtTheCriticalIntensityOnV5e) {
  const ChipConfig c = chip("v5e");
  const auto simulated = [&](std::int64_t b) {
    return simulated_seconds("HloModule x\nENTRY e {\n  a = bf16[" + std::to_string(b) +
                                 ",4096] parameter(0)\n  w = bf16[4096,4096] parameter(1)\n  ROOT d = bf16[" +
                                 std::to_string(b) +
                                 ",4096] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
                             c);
  };
  const double t_mem = simulated(16), t_big = simulated(2048);
  ASSERT_GT(t_mem, 0);
  ASSERT_GT(t_big, 0);
  const double crossover = t_mem / (t_big / 2048.0);
  const double critical = derive(c).critical_intensity_flops_per_byte;
  std::printf("crossover B* = %.1f, critical intensity %.1f FLOP/B\n", crossover, critical);
  EXPECT_NEAR(critical, 240.0, 1.0);
  EXPECT_NEAR(crossover, critical, 0.10 * critical);
}

// all-reduce-start / -done around independent work: the collective's wait is
// emitted at the -done, after the work, so the two overlap; the same module
// with a synchronous all-reduce takes about their sum. On one chip the
// collective is timed by the single-chip placeholder (bytes over ICI), which
// is enough to see the overlap: 16 MiB over v5e's 4 x 45 GB/s ~ 93 us vs a
// 4096x4096 f32 tanh ~ 2 x 64 MiB / 819 GB/s ~ 164 us.
TEST(LowerSim, AsyncCollectiveOverlapsTheWorkBetweenStartAndDone) {
  const ChipConfig c = chip("v5e");
  const std::string async_text = R"(HloModule a, num_partitions=4
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
ENTRY e {
  g = f32[2048,2048] parameter(0)
  h = f32[4096,4096] parameter(1)
  s = f32[2048,2048] all-reduce-start(g), replica_groups={{0,1,2,3}}, to_apply=sum
  t = f32[4096,4096] tanh(h)
  d = f32[2048,2048] all-reduce-done(s)
  ROOT r = (f32[2048,2048], f32[4096,4096]) tuple(d, t)
})";
  std::string sync_text = async_text;
  sync_text.replace(sync_text.find("all-reduce-start"), 16, "all-reduce");
  sync_text.replace(sync_text.find("  d = f32[2048,2048] all-reduce-done(s)\n"), 41, "");
  sync_text.replace(sync_text.find("tuple(d, t)"), 11, "tuple(s, t)");
  const auto lowered = lower_text(async_text, c);
  expect_verifies(lowered.program, c);
  // The wait on the collective's semaphore comes after the tanh's instructions.
  std::size_t collective_at = 0, wait_at = 0, last_eup = 0;
  for (std::size_t i = 0; i < lowered.program.code.size(); ++i) {
    const auto& op = lowered.program.code[i].op;
    if (std::holds_alternative<isa::Collective>(op)) collective_at = i;
    if (std::holds_alternative<isa::EupUnary>(op)) last_eup = i;
    if (const auto* w = std::get_if<isa::SemWait>(&op)) {
      if (lowered.program.semaphores[w->sem.id].name == "ici.s") wait_at = i;
    }
  }
  EXPECT_LT(collective_at, last_eup);
  EXPECT_GT(wait_at, last_eup);
  const double t_async = simulated_seconds(async_text, c), t_sync = simulated_seconds(sync_text, c);
  const double collective = 16.0 * 1024 * 1024 / (4 * 45e9 * c.ici.link_efficiency);
  std::printf("async %.1f us, sync %.1f us, collective ~%.1f us\n", t_async * 1e6, t_sync * 1e6, collective * 1e6);
  // Overlapped: shorter than the synchronous run by most of the collective.
  EXPECT_LT(t_async, t_sync - 0.8 * collective);
}

// The corpus files, sorted. TPUSIM_CORPUS_STRIDE=N keeps every N-th file
// (scripts/test.sh: 3, under the sanitizers; scripts/run_corpus.py
// runs every file end to end).
// True when TPUSIM_CORPUS_STRIDE keeps so few files (under 30 modules) that
// the >= 90% ratio says little; the sample then checks memory safety and
// lists what fails.
bool corpus_sampled() {
  const char* stride_env = std::getenv("TPUSIM_CORPUS_STRIDE");
  return stride_env != nullptr && std::strtol(stride_env, nullptr, 10) > 3;
}

std::vector<std::filesystem::path> corpus() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = std::filesystem::path(TPUSIM_SHARED_DIR) / "refs/hlo-corpus/files";
  if (!std::filesystem::exists(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".hlo") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  // TPUSIM_CORPUS_EXCLUDE=a,b leaves out files whose name contains a or b
  // (scripts/test.sh: the LLaMA and MaxText steps, millions of instructions
  // each, too slow under the sanitizers; scripts/run_corpus.py runs them).
  if (const char* exclude = std::getenv("TPUSIM_CORPUS_EXCLUDE"); exclude != nullptr && *exclude != '\0') {
    std::vector<std::string> parts;
    std::stringstream list(exclude);
    for (std::string part; std::getline(list, part, ',');) {
      if (!part.empty()) parts.push_back(part);
    }
    const auto before = files.size();
    std::erase_if(files, [&](const std::filesystem::path& f) {
      return std::any_of(parts.begin(), parts.end(),
                         [&](const std::string& p) { return f.filename().string().find(p) != std::string::npos; });
    });
    std::printf("corpus: %zu files left out (TPUSIM_CORPUS_EXCLUDE=%s)\n", before - files.size(), exclude);
  }
  const char* stride_env = std::getenv("TPUSIM_CORPUS_STRIDE");
  const long stride = stride_env != nullptr ? std::max(1L, std::strtol(stride_env, nullptr, 10)) : 1L;
  if (stride > 1) {
    std::vector<std::filesystem::path> kept;
    for (std::size_t i = 0; i < files.size(); i += static_cast<std::size_t>(stride)) kept.push_back(files[i]);
    std::printf("corpus: every %ld-th file (TPUSIM_CORPUS_STRIDE), %zu of %zu\n", stride, kept.size(), files.size());
    files = std::move(kept);
  }
  return files;
}

// Lowers every corpus module and runs the verifier on it; lists what lowers
// and what fails (with its message) and reports the ratio.
// The compiler never emits a program its own verifier rejects for VMEM
// capacity, operand or vector dtype rules ([capacity], [operand],
// [vpu-dtype]), on v5e (no bf16 VPU) and v6e; HBM capacity is no limit for
// compiled modules (the run warns). Files listed here are known to get such
// errors (none today); any other file with one fails the test, and a listed
// file that verifies clean is reported, to shorten the list.
const std::set<std::string>& files_with_known_rule_errors() {
  static const std::set<std::string> known = {
  };
  return known;
}

TEST(LowerCorpus, LowersAndVerifies) {
  const auto files = corpus();
  if (files.empty()) GTEST_SKIP() << "corpus not present under " << TPUSIM_SHARED_DIR;
  for (const char* name : {"v5e", "v6e"}) {
    ChipConfig c = chip(name);
    c.hbm.capacity = 0;
    int modules = 0, lowered = 0, verified = 0, rule_errors = 0;
    std::string failures;
    for (const auto& f : files) {
      auto parsed = hlo::parse_hlo_file(f.string());
      for (auto& m : parsed.modules) {
        if (!m.ok()) continue;  // parse failures belong to the front end's tests
        ++modules;
        auto l = lower_module(**m, c);
        if (!l.ok()) {
          failures += f.filename().string() + ": " + l.errors()[0].message + "\n";
          continue;
        }
        ++lowered;
        const auto rep = isa::verify(l->program, c);
        const auto rules = rep.count(isa::VerifyError::kCapacity) + rep.count(isa::VerifyError::kOperand) +
                           rep.count(isa::VerifyError::kVpuDtype);
        const bool known = files_with_known_rule_errors().contains(f.filename().string());
        if (!known) rule_errors += static_cast<int>(rules);
        if (known && rules == 0) std::printf("now clean on %s: %s\n", name, f.filename().string().c_str());
        if (rep.ok()) {
          ++verified;
        } else {
          failures += f.filename().string() + ": verify: " + rep.issues[0].diagnostic.message + "\n";
        }
      }
    }
    std::printf("corpus on %s: %d modules, %d lower, %d verify clean (%.1f%%)\n%s", name, modules, lowered, verified,
                modules ? 100.0 * verified / modules : 0.0, failures.c_str());
    EXPECT_EQ(rule_errors, 0) << name;
    if (!corpus_sampled()) {
      EXPECT_GE(verified * 10, modules * 9) << name;
    }
  }
}

// Lowers and simulates every corpus module, each in a forked child.
TEST(LowerCorpus, LowersAndSimulates) {
  const auto files = corpus();
  if (files.empty()) GTEST_SKIP() << "corpus not present under " << TPUSIM_SHARED_DIR;
  const ChipConfig c = chip();
  int modules = 0, ok = 0;
  std::string failures;
  for (const auto& f : files) {
    auto parsed = hlo::parse_hlo_file(f.string());
    for (std::size_t mi = 0; mi < parsed.modules.size(); ++mi) {
      if (!parsed.modules[mi].ok()) continue;
      ++modules;
      std::string err;
      const auto out = run_isolated(
          [&]() -> std::string {
            auto l = lower_module(**parsed.modules[mi], c);
            if (!l.ok()) return "lower: " + l.errors()[0].message;
            auto r = simulate(c, l->program);
            if (!r.ok()) return "simulate: " + r.errors()[0].message;
            if (!r->finished) return "simulate: deadlock";
            return "ok";
          },
          err);
      if (out && *out == "ok") {
        ++ok;
      } else {
        failures += f.filename().string() + ": " + (out ? *out : err) + "\n";
      }
    }
  }
  std::printf("corpus: %d of %d modules lower and simulate (%.1f%%)\n%s", ok, modules,
              modules ? 100.0 * ok / modules : 0.0, failures.c_str());
  if (!corpus_sampled()) {
    EXPECT_GE(ok * 10, modules * 9);
  }
}

}  // namespace
}  // namespace tpusim::lower

namespace tpusim::lower {
namespace {
// Manual experiment: TILE="tm tn tk" M=... K=... N=... CHIP=... ./isa_lower_tests
// --gtest_also_run_disabled_tests --gtest_filter='*DotTiling*'
// (FILE=module.hlo: that module's first dot instead; MEGACORE=1: the chip's
// TensorCores as one device, each simulated with its share.)
TEST(LowerSim, DISABLED_DotTilingExperiment) {
  const char* chip_name = std::getenv("CHIP") ? std::getenv("CHIP") : "v5e";
  ChipConfig c = chip(chip_name);
  if (const char* r = std::getenv("MXU")) std::sscanf(r, "%ld %ld %ld", &c.core.mxu.rows, &c.core.mxu.cols, &c.core.mxu.count);
  if (const char* h = std::getenv("HBM")) c.hbm.bandwidth = std::atof(h);
  if (const char* v = std::getenv("SYNC")) c.core.mxu.step_sync = std::atoi(v) != 0;
  if (const char* v = std::getenv("VMEM")) c.core.vmem.scoped_limit = std::atof(v);
  const std::string m = std::getenv("M") ? std::getenv("M") : "4096";
  const std::string k = std::getenv("K") ? std::getenv("K") : "4096";
  const std::string n = std::getenv("N") ? std::getenv("N") : "4096";
  const std::string text = "HloModule big\nENTRY e {\n a = bf16[" + m + "," + k + "] parameter(0)\n b = bf16[" + k +
                           "," + n + "] parameter(1)\n ROOT d = bf16[" + m + "," + n +
                           "] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}";
  std::string source = text;
  if (const char* f = std::getenv("FILE")) {
    std::ifstream in(f);
    source.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (const char* v = std::getenv("MEGACORE")) c.megacore = std::atoi(v) != 0;
  auto mod = hlo::parse_hlo_module(source, "x");
  ASSERT_TRUE(mod.ok());
  LowerOptions o;
  if (const char* t = std::getenv("TILE")) std::sscanf(t, "%ld %ld %ld", &o.dot_tile_m, &o.dot_tile_n, &o.dot_tile_k);
  auto l = lower_for_chip(**mod, device_view(c), o);
  ASSERT_TRUE(l.ok());
  ASSERT_FALSE(l->empty());
  std::vector<isa::Program> programs;
  for (const auto& core : *l) programs.push_back(core.program);
  SimOptions so;
  if (const char* t = std::getenv("TRACE")) so.trace_path = t;
  so.trace_merge_gap_s = 0;
  auto r = simulate_cores(c, programs, so);
  ASSERT_TRUE(r.ok());
  const Lowered& first = l->front();
  std::printf("%s ratio %.4f seconds %.9g instructions %zu\n", first.report.tilings[0].c_str(),
              r->seconds / roofline_bound(**mod, device_view(c)), r->seconds, first.program.code.size());
  if (std::getenv("STATS")) {
    std::printf("%s\n", r->stats.to_json().dump(1).c_str());
  }
}
}  // namespace
}  // namespace tpusim::lower

namespace tpusim::lower {
namespace {
// Manual: FILE=path ./isa_lower_tests --gtest_also_run_disabled_tests --gtest_filter='*Profile*'
TEST(LowerCorpus, DISABLED_ProfileInstructionCounts) {
  const char* file = std::getenv("FILE");
  if (file == nullptr) GTEST_SKIP();
  auto parsed = hlo::parse_hlo_file(file);
  ASSERT_FALSE(parsed.modules.empty());
  ASSERT_TRUE(parsed.modules[0].ok());
  LowerOptions o;
  o.max_instructions = 100'000'000;
  auto l = lower_module(**parsed.modules[0], chip(), o);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  std::map<std::string, std::size_t> by;
  for (const auto& i : l->program.code) ++by[std::string(l->program.provenance(i))];
  std::vector<std::pair<std::size_t, std::string>> v;
  for (auto& [k, n] : by) v.emplace_back(n, k);
  std::sort(v.rbegin(), v.rend());
  std::printf("%zu instructions\n", l->program.code.size());
  for (std::size_t i = 0; i < std::min<std::size_t>(8, v.size()); ++i) std::printf("%zu %s\n", v[i].first, v[i].second.c_str());
  for (std::size_t i = 0; i < std::min<std::size_t>(5, v.size()); ++i) {
    std::string name = v[i].second;
    if (name.rfind("approx:", 0) == 0) name = name.substr(name.find(' ') + 1);
    for (const auto& t : l->report.tilings) {
      if (t.rfind(name + ":", 0) == 0) std::printf("%s\n", t.c_str());
    }
  }
}

// HBM bytes the program's DMAs read (from HBM) and write (into HBM).
std::pair<std::int64_t, std::int64_t> hbm_dma_bytes(const Lowered& l) {
  std::int64_t read = 0, written = 0;
  for (const auto& i : l.program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& dst = l.program.buffers[d->dst.buffer];
      const auto& src = l.program.buffers[d->src.buffer];
      if (src.space == isa::MemSpace::kHbm) read += isa::dtype_bytes(src.dtype, std::int64_t{d->src.rows} * d->src.cols);
      if (dst.space == isa::MemSpace::kHbm) {
        written += isa::dtype_bytes(dst.dtype, std::int64_t{d->dst.rows} * d->dst.cols);
      }
    }
  }
  return {read, written};
}


// A scan's saved-activation buffer, bf16[16,8,1024,4096] (1 GiB), gets one
// layer's bf16[1,8,1024,4096] (64 MiB, more than the VMEM budget of 40% of
// v5e's 128 MiB) at a run-time index. In place, only the update moves: 64 MiB
// read from HBM and 64 MiB written into the buffer, through VMEM in chunks,
// so the time is that traffic at HBM bandwidth, 2 x 64 MiB / 819 GB/s =
// 164 us (within 10%), where a copy would move 2 GiB.
TEST(LowerSim, LargeInPlaceUpdateMovesOnlyTheUpdateInChunks) {
  const ChipConfig c = chip();
  const auto l = lower_text(R"(HloModule m
ENTRY e {
  stack = bf16[16,8,1024,4096] parameter(0)
  x = bf16[1,8,1024,4096] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT u = bf16[16,8,1024,4096] dynamic-update-slice(stack, x, i, z, z, z)
})",
                            c);
  expect_verifies(l.program, c);
  const std::int64_t update = std::int64_t{8} * 1024 * 4096 * 2;
  const auto [read, written] = hbm_dma_bytes(l);
  EXPECT_EQ(read, update);
  EXPECT_EQ(written, update);
  for (const auto& b : l.program.buffers) EXPECT_NE(b.name, "u") << "the result aliases the stack";
  auto r = simulate(c, l.program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  const double want = 2.0 * static_cast<double>(update) / derive(c).hbm_bytes_per_s;
  EXPECT_GT(r->seconds, want);
  EXPECT_LT(r->seconds, 1.10 * want);
}

// One layer read back from the same buffer, with a dynamic-slice (start
// index timed at 0), a static slice of layer 3 and a dynamic-slice fusion
// (the slice then a reshape, as a scan's body reads its carried buffer):
// each reads only its 64 MiB rows (layer 3 from row 3 x 8 x 1024 of the
// buffer's [16*8*1024, 4096] view) and writes them, 2 x 64 MiB / 819 GB/s
// each (within 10%).
TEST(LowerSim, SlicesReadOnlyTheirRows) {
  const ChipConfig c = chip();
  const std::int64_t layer = std::int64_t{8} * 1024 * 4096 * 2;
  const double want = 2.0 * static_cast<double>(layer) / derive(c).hbm_bytes_per_s;
  for (const std::string op : {"ds", "sl", "fu"}) {
    const auto l = lower_text(R"(HloModule m
fused_slice {
  p0 = bf16[16,8,1024,4096] parameter(0)
  p1 = s32[] parameter(1)
  z = s32[] constant(0)
  d = bf16[1,8,1024,4096] dynamic-slice(p0, p1, z, z, z), dynamic_slice_sizes={1,8,1024,4096}
  ROOT r = bf16[8,1024,4096] reshape(d)
}
ENTRY e {
  stack = bf16[16,8,1024,4096] parameter(0)
  i = s32[] parameter(1)
  z = s32[] constant(0)
)" + std::string(op == "ds" ? "  ROOT ds = bf16[1,8,1024,4096] dynamic-slice(stack, i, z, z, z), "
                                           "dynamic_slice_sizes={1,8,1024,4096}\n"
                            : op == "sl" ? "  ROOT sl = bf16[1,8,1024,4096] slice(stack), "
                                           "slice={[3:4], [0:8], [0:1024], [0:4096]}\n"
                                         : "  ROOT fu = bf16[8,1024,4096] fusion(stack, i), kind=kLoop, "
                                           "calls=fused_slice\n") +
                                  "}",
                              c);
    expect_verifies(l.program, c);
    const auto [read, written] = hbm_dma_bytes(l);
    EXPECT_EQ(read, layer) << op;
    EXPECT_EQ(written, layer) << op;
    if (op == "sl") {
      std::int64_t first = -1;
      for (const auto& i : l.program.code) {
        if (const auto* d = std::get_if<isa::DmaStart>(&i.op); d && first < 0 &&
                                                                l.program.buffers[d->src.buffer].name == "stack") {
          first = d->src.row;
        }
      }
      EXPECT_EQ(first, 3 * 8 * 1024);
    }
    // One simulation per process: each runs in a child.
    std::string error;
    const auto out = run_isolated(
        [&] {
          auto r = simulate(c, l.program);
          return r.ok() ? std::to_string(r->seconds) : format_all(r.errors());
        },
        error);
    ASSERT_TRUE(out.has_value()) << error;
    const double seconds = std::atof(out->c_str());
    EXPECT_GT(seconds, want) << op << ": " << *out;
    EXPECT_LT(seconds, 1.10 * want) << op << ": " << *out;
  }
}

}  // namespace
}  // namespace tpusim::lower
