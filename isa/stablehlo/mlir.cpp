#include "isa/stablehlo/mlir.h"

#include <charconv>
#include <fmt/format.h>

#include "isa/stablehlo/names.h"

namespace tpusim::stablehlo {
namespace {

constexpr int kMaxRegionDepth = 64;  // nested regions; deeper input is an error, not a stack overflow

bool is(const Token& t, std::string_view s) { return t.text == s && t.kind != TokKind::kString; }
bool opens(const Token& t) { return t.kind == TokKind::kPunct && (t.text == "(" || t.text == "[" || t.text == "{"); }
bool closes(const Token& t) { return t.kind == TokKind::kPunct && (t.text == ")" || t.text == "]" || t.text == "}"); }

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, std::vector<Token> toks)
      : text_(text), file_(file), t_(std::move(toks)) {}

  // One module, or several `module { ... }` one after another (as
  // `tpusim convert` prints a file of several HLO modules).
  Result<std::vector<MlirModule>> run() {
    std::vector<MlirModule> out;
    do {
      auto m = one();
      if (!m.ok()) return m.errors();
      out.push_back(std::move(m).value());
    } while (is(peek(), "module"));
    if (peek().kind != TokKind::kEnd) return fail(peek(), fmt::format("expected the end of the file after the module, found {}", found()));
    return out;
  }

 private:
  Result<MlirModule> one() {
    MlirModule m;
    if (!loc_defs(m)) return errs_;
    if (is(peek(), "module")) {
      ++i_;
      if (peek().kind == TokKind::kSymbol) m.name = std::string(peek().text.substr(1)), ++i_;
      if (is(peek(), "attributes")) {
        ++i_;
        if (!module_attrs(m)) return errs_;
      }
      if (!expect("{")) return errs_;
      if (!funcs(m, "}")) return errs_;
      if (!expect("}")) return errs_;
    } else if (!funcs(m, "")) {
      return errs_;
    }
    if (!loc_defs(m)) return errs_;
    if (m.funcs.empty()) return fail(peek(), "expected a func.func in the module");
    return m;
  }
  std::string_view text_;
  const std::string& file_;
  std::vector<Token> t_;
  std::size_t i_ = 0;
  std::vector<Diagnostic> errs_;
  int depth_ = 0;

