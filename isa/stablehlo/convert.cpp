#include "isa/stablehlo/convert.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <fmt/format.h>
#include <set>

#include "isa/hlo/element_type.h"
#include "isa/hlo/opcode.h"
#include "isa/stablehlo/attributes.h"
#include "isa/stablehlo/chlo.h"
#include "isa/stablehlo/convert_internal.h"
#include "isa/stablehlo/names.h"
#include "isa/stablehlo/spec_attributes.h"

namespace tpusim::stablehlo::convert_detail {

bool Converter::fail(const Token& at, std::string msg) {
  errs_.push_back({file_, static_cast<int>(at.line), static_cast<int>(at.column), std::move(msg),
                   std::string(line_of(src_, static_cast<int>(at.line)))});
  return false;
}

bool Converter::shape_of(const Token& t, Shape& out) {
  std::string_view s = t.text;
  if (s == "!stablehlo.token") return out.hlo = "token[]", true;
  if (s.starts_with("tuple<")) return tuple_shape(t, s.substr(6, s.size() - 7), out);
  if (!s.starts_with("tensor<")) return fail(t, fmt::format("unsupported type '{}': expected tensor<...>", s));
  s = s.substr(7, s.size() - 8);
  if (const auto comma = s.find(','); comma != std::string_view::npos) s = s.substr(0, comma);  // encoding
  std::vector<std::int64_t> dims;
  while (!s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '?')) {
    const auto x = s.find('x');
    if (s[0] == '?') return fail(t, fmt::format("dynamic dimension in '{}': only static shapes are supported", t.text));
    std::int64_t d = 0;
    const auto r = std::from_chars(s.data(), s.data() + (x == std::string_view::npos ? s.size() : x), d);
    if (r.ec != std::errc() || x == std::string_view::npos) return fail(t, fmt::format("malformed tensor type '{}'", t.text));
    dims.push_back(d);
    s = s.substr(x + 1);
  }
  const std::string e = element_type(s);
  if (e.empty()) return fail(t, fmt::format("unsupported element type '{}' in '{}'", s, t.text));
  out.hlo = fmt::format("{}[{}]", e, join(dims));
  return true;
}

bool Converter::tuple_shape(const Token& t, std::string_view inner, Shape& out) {
  // Element types at depth 0, split on commas.
  std::vector<std::string> parts;
  int depth = 0;
  std::size_t begin = 0;
  for (std::size_t i = 0; i <= inner.size(); ++i) {
    if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
      std::string_view p = inner.substr(begin, i - begin);
      while (!p.empty() && p.front() == ' ') p.remove_prefix(1);
      if (!p.empty()) parts.emplace_back(p);
      begin = i + 1;
    } else if (inner[i] == '<') {
      ++depth;
    } else if (inner[i] == '>') {
      --depth;
    }
  }
  std::vector<Token> subs;
  for (const auto& p : parts) {
    subs.push_back(t);
    subs.back().text = p;
  }
  return tuple_shape(subs, out);
}

std::vector<Token> Converter::result_types(const Op& op, bool all) {
  int depth = 0;
  std::size_t colon = op.tokens.size();
  for (std::size_t i = 0; i < op.tokens.size(); ++i) {
    if (opens(op.tokens[i])) ++depth;
    if (closes(op.tokens[i])) --depth;
    if (depth == 0 && is(op.tokens[i], ":")) colon = i;
  }
  std::vector<Token> types;
  for (std::size_t i = colon; i < op.tokens.size(); ++i) {
    if (is(op.tokens[i], "->")) types.clear(), all = true;
    if (op.tokens[i].kind == TokKind::kType) types.push_back(op.tokens[i]);
  }
  if (!all && types.size() > 1) types.erase(types.begin(), types.end() - 1);
  return types;
}

bool Converter::result_shape(const Op& op, Shape& out) {
  const auto types = result_types(op);
  if (types.empty() && op.results.empty() && !op.tokens.empty() && is(op.tokens.back(), ")") &&
      op.tokens.size() >= 3 && is(op.tokens[op.tokens.size() - 2], "(") && is(op.tokens[op.tokens.size() - 3], "->")) {
    return out.hlo = "()", true;  // `-> ()`: no result (a custom call run for its side effect)
  }
  if (types.empty()) return fail(op.at, fmt::format("'{}' has no result type: expected ': type' at its end", op.name));
  if (types.size() == 1) return shape_of(types[0], out);
  return tuple_shape(types, out);
}

