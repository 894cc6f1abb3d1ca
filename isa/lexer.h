// Lexer for .tasm assembly (separate from the parser, as XLA's hlo_lexer).
// A token's location is its byte offset into the source; the parser turns it
// into line:column only when it reports an error.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace tpusim::isa {

enum class TokKind {
  kIdent,     // [A-Za-z_.][A-Za-z0-9_.]*   (mnemonics, names, directives)
  kInt,       // -?[0-9]+
  kFloat,     // -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with a '.' or exponent
  kString,    // "..." with \" and \\ escapes (text keeps the quotes)
  kLBracket,  // [
  kRBracket,  // ]
  kColon,     // :
  kComma,     // ,
  kEquals,    // =
  kAt,        // @
  kNewline,
  kEnd,
  kError,     // a character that starts no token, or an unterminated string
};

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string_view text;
  std::size_t offset = 0;
};

// Comments run from '#' or "//" to the end of the line.
std::vector<Token> lex(std::string_view source);

std::string_view describe(TokKind k);  // "identifier", "'['", …

}  // namespace tpusim::isa
