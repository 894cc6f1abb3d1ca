// tpusim's fusion policy for unfused (before-optimizations) modules: which
// ops group, what a group reads and writes, and its roofline row.
#include "isa/lower/fusion.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/config_loader.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"

namespace tpusim::lower {
namespace {

// softmax-like chain over f32[1024,1024] (4 MiB per array):
//   d = sub(x, broadcast(m)); e = exp(d); s = reduce(e) ; y = multiply(e, w)
// e has two users in different groups (the reduce and the multiply), so e
// roots a group of {b, d, e}; the reduce and the multiply root their own.
constexpr const char* kUnfused = R"(HloModule unfused
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[1024,1024] parameter(0)
  m = f32[1024] parameter(1)
  w = f32[1024,1024] parameter(2)
  b = f32[1024,1024] broadcast(m), dimensions={0}
  d = f32[1024,1024] subtract(x, b)
  e = f32[1024,1024] exponential(d)
  zero = f32[] constant(0)
  s = f32[1024] reduce(e, zero), dimensions={1}, to_apply=sum
  y = f32[1024,1024] multiply(e, w)
  ROOT t = (f32[1024], f32[1024,1024]) tuple(s, y)
}
)";

std::set<std::string> names(const std::vector<const hlo::Instruction*>& v) {
  std::set<std::string> out;
  for (const auto* x : v) out.insert(std::string(x->name()));
  return out;
}

TEST(Fusion, ElementwiseChainsGroupAtTheirConsumers) {
  auto m = hlo::parse_hlo_module(kUnfused, "unfused.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  EXPECT_FALSE(module_is_fused(**m));
  const FusionPlan plan = plan_fusion(**m, *(*m)->entry());
  ASSERT_EQ(plan.groups.size(), 2u);
  std::map<std::string, const FusionGroup*> by_root;
  for (const auto& g : plan.groups) by_root[std::string(g.root->name())] = &g;
  ASSERT_TRUE(by_root.contains("e"));
  ASSERT_TRUE(by_root.contains("s"));
  EXPECT_EQ(names(by_root["e"]->members), (std::set<std::string>{"b", "d", "e"}));
  EXPECT_EQ(names(by_root["e"]->inputs), (std::set<std::string>{"x", "m"}));
  EXPECT_EQ(names(by_root["s"]->members), (std::set<std::string>{"zero", "s"}));
  EXPECT_EQ(names(by_root["s"]->inputs), (std::set<std::string>{"e"}));
  // The multiply is alone (a group of one is not a group).
  EXPECT_FALSE(plan.group_of_root.contains((*m)->entry()->instructions()[8]));
}

TEST(Fusion, GroupsReadTheirBoundaryOnceAndRooflineCostsTheBoundary) {
  auto m = hlo::parse_hlo_module(kUnfused, "unfused.hlo");
  ASSERT_TRUE(m.ok());
  auto cfg = load_config("v5e");
  ASSERT_TRUE(cfg.ok());
  auto l = lower_module(**m, cfg->chip);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  EXPECT_TRUE(isa::verify(l->program, cfg->chip).ok());
  // HBM traffic per provenance: group e reads x (4 MiB) and m (4 KiB) and
  // writes e (4 MiB); group s reads e and writes s (4 KiB); y reads e and w
  // and writes y. No intermediate (b, d) ever reaches HBM.
  std::map<std::string, std::int64_t> bytes;
  for (const auto& i : l->program.code) {
    if (const auto* d = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& src = l->program.buffers[d->src.buffer];
      const auto& dst = l->program.buffers[d->dst.buffer];
      const auto& hbm_side = src.space == isa::MemSpace::kHbm ? d->src : d->dst;
      const auto& buf = src.space == isa::MemSpace::kHbm ? src : dst;
      if (src.space == isa::MemSpace::kHbm || dst.space == isa::MemSpace::kHbm) {
        bytes[std::string(l->program.provenance(i))] +=
            isa::dtype_bytes(buf.dtype, std::int64_t{hbm_side.rows} * hbm_side.cols);
      }
    }
  }
  const std::int64_t big = 1024 * 1024 * 4, vec = 1024 * 4;
  EXPECT_EQ(bytes["e"], big + vec + big);
  EXPECT_EQ(bytes["s"], big + vec);
  EXPECT_EQ(bytes["y"], 3 * big);
  EXPECT_EQ(bytes.count("b") + bytes.count("d"), 0u);

  const auto r = roofline_as_lowered(**m, hlo::RooflineRates::example_chip());
  std::map<std::string, const hlo::RooflineRow*> rows;
  for (const auto& row : r.ops) rows[row.name] = &row;
  EXPECT_EQ(rows.count("b") + rows.count("d") + rows.count("zero"), 0u);
  ASSERT_TRUE(rows.contains("e"));
  EXPECT_EQ(rows["e"]->opcode, "fusion");
  EXPECT_DOUBLE_EQ(rows["e"]->cost.bytes_accessed(), static_cast<double>(big + vec + big));
  // 819 GB/s in the example rates: the row is memory-bound at its boundary bytes.
  EXPECT_DOUBLE_EQ(rows["e"]->bound_time_s, (big + vec + big) / 819e9);
  double sum = 0;
  for (const auto& row : r.ops) sum += row.bound_time_s;
  EXPECT_DOUBLE_EQ(r.total.bound_time_s, sum);
}

// A dense layer before XLA's fusion: h = tanh(dot(x, w) + broadcast(bias)),
// with x = convert(xf) feeding the dot. bf16 [2048,1024] x [1024,2048].
constexpr const char* kDense = R"(HloModule dense
ENTRY main {
  xf = f32[2048,1024] parameter(0)
  w = bf16[1024,2048] parameter(1)
  bias = bf16[2048] parameter(2)
  x = bf16[2048,1024] convert(xf)
  d = bf16[2048,2048] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = bf16[2048,2048] broadcast(bias), dimensions={1}
  a = bf16[2048,2048] add(d, bb)
  ROOT h = bf16[2048,2048] tanh(a)
}
)";