bool Converter::ints(const Op& op, std::string_view key, std::vector<std::int64_t>& out, std::vector<std::int64_t>* second) {
  const auto& t = op.tokens;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (!is(t[i], key) || !is(t[i + 1], "=")) continue;
    std::size_t k = i + 2;
    read_list(t, k, out);
    if (second != nullptr && k < t.size() && is(t[k], "x")) read_list(t, ++k, *second);
    return true;
  }
  return false;
}

void Converter::read_list(const std::vector<Token>& t, std::size_t& k, std::vector<std::int64_t>& out) {
  if (k < t.size() && is(t[k], "array")) ++k;
  if (k < t.size() && t[k].kind == TokKind::kNumber) {
    out.push_back(to_int(t[k++].text));
    return;
  }
  int depth = 0;
  do {
    if (k >= t.size()) return;
    if (opens(t[k])) ++depth;
    if (closes(t[k])) --depth;
    const bool typed = k + 1 < t.size() && is(t[k + 1], ":") && t[k].kind == TokKind::kIdent;
    if (t[k].kind == TokKind::kNumber && !typed) out.push_back(to_int(t[k].text));
    ++k;
  } while (depth > 0);
}

std::int64_t Converter::to_int(std::string_view s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

std::string Converter::word_in(const Op& op, std::initializer_list<std::string_view> words) {
  for (const auto& t : op.tokens) {
    for (const auto w : words) {
      if (is(t, w)) return std::string(w);
    }
  }
  return "";
}

bool Converter::operands(const Op& op, Scope& s, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < op.tokens.size(); ++i) {
    const Token& t = op.tokens[i];
    if (t.kind != TokKind::kValue || (i + 1 < op.tokens.size() && is(op.tokens[i + 1], "="))) continue;
    std::string name;
    if (!use(t, s, name)) return false;
    out.push_back(name);
  }
  return true;
}

bool Converter::operand_values(const Op& op, Scope& s, std::vector<Value>& out) {
  std::vector<std::string> names;
  if (!operands(op, s, names)) return false;
  for (const auto& n : names) {
    const auto it = std::find_if(s.values.begin(), s.values.end(), [&](const auto& kv) { return kv.second.name == n; });
    out.push_back(it == s.values.end() ? Value{n, {}, 0} : it->second);
  }
  return true;
}

bool Converter::use(const Token& t, Scope& s, std::string& name) {
  std::string_view v = t.text;
  std::int64_t index = -1;
  if (const auto hash = v.find('#'); hash != std::string_view::npos) {
    const std::string_view digits = v.substr(hash + 1);
    if (std::from_chars(digits.data(), digits.data() + digits.size(), index).ec != std::errc{}) {
      return fail(t, fmt::format("'{}' has no result #{}", v.substr(0, hash), digits));
    }
    v = v.substr(0, hash);
  }
  const auto it = s.values.find(v);
  if (it == s.values.end()) return fail(t, fmt::format("use of undefined value '{}' (values from outside a region are not supported: define them inside or pass them as operands)", v));
  if (index < 0) return name = it->second.name, true;
  const auto& elems = it->second.shape.elements;
  if (index >= static_cast<std::int64_t>(elems.size())) return fail(t, fmt::format("'{}' has no result #{}", v, index));
  const std::string key = fmt::format("{}#{}", v, index);
  if (const auto got = s.values.find(key); got != s.values.end()) return name = got->second.name, true;
  name = fmt::format("{}.{}.{}", s.prefix, sanitize(v.substr(1)), index);
  add_line(s, fmt::format("%{} = {} get-tuple-element(%{}), index={}", name, elems[index].hlo, it->second.name, index), t);
  s.values[key] = {name, elems[index], s.lines.size() - 1};
  return true;
}

std::string Converter::metadata(const Op& op) const {
  std::string n = op.op_name;
  if (n.starts_with("#")) {
    const auto it = m_.loc_aliases.find(n);
    n = it == m_.loc_aliases.end() ? "" : it->second;
  }
  return n.empty() ? "" : fmt::format(", metadata={{op_name=\"{}\"}}", n);
}

