// isa/lower element types: bf16 vector arithmetic runs natively where the
// VPU has a bf16 ALU (core.vpu.bf16_alu, v6e and later) and in f32 between
// converts where it has none (v5e and earlier), as Mosaic's
// canonicalize_mosaic.cc does. Counts are derived from the vreg shape in
// the comments, not read back from the compiler.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/simulate.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

Lowered lower_text(const std::string& text, const ChipConfig& c) {
  auto m = hlo::parse_hlo_module(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  auto r = lower_module(**m, c);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return std::move(r).value();
}

void expect_verifies(const isa::Program& p, const ChipConfig& c) {
  const auto rep = isa::verify(p, c);
  EXPECT_TRUE(rep.ok()) << format_all(rep.diagnostics()).substr(0, 4000);
}

// VPU instructions by (op, dst dtype): {count, dst vregs}. The vregs are
// counted by hand: rows / (sublanes * 32 / bits) x cols / lanes.
using Key = std::tuple<isa::VpuOp, isa::DType>;
using Ops = std::pair<std::int64_t, std::int64_t>;  // {instructions, dst vregs}
std::map<Key, Ops> vpu_ops(const isa::Program& p, const VpuConfig& v) {
  std::map<Key, Ops> out;
  for (const auto& i : p.code) {
    const auto* e = std::get_if<isa::VpuElementwise>(&i.op);
    if (e == nullptr) continue;
    const isa::DType d = p.buffers[e->dst.buffer].dtype;
    const std::int64_t per_vreg_rows = v.sublanes * (32 / isa::dtype_bits(d));
    auto& [n, vregs] = out[{e->op, d}];
    ++n;
    vregs += (e->dst.rows / per_vreg_rows) * (e->dst.cols / v.lanes);
  }
  return out;
}

Ops of(const std::map<Key, Ops>& ops, const Key& k) {
  const auto it = ops.find(k);
  return it == ops.end() ? Ops{0, 0} : it->second;
}

constexpr const char* kBf16Add = R"(HloModule m
ENTRY e {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  ROOT s = bf16[1024,1024] add(a, b)
})";

// v5e (no bf16 ALU): 4 chunks of 256 rows (1 MiB / (1024 cols x 4 B)).
// Per chunk: a and b converted to f32 (256/8 x 1024/128 = 256 vregs each),
// one f32 add (256 vregs), one convert into the bf16 output staging tile
// (256/16 x 8 = 128 vregs). The f32 values stay in vector registers; the
// converts of a and b load their inputs (a result-shaped load each, 3
// loads per cycle: ceil(256 / 3) = 86 cycles, more than 256 / 4 ALUs),
// the add only uses the 4 ALUs (64 cycles), the last convert stores its
// 128 vregs at one per cycle (128). Busy time: 4 x (2 x 86 + 64 + 128) = 1456.
TEST(ElementTypes, Bf16AddOnV5eConvertsAroundAnF32Add) {
  const ChipConfig c = testing::preset("v5e");
  ASSERT_FALSE(c.core.vpu.bf16_alu);
  const auto l = lower_text(kBf16Add, c);
  const auto ops = vpu_ops(l.program, c.core.vpu);
  using isa::DType;
  using isa::VpuOp;
  EXPECT_EQ(ops.size(), 3u);
  EXPECT_EQ((of(ops, {VpuOp::kConvert, DType::kF32})), Ops(8, 2048));
  EXPECT_EQ((of(ops, {VpuOp::kAdd, DType::kF32})), Ops(4, 1024));
  EXPECT_EQ((of(ops, {VpuOp::kConvert, DType::kBf16})), Ops(4, 512));
  expect_verifies(l.program, c);
  // The f32 temporaries (two converted inputs and the sum) are vector
  // registers, not VMEM.
  int f32_vregs = 0, f32_vmem = 0;
  for (const auto& b : l.program.buffers) {
    if (b.dtype != DType::kF32) continue;
    f32_vregs += b.space == isa::MemSpace::kVreg ? 1 : 0;
    f32_vmem += b.space == isa::MemSpace::kVmem ? 1 : 0;
  }
  EXPECT_EQ(f32_vregs, 3);
  EXPECT_EQ(f32_vmem, 0);
}

