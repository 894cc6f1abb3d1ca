// Cost analysis of custom calls that carry real work and of `while` loops
// multiplied by their trip count. Every expected figure is derived by hand
// from the formulas in isa/hlo/custom_calls.h and cost_analysis.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "isa/hlo/analysis.h"
#include "isa/hlo/cost_analysis.h"
#include "isa/hlo/custom_calls.h"
#include "isa/hlo/parser.h"

namespace tpusim::hlo {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parse_hlo_module(text);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  return m.ok() ? std::move(m.value()) : nullptr;
}

const Instruction& root(const Module& m) { return *m.entry()->root(); }

// TE's layout: Q [B, Sq, H, D], K/V [B, Skv, Hkv, D]. B=2, S=128, H=8,
// Hkv=2 (GQA), D=64.
std::string te_module(const std::string& target, int mask_type) {
  const std::string cfg = "backend_config={attn_heads = 8 : i64, input_batch = 2 : i64, kv_max_seqlen = 128 : i64, "
                          "mask_type = " + std::to_string(mask_type) +
                          " : i64, num_gqa_groups = 2 : i64, q_max_seqlen = 128 : i64, qk_head_dim = 64 : i64, "
                          "qkv_layout = 9 : i64, v_head_dim = 64 : i64}";
  return R"(HloModule m
ENTRY e {
  q = bf16[2,128,8,64] parameter(0)
  k = bf16[2,128,2,64] parameter(1)
  v = bf16[2,128,2,64] parameter(2)
  ROOT a = (bf16[2,128,8,64], f32[2,8,128,1]) custom-call(q, k, v), custom_call_target=")" +
         target + "\", api_version=API_VERSION_TYPED_FFI, " + cfg + "\n}";
}

// 4·B·H·Sq·Skv·D = 4·2·8·128·128·64 = 67108864 FLOPs; B·H·Sq·Skv = 262144 exps.
constexpr double kTeForwardFlops = 4.0 * 2 * 8 * 128 * 128 * 64;
constexpr double kTeScores = 2.0 * 8 * 128 * 128;

TEST(CustomCallCost, TransformerEngineForwardNoMask) {
  auto m = parse(te_module("te_fused_attn_forward_ffi", 0));
  const OpCost c = instruction_cost(root(*m));
  EXPECT_DOUBLE_EQ(c.flops, kTeForwardFlops);
  EXPECT_DOUBLE_EQ(c.transcendentals, kTeScores);
  EXPECT_EQ(c.matmul_type, ElementType::kBF16);
  // Bytes: Q 2·128·8·64·2 = 262144, K and V 2·128·2·64·2 = 65536 each (GQA
  // reads the smaller K/V); out 262144 + f32 stats 2·8·128·4 = 8192.
  EXPECT_DOUBLE_EQ(c.bytes_read, 262144.0 + 2 * 65536.0);
  EXPECT_DOUBLE_EQ(c.bytes_written, 262144.0 + 8192.0);
}

TEST(CustomCallCost, TransformerEngineCausalHalves) {
  // mask_type 2 (causal) and 3 (padding + causal) both halve the work.
  for (int mask : {2, 3}) {
    auto m = parse(te_module("te_fused_attn_forward_ffi", mask));
    const OpCost c = instruction_cost(root(*m));
    EXPECT_DOUBLE_EQ(c.flops, kTeForwardFlops / 2) << "mask_type " << mask;
    EXPECT_DOUBLE_EQ(c.transcendentals, kTeScores / 2) << "mask_type " << mask;
  }
  // mask_type 1 (padding only) does not.
  auto m = parse(te_module("te_fused_attn_forward_ffi", 1));
  EXPECT_DOUBLE_EQ(instruction_cost(root(*m)).flops, kTeForwardFlops);
}

TEST(CustomCallCost, TransformerEngineBackwardIsFiveProducts) {
  // Five products of 2·B·H·Sq·Skv·D where the forward has two: 2.5x.
  auto m = parse(te_module("te_fused_attn_backward_ffi", 0));
  EXPECT_DOUBLE_EQ(instruction_cost(root(*m)).flops, 10.0 * 2 * 8 * 128 * 128 * 64);
  auto causal = parse(te_module("te_fused_attn_backward_ffi", 3));
  EXPECT_DOUBLE_EQ(instruction_cost(root(*causal)).flops, 5.0 * 2 * 8 * 128 * 128 * 64);
}

TEST(CustomCallCost, TransformerEngineBackendConfigOverridesShapes) {
  // Sequence lengths from backend_config, not the (padded) operand shapes:
  // q_max_seqlen 128, kv_max_seqlen 64 → 4·2·8·128·64·64.
  std::string text = te_module("te_fused_attn_forward_ffi", 0);
  text.replace(text.find("kv_max_seqlen = 128"), 19, "kv_max_seqlen = 64");
  auto m = parse(text);
  EXPECT_DOUBLE_EQ(instruction_cost(root(*m)).flops, 4.0 * 2 * 8 * 128 * 64 * 64);
}

TEST(CustomCallCost, CudnnFmhaForwardAndBackward) {
  // BTNH: B=1, Sq=256, Skv=512, H=4, D=32. Forward 4·1·4·256·512·32.
  const std::string fwd = R"(HloModule m
ENTRY e {
  q = bf16[1,256,4,32] parameter(0)
  k = bf16[1,512,4,32] parameter(1)
  v = bf16[1,512,4,32] parameter(2)
  ROOT a = (bf16[1,256,4,32], u8[0]) custom-call(q, k, v), custom_call_target="__cudnn$fmhaSoftmax", backend_config={"cudnn_fmha_backend_config":{"mask_type":"NO_MASK"}}
})";
  auto m = parse(fwd);
  EXPECT_DOUBLE_EQ(instruction_cost(root(*m)).flops, 4.0 * 4 * 256 * 512 * 32);
  std::string causal = fwd;
  causal.replace(causal.find("NO_MASK"), 7, "CAUSAL");
  auto mc = parse(causal);
  EXPECT_DOUBLE_EQ(instruction_cost(root(*mc)).flops, 2.0 * 4 * 256 * 512 * 32);
  std::string bwd = causal;
  bwd.replace(bwd.find("fmhaSoftmax"), 11, "fmhaSoftmaxBackward");
  auto mb = parse(bwd);
  // 2.5x the causal forward.
  EXPECT_DOUBLE_EQ(instruction_cost(root(*mb)).flops, 2.5 * 2.0 * 4 * 256 * 512 * 32);
  const auto a = attention_call(root(*mb));
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->backward);
  EXPECT_TRUE(a->causal);
  EXPECT_EQ(a->kv_len, 512);
}