bool Converter::emit(const Op& op, Scope& s, const Shape& shape, std::string_view opcode, const std::vector<std::string>& args,
          const std::string& attrs) {
  const std::string base = op.results.empty() ? fmt::format("v{}", s.lines.size()) : sanitize(op.results[0].substr(1));
  const std::string name = fmt::format("{}.{}", s.prefix, base);
  std::string ops;
  for (const auto& a : args) ops += (ops.empty() ? "%" : ", %") + a;
  return emit_raw(op, s, shape, opcode, ops, attrs);
}

bool Converter::emit_raw(const Op& op, Scope& s, const Shape& stated, std::string_view opcode, const std::string& ops,
              const std::string& attrs) {
  const std::string base = op.results.empty() ? fmt::format("v{}", s.lines.size()) : sanitize(op.results[0].substr(1));
  const std::string name = fmt::format("{}.{}", s.prefix, base);
  const HloExtras extras = hlo_extras(op.tokens);
  const Shape shape = extras.shape.empty() ? stated : hlo_shape(extras.shape);
  if (const auto code = hlo::opcode_from_name(opcode); code && hlo::opcode_category(*code) == hlo::OpCategory::kCollective) {
    has_collectives_ = true;
  }
  add_line(s, fmt::format("%{} = {} {}({}){}{}{}", name, shape.hlo, opcode, ops, attrs, extras.attrs, metadata(op)), op.at);
  if (!op.results.empty()) s.values[std::string(op.results[0])] = {name, shape, s.lines.size() - 1};
  // `%values, %indices = ...`: one name per element of the result tuple.
  for (std::size_t i = 1; op.results.size() > 1 && i < op.results.size() && i <= shape.elements.size(); ++i) {
    if (i == 1) {
      s.values[std::string(op.results[0])] = {name + ".0", shape.elements[0], s.lines.size()};
      add_line(s, fmt::format("%{}.0 = {} get-tuple-element(%{}), index=0", name, shape.elements[0].hlo, name), op.at);
    }
    const std::string n = fmt::format("{}.{}", name, i);
    add_line(s, fmt::format("%{} = {} get-tuple-element(%{}), index={}", n, shape.elements[i].hlo, name, i), op.at);
    s.values[std::string(op.results[i])] = {n, shape.elements[i], s.lines.size() - 1};
  }
  return true;
}

bool Converter::simple(const Op& op, Scope& s, std::string_view opcode, const std::string& attrs) {
  Shape shape;
  std::vector<std::string> args;
  return result_shape(op, shape) && operands(op, s, args) && emit(op, s, shape, opcode, args, attrs);
}

bool Converter::elementwise(const Op& op, Scope& s) {
  std::string name(op.name.substr(op.name.find('.') + 1));
  std::replace(name.begin(), name.end(), '_', '-');
  if (name == "optimization-barrier") name = "opt-barrier";
  return simple(op, s, name);
}

bool Converter::constant(const Op& op, Scope& s) {
  Shape shape;
  if (!result_shape(op, shape)) return false;
  const auto dense = std::find_if(op.tokens.begin(), op.tokens.end(), [](const Token& t) { return t.kind == TokKind::kDense; });
  if (dense == op.tokens.end()) return fail(op.at, "expected a dense<...> or dense_resource<...> value in the constant");
  std::string literal = "{...}";  // elided: the value does not change the cost
  if (dense->text.starts_with("dense<") && shape.hlo.ends_with("[]")) {
    if (!scalar(*dense, shape, literal)) return false;
  }
  return emit_raw(op, s, shape, "constant", literal, "");
}

bool Converter::scalar(const Token& dense, const Shape& shape, std::string& literal) {
  std::string_view v = dense.text.substr(6, dense.text.size() - 7);
  if (v.starts_with("\"0x")) return hex_scalar(dense, v.substr(3, v.size() - 4), shape, literal);
  if (v.starts_with("0x") || v.starts_with("0X")) return float_bits(dense, v.substr(2), shape, literal);
  if (v.starts_with("(")) return literal = std::string(v), true;
  if (v == "true" || v == "false" || !v.empty()) return literal = std::string(v), true;
  return fail(dense, "empty dense<> literal");
}