  const Token& peek(std::size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  std::vector<Diagnostic> fail(const Token& at, std::string msg) {
    errs_.push_back({file_, static_cast<int>(at.line), static_cast<int>(at.column), std::move(msg),
                     std::string(line_of(text_, static_cast<int>(at.line)))});
    return errs_;
  }
  std::string found() const {
    return peek().kind == TokKind::kEnd ? "the end of the file" : fmt::format("'{}'", peek().text);
  }
  bool expect(std::string_view s) {
    if (is(peek(), s)) return ++i_, true;
    fail(peek(), fmt::format("expected '{}', found {}", s, found()));
    return false;
  }
  // Skips one balanced group starting at an opening bracket; appends its tokens to `out` if given.
  bool skip_group(std::vector<Token>* out) {
    int depth = 0;
    const Token& start = peek();
    do {
      const Token& t = peek();
      if (t.kind == TokKind::kEnd) return fail(start, fmt::format("'{}' is never closed", start.text)), false;
      if (opens(t)) ++depth;
      if (closes(t)) --depth;
      if (out != nullptr) out->push_back(t);
      ++i_;
    } while (depth > 0);
    return true;
  }
  static std::int64_t to_int(std::string_view s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
  }
  // Top-level `#name = loc(...)` (and other `#alias = ...` definitions, skipped).
  bool loc_defs(MlirModule& m) {
    while (peek().kind == TokKind::kIdent && peek().text.starts_with("#") && is(peek(1), "=")) {
      const std::string alias(peek().text);
      i_ += 2;
      std::vector<Token> toks;
      if (is(peek(), "loc")) ++i_;
      if (opens(peek())) {
        if (!skip_group(&toks)) return false;
      } else {
        ++i_;
      }
      std::string name;
      for (const Token& t : toks) {
        if (t.kind == TokKind::kString) {
          name = std::string(t.text.substr(1, t.text.size() - 2));
          break;
        }
      }
      m.loc_aliases[alias] = name;
    }
    return true;
  }
  bool module_attrs(MlirModule& m) {
    if (!is(peek(), "{")) return fail(peek(), "expected '{' after 'attributes'"), false;
    std::vector<Token> toks;
    if (!skip_group(&toks)) return false;
    for (std::size_t k = 0; k + 2 < toks.size(); ++k) {
      if (!is(toks[k + 1], "=") || toks[k + 2].kind != TokKind::kNumber) continue;
      if (toks[k].text == "mhlo.num_partitions") m.num_partitions = to_int(toks[k + 2].text);
      if (toks[k].text == "mhlo.num_replicas") m.num_replicas = to_int(toks[k + 2].text);
    }
    for (std::size_t k = 0; k + 2 < toks.size(); ++k) {
      std::string name = toks[k].kind == TokKind::kString ? unescape_string(toks[k].text) : std::string(toks[k].text);
      if (!name.starts_with(kHloAttrPrefix) || !is(toks[k + 1], "=") || toks[k + 2].kind != TokKind::kString) continue;
      m.hlo_attributes.emplace_back(name.substr(kHloAttrPrefix.size()), unescape_string(toks[k + 2].text));
    }
    return true;
  }
  bool funcs(MlirModule& m, std::string_view until) {
    while (peek().kind != TokKind::kEnd && !(!until.empty() && is(peek(), until))) {
      if (!is(peek(), "func.func")) {
        fail(peek(), fmt::format("expected 'func.func', found {}", found()));
        return false;
      }
      Func f;
      if (!func(f)) return false;
      m.funcs.push_back(std::move(f));
    }
    return true;
  }
  // `%name: type {attrs} loc(...)`, comma separated, inside parentheses.
  bool arg_list(std::vector<BlockArg>& args) {
    if (!expect("(")) return false;
    while (!is(peek(), ")")) {
      if (peek().kind != TokKind::kValue) return fail(peek(), fmt::format("expected an argument '%name', found {}", found())), false;
      BlockArg a{peek().text, {}, {}};
      ++i_;
      if (!expect(":")) return false;
      if (peek().kind != TokKind::kType) return fail(peek(), fmt::format("expected a type, found {}", found())), false;
      a.type = peek();
      ++i_;
      if (is(peek(), "{") && !skip_group(&a.attrs)) return false;
      if (!skip_trailers()) return false;
      args.push_back(a);
      if (is(peek(), ",")) ++i_;
      else if (!is(peek(), ")")) return fail(peek(), fmt::format("expected ',' or ')', found {}", found())), false;
    }
    return expect(")");
  }
  // `{attrs}` and `loc(...)` after an argument or result type.
  bool skip_trailers() {
    while (is(peek(), "{") || is(peek(), "loc")) {
      if (is(peek(), "loc")) ++i_;
      if (!skip_group(nullptr)) return false;
    }
    return true;
  }
  bool result_types(Func& f) {
    if (!is(peek(), "(")) {
      if (peek().kind != TokKind::kType) return fail(peek(), fmt::format("expected a result type, found {}", found())), false;
      f.result_types.push_back(peek());
      ++i_;
      return true;  // a '{' here opens the body
    }
    ++i_;
    while (!is(peek(), ")")) {
      if (peek().kind != TokKind::kType) return fail(peek(), fmt::format("expected a result type, found {}", found())), false;
      f.result_types.push_back(peek());
      ++i_;
      if (!skip_trailers()) return false;
      if (is(peek(), ",")) ++i_;
      else if (!is(peek(), ")")) return fail(peek(), fmt::format("expected ',' or ')', found {}", found())), false;
    }
    return expect(")");
  }
  bool func(Func& f) {
    f.at = peek();
    ++i_;
    if (is(peek(), "public") || is(peek(), "private") || is(peek(), "nested")) f.is_public = is(peek(), "public"), ++i_;
    if (peek().kind != TokKind::kSymbol) return fail(peek(), fmt::format("expected a function name '@name', found {}", found())), false;
    f.name = peek().text.substr(1);
    ++i_;
    if (!arg_list(f.body.args)) return false;
    if (is(peek(), "->")) {
      ++i_;
      if (!result_types(f)) return false;
    }
    if (is(peek(), "attributes")) {
      ++i_;
      if (!skip_group(nullptr)) return false;
    }
    if (!expect("{")) return false;
    if (!ops(f.body)) return false;
    if (!expect("}")) return false;
    if (is(peek(), "loc")) return ++i_, skip_group(nullptr);
    return true;
  }
  bool ops(Region& r) {
    if (++depth_ > kMaxRegionDepth) return fail(peek(), fmt::format("regions nested deeper than {}", kMaxRegionDepth)), false;
    if (peek().kind == TokKind::kValue && peek().text.starts_with("^")) {
      ++i_;
      if (is(peek(), "(") && !arg_list(r.args)) return false;
      if (!expect(":")) return false;
    }
    while (!is(peek(), "}")) {
      if (peek().kind == TokKind::kEnd) return fail(peek(), "expected '}' closing the region, found the end of the file"), false;
      Op op;
      if (!operation(op)) return false;
      r.ops.push_back(std::move(op));
    }
    --depth_;
    return true;
  }
  bool results(Op& op) {
    while (peek().kind == TokKind::kValue) {
      std::string_view name = peek().text;
      int count = 1;
      if (const auto colon = name.find(':'); colon != std::string_view::npos) {
        count = static_cast<int>(std::min<std::int64_t>(to_int(name.substr(colon + 1)), 1 << 20));
        name = name.substr(0, colon);
      }
      if (count < 1) return fail(peek(), "expected a result count of at least 1"), false;
      op.results.push_back(name);
      op.result_count += count;
      ++i_;
      if (is(peek(), ",")) ++i_;
      else if (!expect("=")) return false;
    }
    return true;
  }
  void take_loc(Op& op, std::size_t from) {
    if (from >= t_.size() || !op.op_name.empty()) return;
    if (t_[from].kind == TokKind::kString) op.op_name = std::string(t_[from].text.substr(1, t_[from].text.size() - 2));
    if (t_[from].kind == TokKind::kIdent && t_[from].text.starts_with("#")) op.op_name = std::string(t_[from].text);
  }
  // A `{` that opens a region: followed by a new line, a block label, or `}` directly.
  bool region_start(std::size_t prev_line) const {
    if (!is(peek(), "{")) return false;
    const Token& next = peek(1);
    return next.line > peek().line || (next.kind == TokKind::kValue && next.text.starts_with("^")) ||
           (is(next, "}") && peek().line > prev_line);
  }
  bool region(Op& op, std::vector<BlockArg> args) {
    ++i_;
    Region r;
    r.args = std::move(args);
    if (!ops(r)) return false;
    if (!expect("}")) return false;
    op.regions.push_back(std::move(r));
    return true;
  }
  // `({ ^bb0(...): ... }, { ... })` after a generic op's operands.
  bool region_list(Op& op) {
    ++i_;
    while (true) {
      if (!region(op, {})) return false;
      if (!is(peek(), ",")) break;
      ++i_;
      if (!is(peek(), "{")) return fail(peek(), fmt::format("expected '{{' opening a region, found {}", found())), false;
    }
    return expect(")");
  }
  // Tokens of one op: up to the first token at depth 0 on a later line.
  bool operation(Op& op) {
    if (!results(op)) return false;
    op.at = peek();
    if (op.at.kind != TokKind::kIdent && op.at.kind != TokKind::kString) {
      return fail(op.at, fmt::format("expected an operation name, found {}", found())), false;
    }
    op.name = op.at.kind == TokKind::kString ? op.at.text.substr(1, op.at.text.size() - 2) : op.at.text;
    ++i_;
    int depth = 0;
    std::vector<BlockArg> pending_args;
    std::uint32_t line = op.at.line;
    while (peek().kind != TokKind::kEnd) {
      const Token& t = peek();
      if (depth == 0 && t.line > line && !opens(t) && !is(t, ":") && !is(t, "->") && !is(t, ",") &&
          !(t.kind == TokKind::kIdent && (t.text == "cond" || t.text == "do" || t.text == "reducer" || t.text == "loc" ||
                                          t.text == "applies" || t.text == "across" || t.text == "attributes"))) {
        break;
      }
      if (depth == 0 && region_start(line)) {
        if (!region(op, std::move(pending_args))) return false;
        pending_args = {};
        line = t_[i_ - 1].line;
        continue;
      }
      if (depth <= 1 && is(t, "(") && t_[i_ - 1].kind == TokKind::kIdent && t_[i_ - 1].text == "reducer") {
        // `reducer(%a0: T0, %b0: T0) (%a1: T1, %b1: T1)`: one pair per operand;
        // the block's arguments are a0, a1, ..., b0, b1, ...
        std::vector<std::vector<BlockArg>> pairs;
        while (is(peek(), "(") && peek(1).kind == TokKind::kValue) {
          pairs.emplace_back();
          if (!arg_list(pairs.back())) return false;
        }
        for (std::size_t side = 0; side < 2; ++side) {
          for (const auto& p : pairs) {
            if (side < p.size()) pending_args.push_back(p[side]);
          }
        }
        line = t_[i_ - 1].line;
        continue;
      }
      if (closes(t) && depth == 0) break;
      if (is(t, "(") && is(peek(1), "{")) {  // generic syntax: `({ region }, { region })`
        if (!region_list(op)) return false;
        line = t_[i_ - 1].line;
        continue;
      }
      if (is(t, "loc")) {
        const std::size_t at = i_ + 2;
        if (!(++i_, skip_group(nullptr))) return false;
        take_loc(op, at);
        line = t_[i_ - 1].line;
        continue;
      }
      if (opens(t)) ++depth;
      if (closes(t)) --depth;
      op.tokens.push_back(t);
      line = t.line;
      ++i_;
    }
    return true;
  }
};

}  // namespace

Result<std::vector<MlirModule>> parse_mlir(std::string_view text, const std::string& file) {
  auto toks = lex_mlir(text, file);
  if (!toks.ok()) return toks.errors();
  return Parser(text, file, std::move(toks).value()).run();
}

}  // namespace tpusim::stablehlo
