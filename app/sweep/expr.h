// Constraint expressions of a sweep spec: a tiny language over config keys
// (base units: bytes, B/s, Hz, s), derived figures and proxies, e.g.
//   core.vmem.capacity <= 256 MiB
//   core.mxu.rows * core.mxu.cols <= 65536 and hbm.bandwidth >= 1 TB/s
//   core.mxu.dataflow == 'ws'
// Grammar (recursive descent, lowest precedence first):
//   or   := and  (("or" | "||") and)*
//   and  := cmp  (("and" | "&&") cmp)*
//   cmp  := add  (("<" | "<=" | ">" | ">=" | "==" | "!=") add)?
//   add  := mul  (("+" | "-") mul)*
//   mul  := unary (("*" | "/") unary)*
//   unary:= ("-" | "not" | "!") unary | primary
//   primary := NUMBER [UNIT] | NAME | 'string' | "(" or ")"
// A number followed by a unit ("256 MiB", "1.6 TB/s", "2 GHz", "5 ns") is
// converted to the base unit with common/units.h. Truth is "non-zero".
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/diagnostic.h"

namespace tpusim::sweep {

using ExprValue = std::variant<double, std::string>;

struct ExprNode {
  enum class Kind { kNumber, kString, kName, kNeg, kNot, kBinary };
  Kind kind = Kind::kNumber;
  double number = 0;
  std::string text;  // name, string literal, or binary operator ("+", "<=", "and", …)
  int offset = 0;    // byte offset of the node in the expression text
  std::unique_ptr<ExprNode> lhs;
  std::unique_ptr<ExprNode> rhs;
};

struct Expr {
  std::string text;
  std::shared_ptr<const ExprNode> root;
  std::vector<std::string> names;  // every NAME the expression reads
};

// Parses `text`. Errors are located at `file`:`line`:`column + offset`
// (where the expression starts in its file).
Result<Expr> parse_expr(std::string_view text, std::string_view file = "<expr>", int line = 1, int column = 1);

// Looks up a NAME; nullopt = unknown (evaluation error).
using NameLookup = std::function<std::optional<ExprValue>(std::string_view)>;

// Evaluates; on error returns nullopt and sets `error`.
std::optional<ExprValue> eval_expr(const Expr& e, const NameLookup& lookup, std::string& error);

}  // namespace tpusim::sweep