bool Converter::float_bits(const Token& dense, std::string_view hex, const Shape& shape, std::string& literal) {
  std::uint64_t bits = 0;
  std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
  const std::string e = shape.hlo.substr(0, shape.hlo.find('['));
  if (e == "f64") return literal = fmt::format("{}", std::bit_cast<double>(bits)), true;
  if (e == "f32") return literal = fmt::format("{}", std::bit_cast<float>(static_cast<std::uint32_t>(bits))), true;
  if (e == "bf16") return literal = fmt::format("{}", std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16))), true;
  if (e == "f16") {  // widen: sign, 5-bit exponent (all ones: inf/nan), 10-bit fraction
    const bool special = ((bits >> 10) & 0x1F) == 0x1F;
    const bool neg = (bits & 0x8000) != 0;
    if (special) return literal = (bits & 0x3FF) != 0 ? "nan" : (neg ? "-inf" : "inf"), true;
  }
  return fail(dense, fmt::format("hexadecimal constant of type {} is not supported", e));
}

bool Converter::hex_scalar(const Token& dense, std::string_view hex, const Shape& shape, std::string& literal) {
  std::uint64_t bits = 0;
  // The blob is little-endian bytes.
  for (std::size_t i = 0; i + 1 < hex.size() && i < 16; i += 2) {
    std::uint64_t byte = 0;
    std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
    bits |= byte << (4 * i);
  }
  const std::string e = shape.hlo.substr(0, shape.hlo.find('['));
  if (e == "f32") return literal = fmt::format("{}", std::bit_cast<float>(static_cast<std::uint32_t>(bits))), true;
  if (e == "f64") return literal = fmt::format("{}", std::bit_cast<double>(bits)), true;
  if (e == "bf16") return literal = fmt::format("{}", std::bit_cast<float>(static_cast<std::uint32_t>(bits << 16))), true;
  if (e.starts_with("s") || e.starts_with("u")) return literal = std::to_string(bits), true;
  if (e == "pred") return literal = bits != 0 ? "true" : "false", true;
  return fail(dense, fmt::format("hex scalar constant of type {} is not supported", e));
}

bool Converter::broadcast(const Op& op, Scope& s) {
  std::vector<std::int64_t> dims;
  if (!ints(op, "dims", dims) && !ints(op, "broadcast_dimensions", dims)) {
    return fail(op.at, "broadcast_in_dim needs 'dims = [...]' (or broadcast_dimensions)");
  }
  return simple(op, s, "broadcast", fmt::format(", dimensions={{{}}}", join(dims)));
}

bool Converter::transpose(const Op& op, Scope& s) {
  std::vector<std::int64_t> dims;
  if (!ints(op, "dims", dims) && !ints(op, "permutation", dims)) return fail(op.at, "transpose needs 'dims = [...]'");
  return simple(op, s, "transpose", fmt::format(", dimensions={{{}}}", join(dims)));
}

bool Converter::iota(const Op& op, Scope& s) {
  std::vector<std::int64_t> dim;
  if ((!ints(op, "dim", dim) && !ints(op, "iota_dimension", dim)) || dim.size() != 1) {
    return fail(op.at, "iota needs 'dim = N'");
  }
  return simple(op, s, "iota", fmt::format(", iota_dimension={}", dim[0]));
}

bool Converter::concatenate(const Op& op, Scope& s) {
  std::vector<std::int64_t> dim;
  if ((!ints(op, "dim", dim) && !ints(op, "dimension", dim)) || dim.size() != 1) {
    return fail(op.at, "concatenate needs 'dim = N'");
  }
  return simple(op, s, "concatenate", fmt::format(", dimensions={{{}}}", dim[0]));
}

bool Converter::compare(const Op& op, Scope& s) {
  const std::string dir = word_in(op, {"EQ", "NE", "LT", "LE", "GT", "GE"});
  if (dir.empty()) return fail(op.at, "compare needs a direction (EQ, NE, LT, LE, GT, GE)");
  const std::string type = word_in(op, {"TOTALORDER"});
  return simple(op, s, "compare", fmt::format(", direction={}{}", dir, type.empty() ? "" : ", type=TOTALORDER"));
}

