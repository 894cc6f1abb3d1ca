#include "isa/stablehlo/lexer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <fmt/format.h>
#include <string>

namespace tpusim::stablehlo {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-'; }

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  Result<std::vector<Token>> run() {
    std::vector<Token> out;
    while (true) {
      skip_space();
      if (pos_ >= text_.size()) break;
      auto t = next();
      if (!t.ok()) return t.errors();
      out.push_back(*t);
    }
    out.push_back(make(TokKind::kEnd, pos_, pos_));
    return out;
  }

 private:
  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  std::uint32_t line_ = 1;
  std::size_t line_start_ = 0;

  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      line_start_ = pos_ + 1;
    }
    ++pos_;
  }
  void skip_space() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        advance();
      } else if (text_.substr(pos_, 2) == "//") {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }
  Token make(TokKind k, std::size_t begin, std::size_t end) const {
    return {k, text_.substr(begin, end - begin), static_cast<std::uint32_t>(begin), line_,
            static_cast<std::uint32_t>(begin - line_start_ + 1)};
  }
  Diagnostic error(std::size_t at, std::string msg) const {
    return {file_, static_cast<int>(line_), static_cast<int>(at - line_start_ + 1), std::move(msg),
            std::string(line_of(text_, static_cast<int>(line_)))};
  }
  // Balanced `<...>` starting at pos_ (which is '<'); quoted strings may hold '<' and '>'.
  Result<std::size_t> angle_end(std::size_t begin) {
    int depth = 0;
    for (std::size_t i = pos_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (c == '"') {
        for (++i; i < text_.size() && text_[i] != '"'; ++i) {
          if (text_[i] == '\\') ++i;
        }
      } else if (c == '<') {
        ++depth;
      } else if (c == '>' && (i == 0 || text_[i - 1] != '-')) {
        if (--depth == 0) return i + 1;
      }
    }
    return error(begin, "unterminated '<': expected a matching '>'");
  }
  Result<Token> bracketed(TokKind kind, std::size_t begin) {
    auto end = angle_end(begin);
    if (!end.ok()) return end.errors();
    Token t = make(kind, begin, *end);
    while (pos_ < *end) advance();
    return t;
  }
  Result<Token> word(std::size_t begin) {
    while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
    const std::string_view w = text_.substr(begin, pos_ - begin);
    if (pos_ < text_.size() && text_[pos_] == '<') {
      if (w == "tensor" || w == "tuple" || w == "complex") return bracketed(TokKind::kType, begin);
      if (w == "dense" || w == "dense_resource" || w == "sparse") return bracketed(TokKind::kDense, begin);
    }
    return make(TokKind::kIdent, begin, pos_);
  }
  Result<Token> string(std::size_t begin) {
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      if (text_[pos_] == '\n') return error(begin, "unterminated string: expected '\"' before the end of the line");
      if (text_[pos_] == '\\') ++pos_;
    }
    if (pos_ >= text_.size()) return error(begin, "unterminated string: expected '\"'");
    ++pos_;
    return make(TokKind::kString, begin, pos_);
  }
  Result<Token> number(std::size_t begin) {
    if (text_[pos_] == '-' || text_[pos_] == '+') ++pos_;
    if (text_.substr(pos_, 2) == "0x") pos_ += 2;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                   ((text_[pos_] == '-' || text_[pos_] == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E')))) {
      ++pos_;
    }
    // A decimal integer is read as int64 wherever it is used (dimensions, ids,
    // counts): one beyond that range is an error here, not a wrong number later.
    const std::string_view n = text_.substr(begin, pos_ - begin);
    const std::string_view digits = n.substr(n.starts_with('+') || n.starts_with('-') ? 1 : 0);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      std::int64_t v = 0;
      const char* first = n.data() + (n.starts_with('+') ? 1 : 0);
      if (std::from_chars(first, n.data() + n.size(), v).ec != std::errc{}) {
        return error(begin, fmt::format("integer '{}' is out of range (int64)", n));
      }
    }
    return make(TokKind::kNumber, begin, pos_);
  }
  Result<Token> sigil(TokKind kind, std::size_t begin) {
    ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '"') {
      auto s = string(pos_);
      if (!s.ok()) return s.errors();
    } else {
      while (pos_ < text_.size() && (ident_char(text_[pos_]) || text_[pos_] == '#' || text_[pos_] == ':')) {
        if (text_[pos_] == ':' && (pos_ + 1 >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) break;
        ++pos_;
      }
    }
    if (pos_ == begin + 1) return error(begin, fmt::format("expected a name after '{}'", text_[begin]));
    return make(kind, begin, pos_);
  }
  Result<Token> next() {
    const std::size_t begin = pos_;
    const char c = text_[pos_];
    if (c == '%') return sigil(TokKind::kValue, begin);
    if (c == '@') return sigil(TokKind::kSymbol, begin);
    if (c == '^') return sigil(TokKind::kValue, begin);
    if (c == '!') {
      ++pos_;
      auto w = word(pos_);
      if (!w.ok()) return w;
      if (pos_ < text_.size() && text_[pos_] == '<') return bracketed(TokKind::kType, begin);
      return make(TokKind::kType, begin, pos_);
    }
    if (c == '"') return string(begin);
    if (c == '#') return word((++pos_, begin));
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        ((c == '-' || c == '+') && pos_ + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      return number(begin);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return word(begin);
    if (text_.substr(pos_, 2) == "->") {
      pos_ += 2;
      return make(TokKind::kPunct, begin, pos_);
    }
    if (std::string_view("(){}[]<>,:=*?|+-").find(c) != std::string_view::npos) {
      ++pos_;
      return make(TokKind::kPunct, begin, pos_);
    }
    return error(begin, fmt::format("unexpected character '{}' in MLIR text", c));
  }
};

}  // namespace

Result<std::vector<Token>> lex_mlir(std::string_view text, const std::string& file) { return Lexer(text, file).run(); }

}  // namespace tpusim::stablehlo