TEST(CustomCallCost, CublasGemmIsADot) {
  // 2·M·N·K = 2·64·256·128 = 4194304, contracting dim 1 from backend_config.
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,256] parameter(1)
  ROOT g = f32[64,256] custom-call(a, b), custom_call_target="__cublas$gemm", backend_config={"gemm_backend_config":{"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]}}}
})");
  const OpCost c = instruction_cost(root(*m));
  EXPECT_DOUBLE_EQ(c.flops, 4194304.0);
  EXPECT_EQ(c.matmul_type, ElementType::kF32);
}

TEST(CustomCallCost, CublasLtMatmulCountsTheResultNotTheWorkspace) {
  // Transposed lhs [K, M] = [32, 16] contracting dim 0; result [16, 8]:
  // 2·16·8·32 = 8192. The s8 workspace is not part of the product.
  auto m = parse(R"(HloModule m
ENTRY e {
  a = bf16[32,16] parameter(0)
  b = bf16[32,8] parameter(1)
  ROOT g = (bf16[16,8], s8[4194304]) custom-call(a, b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_contracting_dimensions":["0"],"rhs_contracting_dimensions":["0"]}}}
})");
  EXPECT_DOUBLE_EQ(instruction_cost(root(*m)).flops, 8192.0);
}

TEST(CustomCallCost, OtherCustomCallsCountOnlyBytes) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[256] parameter(0)
  ROOT g = f32[256] custom-call(a), custom_call_target="some_target"
})");
  const OpCost c = instruction_cost(root(*m));
  EXPECT_DOUBLE_EQ(c.flops, 0.0);
  EXPECT_DOUBLE_EQ(c.bytes_accessed(), 2 * 1024.0);
}

// A counting loop: i from 0 while i < 10, step 1 (the induction pattern);
// the body adds two f32[1024] vectors.
std::string loop_module(const std::string& backend_config) {
  return R"(HloModule m
body {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[1024] get-tuple-element(p), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  y = f32[1024] add(x, x)
  ROOT t = (s32[], f32[1024]) tuple(i1, y)
}
cond {
  p = (s32[], f32[1024]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  zero = s32[] constant(0)
  x = f32[1024] parameter(0)
  t = (s32[], f32[1024]) tuple(zero, x)
  ROOT w = (s32[], f32[1024]) while(t), condition=cond, body=body)" +
         backend_config + "\n}";
}

TEST(WhileCost, BodyTimesTripCountConditionTimesTripCountPlusOne) {
  // Body: add of f32[1024] (1024 FLOPs) + induction add (1): 1025 per
  // iteration; condition: one compare, run 11 times. 10·1025 + 11 = 10261.
  // Bytes per body: y reads 2·4096, writes 4096; i1 reads 8, writes 4:
  // 12300; condition compare reads 8, writes 1: 9. 10·12300 + 11·9 = 123099.
  for (const std::string& cfg : {std::string(), std::string(R"(, backend_config={"known_trip_count":{"n":"10"}})")}) {
    auto m = parse(loop_module(cfg));
    const OpCost c = instruction_cost(root(*m));
    EXPECT_DOUBLE_EQ(c.flops, 10261.0) << cfg;
    EXPECT_DOUBLE_EQ(c.bytes_accessed(), 123099.0) << cfg;
    const RooflineReport r = roofline(*m, RooflineRates::example_chip());
    EXPECT_TRUE(r.unknown_trip_loops.empty());
    EXPECT_DOUBLE_EQ(r.total.flops, 10261.0);
  }
}

TEST(WhileCost, UnknownTripCountIsCountedOnceAndNamed) {
  // The condition compares with a parameter: no induction pattern.
  std::string text = loop_module("");
  text.replace(text.find("n = s32[] constant(10)"), 22, "n = s32[] constant(10)\n  q = s32[] add(i, n)");
  text.replace(text.find("compare(i, n)"), 13, "compare(q, n)");
  auto m = parse(text);
  const RooflineReport r = roofline(*m, RooflineRates::example_chip());
  ASSERT_EQ(r.unknown_trip_loops.size(), 1u);
  EXPECT_EQ(r.unknown_trip_loops[0], "w");
  // Once: body 1025 + condition 2 (add and compare).
  EXPECT_DOUBLE_EQ(r.total.flops, 1027.0);
  EXPECT_NE(render_text(r).find("while w: trip count unknown"), std::string::npos);
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["unknown_trip_loops"], nlohmann::json::array({"w"}));
}

