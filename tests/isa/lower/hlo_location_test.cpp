// Errors found after parsing (ISA verifier on a lowered program) point at the
// HLO text: file:line:col of the HLO instruction, and its name.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <utility>

#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "tests/isa/lower/preset.h"

namespace tpusim::lower {
namespace {

TEST(LowerLocation, VerifierErrorsNameTheHloInstructionAndItsLine) {
  // A select with an f32 predicate gets past a parse without shape checks;
  // the vpu.select it lowers to needs a pred operand, which the ISA verifier
  // reports. `s` is on line 4, its name at column 8.
  const std::string text =
      "HloModule s\nENTRY e {\n  a = f32[8,128] parameter(0)\n  ROOT s = f32[8,128] select(a, a, a)\n}\n";
  auto m = hlo::parse_hlo_module(text, "sel.hlo", {.verify_shapes = false});
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const ChipConfig chip = testing::preset();
  auto lowered = lower_module(**m, chip);
  ASSERT_TRUE(lowered.ok()) << format_all(lowered.errors());
  const isa::VerifyReport report = isa::verify(lowered->program, chip);
  ASSERT_FALSE(report.ok());
  bool found = false;
  for (const Diagnostic& d : report.diagnostics()) {
    if (d.message.find("pred") == std::string::npos) continue;
    found = true;
    EXPECT_EQ(d.file, "sel.hlo");
    EXPECT_EQ(d.line, 4);
    EXPECT_EQ(d.column, 8);
    EXPECT_NE(d.message.find("(from 's')"), std::string::npos) << d.message;
  }
  EXPECT_TRUE(found) << format_all(report.diagnostics());
}

TEST(LowerLocation, AnMxuOfPartLaneTilesIsOneErrorAtTheFirstOpThatUsesIt) {
  // The compiler feeds the MXUs whole VMEM lane tiles: on an array whose
  // rows or columns are not a multiple of the lanes (a design-space sweep's
  // 192 x 192), a dot would read parts of lane tiles, which the verifier
  // rejects tile by tile. The lowering says so once, at the dot (line 5);
  // the elementwise op before it lowers, and a module with no MXU op runs.
  const std::string text =
      "HloModule d\nENTRY e {\n  a = bf16[256,512] parameter(0)\n  b = bf16[256,512] add(a, a)\n"
      "  ROOT d = bf16[256,256] dot(b, a), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n";
  auto m = hlo::parse_hlo_module(text, "dot.hlo");
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{192, 192}, {128, 64}, {64, 128}}) {
    ChipConfig chip = testing::preset("v6e");
    chip.core.mxu.rows = rows;
    chip.core.mxu.cols = cols;
    chip.core.mxu.weight_load_rows_per_cycle = 1;
    auto lowered = lower_module(**m, chip);
    ASSERT_FALSE(lowered.ok()) << rows << "x" << cols;
    ASSERT_EQ(lowered.errors().size(), 1u) << format_all(lowered.errors());
    const Diagnostic& d = lowered.errors().front();
    EXPECT_EQ(d.file, "dot.hlo");
    EXPECT_EQ(d.line, 5);
    const std::string key = rows % 128 != 0 ? fmt::format("core.mxu.rows = {}", rows) : fmt::format("core.mxu.cols = {}", cols);
    EXPECT_NE(d.message.find(key + " is not a multiple of core.vpu.lanes = 128"), std::string::npos) << d.message;
  }
  // Whole lane tiles (512 x 384) compile and verify; so does a module with no MXU op on 192 x 192.
  ChipConfig wide = testing::preset("v6e");
  wide.core.mxu.rows = 512;
  wide.core.mxu.cols = 384;
  auto ok = lower_module(**m, wide);
  ASSERT_TRUE(ok.ok()) << format_all(ok.errors());
  EXPECT_TRUE(isa::verify(ok->program, wide).ok());
  auto add = hlo::parse_hlo_module("HloModule a\nENTRY e {\n  a = f32[8,128] parameter(0)\n  ROOT s = f32[8,128] add(a, a)\n}\n",
                                   "add.hlo");
  ASSERT_TRUE(add.ok());
  ChipConfig odd = testing::preset("v6e");
  odd.core.mxu.rows = odd.core.mxu.cols = 192;
  odd.core.mxu.weight_load_rows_per_cycle = 1;
  EXPECT_TRUE(lower_module(**add, odd).ok());
}

}  // namespace
}  // namespace tpusim::lower
