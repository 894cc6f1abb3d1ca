#include "isa/lexer.h"

#include <cctype>

namespace tpusim::isa {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  const auto push = [&](TokKind k, std::size_t start, std::size_t end) {
    out.push_back(Token{k, s.substr(start, end - start), start});
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      push(TokKind::kNewline, i, i + 1);
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#' || (c == '/' && i + 1 < s.size() && s[i + 1] == '/')) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (digit(c) || (c == '-' && i + 1 < s.size() && digit(s[i + 1]))) {
      const std::size_t start = i;
      bool is_float = false;
      ++i;
      while (i < s.size() && digit(s[i])) ++i;
      if (i + 1 < s.size() && s[i] == '.' && digit(s[i + 1])) {
        is_float = true;
        ++i;
        while (i < s.size() && digit(s[i])) ++i;
      }
      if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        if (j < s.size() && digit(s[j])) {
          is_float = true;
          i = j;
          while (i < s.size() && digit(s[i])) ++i;
        }
      }
      push(is_float ? TokKind::kFloat : TokKind::kInt, start, i);
    } else if (ident_start(c)) {
      const std::size_t start = i;
      while (i < s.size() && ident_char(s[i])) ++i;
      push(TokKind::kIdent, start, i);
    } else if (c == '"') {
      const std::size_t start = i++;
      bool closed = false;
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size()) {
          i += 2;
          continue;
        }
        if (s[i] == '"') {
          closed = true;
          ++i;
          break;
        }
        ++i;
      }
      push(closed ? TokKind::kString : TokKind::kError, start, i);
    } else {
      TokKind k = TokKind::kError;
      switch (c) {
        case '[': k = TokKind::kLBracket; break;
        case ']': k = TokKind::kRBracket; break;
        case ':': k = TokKind::kColon; break;
        case ',': k = TokKind::kComma; break;
        case '=': k = TokKind::kEquals; break;
        case '@': k = TokKind::kAt; break;
        default: break;
      }
      push(k, i, i + 1);
      ++i;
    }
  }
  out.push_back(Token{TokKind::kEnd, s.substr(s.size()), s.size()});
  return out;
}

std::string_view describe(TokKind k) {
  switch (k) {
    case TokKind::kIdent: return "a name";
    case TokKind::kInt: return "an integer";
    case TokKind::kFloat: return "a number";
    case TokKind::kString: return "a string";
    case TokKind::kLBracket: return "'['";
    case TokKind::kRBracket: return "']'";
    case TokKind::kColon: return "':'";
    case TokKind::kComma: return "','";
    case TokKind::kEquals: return "'='";
    case TokKind::kAt: return "'@'";
    case TokKind::kNewline: return "end of line";
    case TokKind::kEnd: return "end of file";
    case TokKind::kError: return "an invalid character";
  }
  return "?";
}

}  // namespace tpusim::isa
