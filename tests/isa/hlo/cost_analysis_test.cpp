// Cost analysis and roofline numbers, each derived by hand in a comment.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "isa/hlo/analysis.h"
#include "isa/hlo/cost_analysis.h"
#include "isa/hlo/parser.h"
#include "isa/hlo/structure.h"
#include "test_modules.h"

namespace tpusim::hlo {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parse_hlo_module(text);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  return m.ok() ? std::move(m.value()) : nullptr;
}

const Instruction& find(const Module& m, std::string_view name) {
  for (const Computation* c : m.computations())
    if (Instruction* i = c->find_instruction(name)) return *i;
  ADD_FAILURE() << "no instruction " << name;
  return *m.entry()->root();
}

TEST(HloCost, DotIsTwoMNKFlops) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,256] parameter(1)
  ROOT d = f32[64,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const OpCost c = instruction_cost(find(*m, "d"));
  // 2*M*N*K = 2*64*256*128 = 4194304.
  EXPECT_DOUBLE_EQ(c.flops, 4194304.0);
  // Read 64*128*4 + 128*256*4 = 32768 + 131072; write 64*256*4 = 65536.
  EXPECT_DOUBLE_EQ(c.bytes_read, 163840.0);
  EXPECT_DOUBLE_EQ(c.bytes_written, 65536.0);
  EXPECT_EQ(c.matmul_type, ElementType::kF32);
}

TEST(HloCost, BatchedDotCountsEveryBatchElement) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = bf16[8,32,16] parameter(0)
  b = bf16[8,16,64] parameter(1)
  ROOT d = f32[8,32,64] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
})");
  // batch 8, M=32, N=64, K=16: 2*8*32*64*16 = 524288.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "d")).flops, 524288.0);
}

TEST(HloCost, ConvolutionFlops) {
  auto m = parse(R"(HloModule m
ENTRY e {
  x = f32[1,8,8,16] parameter(0)
  k = f32[3,3,16,32] parameter(1)
  ROOT c = f32[1,8,8,32] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  // 2 * output elements (1*8*8*32 = 2048) * window (3*3) * input features 16
  // = 2*2048*9*16 = 589824.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "c")).flops, 589824.0);
  EXPECT_EQ(instruction_cost(find(*m, "c")).matmul_type, ElementType::kF32);  // on the MXU
}

TEST(HloCost, GroupedConvolutionDividesInputFeatures) {
  auto m = parse(R"(HloModule m
ENTRY e {
  x = f32[1,8,8,16] parameter(0)
  k = f32[3,3,1,16] parameter(1)
  ROOT c = f32[1,8,8,16] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=16
})");
  // Depthwise: input features per group = 16/16 = 1:
  // 2 * (8*8*16 = 1024) * 9 * 1 = 18432.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "c")).flops, 18432.0);
  // No contraction over features: vector work, not a matmul.
  EXPECT_EQ(instruction_cost(find(*m, "c")).matmul_type, ElementType::kTuple);
}

TEST(HloCost, ElementwiseAndTranscendentals) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[10,20] parameter(0)
  b = f32[10,20] add(a, a)
  ROOT c = f32[10,20] exponential(b)
})");
  // add: 200 elements -> 200 FLOPs; reads 2*800 B, writes 800 B.
  const OpCost add = instruction_cost(find(*m, "b"));
  EXPECT_DOUBLE_EQ(add.flops, 200.0);
  EXPECT_DOUBLE_EQ(add.bytes_accessed(), 2400.0);
  // exponential: 200 transcendentals, 0 FLOPs.
  const OpCost exp = instruction_cost(find(*m, "c"));
  EXPECT_DOUBLE_EQ(exp.flops, 0.0);
  EXPECT_DOUBLE_EQ(exp.transcendentals, 200.0);
}

TEST(HloCost, ReduceAppliesToApplyPerReducedElement) {
  auto m = parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[100,50] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[100] reduce(a, z), dimensions={1}, to_apply=add
})");
  // (5000 inputs - 100 outputs) * 1 FLOP per add = 4900.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "r")).flops, 4900.0);
}

TEST(HloCost, FusionCountsInnerFlopsAndBoundaryBytes) {
  auto m = parse(R"(HloModule m
fused {
  p0 = f32[256] parameter(0)
  p1 = f32[256] parameter(1)
  m = f32[256] multiply(p0, p1)
  ROOT a = f32[256] add(m, p1)
}
ENTRY e {
  x = f32[256] parameter(0)
  y = f32[256] parameter(1)
  ROOT f = f32[256] fusion(x, y), kind=kLoop, calls=fused
})");
  const OpCost c = instruction_cost(find(*m, "f"));
  // multiply + add: 2 * 256 = 512 FLOPs; the intermediate never touches
  // memory: bytes = 2 operands * 1024 + output 1024 = 3072.
  EXPECT_DOUBLE_EQ(c.flops, 512.0);
  EXPECT_DOUBLE_EQ(c.bytes_accessed(), 3072.0);
}

TEST(HloCost, SliceAndDynamicUpdateSliceBytes) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[100] parameter(0)
  u = f32[10] parameter(1)
  i = s32[] parameter(2)
  s = f32[10] slice(a), slice={[0:10]}
  ROOT d = f32[100] dynamic-update-slice(a, u, i)
})");
  // slice: read and write only the 40-byte result: 80.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "s")).bytes_accessed(), 80.0);
  // dynamic-update-slice: 2 * update (40) + index (4) = 84.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "d")).bytes_accessed(), 84.0);
}