// v6e (bf16 ALU): the same 4 chunks run one bf16 add each, written into
// the output staging tile: 4 x 128 packed vregs.
TEST(ElementTypes, Bf16AddOnV6eRunsNativelyAtThePackedRate) {
  const ChipConfig c = testing::preset("v6e");
  ASSERT_TRUE(c.core.vpu.bf16_alu);
  const auto l = lower_text(kBf16Add, c);
  const auto ops = vpu_ops(l.program, c.core.vpu);
  EXPECT_EQ(ops.size(), 1u);
  EXPECT_EQ((of(ops, {isa::VpuOp::kAdd, isa::DType::kBf16})), Ops(4, 512));
  expect_verifies(l.program, c);
}

// VPU busy cycles of kBf16Add simulated on a preset (one simulation per
// process: each test calls it once).
double bf16_add_vpu_cycles(const char* chip_name) {
  const ChipConfig c = testing::preset(chip_name);
  auto l = lower_text(kBf16Add, c);
  auto r = simulate(c, std::move(l.program));
  EXPECT_TRUE(r.ok()) << format_all(r.errors());
  return r.ok() ? r->stats.value("chip0.core0.vpu.busy_cycles") : -1.0;
}

// Simulated: the VPU of v5e is busy for the 1456 cycles derived above.
TEST(ElementTypesSim, Bf16AddOnV5eCostsTheConvertsInVpuCycles) {
  EXPECT_DOUBLE_EQ(bf16_add_vpu_cycles("v5e"), 1456);
}

// Simulated on v6e: 4 packed bf16 adds of 128 vregs, one vreg stored per
// cycle: 512 busy cycles, about a third of v5e's 1456.
TEST(ElementTypesSim, Bf16AddOnV6eCostsOnlyThePackedAdd) {
  EXPECT_DOUBLE_EQ(bf16_add_vpu_cycles("v6e"), 512);
}

// A chain of bf16 ops keeps the widened value in f32 (excess precision, as
// XLA allows by default): a*b+c on v5e converts each input once, runs mul
// and add in f32 and converts the result once. tanh of bf16 on v5e reads
// an f32 copy too (Mosaic: bf16 tanh needs generation 6).
TEST(ElementTypes, Bf16ChainOnV5eWidensOnceAndNarrowsOnce) {
  const ChipConfig c = testing::preset("v5e");
  const auto l = lower_text(R"(HloModule m
fused {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  c = bf16[1024,1024] parameter(2)
  m = bf16[1024,1024] multiply(a, b)
  s = bf16[1024,1024] add(m, c)
  ROOT t = bf16[1024,1024] tanh(s)
}
ENTRY e {
  a = bf16[1024,1024] parameter(0)
  b = bf16[1024,1024] parameter(1)
  c = bf16[1024,1024] parameter(2)
  ROOT f = bf16[1024,1024] fusion(a, b, c), kind=kLoop, calls=fused
})",
                            c);
  const auto ops = vpu_ops(l.program, c.core.vpu);
  using isa::DType;
  using isa::VpuOp;
  // 4 chunks of 256 rows, each: 3 converts up, mul and add in f32, tanh
  // on the EUP in f32, one convert down into the output staging tile.
  EXPECT_EQ((of(ops, {VpuOp::kConvert, DType::kF32})).first, 12);
  EXPECT_EQ((of(ops, {VpuOp::kMul, DType::kF32})).first, 4);
  EXPECT_EQ((of(ops, {VpuOp::kAdd, DType::kF32})).first, 4);
  EXPECT_EQ((of(ops, {VpuOp::kConvert, DType::kBf16})).first, 4);
  EXPECT_EQ((ops.count({VpuOp::kMul, DType::kBf16})), 0u);
  for (const auto& i : l.program.code) {
    if (const auto* e = std::get_if<isa::EupUnary>(&i.op)) {
      EXPECT_EQ(l.program.buffers[e->src.buffer].dtype, DType::kF32);
    }
  }
  expect_verifies(l.program, c);
}

// A dot's epilogue adds a bf16 residual to an f32 output (the maxtext
// step's output fusion): the residual tile is converted to f32 before the
// add, on every chip.
TEST(ElementTypes, DotEpilogueConvertsAnInputOfAnotherDtype) {
  for (const char* name : {"v5e", "v6e"}) {
    const ChipConfig c = testing::preset(name);
    const auto l = lower_text(R"(HloModule m
fused {
  a = bf16[2048,1024] parameter(0)
  b = bf16[1024,2048] parameter(1)
  r = bf16[2048,2048] parameter(2)
  d = bf16[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  df = f32[2048,2048] convert(d)
  rf = f32[2048,2048] convert(r)
  ROOT t = f32[2048,2048] add(df, rf)
}
ENTRY e {
  x = bf16[2048,1024] parameter(0)
  w = bf16[1024,2048] parameter(1)
  res = bf16[2048,2048] parameter(2)
  ROOT f = f32[2048,2048] fusion(x, w, res), kind=kOutput, calls=fused
})",
                              c);
    const auto ops = vpu_ops(l.program, c.core.vpu);
    EXPECT_GT((of(ops, {isa::VpuOp::kConvert, isa::DType::kF32})).first, 0) << name;
    expect_verifies(l.program, c);
  }
}

