// Every error kind: the message names file:line:col, shows the line with a
// caret and says what was expected.
#include <gtest/gtest.h>

#include <string>

#include "isa/hlo/parser.h"

namespace tpusim::hlo {
namespace {

// Parses `text` (shape checks on) and returns the first error, formatted.
std::string first_error(const std::string& text) {
  ParsedFile f = parse_hlo(text, "bad.hlo");
  for (const auto& m : f.modules)
    if (!m.ok()) return m.errors().front().format();
  ADD_FAILURE() << "expected an error for:\n" << text;
  return {};
}

void expect_error(const std::string& text, const std::string& location, const std::string& message) {
  const std::string e = first_error(text);
  EXPECT_EQ(e.rfind("bad.hlo:" + location + ": error: ", 0), 0u) << e;
  EXPECT_NE(e.find(message), std::string::npos) << e;
  EXPECT_NE(e.find('^'), std::string::npos) << "no caret line in: " << e;
}

const char* kHeader = "HloModule m\nENTRY e {\n";

TEST(HloParseErrors, EmptyInputExpectsHloModule) {
  expect_error("// just a comment\n", "1:1", "expected 'HloModule'");
  // Bare computations are a module (as in XLA); an empty one is still an error.
  expect_error("ENTRY e {}\n", "1:9", "computation '%e' has no instructions");
  expect_error("= e {}\n", "1:1", "expected 'HloModule' or a computation at the start of a module, found '='");
}

TEST(HloParseErrors, MissingEqualsAfterName) {
  expect_error(std::string(kHeader) + "  a f32[] parameter(0)\n}\n", "3:5", "expected '=' after the instruction name");
}

TEST(HloParseErrors, UnknownElementType) {
  expect_error(std::string(kHeader) + "  a = f31[2] parameter(0)\n}\n", "3:7", "unknown element type 'f31'");
}

TEST(HloParseErrors, UndefinedOperand) {
  expect_error(std::string(kHeader) + "  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n", "4:25",
               "use of undefined instruction '%c'");
}

TEST(HloParseErrors, UndefinedComputation) {
  expect_error(std::string(kHeader) + "  a = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                                      "  ROOT r = f32[] reduce(a, z), dimensions={0}, to_apply=%nowhere\n}\n",
               "5:57", "undefined computation '%nowhere'");
}

TEST(HloParseErrors, DuplicateNames) {
  expect_error(std::string(kHeader) + "  a = f32[] parameter(0)\n  a = f32[] negate(a)\n}\n", "4:3",
               "instruction '%a' is already defined");
  expect_error("HloModule m\nc {\n ROOT a = f32[] constant(1)\n}\nc {\n ROOT a = f32[] constant(1)\n}\n", "5:1",
               "computation '%c' is already defined");
}

TEST(HloParseErrors, SecondRootAndSecondEntry) {
  expect_error(std::string(kHeader) + "  ROOT a = f32[] constant(1)\n  ROOT b = f32[] constant(2)\n}\n", "4:8",
               "a second ROOT");
  expect_error("HloModule m\nENTRY a {\n ROOT x = f32[] constant(1)\n}\nENTRY b {\n ROOT x = f32[] constant(1)\n}\n",
               "5:1", "a second ENTRY");
}

TEST(HloParseErrors, UnterminatedCommentAndString) {
  expect_error(std::string(kHeader) + "  /* never closed\n  a = f32[] parameter(0)\n}\n", "3:3",
               "unterminated /* comment");
  expect_error(std::string(kHeader) + "  ROOT a = f32[] custom-call(), custom_call_target=\"oops\n}\n", "3:52",
               "unterminated string literal");
}

TEST(HloParseErrors, UnexpectedCharacter) {
  expect_error(std::string(kHeader) + "  a = f32[] parameter(0) ` \n}\n", "3:26", "unexpected character");
}

TEST(HloParseErrors, AttributeOfTheWrongKind) {
  expect_error(std::string(kHeader) + "  a = f32[2,3] parameter(0)\n  ROOT t = f32[3,2] transpose(a), dimensions=1\n}\n",
               "4:46", "attribute 'dimensions' expects an integer list like {0,1}, found '1'");
  expect_error(std::string(kHeader) + "  ROOT a = f32[] parameter(0), sharding=replicated\n}\n", "3:41",
               "expected '{' to begin a sharding");
  expect_error(std::string(kHeader) + "  ROOT a = f32[] custom-call(), custom_call_target=foo\n}\n", "3:52",
               "attribute 'custom_call_target' expects a string");
}

TEST(HloParseErrors, MalformedWindowAndDimLabels) {
  const std::string conv_head = std::string(kHeader) +
                                "  x = f32[1,8,8,4] parameter(0)\n  k = f32[3,3,4,4] parameter(1)\n"
                                "  ROOT c = f32[1,8,8,4] convolution(x, k), ";
  expect_error(conv_head + "window={size=3x3 stride=1}, dim_labels=b01f_01io->b01f\n}\n", "5:68",
               "window field 'stride' has 1 dimensions but 'size' has 2");
  expect_error(conv_head + "window={size=3x3 speed=1x1}, dim_labels=b01f_01io->b01f\n}\n", "5:61",
               "unknown window field 'speed'");
  expect_error(conv_head + "window={size=3x3 pad=1x1}, dim_labels=b01f_01io->b01f\n}\n", "5:65",
               "expected low_high per dimension");
  expect_error(conv_head + "window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io\n}\n", "6:1",
               "expected '->' in dim_labels");
  expect_error(conv_head + "window={size=3x3 pad=1_1x1_1}, dim_labels=b01q_01io->b01f\n}\n", "5:86",
               "malformed dim_labels");
}

TEST(HloParseErrors, MalformedReplicaGroupsAndSharding) {
  const std::string head = std::string(kHeader) + "  ROOT a = f32[8] parameter(0), ";
  expect_error(head + "sharding={devices=[2,2]0,1,2}\n}\n", "3:51", "needs 4 devices but 3 are given");
  expect_error(head + "sharding={devices=[2,1]<=[3]}\n}\n", "3:51", "needs 2 devices but 3 are given");
  expect_error(head + "sharding={tiled}\n}\n", "3:43", "unknown sharding item 'tiled'");
  expect_error(head + "replica_groups=[2,4]<=[4,2]T(0,0)\n}\n", "3:48", "T(...) is not a permutation");
  expect_error(head + "replica_groups=[2,3]<=[8]\n}\n", "3:48", "do not cover the 8 devices");
}

TEST(HloParseErrors, UnbalancedBraces) {
  expect_error(std::string(kHeader) + "  ROOT a = f32[] parameter(0), metadata={op_name=\"x\"\n", "3:41",
               "unbalanced {");
  expect_error(std::string(kHeader) + "  ROOT a = f32[] parameter(0), metadata={op_name=\"x\")}\n}\n", "3:53",
               "mismatched ')' (expected '}')");
}

TEST(HloParseErrors, MissingClosingBrace) {
  expect_error(std::string(kHeader) + "  ROOT a = f32[] parameter(0)\n", "2:9", "missing its closing '}'");
}

TEST(HloParseErrors, ParameterNumbers) {
  expect_error(std::string(kHeader) + "  ROOT a = f32[] parameter(3)\n}\n", "3:8",
               "parameter number 3 out of range");
  expect_error(std::string(kHeader) + "  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(0)\n}\n", "4:8",
               "parameter number 0 is used twice");
}

TEST(HloParseErrors, IntegerOutOfRange) {
  expect_error(std::string(kHeader) + "  ROOT a = f32[99999999999999999999] parameter(0)\n}\n", "3:16",
               "integer '99999999999999999999' out of range");
}

TEST(HloParseErrors, TypedOperandDisagreesWithDefinition) {
  expect_error(std::string(kHeader) + "  a = f32[2] parameter(0)\n  ROOT b = f32[3] negate(f32[3] a)\n}\n", "4:33",
               "operand is annotated f32[3] but '%a' has shape f32[2]");
}

TEST(HloParseErrors, ErrorsCarryTheSourceLineAndCaret) {
  ParsedFile f = parse_hlo(std::string(kHeader) + "  a = f32[] parameter(0)\n  ROOT b = f32[] add(a, c)\n}\n", "x.hlo");
  ASSERT_FALSE(f.ok());
  const std::vector<Diagnostic> errors = f.errors();
  const Diagnostic& d = errors.front();
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 25);
  EXPECT_EQ(d.source_line, "  ROOT b = f32[] add(a, c)");
  EXPECT_EQ(d.format(), "x.hlo:4:25: error: use of undefined instruction '%c' (not defined in computation '%e')\n"
                        "    ROOT b = f32[] add(a, c)\n"
                        "                          ^");
}