TEST(Fusion, DotEpilogueIsFusedIntoTheDotAsXlasOutputFusion) {
  auto m = hlo::parse_hlo_module(kDense, "dense.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const FusionPlan plan = plan_fusion(**m, *(*m)->entry());
  // The dot joins the group of its consumers {bb, a, h} as its hero; the
  // convert feeding the dot is not fused into it (it stays on its own).
  ASSERT_EQ(plan.groups.size(), 1u);
  const FusionGroup& g = plan.groups[0];
  ASSERT_NE(g.hero, nullptr);
  EXPECT_EQ(g.hero->name(), "d");
  EXPECT_EQ(g.root->name(), "h");
  EXPECT_EQ(names(g.members), (std::set<std::string>{"d", "bb", "a", "h"}));
  EXPECT_EQ(names(g.inputs), (std::set<std::string>{"x", "w", "bias"}));

  auto cfg = load_config("v5e");
  ASSERT_TRUE(cfg.ok());
  auto l = lower_module(**m, cfg->chip);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  EXPECT_TRUE(isa::verify(l->program, cfg->chip).ok());
  // The dot's product never reaches HBM: the section named after the root
  // writes h (2048 x 2048 bf16 = 8 MiB) once, and reads the bias (4 KiB)
  // once; nothing is written under the dot's own name.
  std::map<std::string, std::int64_t> written, read;
  for (const auto& i : l->program.code) {
    if (const auto* dma = std::get_if<isa::DmaStart>(&i.op)) {
      const auto& src = l->program.buffers[dma->src.buffer];
      const auto& dst = l->program.buffers[dma->dst.buffer];
      if (dst.space == isa::MemSpace::kHbm) {
        written[dst.name] += isa::dtype_bytes(dst.dtype, std::int64_t{dma->dst.rows} * dma->dst.cols);
      }
      if (src.space == isa::MemSpace::kHbm) {
        read[src.name] += isa::dtype_bytes(src.dtype, std::int64_t{dma->src.rows} * dma->src.cols);
      }
    }
  }
  EXPECT_EQ(written["h"], 2048 * 2048 * 2);
  EXPECT_EQ(written.count("d") + written.count("a"), 0u);
  EXPECT_EQ(read["bias"], 2048 * 2);
  bool epilogue = false;
  for (const auto& i : l->program.code) epilogue = epilogue || (std::holds_alternative<isa::VpuElementwise>(i.op) &&
                                                                l->program.provenance(i) == "h");
  EXPECT_TRUE(epilogue);

  // Roofline of the group at its boundary, at the MXU rate: 2 x 2048 x 1024 x
  // 2048 FLOP = 8.59 GFLOP at the example chip's bf16 peak vs x (4 MiB) + w
  // (4 MiB) + bias + h (8 MiB) at 819 GB/s.
  const auto rates = hlo::RooflineRates::example_chip();
  const auto r = roofline_as_lowered(**m, rates);
  const hlo::RooflineRow* row = nullptr;
  for (const auto& op : r.ops) {
    if (op.name == "h") row = &op;
  }
  ASSERT_NE(row, nullptr);
  const double bytes = 2048.0 * 1024 * 2 * 2 + 2048 * 2 + 2048.0 * 2048 * 2;
  EXPECT_DOUBLE_EQ(row->cost.bytes_accessed(), bytes);
  EXPECT_GE(row->cost.flops, 2.0 * 2048 * 1024 * 2048);
  EXPECT_DOUBLE_EQ(row->compute_time_s,
                   (row->cost.flops + row->cost.transcendentals) / rates.matmul_rate(hlo::ElementType::kBF16));
}

TEST(Fusion, ModulesXlaFusedAreLeftAlone) {
  auto m = hlo::parse_hlo_module(R"(HloModule fused
f {
  p = f32[128,128] parameter(0)
  ROOT e = f32[128,128] exponential(p)
}
ENTRY main {
  x = f32[128,128] parameter(0)
  a = f32[128,128] add(x, x)
  b = f32[128,128] multiply(a, a)
  ROOT c = f32[128,128] fusion(b), kind=kLoop, calls=f
}
)",
                                 "fused.hlo");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(module_is_fused(**m));
  EXPECT_TRUE(plan_fusion(**m, *(*m)->entry()).groups.empty());
  const auto a = hlo::roofline(**m, hlo::RooflineRates::example_chip());
  const auto b = roofline_as_lowered(**m, hlo::RooflineRates::example_chip());
  EXPECT_EQ(a.ops.size(), b.ops.size());
  EXPECT_DOUBLE_EQ(a.total.bound_time_s, b.total.bound_time_s);
}

