#include "isa/hlo/lexer.h"

#include <array>

namespace tpusim::hlo {
namespace {

enum : std::uint8_t { kWordStart = 1, kWordCont = 2, kSpace = 4, kDigit = 8 };

constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> c{};
  for (int ch = 'a'; ch <= 'z'; ++ch) c[ch] |= kWordStart | kWordCont;
  for (int ch = 'A'; ch <= 'Z'; ++ch) c[ch] |= kWordStart | kWordCont;
  for (int ch = '0'; ch <= '9'; ++ch) c[ch] |= kWordStart | kWordCont | kDigit;
  c['_'] |= kWordStart | kWordCont;
  c['.'] |= kWordStart | kWordCont;
  c['%'] |= kWordStart;
  c['$'] |= kWordStart | kWordCont;
  c[' '] |= kSpace;
  c['\t'] |= kSpace;
  c['\r'] |= kSpace;
  c['\n'] |= kSpace;
  c['\f'] |= kSpace;
  c['\v'] |= kSpace;
  return c;
}
constexpr auto kClass = make_classes();

inline std::uint8_t cls(char ch) { return kClass[static_cast<unsigned char>(ch)]; }

}  // namespace

std::string_view tok_name(Tok t) {
  switch (t) {
    case Tok::kEof: return "end of input";
    case Tok::kError: return "invalid token";
    case Tok::kWord: return "a name or number";
    case Tok::kString: return "a string";
    case Tok::kLBrace: return "'{'";
    case Tok::kRBrace: return "'}'";
    case Tok::kLParen: return "'('";
    case Tok::kRParen: return "')'";
    case Tok::kLBracket: return "'['";
    case Tok::kRBracket: return "']'";
    case Tok::kComma: return "','";
    case Tok::kEqual: return "'='";
    case Tok::kColon: return "':'";
    case Tok::kArrow: return "'->'";
    case Tok::kLessEqual: return "'<='";
    case Tok::kLess: return "'<'";
    case Tok::kGreater: return "'>'";
    case Tok::kQuestion: return "'?'";
    case Tok::kStar: return "'*'";
    case Tok::kOther: return "punctuation";
  }
  return "token";
}

Lexer::Lexer(std::string_view text, std::uint32_t begin, std::uint32_t end)
    : buf_(text), pos_(begin), end_(end) {
  advance();
}

Token Lexer::peek2() const {
  if (!has_next_) {
    Lexer copy = *this;
    copy.advance();
    next_ = copy.tok_;
    next_pos_ = copy.pos_;
    next_error_ = copy.error_ != error_ ? copy.error_ : nullptr;
    has_next_ = true;
  }
  return next_;
}

bool Lexer::skip_trivia(bool& space, bool& newline) {
  const char* s = buf_.data();
  while (pos_ < end_) {
    const char ch = s[pos_];
    if (cls(ch) & kSpace) {
      if (ch == '\n') newline = true;
      space = true;
      ++pos_;
      continue;
    }
    if (ch == '/' && pos_ + 1 < end_) {
      if (s[pos_ + 1] == '/') {
        while (pos_ < end_ && s[pos_] != '\n') ++pos_;
        space = true;
        continue;
      }
      if (s[pos_ + 1] == '*') {
        const std::uint32_t start = pos_;
        pos_ += 2;
        while (pos_ + 1 < end_ && !(s[pos_] == '*' && s[pos_ + 1] == '/')) {
          if (s[pos_] == '\n') newline = true;
          ++pos_;
        }
        if (pos_ + 1 >= end_) {
          pos_ = start;
          return false;
        }
        pos_ += 2;
        space = true;
        continue;
      }
    }
    break;
  }
  return true;
}

void Lexer::advance() {
  bool space = false;
  bool newline = false;
  tok_ = Token{};
  if (!skip_trivia(space, newline)) {
    tok_ = Token{Tok::kError, space, newline, pos_, end_};
    error_ = "unterminated /* comment";
    pos_ = end_;
    return;
  }
  tok_.space_before = space;
  tok_.newline_before = newline;
  tok_.begin = pos_;
  if (pos_ >= end_) {
    tok_.kind = Tok::kEof;
    tok_.end = pos_;
    return;
  }
  const char* s = buf_.data();
  const char ch = s[pos_];
  auto single = [&](Tok k) {
    tok_.kind = k;
    tok_.end = ++pos_;
  };
  // A '-' starts a word when a digit, letter or '.' follows (`-1`, `-inf`).
  const bool minus_word = ch == '-' && pos_ + 1 < end_ && (cls(s[pos_ + 1]) & kWordCont);
  if ((cls(ch) & kWordStart) || minus_word) {
    const bool numeric = (cls(ch) & kDigit) || ch == '-' || ch == '.';
    ++pos_;
    while (pos_ < end_) {
      const char c = s[pos_];
      if (cls(c) & kWordCont) {
        ++pos_;
        continue;
      }
      // '-' continues a word (`get-tuple-element`, `1_-1`) unless it begins
      // an arrow (`b01f_01io->b01f`).
      if (c == '-' && !(pos_ + 1 < end_ && s[pos_ + 1] == '>')) {
        ++pos_;
        continue;
      }
      // Exponent sign in a number: 1e+10.
      if (c == '+' && numeric && (s[pos_ - 1] == 'e' || s[pos_ - 1] == 'E')) {
        ++pos_;
        continue;
      }
      break;
    }
    tok_.kind = Tok::kWord;
    tok_.end = pos_;
    return;
  }
  switch (ch) {
    case '{': return single(Tok::kLBrace);
    case '}': return single(Tok::kRBrace);
    case '(': return single(Tok::kLParen);
    case ')': return single(Tok::kRParen);
    case '[': return single(Tok::kLBracket);
    case ']': return single(Tok::kRBracket);
    case ',': return single(Tok::kComma);
    case '=': return single(Tok::kEqual);
    case ':': return single(Tok::kColon);
    case '?': return single(Tok::kQuestion);
    case '*': return single(Tok::kStar);
    case '>': return single(Tok::kGreater);
    case '<':
      if (pos_ + 1 < end_ && s[pos_ + 1] == '=') {
        tok_.kind = Tok::kLessEqual;
        pos_ += 2;
        tok_.end = pos_;
        return;
      }
      return single(Tok::kLess);
    case '-':
      if (pos_ + 1 < end_ && s[pos_ + 1] == '>') {
        tok_.kind = Tok::kArrow;
        pos_ += 2;
        tok_.end = pos_;
        return;
      }
      break;
    case '#': case '@': case '!': case '&': case '|': case '^': case '~': case ';':
    case '+': case '\\': case '/':
      return single(Tok::kOther);
    case '\'':
    case '"': {
      const char quote = ch;
      ++pos_;
      while (pos_ < end_ && s[pos_] != quote) {
        if (s[pos_] == '\\' && pos_ + 1 < end_) ++pos_;
        ++pos_;
      }
      if (pos_ >= end_) {
        tok_.kind = Tok::kError;
        tok_.end = end_;
        error_ = "unterminated string literal";
        return;
      }
      ++pos_;
      tok_.kind = Tok::kString;
      tok_.end = pos_;
      return;
    }
    default:
      break;
  }
  tok_.kind = Tok::kError;
  tok_.end = pos_ + 1;
  error_ = "unexpected character";
  pos_ = end_;  // stop: the parser reports the error at tok_.begin
}

}  // namespace tpusim::hlo
