#include "app/sweep/expr.h"

#include <cctype>
#include <cmath>
#include <fmt/format.h>

#include "common/units.h"

namespace tpusim::sweep {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view file, int line, int column)
      : s_(text), file_(file), line_(line), column_(column) {}

  Result<Expr> parse() {
    auto root = parse_or();
    skip_space();
    if (root && pos_ != s_.size()) fail(pos_, fmt::format("unexpected '{}'", s_.substr(pos_, 1)));
    if (!error_.message.empty()) return error_;
    Expr e;
    e.text = std::string(s_);
    e.names = std::move(names_);
    e.root = std::shared_ptr<const ExprNode>(std::move(root));
    return e;
  }

 private:
  using Node = std::unique_ptr<ExprNode>;

  void fail(std::size_t at, std::string message) {
    if (!error_.message.empty()) return;  // keep the first error
    error_ = Diagnostic{std::string(file_), line_, column_ + static_cast<int>(at),
                        fmt::format("in constraint '{}': {}", s_, message), ""};
  }
  bool failed() const { return !error_.message.empty(); }

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
  }
  // Consumes `tok` if it comes next; word tokens must not run into a name.
  bool accept(std::string_view tok) {
    skip_space();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    if (is_name_start(tok[0]) && pos_ + tok.size() < s_.size() && is_name_char(s_[pos_ + tok.size()])) return false;
    pos_ += tok.size();
    return true;
  }

  static Node binary(std::string op, Node l, Node r, std::size_t at) {
    auto n = std::make_unique<ExprNode>();
    n->kind = ExprNode::Kind::kBinary;
    n->text = std::move(op);
    n->offset = static_cast<int>(at);
    n->lhs = std::move(l);
    n->rhs = std::move(r);
    return n;
  }

  Node parse_or() {
    Node l = parse_and();
    while (!failed()) {
      skip_space();
      const std::size_t at = pos_;
      if (!accept("or") && !accept("||")) break;
      l = binary("or", std::move(l), parse_and(), at);
    }
    return l;
  }
  Node parse_and() {
    Node l = parse_cmp();
    while (!failed()) {
      skip_space();
      const std::size_t at = pos_;
      if (!accept("and") && !accept("&&")) break;
      l = binary("and", std::move(l), parse_cmp(), at);
    }
    return l;
  }
  Node parse_cmp() {
    Node l = parse_add();
    if (failed()) return l;
    skip_space();
    const std::size_t at = pos_;
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (accept(op)) return binary(std::string(op), std::move(l), parse_add(), at);
    }
    if (accept("=")) fail(at, "use '==' to compare");
    return l;
  }
  Node parse_add() {
    Node l = parse_mul();
    while (!failed()) {
      skip_space();
      const std::size_t at = pos_;
      if (accept("+")) {
        l = binary("+", std::move(l), parse_mul(), at);
      } else if (accept("-")) {
        l = binary("-", std::move(l), parse_mul(), at);
      } else {
        break;
      }
    }
    return l;
  }
  Node parse_mul() {
    Node l = parse_unary();
    while (!failed()) {
      skip_space();
      const std::size_t at = pos_;
      if (accept("*")) {
        l = binary("*", std::move(l), parse_unary(), at);
      } else if (accept("/")) {
        l = binary("/", std::move(l), parse_unary(), at);
      } else {
        break;
      }
    }
    return l;
  }
  Node parse_unary() {
    skip_space();
    const std::size_t at = pos_;
    ExprNode::Kind kind;
    if (accept("-")) {
      kind = ExprNode::Kind::kNeg;
    } else if (accept("not") || (s_.substr(pos_, 2) != "!=" && accept("!"))) {
      kind = ExprNode::Kind::kNot;
    } else {
      return parse_primary();
    }
    auto n = std::make_unique<ExprNode>();
    n->kind = kind;
    n->offset = static_cast<int>(at);
    n->lhs = parse_unary();
    return n;
  }

  Node parse_primary() {
    skip_space();
    const std::size_t at = pos_;
    auto n = std::make_unique<ExprNode>();
    n->offset = static_cast<int>(at);
    if (pos_ >= s_.size()) {
      fail(at, "expected a number, a config key or '(' but the expression ended");
      return n;
    }
    const char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      Node inner = parse_or();
      if (!accept(")")) fail(pos_, "expected ')'");
      return inner;
    }
    if (c == '\'' || c == '"') {
      const std::size_t end = s_.find(c, pos_ + 1);
      if (end == std::string_view::npos) {
        fail(at, "unterminated string");
        return n;
      }
      n->kind = ExprNode::Kind::kString;
      n->text = std::string(s_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.') return parse_number(std::move(n));
    if (is_name_start(c)) {
      std::size_t end = pos_;
      while (end < s_.size() && is_name_char(s_[end])) ++end;
      n->kind = ExprNode::Kind::kName;
      n->text = std::string(s_.substr(pos_, end - pos_));
      if (n->text == "and" || n->text == "or" || n->text == "not") {
        fail(at, fmt::format("expected a value before '{}'", n->text));
      }
      pos_ = end;
      names_.push_back(n->text);
      return n;
    }
    fail(at, fmt::format("expected a number, a config key or '(', got '{}'", c));
    return n;
  }

  Node parse_number(Node n) {
    const std::size_t at = pos_;
    std::size_t end = pos_;
    while (end < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[end])) != 0 || s_[end] == '.')) ++end;
    if (end < s_.size() && (s_[end] == 'e' || s_[end] == 'E')) {
      std::size_t e = end + 1;
      if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
      if (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e])) != 0) {
        while (e < s_.size() && std::isdigit(static_cast<unsigned char>(s_[e])) != 0) ++e;
        end = e;
      }
    }
    const std::string num(s_.substr(at, end - at));
    double v = 0;
    if (!parse_number_text(num, v)) {
      fail(at, fmt::format("malformed number '{}'", num));
      return n;
    }
    pos_ = end;
    // An optional unit: a word right after the number ("256 MiB", "1.6 TB/s").
    std::size_t u = pos_;
    while (u < s_.size() && s_[u] == ' ') ++u;
    if (u < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[u])) != 0 || s_[u] == '\xc2')) {
      std::size_t ue = u;
      while (ue < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[ue])) != 0 ||
                                static_cast<unsigned char>(s_[ue]) >= 0x80)) {
        ++ue;
      }
      if (ue + 1 < s_.size() && s_[ue] == '/' && std::isalpha(static_cast<unsigned char>(s_[ue + 1])) != 0) {
        ue += 1;
        while (ue < s_.size() && std::isalpha(static_cast<unsigned char>(s_[ue])) != 0) ++ue;
      }
      const std::string unit(s_.substr(u, ue - u));
      if (unit != "and" && unit != "or" && unit != "not") {
        bool ok = false;
        for (Dimension d : {Dimension::kBytes, Dimension::kBytesPerSecond, Dimension::kHertz, Dimension::kSeconds}) {
          double q = 0;
          std::string err;
          if (parse_quantity(num + " " + unit, d, q, err)) {
            v = q;
            ok = true;
            break;
          }
        }
        if (!ok) {
          fail(u, fmt::format("unknown unit '{}' (expected e.g. 256 MiB, 1.6 TB/s, 2 GHz, 5 ns)", unit));
          return n;
        }
        pos_ = ue;
      }
    }
    n->kind = ExprNode::Kind::kNumber;
    n->number = v;
    return n;
  }

  static bool parse_number_text(const std::string& s, double& out) { return tpusim::parse_number(s, out); }

  std::string_view s_;
  std::string_view file_;
  int line_;
  int column_;
  std::size_t pos_ = 0;
  Diagnostic error_;
  std::vector<std::string> names_;
};