// A while body is lowered with the same fusion policy: its bound is the
// body's groups at their boundary, times the trip count. Here the body's
// multiply and add are one group reading x (4 MiB) and writing z (4 MiB),
// ten times; the scalar counter and the condition add a few bytes. Unfused,
// the three HBM passes of each op (25 MiB a trip) would put the bound at
// three times the simulated time's floor.
TEST(FusionRoofline, LoopBodiesAreCostedAsLoweredTimesTheTripCount) {
  const char* text = R"(HloModule w
body {
  p = (s32[], f32[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[1024,1024] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[1024,1024] multiply(x, x)
  z = f32[1024,1024] add(y, x)
  ROOT t = (s32[], f32[1024,1024]) tuple(j, z)
}
cond {
  p = (s32[], f32[1024,1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  a = f32[1024,1024] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[1024,1024]) tuple(zero, a)
  w = (s32[], f32[1024,1024]) while(t), condition=cond, body=body
  ROOT r = f32[1024,1024] get-tuple-element(w), index=1
})";
  auto m = hlo::parse_hlo_module(text, "w.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const auto r = roofline_as_lowered(**m, hlo::RooflineRates::example_chip());
  const hlo::RooflineRow* w = nullptr;
  for (const auto& row : r.ops) w = row.name == "w" ? &row : w;
  ASSERT_NE(w, nullptr);
  const double big = 1024.0 * 1024 * 4, trips = 10;
  EXPECT_NEAR(w->cost.bytes_accessed(), trips * 2 * big, 1e-4 * trips * 2 * big);
  EXPECT_DOUBLE_EQ(w->cost.flops, trips * (2 * 1024.0 * 1024 + 1) + (trips + 1));  // multiply, add, j; compares
  EXPECT_NEAR(w->bound_time_s, trips * 2 * big / 819e9, 1e-4 * trips * 2 * big / 819e9);
}

}  // namespace
}  // namespace tpusim::lower