bool Converter::dot_general(const Op& op, Scope& s) {
  std::vector<std::int64_t> lb, rb, lc, rc;
  ints(op, "batching_dims", lb, &rb);
  ints(op, "contracting_dims", lc, &rc);
  ints(op, "lhs_batching_dimensions", lb);
  ints(op, "rhs_batching_dimensions", rb);
  ints(op, "lhs_contracting_dimensions", lc);
  ints(op, "rhs_contracting_dimensions", rc);
  std::string attrs;
  if (!lb.empty()) attrs += fmt::format(", lhs_batch_dims={{{}}}", join(lb));
  attrs += fmt::format(", lhs_contracting_dims={{{}}}", join(lc));
  if (!rb.empty()) attrs += fmt::format(", rhs_batch_dims={{{}}}", join(rb));
  attrs += fmt::format(", rhs_contracting_dims={{{}}}", join(rc));
  return simple(op, s, "dot", attrs + precision_attributes(op.tokens));
}

bool Converter::dot(const Op& op, Scope& s) {
  // stablehlo.dot: vector/matrix product contracting lhs's last dimension with rhs's first.
  const auto types = result_types(op, true);
  if (types.empty()) return fail(op.at, "dot needs its operand types: ': (tensor<...>, tensor<...>) -> tensor<...>'");
  const auto rank = static_cast<std::int64_t>(std::count(types[0].text.begin(), types[0].text.end(), 'x'));
  return simple(op, s, "dot",
                fmt::format(", lhs_contracting_dims={{{}}}, rhs_contracting_dims={{0}}", std::max<std::int64_t>(rank - 1, 0)) +
                    precision_attributes(op.tokens));
}

bool Converter::slice(const Op& op, Scope& s) {
  std::vector<std::int64_t> start, limit, strides;
  if (ints(op, "start_indices", start) && ints(op, "limit_indices", limit)) {
    ints(op, "strides", strides);
  } else if (!slice_pretty(op, start, limit, strides)) {
    return fail(op.at, "slice needs '[start:limit:stride, ...]' or start_indices/limit_indices");
  }
  std::string spec;
  for (std::size_t i = 0; i < start.size() && i < limit.size(); ++i) {
    spec += fmt::format("{}[{}:{}:{}]", i == 0 ? "" : ", ", start[i], limit[i], i < strides.size() ? strides[i] : 1);
  }
  return simple(op, s, "slice", fmt::format(", slice={{{}}}", spec));
}

bool Converter::slice_pretty(const Op& op, std::vector<std::int64_t>& start, std::vector<std::int64_t>& limit,
                  std::vector<std::int64_t>& strides) {
  const auto& t = op.tokens;
  const auto open = std::find_if(t.begin(), t.end(), [](const Token& x) { return is(x, "["); });
  if (open == t.end()) return false;
  std::vector<std::int64_t> group;
  for (auto it = open + 1; it != t.end() && !is(*it, "]"); ++it) {
    if (it->kind == TokKind::kNumber) group.push_back(to_int(it->text));
    if (is(*it, ",") || is(*(it + 1), "]")) {
      if (group.size() < 2) return false;
      start.push_back(group[0]);
      limit.push_back(group[1]);
      strides.push_back(group.size() > 2 ? group[2] : 1);
      group.clear();
    }
  }
  return !start.empty();
}

bool Converter::get_tuple_element(const Op& op, Scope& s) {
  std::vector<std::int64_t> index;
  if (!ints(op, "index", index) || index.size() != 1) return fail(op.at, "get_tuple_element needs 'index = N'");
  return simple(op, s, "get-tuple-element", fmt::format(", index={}", index[0]));
}

bool Converter::custom_call(const Op& op, Scope& s) {
  const auto target = std::find_if(op.tokens.begin(), op.tokens.end(),
                                   [](const Token& t) { return t.kind == TokKind::kSymbol || t.kind == TokKind::kString; });
  if (target == op.tokens.end()) return fail(op.at, "custom_call needs a target (@name or call_target_name)");
  std::string_view name = target->text.substr(1);
  if (target->kind == TokKind::kString) name = name.substr(0, name.size() - 1);
  if (name.starts_with("\"")) name = name.substr(1, name.size() - 2);
  return simple(op, s, "custom-call", fmt::format(", custom_call_target=\"{}\"{}", name, api_version_attribute(op.tokens)));
}