TEST(WhileCost, InPlaceDynamicUpdateSliceFusionWritesOnlyTheSlice) {
  // 100000 iterations each writing one f32 into a loop-carried f32[100000]
  // buffer through a fusion rooted at dynamic-update-slice. In place, each
  // iteration reads the update (4 B) and the index (4 B) and writes 4 B: the
  // fusion moves 8 + 4 = 12 B, not 2 · 400000 B.
  auto m = parse(R"(HloModule m
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
  n = s32[] constant(100000)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  zero = s32[] constant(0)
  x = f32[100000] parameter(0)
  t = (s32[], f32[100000]) tuple(zero, x)
  ROOT w = (s32[], f32[100000]) while(t), condition=cond, body=body
})");
  const Computation* fused = nullptr;
  for (const Computation* c : m->computations())
    if (c->name() == "fused_update") fused = c;
  ASSERT_NE(fused, nullptr);
  // The fusion: reads v (4) + i (4), writes the f32[1] update (4).
  const Instruction* f = nullptr;
  for (const Computation* c : m->computations())
    if (Instruction* x = c->find_instruction("f"); x && c->name() == "body") f = x;
  ASSERT_NE(f, nullptr);
  const OpCost fc = instruction_cost(*f);
  EXPECT_DOUBLE_EQ(fc.bytes_read, 8.0);
  EXPECT_DOUBLE_EQ(fc.bytes_written, 4.0);
  // Per iteration: convert 4+4, fusion 12, induction add 8+4 = 32 B; the
  // condition compare 4+4+1 = 9 B, 100001 times. 100000·32 + 100001·9.
  const OpCost w = instruction_cost(root(*m));
  EXPECT_DOUBLE_EQ(w.bytes_accessed(), 100000.0 * 32 + 100001.0 * 9);
}

}  // namespace
TEST(FusionCost, ParameterReadOnlyBySlicesCountsTheSlices) {
  // A scan body's read of one layer from its carried f32[32,1024,512]
  // buffer: a fusion slicing layer i out (dynamic-slice, then a reshape).
  // As XLA's cost analysis counts it, the fusion reads the slice
  // (1024·512·4 = 2 MiB) and the index (4 B), not the whole 64 MiB buffer,
  // and writes the 2 MiB result. A parameter also read whole (the add) is
  // read whole.
  auto m = parse(R"(HloModule m
fused_slice {
  p0 = f32[32,1024,512] parameter(0)
  p1 = s32[] parameter(1)
  z = s32[] constant(0)
  d = f32[1,1024,512] dynamic-slice(p0, p1, z, z), dynamic_slice_sizes={1,1024,512}
  ROOT r = f32[1024,512] reshape(d)
}
fused_both {
  p0 = f32[32,1024,512] parameter(0)
  p1 = s32[] parameter(1)
  z = s32[] constant(0)
  d = f32[1,1024,512] dynamic-slice(p0, p1, z, z), dynamic_slice_sizes={1,1024,512}
  n = f32[32,1024,512] negate(p0)
  ROOT t = (f32[1,1024,512], f32[32,1024,512]) tuple(d, n)
}
ENTRY e {
  s = f32[32,1024,512] parameter(0)
  i = s32[] parameter(1)
  f = f32[1024,512] fusion(s, i), kind=kLoop, calls=fused_slice
  g = (f32[1,1024,512], f32[32,1024,512]) fusion(s, i), kind=kLoop, calls=fused_both
  ROOT t = (f32[1024,512], (f32[1,1024,512], f32[32,1024,512])) tuple(f, g)
})");
  const Computation* entry = m->entry();
  const OpCost f = instruction_cost(*entry->find_instruction("f"));
  EXPECT_DOUBLE_EQ(f.bytes_read, 1024.0 * 512 * 4 + 4);
  EXPECT_DOUBLE_EQ(f.bytes_written, 1024.0 * 512 * 4);
  const OpCost g = instruction_cost(*entry->find_instruction("g"));
  EXPECT_DOUBLE_EQ(g.bytes_read, 32.0 * 1024 * 512 * 4 + 4);
}

}  // namespace
