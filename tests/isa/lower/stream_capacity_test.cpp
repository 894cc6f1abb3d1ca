// Stream kernels fit VMEM by construction: a multi-output loop fusion whose
// arrays held whole would overflow VMEM streams them instead.
#include <gtest/gtest.h>

#include <string>

#include "common/config_loader.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"

namespace tpusim::lower {
namespace {

// A loop fusion over f32[4,8192,1] with kOutputs outputs of f32[8192,1] (the
// shape of mof_reshapes in the corpus). In VMEM a row pads to 128 lanes, so
// one output held whole takes 8192 x 128 x 4 B = 4 MiB and all of them
// 40 x 4 MiB = 160 MiB, past the 128 MiB of a v5e/v6e core.
constexpr int kOutputs = 40;

std::string many_outputs_module() {
  std::string fused = "f {\n  p0 = f32[4,8192,1] parameter(0)\n  p1 = f32[8192,1] parameter(1)\n";
  std::string tuple_shape, tuple_args;
  for (int i = 0; i < kOutputs; ++i) {
    const std::string c = "c" + std::to_string(i), o = "o" + std::to_string(i);
    fused += "  " + c + " = f32[] constant(" + std::to_string(i) + ")\n";
    fused += "  b" + std::to_string(i) + " = f32[8192,1] broadcast(" + c + "), dimensions={}\n";
    fused += "  " + o + " = f32[8192,1] multiply(p1, b" + std::to_string(i) + ")\n";
    tuple_shape += (i != 0 ? ", " : "") + std::string("f32[8192,1]");
    tuple_args += (i != 0 ? ", " : "") + o;
  }
  fused += "  n = f32[4,8192,1] negate(p0)\n";
  fused += "  ROOT t = (f32[4,8192,1], " + tuple_shape + ") tuple(n, " + tuple_args + ")\n}\n";
  return "HloModule many_outputs\n" + fused +
         "ENTRY main {\n  a = f32[4,8192,1] parameter(0)\n  b = f32[8192,1] parameter(1)\n"
         "  ROOT r = (f32[4,8192,1], " +
         tuple_shape + ") fusion(a, b), kind=kLoop, calls=f\n}\n";
}

TEST(StreamCapacity, ManySmallOutputsStreamInsteadOfOverflowingVmem) {
  const std::int64_t padded_output = std::int64_t{8192} * 128 * 4;
  for (const char* chip : {"v5e", "v6e"}) {
    auto cfg = load_config(chip);
    ASSERT_TRUE(cfg.ok());
    ASSERT_GT(kOutputs * padded_output, static_cast<std::int64_t>(cfg->chip.core.vmem.capacity)) << chip;
    auto m = hlo::parse_hlo_module(many_outputs_module(), "many_outputs.hlo");
    ASSERT_TRUE(m.ok()) << format_all(m.errors());
    auto l = lower_module(**m, cfg->chip);
    ASSERT_TRUE(l.ok()) << format_all(l.errors());
    const auto rep = isa::verify(l->program, cfg->chip);
    EXPECT_TRUE(rep.ok()) << chip;
  }
}

// A relayout of s32[1024,512] into s32[1024,512,1] (the argsort benchmark's
// take_along_axis): the result's 2-D view is [524288, 1], whose rows each
// pad to 128 lanes in VMEM: 524288 x 128 x 4 B = 256 MiB held whole, and
// two slots of half of it each (what chunking by the [1024, 512] view in two
// chunks gave) already 256 MiB. Its slots must be cut to fit.
TEST(StreamCapacity, RelayoutIntoATrailingUnitDimCountsLanePadding) {
  const std::string text = R"(HloModule relayout
ENTRY e {
  p = s32[1024,512] parameter(0)
  ROOT r = s32[1024,512,1] reshape(p)
})";
  for (const char* chip : {"v5e", "v6e"}) {
    auto cfg = load_config(chip);
    ASSERT_TRUE(cfg.ok());
    auto m = hlo::parse_hlo_module(text, "relayout.hlo");
    ASSERT_TRUE(m.ok()) << format_all(m.errors());
    auto l = lower_module(**m, cfg->chip);
    ASSERT_TRUE(l.ok()) << format_all(l.errors());
    EXPECT_TRUE(isa::verify(l->program, cfg->chip).ok()) << chip;
    for (const auto& b : l->program.buffers) {
      if (b.space != isa::MemSpace::kVmem) continue;
      // Every slot within the vmem_budget_fraction (40%) of VMEM.
      const double padded = static_cast<double>((b.rows() + 7) / 8 * 8) * ((b.cols() + 127) / 128 * 128) * 4;
      EXPECT_LE(padded, 0.4 * static_cast<double>(cfg->chip.core.vmem.capacity)) << chip << " " << b.name;
    }
  }
}

}  // namespace
}  // namespace tpusim::lower