bool Converter::call(const Op& op, Scope& s) {
  const auto callee = std::find_if(op.tokens.begin(), op.tokens.end(), [](const Token& t) { return t.kind == TokKind::kSymbol; });
  if (callee == op.tokens.end()) return fail(op.at, "call needs a callee '@name'");
  const std::string_view name = callee->text.substr(1);
  const auto f = std::find_if(m_.funcs.begin(), m_.funcs.end(), [&](const Func& x) { return x.name == name; });
  if (f == m_.funcs.end()) return fail(*callee, fmt::format("call to undefined function '@{}'", name));
  if (!function(*f, false)) return false;
  return simple(op, s, "call", fmt::format(", to_apply=%{}", sanitize(name)));
}

bool Converter::ret(const Op& op, Scope& s) {
  std::vector<std::string> args;
  if (!operands(op, s, args)) return false;
  for (const Token& t : s.extra_returns) {
    std::string n;
    if (!use(t, s, n)) return false;
    args.push_back(n);
  }
  if (args.size() == 1) return s.root = args[0], true;
  std::vector<std::string> shapes;
  std::string ops;
  for (const auto& a : args) {
    const auto it = std::find_if(s.values.begin(), s.values.end(), [&](const auto& kv) { return kv.second.name == a; });
    shapes.push_back(it->second.shape.hlo);
    ops += (ops.empty() ? "%" : ", %") + a;
  }
  const std::string name = s.prefix + ".tuple";
  add_line(s, fmt::format("%{} = ({}) tuple({})", name, fmt::join(shapes, ", "), ops), op.at);
  s.root = name;
  return true;
}

bool Converter::convert_op(const Op& op, Scope& s) {
  for (const Rule& r : rules()) {
    if (op.name == r.name) return (this->*r.handler)(op, s);
  }
  std::string hlo_name(op.name.substr(op.name.find('.') + 1));
  std::replace(hlo_name.begin(), hlo_name.end(), '_', '-');
  const auto code = hlo::opcode_from_name(hlo_name);
  if (op.name.starts_with("stablehlo.") && code && !has_spec_attributes(hlo_name) &&
      (hlo::opcode_is_elementwise(*code) || hlo_name == "reshape" || hlo_name == "convert" ||
       hlo_name == "bitcast-convert" || hlo_name == "tuple" || hlo_name == "reverse" || hlo_name == "clamp")) {
    if (hlo_name == "reverse") return reverse(op, s);
    return elementwise(op, s);
  }
  if (op.name.starts_with("chlo.broadcast_")) return chlo_broadcast(op, s);
  if (is_expanded_chlo(op.name)) return chlo_expand(op, s);
  if (const std::string opcode = hlo_opcode_of(op.name); generic_form(op, opcode)) return generic(op, s, opcode);
  return fail(op.at, fmt::format("unsupported operation '{}'", op.name));
}

bool Converter::generic_form(const Op& op, const std::string& opcode) {
  if (opcode.empty() || (!hlo::opcode_from_name(opcode) && !op.name.starts_with("mhlo."))) return false;
  static const std::set<std::string, std::less<>> kNoAttributes = {"after-all", "partition-id", "replica-id",
                                                                   "opt-barrier", "real", "imag", "complex",
                                                                   "dynamic-update-slice", "cholesky"};
  const bool branches_with_operands = opcode == "conditional" && !op.regions.empty() && !op.regions[0].args.empty();
  return op.name.starts_with("mhlo.") || hlo_extras(op.tokens).any_hlo || kNoAttributes.contains(opcode) ||
         branches_with_operands || (op.name.starts_with("stablehlo.") && has_spec_attributes(opcode));
}