TEST(HloCost, CollectiveBytes) {
  auto m = parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[1024] parameter(0)
  ar = f32[1024] all-reduce(a), replica_groups={{0,1,2,3}}, to_apply=add
  ROOT ag = f32[4096] all-gather(a), replica_groups={{0,1,2,3}}, dimensions={0}
})");
  // all-reduce: operand 4096 B; 1024 adds.
  const OpCost ar = instruction_cost(find(*m, "ar"));
  EXPECT_DOUBLE_EQ(ar.collective_bytes, 4096.0);
  EXPECT_DOUBLE_EQ(ar.flops, 1024.0);
  // all-gather: the gathered result, 4096 * 4 = 16384 B.
  EXPECT_DOUBLE_EQ(instruction_cost(find(*m, "ag")).collective_bytes, 16384.0);
}

TEST(HloRoofline, ComputeBoundDotAndMemoryBoundAdd) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  d = bf16[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT s = bf16[1024,1024] add(d, a)
})");
  RooflineRates rates;
  rates.matmul_flops_per_second = {{ElementType::kBF16, 100e12}};
  rates.vector_flops_per_second = 1e12;
  rates.hbm_bytes_per_second = 1e12;
  rates.ici_bytes_per_second = 1e11;
  const RooflineReport r = roofline(*m, rates);
  ASSERT_EQ(r.ops.size(), 2u);  // parameters cost nothing and are omitted
  // dot: 2*1024^3 = 2147483648 FLOPs / 100e12 = 21.47 us; bytes 3 * 2 MiB =
  // 6291456 / 1e12 = 6.29 us -> compute bound.
  EXPECT_EQ(r.ops[0].bound, Bound::kCompute);
  EXPECT_NEAR(r.ops[0].bound_time_s, 2147483648.0 / 100e12, 1e-12);
  // add: 1048576 FLOPs / 1e12 = 1.05 us; bytes 6291456 / 1e12 = 6.29 us.
  EXPECT_EQ(r.ops[1].bound, Bound::kMemory);
  EXPECT_NEAR(r.ops[1].bound_time_s, 6291456.0 / 1e12, 1e-12);
  EXPECT_NEAR(r.total.bound_time_s, 2147483648.0 / 100e12 + 6291456.0 / 1e12, 1e-12);
  EXPECT_EQ(r.total.bound, Bound::kCompute);  // 21.5 us of compute vs 6.3 us of memory
  EXPECT_DOUBLE_EQ(r.total.flops, 2147483648.0 + 1048576.0);
}

TEST(HloRoofline, JsonHasOpsAndTotals) {
  auto out = analyze_hlo_text(R"(HloModule m
ENTRY e {
  a = f32[16] parameter(0)
  ROOT n = f32[16] negate(a)
})",
                              "x.hlo", RooflineRates::example_chip(), AnalyzeFormat::kJson);
  ASSERT_TRUE(out.ok());
  const auto j = nlohmann::json::parse(out.value());
  ASSERT_EQ(j["ops"].size(), 1u);
  EXPECT_EQ(j["ops"][0]["name"], "n");
  EXPECT_DOUBLE_EQ(j["total"]["flops"].get<double>(), 16.0);
  EXPECT_DOUBLE_EQ(j["total"]["bytes_accessed"].get<double>(), 128.0);
  for (const char* key : {"flops", "transcendentals", "bytes_accessed", "collective_bytes", "bound_time_s", "bound"})
    EXPECT_TRUE(j["total"].contains(key)) << key;
  EXPECT_EQ(j["total"]["bound"], "memory");
}

TEST(HloRoofline, CsvHasHeaderRowsAndTotal) {
  auto out = analyze_hlo_text("HloModule m\nENTRY e {\n a = f32[16] parameter(0)\n ROOT n = f32[16] negate(a)\n}\n",
                              "x.hlo", RooflineRates::example_chip(), AnalyzeFormat::kCsv);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value().rfind("module,op,opcode,flops", 0), 0u);
  EXPECT_NE(out.value().find("\nm,n,negate,16,"), std::string::npos);
  EXPECT_NE(out.value().find("\nm,TOTAL,"), std::string::npos);
}

TEST(HloRoofline, AnalyzeReportsParseErrors) {
  auto out = analyze_hlo_text("HloModule m\nENTRY e {\n ROOT n = f32[16] negate(q)\n}\n", "bad.hlo",
                              RooflineRates::example_chip(), AnalyzeFormat::kText);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.errors()[0].format().find("bad.hlo:3:"), std::string::npos);
}

TEST(HloCost, CountsTheWholeDeepestAcceptedCallChain) {
  // The entry calls c0, which calls c1, …; the last computation negates
  // f32[8]: 8 FLOPs, whatever the depth the parser accepts (kMaxCallDepth
  // computations in all, counting the entry).
  auto m = parse(call_chain_module(kMaxCallDepth - 1));
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(instruction_cost(*m->entry()->root()).flops, 8.0);
}

}  // namespace
}  // namespace tpusim::hlo
