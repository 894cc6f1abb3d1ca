// The op profile's categories (hlo::profile_category), each from the rule
// it illustrates: what the op computes, or what its fusion wraps and its
// fusion kind; and source lines of offsets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "isa/hlo/analysis.h"
#include "isa/hlo/parser.h"

namespace tpusim::hlo {
namespace {

constexpr const char* kModule = R"(HloModule m

add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

dot_body {
  p0 = f32[8,16] parameter(0)
  p1 = f32[16,4] parameter(1)
  d = f32[8,4] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[8,4] exponential(d)
}

reduce_body {
  q = f32[8,16] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8] reduce(q, z), dimensions={1}, to_apply=add_f32
}

ew_body {
  e = f32[8,16] parameter(0)
  ROOT n = f32[8,16] negate(e)
}

ENTRY e {
  a = f32[8,16] parameter(0)
  b = f32[16,4] parameter(1)
  dot = f32[8,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  mf = f32[8,4] fusion(a, b), kind=kOutput, calls=dot_body
  rf = f32[8] fusion(a), kind=kInput, calls=reduce_body
  lf = f32[8,16] fusion(a), kind=kLoop, calls=ew_body
  ar = f32[8,16] all-reduce(a), replica_groups={}, to_apply=add_f32
  t = f32[16,8] transpose(a), dimensions={1,0}
  c = f32[8,16] copy(a)
  m = f32[8,16] multiply(a, a)
  z = f32[] constant(0)
  red = f32[8] reduce(a, z), dimensions={1}, to_apply=add_f32
  cc = f32[8,16] custom-call(a), custom_call_target="foo"
  ROOT out = (f32[8,4], f32[8], f32[8,16]) tuple(mf, rf, lf)
}
)";

TEST(ProfileCategory, OpsGroupAsXlasProfilerGroupsThem) {
  auto m = parse_hlo_module(kModule);
  ASSERT_TRUE(m.ok()) << format_all(m.errors());
  const Computation& e = *(*m)->entry();
  const auto cat = [&](std::string_view name) { return profile_category(*e.find_instruction(name)); };
  EXPECT_EQ(cat("dot"), "matmul");
  EXPECT_EQ(cat("mf"), "matmul fusion");  // a dot inside decides, whatever the kind
  EXPECT_EQ(cat("rf"), "input fusion");
  EXPECT_EQ(cat("lf"), "loop fusion");
  EXPECT_EQ(cat("ar"), "collective");
  EXPECT_EQ(cat("t"), "data formatting");
  EXPECT_EQ(cat("c"), "data formatting");
  EXPECT_EQ(cat("m"), "elementwise");
  EXPECT_EQ(cat("red"), "reduction");
  EXPECT_EQ(cat("cc"), "custom call");
  EXPECT_EQ(cat("out"), "other");
}

TEST(ProfileCategory, FusionsTpusimFormsAreNamedByTheirMembers) {
  auto m = parse_hlo_module(kModule);
  ASSERT_TRUE(m.ok());
  const Computation& e = *(*m)->entry();
  const Instruction* dot = e.find_instruction("dot");
  const Instruction* red = e.find_instruction("red");
  const Instruction* mul = e.find_instruction("m");
  EXPECT_EQ(profile_category_of_fusion(std::vector<const Instruction*>{mul, dot}), "matmul fusion");
  EXPECT_EQ(profile_category_of_fusion(std::vector<const Instruction*>{mul, red}), "input fusion");
  EXPECT_EQ(profile_category_of_fusion(std::vector<const Instruction*>{mul}), "loop fusion");
}

TEST(ProfileCategory, RooflineRowsCarryTheirCategoryAndLine) {
  auto m = parse_hlo_module(kModule);
  ASSERT_TRUE(m.ok());
  const RooflineReport r = roofline(**m, RooflineRates{});
  bool saw_dot = false;
  for (const RooflineRow& row : r.ops) {
    if (row.name != "dot") continue;
    saw_dot = true;
    EXPECT_EQ(row.profile_category, "matmul");
    EXPECT_EQ(row.line, 30);  // "  dot = ..." is line 30 of kModule
  }
  EXPECT_TRUE(saw_dot);
}

TEST(ProfileCategory, InvalidUtf8InOpNameStillRendersAsJson) {
  // Metadata strings come from the user's file and need not be UTF-8: the
  // JSON report replaces the bad byte (0xFF) with U+FFFD instead of throwing.
  const std::string text =
      "HloModule m\n\nENTRY e {\n  a = f32[8] parameter(0)\n"
      "  ROOT n = f32[8] negate(a), metadata={op_name=\"jit(f)/\xff/neg\"}\n}\n";
  auto m = parse_hlo_module(text);
  ASSERT_TRUE(m.ok());
  const RooflineReport r = roofline(**m, RooflineRates{});
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_NE(j.dump().find("jit(f)/\xef\xbf\xbd/neg"), std::string::npos) << j.dump();
}

TEST(SourceLines, OffsetsMapToOneBasedLines) {
  const SourceLines lines("ab\ncd\n\nef");
  EXPECT_EQ(lines.line(0), 1);
  EXPECT_EQ(lines.line(2), 1);  // the newline ends line 1
  EXPECT_EQ(lines.line(3), 2);
  EXPECT_EQ(lines.line(6), 3);  // the empty line
  EXPECT_EQ(lines.line(7), 4);
  EXPECT_EQ(lines.line(100), 4);  // past the end: the last line
}

}  // namespace
}  // namespace tpusim::hlo