bool Converter::generic(const Op& op, Scope& s, const std::string& opcode) {
  std::string kind;
  for (const AttrEntry& e : attr_entries(op.tokens)) {
    if (e.name == "fusion_kind") {
      for (std::size_t k = e.value; k < op.tokens.size() && kind.empty(); ++k) {
        if (op.tokens[k].text.starts_with("k") && op.tokens[k].kind == TokKind::kIdent) kind = op.tokens[k].text;
      }
    } else if (!is_extra_attribute(e.name) && !is_spec_attribute(opcode, e.name)) {
      return fail(op.tokens[e.value], fmt::format("attribute '{}' of '{}' is not supported", e.name, op.name));
    }
  }
  std::vector<Value> args;
  Shape shape;
  if (!operand_values(op, s, args) || !result_shape(op, shape)) return false;
  const bool pred = !args.empty() && args[0].shape.hlo.starts_with("pred[]");
  const RegionAttrs names = region_attributes(opcode, pred);
  std::vector<std::string> comps;
  for (std::size_t i = 0; i < op.regions.size(); ++i) {
    std::vector<Value> from = args;
    if (opcode == "conditional") from = i + 1 < args.size() ? std::vector<Value>{args[i + 1]} : std::vector<Value>{};
    std::string name;
    if (!region(op.regions[i], s, name, from, op)) return false;
    comps.push_back("%" + name);
  }
  if (!names.is_list && comps.size() > names.names.size()) return fail(op.at, fmt::format("'{}' has too many regions", op.name));
  std::string attrs;
  if (names.is_list && !comps.empty()) attrs = fmt::format(", {}={{{}}}", names.names[0], fmt::join(comps, ", "));
  for (std::size_t i = 0; !names.is_list && i < comps.size(); ++i) attrs += fmt::format(", {}={}", names.names[i], comps[i]);
  if (!kind.empty()) attrs += ", kind=" + kind;
  if (std::string error; !spec_attributes(opcode, op.tokens, attrs, error)) return fail(op.at, error);
  std::vector<std::string> arg_names;
  for (const auto& a : args) arg_names.push_back(a.name);
  return emit(op, s, shape, opcode, arg_names, attrs);
}

bool Converter::convolution(const Op& op, Scope& s) {
  // Printed by an earlier `tpusim convert`: the window and labels as `hlo.*` text.
  for (const AttrEntry& e : attr_entries(op.tokens)) {
    if (e.name == "hlo.dim_labels") return generic(op, s, "convolution");
  }
  // The kernel's type: the second operand type of `: (lhs, rhs) -> result`.
  std::size_t colon = 0;
  int depth = 0;
  for (std::size_t i = 0; i < op.tokens.size(); ++i) {
    if (opens(op.tokens[i])) ++depth;
    if (closes(op.tokens[i])) --depth;
    if (depth == 0 && is(op.tokens[i], ":")) colon = i;
  }
  std::vector<Token> types;
  for (std::size_t i = colon; i < op.tokens.size() && !is(op.tokens[i], "->"); ++i) {
    if (op.tokens[i].kind == TokKind::kType) types.push_back(op.tokens[i]);
  }
  if (types.size() < 2) return fail(op.at, "convolution needs its operand types: ': (tensor<...>, tensor<...>) -> tensor<...>'");
  std::vector<std::int64_t> kernel;
  std::string_view k = types[1].text;
  k = k.substr(7);
  while (!k.empty() && std::isdigit(static_cast<unsigned char>(k[0]))) {
    kernel.push_back(to_int(k));
    k = k.substr(std::min(k.find('x'), k.size() - 1) + 1);
  }
  std::string attrs, error;
  if (!conv_attributes(op.tokens, kernel, attrs, error)) return fail(op.at, error);
  return simple(op, s, "convolution", attrs + precision_attributes(op.tokens));
}

bool Converter::rng_bit_generator(const Op& op, Scope& s) {
  // Printed by an earlier `tpusim convert`: the algorithm as `hlo.*` text.
  for (const AttrEntry& e : attr_entries(op.tokens)) {
    if (e.name == "hlo.algorithm") return generic(op, s, "rng-bit-generator");
  }
  const std::string algo = word_in(op, {"DEFAULT", "THREE_FRY", "PHILOX"});
  if (algo.empty()) return fail(op.at, "rng_bit_generator needs an algorithm (DEFAULT, THREE_FRY, PHILOX)");
  std::string lower = algo;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return simple(op, s, "rng-bit-generator", ", algorithm=rng_" + lower);
}

bool Converter::reverse(const Op& op, Scope& s) {
  std::vector<std::int64_t> dims;
  if (!ints(op, "dims", dims) && !ints(op, "dimensions", dims)) return fail(op.at, "reverse needs 'dims = [...]'");
  return simple(op, s, "reverse", fmt::format(", dimensions={{{}}}", join(dims)));
}