// A bf16 output epilogue on v5e: the pops write an f32 tile, the epilogue
// adds in f32, and one convert per block writes the bf16 staging tile.
TEST(ElementTypes, Bf16DotEpilogueOnV5eRunsInF32) {
  const ChipConfig c = testing::preset("v5e");
  const auto l = lower_text(R"(HloModule m
fused {
  a = bf16[2048,1024] parameter(0)
  b = bf16[1024,2048] parameter(1)
  r = bf16[2048,2048] parameter(2)
  d = bf16[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = bf16[2048,2048] add(d, r)
}
ENTRY e {
  x = bf16[2048,1024] parameter(0)
  w = bf16[1024,2048] parameter(1)
  res = bf16[2048,2048] parameter(2)
  ROOT f = bf16[2048,2048] fusion(x, w, res), kind=kOutput, calls=fused
})",
                            c);
  std::int64_t pops_f32 = 0, pops = 0;
  for (const auto& i : l.program.code) {
    if (const auto* p = std::get_if<isa::MxuPop>(&i.op)) {
      ++pops;
      pops_f32 += l.program.buffers[p->dst.buffer].dtype == isa::DType::kF32 ? 1 : 0;
    }
  }
  EXPECT_GT(pops, 0);
  EXPECT_EQ(pops_f32, pops);
  const auto ops = vpu_ops(l.program, c.core.vpu);
  EXPECT_EQ((ops.count({isa::VpuOp::kAdd, isa::DType::kBf16})), 0u);
  EXPECT_GT((of(ops, {isa::VpuOp::kAdd, isa::DType::kF32})).first, 0);
  expect_verifies(l.program, c);
}

// fp8 dots: v7 has an fp8 MXU mode (core.mxu.rate.fp8 = 2, 4614 TFLOP/s
// [GC-7x]) and streams the fp8 tiles as they are; v5e has none (rate 0):
// the tiles are converted to bf16 on the VPU and run at the bf16 rate, and
// the lowering note says so.
constexpr const char* kFp8Dot = R"(HloModule m
ENTRY e {
  a = f8e4m3fn[512,512] parameter(0)
  b = f8e4m3fn[512,512] parameter(1)
  ROOT d = bf16[512,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

isa::DType matmul_lhs_dtype(const isa::Program& p) {
  for (const auto& i : p.code) {
    if (const auto* m = std::get_if<isa::MxuMatmul>(&i.op)) return p.buffers[m->lhs.buffer].dtype;
  }
  return isa::DType::kPred;
}

std::string dot_note(const LowerReport& r) {
  for (const auto& n : r.notes) {
    if (n.op == "d") return n.message;
  }
  return "";
}

TEST(ElementTypes, Fp8DotRunsAtTheFp8RateWhereTheMxuHasIt) {
  const ChipConfig v7 = testing::preset("v7");
  ASSERT_GT(v7.core.mxu.rate.fp8, 0);
  const auto l = lower_text(kFp8Dot, v7);
  EXPECT_EQ(matmul_lhs_dtype(l.program), isa::DType::kFp8);
  EXPECT_EQ(dot_note(l.report).find("bf16 rate"), std::string::npos) << dot_note(l.report);
  expect_verifies(l.program, v7);
}

TEST(ElementTypes, Fp8DotRunsAtTheBf16RateWithANoteWhereTheMxuLacksIt) {
  const ChipConfig v5e = testing::preset("v5e");
  ASSERT_EQ(v5e.core.mxu.rate.fp8, 0);
  const auto l = lower_text(kFp8Dot, v5e);
  EXPECT_EQ(matmul_lhs_dtype(l.program), isa::DType::kBf16);
  EXPECT_NE(dot_note(l.report).find("f8e4m3 dot run at bf16 rate: chip has no f8e4m3 MXU mode"), std::string::npos)
      << dot_note(l.report);
  expect_verifies(l.program, v5e);
}

}  // namespace
}  // namespace tpusim::lower