std::string show(const ExprValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return fmt::format("'{}'", std::get<std::string>(v));
}

std::optional<ExprValue> eval(const ExprNode& n, const NameLookup& lookup, std::string& error) {
  using K = ExprNode::Kind;
  switch (n.kind) {
    case K::kNumber:
      return n.number;
    case K::kString:
      return n.text;
    case K::kName: {
      auto v = lookup(n.text);
      if (!v) error = fmt::format("'{}' has no numeric or text value here", n.text);
      return v;
    }
    case K::kNeg:
    case K::kNot: {
      auto v = eval(*n.lhs, lookup, error);
      if (!v) return std::nullopt;
      const double* d = std::get_if<double>(&*v);
      if (d == nullptr) {
        error = fmt::format("cannot apply '{}' to text {}", n.kind == K::kNeg ? "-" : "not", show(*v));
        return std::nullopt;
      }
      return n.kind == K::kNeg ? -*d : (*d == 0 ? 1.0 : 0.0);
    }
    case K::kBinary:
      break;
  }
  auto l = eval(*n.lhs, lookup, error);
  if (!l) return std::nullopt;
  const std::string& op = n.text;
  if (op == "and" || op == "or") {  // short-circuit
    const double* ld = std::get_if<double>(&*l);
    if (ld == nullptr) {
      error = fmt::format("'{}' needs true/false operands, got {}", op, show(*l));
      return std::nullopt;
    }
    if (op == "and" && *ld == 0) return 0.0;
    if (op == "or" && *ld != 0) return 1.0;
  }
  auto r = eval(*n.rhs, lookup, error);
  if (!r) return std::nullopt;
  const double* ld = std::get_if<double>(&*l);
  const double* rd = std::get_if<double>(&*r);
  if (ld == nullptr || rd == nullptr) {
    if (ld == nullptr && rd == nullptr && (op == "==" || op == "!=")) {
      const bool eq = std::get<std::string>(*l) == std::get<std::string>(*r);
      return (op == "==") == eq ? 1.0 : 0.0;
    }
    error = fmt::format("cannot apply '{}' to {} and {}", op, show(*l), show(*r));
    return std::nullopt;
  }
  const double a = *ld;
  const double b = *rd;
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") {
    if (b == 0) {
      error = "division by zero";
      return std::nullopt;
    }
    return a / b;
  }
  if (op == "<") return a < b ? 1.0 : 0.0;
  if (op == "<=") return a <= b ? 1.0 : 0.0;
  if (op == ">") return a > b ? 1.0 : 0.0;
  if (op == ">=") return a >= b ? 1.0 : 0.0;
  if (op == "==") return a == b ? 1.0 : 0.0;
  if (op == "!=") return a != b ? 1.0 : 0.0;
  if (op == "and") return b != 0 ? 1.0 : 0.0;
  if (op == "or") return b != 0 ? 1.0 : 0.0;
  error = fmt::format("unknown operator '{}'", op);
  return std::nullopt;
}

}  // namespace

Result<Expr> parse_expr(std::string_view text, std::string_view file, int line, int column) {
  return Parser(text, file, line, column).parse();
}

std::optional<ExprValue> eval_expr(const Expr& e, const NameLookup& lookup, std::string& error) {
  if (!e.root) {
    error = "empty expression";
    return std::nullopt;
  }
  return eval(*e.root, lookup, error);
}

}  // namespace tpusim::sweep