const std::vector<Converter::Rule>& Converter::rules() {
  static const std::vector<Rule> table = {
      {"stablehlo.constant", &Converter::constant},
      {"stablehlo.broadcast_in_dim", &Converter::broadcast},
      {"stablehlo.transpose", &Converter::transpose},
      {"stablehlo.iota", &Converter::iota},
      {"stablehlo.concatenate", &Converter::concatenate},
      {"stablehlo.compare", &Converter::compare},
      {"stablehlo.dot_general", &Converter::dot_general},
      {"stablehlo.dot", &Converter::dot},
      {"stablehlo.slice", &Converter::slice},
      {"stablehlo.get_tuple_element", &Converter::get_tuple_element},
      {"stablehlo.custom_call", &Converter::custom_call},
      {"stablehlo.reduce", &Converter::reduce},
      {"stablehlo.while", &Converter::while_loop},
      {"stablehlo.if", &Converter::conditional},
      {"stablehlo.convolution", &Converter::convolution},
      {"stablehlo.rng_bit_generator", &Converter::rng_bit_generator},
      {"stablehlo.composite", &Converter::call},  // a call of its decomposition, as XLA inlines it
      {"chlo.erf", &Converter::chlo_unary},
      {"chlo.tan", &Converter::chlo_unary},
      {"chlo.top_k", &Converter::chlo_unary},
      {"stablehlo.case", &Converter::conditional},
      {"stablehlo.return", &Converter::ret},
      {"func.return", &Converter::ret},
      {"return", &Converter::ret},
      {"mhlo.return", &Converter::ret},
      {"func.call", &Converter::call},
      {"call", &Converter::call},
  };
  return table;
}

Result<HloText> Converter::run() {
  const Func* main = nullptr;
  for (const Func& f : m_.funcs) {
    if (f.name == "main") main = &f;
  }
  if (main == nullptr) {
    for (const Func& f : m_.funcs) {
      if (f.is_public && main == nullptr) main = &f;
    }
  }
  if (main == nullptr) main = &m_.funcs.front();
  // The header comes last: the device counts depend on whether collectives converted.
  out_.origin.push_back(main->at);
  out_.origin.push_back(main->at);
  if (!function(*main, true)) return errs_;
  std::string header = fmt::format("HloModule {}", sanitize(m_.name));
  for (const auto& [name, value] : m_.hlo_attributes) header += fmt::format(", {}={}", name, value);
  const bool hlo_counts = std::any_of(m_.hlo_attributes.begin(), m_.hlo_attributes.end(), [](const auto& a) {
    return a.first == "num_partitions" || a.first == "replica_count";
  });
  if (hlo_counts) {
    // Printed from HLO (printer.h): the HLO module's own device counts hold.
  } else if (has_collectives_) {
    // A partitioned program: it runs on the devices it declares.
    if (m_.num_partitions > 1) header += fmt::format(", num_partitions={}", m_.num_partitions);
    if (m_.num_replicas > 1) header += fmt::format(", replica_count={}", m_.num_replicas);
  } else if (m_.num_partitions > 1 || m_.num_replicas > 1) {
    out_.notes.push_back(fmt::format("the module declares mhlo.num_partitions = {} and mhlo.num_replicas = {} but has no "
                                     "collectives: a single-device program, simulated on one chip",
                                     m_.num_partitions, m_.num_replicas));
  }
  out_.text.insert(0, header + "\n\n");
  out_.partitioned = has_collectives_ || hlo_counts;
  return std::move(out_);
}

}  // namespace tpusim::stablehlo::convert_detail

namespace tpusim::stablehlo {

using convert_detail::Converter;

Result<HloText> convert_to_hlo(const MlirModule& module, std::string_view source, const std::string& file) {
  return Converter(module, source, file).run();
}

Result<HloText> convert_to_hlo(const std::vector<MlirModule>& modules, std::string_view source, const std::string& file) {
  HloText all;
  for (const MlirModule& m : modules) {
    auto one = convert_to_hlo(m, source, file);
    if (!one.ok()) return one.errors();
    if (!all.text.empty()) {  // XLA's separator of modules in one file
      all.text += "// -----\n";
      all.origin.push_back(m.funcs.front().at);
    }
    all.text += one->text;
    all.origin.insert(all.origin.end(), one->origin.begin(), one->origin.end());
    all.notes.insert(all.notes.end(), one->notes.begin(), one->notes.end());
    all.partitioned = all.partitioned || one->partitioned;
  }
  return all;
}

}  // namespace tpusim::stablehlo
