// HLO text lexer. Separate from the parser (STYLE.md: XLA's hlo_lexer.h):
// tokens carry byte offsets into the buffer; offsets become line:column only
// when a diagnostic is printed (see source.h). The lexer never allocates.
#pragma once

#include <cstdint>
#include <string_view>

namespace tpusim::hlo {

enum class Tok : std::uint8_t {
  kEof,
  kError,     // a lexical error; Lexer::error() says what
  kWord,      // names, numbers, keywords, opcodes, `3x3`, `1_1x0_2`, `%x.1`
  kString,    // "…" with C escapes, quotes included in the span
  kLBrace, kRBrace, kLParen, kRParen, kLBracket, kRBracket,
  kComma, kEqual, kColon,
  kArrow,      // ->
  kLessEqual,  // <=
  kLess, kGreater, kQuestion, kStar,
  kOther,  // other punctuation (#, @, !, …): only inside skipped {…} values
};

std::string_view tok_name(Tok t);  // for "expected X" messages

struct Token {
  Tok kind = Tok::kEof;
  bool space_before = false;    // whitespace or a comment precedes the token
  bool newline_before = false;  // a line break precedes the token
  std::uint32_t begin = 0;      // byte offsets into the lexer's buffer
  std::uint32_t end = 0;
};

class Lexer {
 public:
  // Lexes text[begin, end). `text` must outlive the lexer; offsets in tokens
  // are offsets into `text`, so a lexer over a sub-range reports positions in
  // the whole buffer.
  Lexer(std::string_view text, std::uint32_t begin, std::uint32_t end);
  explicit Lexer(std::string_view text)
      : Lexer(text, 0, static_cast<std::uint32_t>(text.size())) {}

  // The current token (lookahead) and advancing past it.
  const Token& peek() const { return tok_; }
  Token next() {
    Token t = tok_;
    prev_end_ = tok_.end;
    if (has_next_) {
      // peek2() already lexed it; reuse instead of lexing twice.
      tok_ = next_;
      pos_ = next_pos_;
      if (next_error_) error_ = next_error_;
      has_next_ = false;
    } else {
      advance();
    }
    return t;
  }
  // End offset of the last token consumed by next().
  std::uint32_t prev_end() const { return prev_end_; }
  // Token after the current one, without consuming anything.
  Token peek2() const;

  std::string_view text(const Token& t) const { return buf_.substr(t.begin, t.end - t.begin); }
  std::string_view buffer() const { return buf_; }
  const char* error() const { return error_; }
  std::uint32_t position() const { return pos_; }

 private:
  void advance();
  // Skips whitespace and comments; returns false on an unterminated comment.
  bool skip_trivia(bool& space, bool& newline);

  std::string_view buf_;
  std::uint32_t pos_;
  std::uint32_t end_;
  std::uint32_t prev_end_ = 0;
  Token tok_;
  // peek2() cache: the token after tok_ and the position after it.
  mutable Token next_;
  mutable std::uint32_t next_pos_ = 0;
  mutable const char* next_error_ = nullptr;
  mutable bool has_next_ = false;
  const char* error_ = nullptr;
};

}  // namespace tpusim::hlo