TEST(HloParseErrors, EachModuleOfAFileIsReportedOnItsOwn) {
  // A broken second module (an undefined operand; a truncated body) is
  // reported on its own while the first still parses, and fails the file as
  // a whole (ParsedFile::ok, what every command checks).
  const auto second_fails = [](const std::string& second, int line, const std::string& message) {
    ParsedFile f = parse_hlo("HloModule good\nENTRY e {\n ROOT a = f32[] constant(1)\n}\n// -----\n" + second,
                             "two.hlo");
    ASSERT_EQ(f.modules.size(), 2u);
    EXPECT_TRUE(f.modules[0].ok());
    EXPECT_FALSE(f.ok());
    ASSERT_EQ(f.errors().size(), 1u);
    EXPECT_EQ(f.errors()[0].line, line);
    EXPECT_NE(f.errors()[0].message.find(message), std::string::npos) << f.errors()[0].message;
  };
  second_fails("HloModule bad\nENTRY e {\n ROOT a = f32[] add(x, y)\n}\n", 8, "use of undefined instruction '%x'");
  second_fails("HloModule truncated\nENTRY e {\n ROOT p = f32[] parameter(0)\n", 7, "missing its closing '}'");
}

TEST(HloParseErrors, UnreadableFile) {
  ParsedFile f = parse_hlo_file("/nonexistent/x.hlo");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.errors()[0].format().find("cannot open file"), std::string::npos);
}

}  // namespace
}  // namespace tpusim::hlo
