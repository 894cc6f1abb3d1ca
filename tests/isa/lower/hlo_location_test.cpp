// Errors found after parsing (ISA verifier on a lowered program) point at the
// HLO text: file:line:col of the HLO instruction, and its name.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace tpusim::lower
