// MLIR text tokens for the StableHLO front end. `tensor<...>`, `dense<...>`,
// `dense_resource<...>` and `!dialect.type` are single tokens (their insides
// are read by the converter), so `2x3xf32` never has to be split here.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"

namespace tpusim::stablehlo {

enum class TokKind { kIdent, kValue, kSymbol, kString, kNumber, kType, kDense, kPunct, kEnd };

struct Token {
  TokKind kind = TokKind::kEnd;
  std::string_view text;
  std::uint32_t offset = 0;  // byte offset into the source
  std::uint32_t line = 1;    // 1-based
  std::uint32_t column = 1;  // 1-based
};

// Tokens of `text` ending with one kEnd, or the first lexical error.
Result<std::vector<Token>> lex_mlir(std::string_view text, const std::string& file);

}  // namespace tpusim::stablehlo
