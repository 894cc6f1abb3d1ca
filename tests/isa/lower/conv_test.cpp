// Convolutions: the GEMM a convolution is, read from dim_labels whatever the
// layout; depthwise convolutions (one input feature per group) run on the VPU
// as stream kernels that fit VMEM however large the arrays
// (docs/lowering.md, "Convolutions").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "isa/hlo/parser.h"
#include "isa/lower/conv.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "sim/simulate.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

const hlo::Instruction& root_of(const hlo::Module& m) { return *m.entry()->root(); }

// The same 3x3 convolution of 32 -> 64 features in two layouts: M = batch x
// output spatial = 8 x 56 x 56, K = 3 x 3 x 32, N = 64, whatever the order of
// the dims.
TEST(Conv, GemmDimsComeFromDimLabels) {
  const std::string nhwc = R"(HloModule c
ENTRY e {
  x = f32[8,56,56,32] parameter(0)
  w = f32[3,3,32,64] parameter(1)
  ROOT y = f32[8,56,56,64] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})";
  const std::string nchw = R"(HloModule c
ENTRY e {
  x = f32[8,32,56,56] parameter(0)
  w = f32[64,32,3,3] parameter(1)
  ROOT y = f32[8,64,56,56] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})";
  for (const std::string& text : {nhwc, nchw}) {
    auto m = hlo::parse_hlo_module(text, "c.hlo");
    ASSERT_TRUE(m.ok()) << format_all(m.errors());
    const ConvGemm g = conv_gemm(root_of(**m));
    EXPECT_EQ(g.groups, 1);
    EXPECT_EQ(g.m, 8 * 56 * 56);
    EXPECT_EQ(g.k, 3 * 3 * 32);
    EXPECT_EQ(g.n, 64);
    EXPECT_FALSE(is_depthwise(root_of(**m)));
  }
}

// A grouped (not depthwise) convolution: 4 groups of 16 -> 32 features are
// 4 GEMMs of K = 9 x 16, N = 32.
TEST(Conv, GroupedConvolutionIsOneGemmPerGroup) {
  auto m = hlo::parse_hlo_module(R"(HloModule c
ENTRY e {
  x = f32[8,28,28,64] parameter(0)
  w = f32[3,3,16,128] parameter(1)
  ROOT y = f32[8,28,28,128] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4
})", "c.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const ConvGemm g = conv_gemm(root_of(**m));
  EXPECT_EQ(g.groups, 4);
  EXPECT_EQ(g.m, 8 * 28 * 28);
  EXPECT_EQ(g.k, 9 * 16);
  EXPECT_EQ(g.n, 32);
  EXPECT_FALSE(is_depthwise(root_of(**m)));
}

// A depthwise 3x3 convolution (stride 1, same padding) over f32[16,112,112,256]:
// input and output are 16·112·112·256·4 B = 196 MiB each, past a v5e core's
// 128 MiB of VMEM. HloCostAnalysis's FLOPs: 2 x output elements x window x
// input features per group (1) = 2 x 9 x 16·112·112·256; the lowering's VPU
// does exactly those (a multiply and an add per window element and output
// element). HBM bytes: the input read once, the output written once, the
// 3·3·256 f32 weights read once.
TEST(ConvSim, DepthwiseConvolutionLargerThanVmemRunsOnTheVpu) {
  const ChipConfig c = tpusim::testing::preset("v5e");
  auto m = hlo::parse_hlo_module(R"(HloModule dw
ENTRY e {
  x = f32[16,112,112,256] parameter(0)
  w = f32[3,3,1,256] parameter(1)
  ROOT y = f32[16,112,112,256] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=256
})", "dw.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  ASSERT_TRUE(is_depthwise(root_of(**m)));
  const double out_elements = 16.0 * 112 * 112 * 256;
  ASSERT_GT(2 * out_elements * 4, static_cast<double>(c.core.vmem.capacity));
  auto l = lower_module(**m, c);
  ASSERT_TRUE(l.ok()) << format_all(l.errors());
  const auto rep = isa::verify(l->program, c);
  ASSERT_TRUE(rep.ok()) << format_all(rep.diagnostics()).substr(0, 2000);
  EXPECT_EQ(l->report.count(NoteKind::kApprox), 0u);
  for (const auto& i : l->program.code) {
    EXPECT_FALSE(std::holds_alternative<isa::MxuMatmul>(i.op)) << "a depthwise convolution runs on the VPU";
  }
  auto r = simulate(c, l->program);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  ASSERT_TRUE(r->finished);
  double flops = 0, hbm_bytes = 0;
  for (const auto& row : r->provenance) {
    flops += row.stats.flops;
    hbm_bytes += row.stats.hbm_bytes;
  }
  EXPECT_DOUBLE_EQ(flops, 2 * 9 * out_elements);
  EXPECT_DOUBLE_EQ(hbm_bytes, 2 * out_elements * 4 + 3 * 3 * 256 * 4);
  // VPU time: 2 x 9 ops per chunk over the output's vregs (f32, lane-dense:
  // out_elements / (8 x 128)), each paced by one vreg store per cycle.
  const double vpu_s = 2 * 9 * out_elements / (8 * 128) / static_cast<double>(c.core.vpu.vreg_stores_per_cycle) /
                       c.clock;
  std::printf("depthwise 3x3 f32[16,112,112,256] on v5e: simulated %.6f ms, VPU formula %.6f ms\n",
              r->seconds * 1e3, vpu_s * 1e3);
  EXPECT_GE(r->seconds, vpu_s);
  EXPECT_LE(r->seconds, 1.03 * vpu_s);  // stated tolerance: first load and last store exposed
}

}  // namespace
}  // namespace tpusim::lower
