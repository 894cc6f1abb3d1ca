// Lexer: token kinds, byte offsets, whitespace flags and comments.
#include <gtest/gtest.h>

#include <vector>

#include "isa/hlo/lexer.h"
#include "isa/hlo/shape.h"

namespace tpusim::hlo {
namespace {

std::vector<std::string> words(std::string_view text) {
  Lexer lex(text);
  std::vector<std::string> out;
  while (lex.peek().kind != Tok::kEof && lex.peek().kind != Tok::kError) out.emplace_back(lex.text(lex.next()));
  return out;
}

TEST(HloLexer, SplitsHloIntoTokens) {
  EXPECT_EQ(words("%get-tuple-element.5 = f32[2,<=3]{1,0:T(8,128)} get-tuple-element(%p), index=0"),
            (std::vector<std::string>{"%get-tuple-element.5", "=", "f32", "[", "2", ",", "<=", "3", "]", "{", "1", ",",
                                      "0", ":", "T", "(", "8", ",", "128", ")", "}", "get-tuple-element", "(", "%p",
                                      ")", ",", "index", "=", "0"}));
}

TEST(HloLexer, KeepsCompoundWordsWhole) {
  // Window values, padding, negative numbers and exponents are single words;
  // `->` in dim_labels is its own token.
  EXPECT_EQ(words("size=3x3 pad=1_-1x0_2 b01f_01io->b01f -inf 1e+10 -1.5e-3 {...}"),
            (std::vector<std::string>{"size", "=", "3x3", "pad", "=", "1_-1x0_2", "b01f_01io", "->", "b01f", "-inf",
                                      "1e+10", "-1.5e-3", "{", "...", "}"}));
}

TEST(HloLexer, SkipsCommentsAndRecordsSpacing) {
  Lexer lex("a/*index=5*/b // to end of line\n  c[2]");
  const Token a = lex.next();
  const Token b = lex.next();
  const Token c = lex.next();
  const Token br = lex.next();
  EXPECT_EQ(a.begin, 0u);
  EXPECT_TRUE(b.space_before);  // a comment counts as whitespace
  EXPECT_FALSE(b.newline_before);
  EXPECT_TRUE(c.newline_before);
  EXPECT_FALSE(br.space_before);  // `[` touches `c`
  EXPECT_EQ(lex.text(c), "c");
  EXPECT_EQ(c.begin, 34u);
}

TEST(HloLexer, StringsWithEscapesAndSingleQuotes) {
  Lexer lex(R"("a \"quoted\" \\ string" 'axis_0')");
  EXPECT_EQ(lex.peek().kind, Tok::kString);
  EXPECT_EQ(lex.text(lex.next()), R"("a \"quoted\" \\ string")");
  EXPECT_EQ(lex.text(lex.next()), "'axis_0'");
  EXPECT_EQ(lex.peek().kind, Tok::kEof);
}

TEST(HloLexer, ReportsLexicalErrors) {
  Lexer unterminated("x /* never");
  unterminated.next();
  EXPECT_EQ(unterminated.peek().kind, Tok::kError);
  EXPECT_STREQ(unterminated.error(), "unterminated /* comment");
  Lexer bad("x `");
  bad.next();
  EXPECT_EQ(bad.peek().kind, Tok::kError);
  EXPECT_EQ(bad.peek().begin, 2u);
}

TEST(HloLexer, PeekTwoAheadDoesNotConsume) {
  Lexer lex("f32[2] x");
  EXPECT_EQ(lex.peek2().kind, Tok::kLBracket);
  EXPECT_EQ(lex.text(lex.next()), "f32");
  EXPECT_EQ(lex.next().kind, Tok::kLBracket);
  EXPECT_EQ(lex.text(lex.next()), "2");
}

TEST(HloShape, SizesSaturateInsteadOfOverflowing) {
  const Shape s(ElementType::kF32, {1LL << 40, 1LL << 40});
  EXPECT_EQ(s.element_count(), INT64_MAX);
  EXPECT_EQ(s.byte_size(), INT64_MAX);
  // bf16[3,5]: 15 elements * 2 bytes.
  EXPECT_EQ(Shape(ElementType::kBF16, {3, 5}).byte_size(), 30);
  // Tuples count their elements' data.
  EXPECT_EQ(Shape::tuple({Shape(ElementType::kS32, {}), Shape(ElementType::kF64, {2})}).byte_size(), 20);
}

}  // namespace
}  // namespace tpusim::hlo
