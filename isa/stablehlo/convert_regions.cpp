#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "isa/hlo/opcode.h"
#include "isa/stablehlo/attributes.h"
#include "isa/stablehlo/convert_internal.h"

namespace tpusim::stablehlo::convert_detail {

bool Converter::reduce(const Op& op, Scope& s) {
  std::vector<std::int64_t> dims;
  if (!ints(op, "dimensions", dims)) return fail(op.at, "reduce needs 'dimensions = [...]'");
  std::string body;
  if (op.regions.size() == 1) {
    if (!region(op.regions[0], s, body, {}, op)) return false;
  } else if (!applies(op, s, body)) {
    return false;
  }
  Shape shape;
  std::vector<std::string> args;
  if (!result_shape(op, shape) || !operands(op, s, args)) return false;
  // Pretty `(%x init: %x0), (%y init: %y0)`: HLO takes the inputs, then the inits.
  if (std::any_of(op.tokens.begin(), op.tokens.end(), [](const Token& t) { return is(t, "init"); }) && args.size() % 2 == 0) {
    std::vector<std::string> ordered;
    for (std::size_t i = 0; i < args.size(); i += 2) ordered.push_back(args[i]);
    for (std::size_t i = 1; i < args.size(); i += 2) ordered.push_back(args[i]);
    args = std::move(ordered);
  }
  return emit(op, s, shape, "reduce", args, fmt::format(", dimensions={{{}}}, to_apply=%{}", join(dims), body));
}

bool Converter::applies(const Op& op, Scope& s, std::string& body) {
  const auto at = std::find_if(op.tokens.begin(), op.tokens.end(), [](const Token& t) { return is(t, "applies"); });
  if (at == op.tokens.end() || at + 1 == op.tokens.end()) return fail(op.at, "reduce needs 'applies <op>' or a reducer region");
  const auto types = result_types(op, true);
  Shape scalar;
  if (types.empty() || !shape_of(types.back(), scalar)) return false;
  const std::string e = scalar.hlo.substr(0, scalar.hlo.find('[')) + "[]";
  std::string fn((at + 1)->text.substr((at + 1)->text.find('.') + 1));
  std::replace(fn.begin(), fn.end(), '_', '-');
  if (!hlo::opcode_from_name(fn)) return fail(*(at + 1), fmt::format("unknown reducer op '{}'", (at + 1)->text));
  body = fmt::format("{}.region{}", s.prefix, regions_++);
  out_.text += fmt::format("%{} {{\n", body);
  out_.origin.push_back(*(at + 1));
  for (const auto& l : {fmt::format("  %{0}.a = {1} parameter(0)", body, e), fmt::format("  %{0}.b = {1} parameter(1)", body, e),
                        fmt::format("  ROOT %{0}.r = {1} {2}(%{0}.a, %{0}.b)", body, e, fn), std::string("}\n")}) {
    out_.text += l + (l.ends_with("\n") ? "" : "\n");
    out_.origin.push_back(*(at + 1));
  }
  return true;
}

bool Converter::while_loop(const Op& op, Scope& s) {
  if (op.regions.size() != 2) return fail(op.at, "while needs a cond and a body region");
  // HLO's form (printer.h): one tuple operand, each region's one argument is that tuple.
  if (const auto types = result_types(op, true); types.size() == 1 && types[0].text.starts_with("tuple<")) {
    return generic(op, s, "while");
  }
  std::vector<std::string> args;
  if (!operands(op, s, args)) return false;
  Shape shape;
  const auto types = result_types(op, true);
  if (!tuple_shape(types, shape)) return false;
  if (args.size() != types.size()) return fail(op.at, fmt::format("while has {} operands but {} types", args.size(), types.size()));
  std::vector<BlockArg> iter;
  for (std::size_t i = 0; i + 1 < op.tokens.size(); ++i) {
    if (op.tokens[i].kind == TokKind::kValue && is(op.tokens[i + 1], "=")) iter.push_back({op.tokens[i].text, types[iter.size() % types.size()], {}});
  }
  // Values of the function the regions use (implicit captures) ride along
  // as extra loop values, returned unchanged by the body, as XLA's
  // conversion passes them.
  std::vector<Token> caps;
  for (const Region& r : op.regions) {
    std::set<std::string_view> defined;
    for (const auto& b : iter) defined.insert(b.name);
    captures(r, defined, caps);
  }
  std::vector<std::string> hlos;
  for (const auto& e : shape.elements) hlos.push_back(e.hlo);
  std::vector<std::pair<Token, std::string>> constants;
  std::vector<Token> carried;
  for (const Token& c : caps) {
    std::string n;
    if (!use(c, s, n)) return false;
    // A captured constant is re-created in the loop's computations, so a
    // limit like `i < 10` stays visible to the trip-count analysis.
    const Value& v = s.values.find(c.text)->second;
    const std::string& def = s.lines[v.line].text;
    if (const auto eq = def.find(" = "); eq != std::string::npos && def.find(" constant(") != std::string::npos) {
      constants.emplace_back(c, def.substr(eq + 3));
      continue;
    }
    carried.push_back(c);
    args.push_back(n);
    shape.elements.push_back(s.values.find(c.text)->second.shape);
    hlos.push_back(shape.elements.back().hlo);
  }
  shape.hlo = fmt::format("({})", fmt::join(hlos, ", "));
  std::string cond, body;
  for (std::size_t i = 0; i < 2; ++i) {
    std::vector<BlockArg> region_iter = iter.empty() ? op.regions[i].args : iter;
    for (const Token& c : carried) region_iter.push_back({c.text, c, {}});
    if (!tuple_region(op.regions[i], region_iter, shape, s, i == 0 ? cond : body,
                      i == 1 ? carried : std::vector<Token>{}, constants)) {
      return false;
    }
  }
  std::string ops;
  for (const auto& a : args) ops += (ops.empty() ? "%" : ", %") + a;
  const std::string tuple = fmt::format("{}.while_init{}", s.prefix, s.lines.size());
  add_line(s, fmt::format("%{} = {} tuple({})", tuple, shape.hlo, ops), op.at);
  return emit(op, s, shape, "while", {tuple}, fmt::format(", condition=%{}, body=%{}", cond, body));
}

bool Converter::tuple_region(const Region& r, std::vector<BlockArg> iter, const Shape& shape, Scope& outer, std::string& name,
                  std::vector<Token> extra_returns, const std::vector<std::pair<Token, std::string>>& constants) {
  if (iter.empty()) iter = r.args;
  Scope s;
  s.parent = &outer;
  s.extra_returns = std::move(extra_returns);
  for (const auto& [tok, text] : constants) {
    const std::string n = fmt::format("{}.{}", fmt::format("{}.region{}", outer.prefix, regions_), sanitize(tok.text.substr(1)));
    add_line(s, fmt::format("%{} = {}", n, text), tok);
    s.values[std::string(tok.text)] = {n, outer.values.find(tok.text)->second.shape, s.lines.size() - 1};
  }
  s.prefix = name = fmt::format("{}.region{}", outer.prefix, regions_++);
  const std::string p = s.prefix + ".arg";
  add_line(s, fmt::format("%{} = {} parameter(0)", p, shape.hlo), r.ops.empty() ? Token{} : r.ops[0].at);
  s.params.push_back({p, shape, 0});
  for (std::size_t i = 0; i < iter.size() && i < shape.elements.size(); ++i) {
    const std::string n = fmt::format("{}.{}", s.prefix, sanitize(iter[i].name.substr(1)));
    add_line(s, fmt::format("%{} = {} get-tuple-element(%{}), index={}", n, shape.elements[i].hlo, p, i), iter[i].type);
    s.values[std::string(iter[i].name)] = {n, shape.elements[i], s.lines.size() - 1};
  }
  return body(r, s, false, name);
}

bool Converter::no_captures(const Region& r, const Scope& outer, const Op& owner) {
  std::set<std::string_view> defined;
  std::vector<Token> caps;
  captures(r, defined, caps);
  for (const Token& c : caps) {
    for (const Scope* sc = &outer; sc != nullptr; sc = sc->parent) {
      if (!sc->values.contains(c.text)) continue;
      if (owner.name.ends_with(".while") || owner.name.ends_with(".if") || owner.name.ends_with(".case")) {
        return fail(c, fmt::format("'{}' is defined outside this '{}' region: implicit captures convert in JAX's form "
                                   "(loop values as operands, branches without block arguments), not with a tuple "
                                   "operand or branch operands",
                                   c.text, owner.name));
      }
      return fail(c, fmt::format("'{}' is defined outside this '{}' region (an implicit capture): XLA converts values "
                                 "captured by while, if and case regions only; pass it as an operand or define it "
                                 "inside the region",
                                 c.text, owner.name));
    }
  }
  return true;
}

bool Converter::region(const Region& r, Scope& outer, std::string& name, const std::vector<Value>& from, const Op& owner) {
  if (!no_captures(r, outer, owner)) return false;
  Scope s;
  s.parent = &outer;
  s.prefix = name = fmt::format("{}.region{}", outer.prefix, regions_++);
  if (!parameters(r.args, s, from)) return false;
  return body(r, s, false, name);
}

bool Converter::parameters(const std::vector<BlockArg>& args, Scope& s, const std::vector<Value>& from) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    Shape shape;
    if (!shape_of(args[i].type, shape)) return false;
    if (from.size() == args.size() && strip_layouts(from[i].shape.hlo) == shape.hlo) shape = from[i].shape;
    const HloExtras extras = hlo_extras(args[i].attrs);
    if (!extras.shape.empty()) shape = hlo_shape(extras.shape);
    const std::string n = fmt::format("{}.{}", s.prefix, sanitize(args[i].name.substr(1)));
    add_line(s, fmt::format("%{} = {} parameter({}){}", n, shape.hlo, i, extras.attrs), args[i].type);
    s.values[std::string(args[i].name)] = {n, shape, s.lines.size() - 1};
    s.params.push_back(s.values[std::string(args[i].name)]);
  }
  return true;
}

bool Converter::body(const Region& r, Scope& s, bool entry, const std::string& name) {
  for (const Op& op : r.ops) {
    if (!convert_op(op, s)) return false;
  }
  if (s.root.empty()) return fail(r.ops.empty() ? Token{} : r.ops.back().at, "region has no return");
  Token header = s.lines.empty() ? Token{} : s.lines.front().origin;
  out_.text += fmt::format("{}%{} {{\n", entry ? "ENTRY " : "", name);
  out_.origin.push_back(header);
  for (const auto& l : s.lines) {
    const bool root = l.text.starts_with("%" + s.root + " ");
    out_.text += fmt::format("  {}{}\n", root ? "ROOT " : "", l.text);
    out_.origin.push_back(l.origin);
  }
  out_.text += "}\n\n";
  out_.origin.push_back(header);
  out_.origin.push_back(header);
  return true;
}

bool Converter::function(const Func& f, bool entry) {
  if (done_.contains(f.name)) return true;
  if (active_.contains(f.name)) return fail(f.at, fmt::format("recursive call of '@{}': HLO has no recursion", f.name));
  active_.insert(std::string(f.name));
  Scope s;
  s.prefix = sanitize(f.name);
  const bool ok = parameters(f.body.args, s) && body(f.body, s, entry, s.prefix);
  active_.erase(std::string(f.name));
  done_.insert(std::string(f.name));
  return ok;
}

void Converter::captures(const Region& r, std::set<std::string_view>& defined, std::vector<Token>& out) {
  for (const auto& a : r.args) defined.insert(a.name);
  for (const Op& op : r.ops) {
    for (std::size_t i = 0; i < op.tokens.size(); ++i) {
      Token t = op.tokens[i];
      if (t.kind != TokKind::kValue || t.text.starts_with("^")) continue;
      if (i + 1 < op.tokens.size() && is(op.tokens[i + 1], "=")) {
        defined.insert(t.text);
        continue;
      }
      t.text = t.text.substr(0, t.text.find('#'));
      const bool seen = std::any_of(out.begin(), out.end(), [&](const Token& o) { return o.text == t.text; });
      if (!defined.contains(t.text) && !seen) out.push_back(t);
    }
    for (const Region& nested : op.regions) captures(nested, defined, out);
    for (const auto& res : op.results) defined.insert(res);
  }
}

bool Converter::conditional(const Op& op, Scope& s) {
  if (!op.regions.empty() && !op.regions[0].args.empty()) return generic(op, s, "conditional");
  std::vector<Value> sel;
  if (!operand_values(op, s, sel)) return false;
  if (sel.size() != 1) return fail(op.at, fmt::format("'{}' takes one operand (the predicate or the branch index)", op.name));
  Shape shape;
  if (!result_shape(op, shape)) return false;
  std::vector<std::string> operands{sel[0].name}, comps;
  for (const Region& r : op.regions) {
    std::set<std::string_view> defined;
    std::vector<Token> caps;
    captures(r, defined, caps);
    std::vector<BlockArg> iter;
    std::vector<std::string> names;
    Shape tuple;
    std::vector<std::string> shapes;
    for (const Token& c : caps) {
      std::string n;
      if (!use(c, s, n)) return false;
      const Value& v = s.values.find(c.text)->second;
      iter.push_back({c.text, c, {}});
      names.push_back("%" + n);
      shapes.push_back(v.shape.hlo);
      tuple.elements.push_back(v.shape);
    }
    tuple.hlo = fmt::format("({})", fmt::join(shapes, ", "));
    const std::string t = fmt::format("{}.branch_args{}", s.prefix, s.lines.size());
    add_line(s, fmt::format("%{} = {} tuple({})", t, tuple.hlo, fmt::join(names, ", ")), op.at);
    operands.push_back(t);
    std::string comp;
    if (!tuple_region(r, iter, tuple, s, comp)) return false;
    comps.push_back("%" + comp);
  }
  std::string attrs;
  if (sel[0].shape.hlo.starts_with("pred[]") && comps.size() == 2) {
    attrs = fmt::format(", true_computation={}, false_computation={}", comps[0], comps[1]);
  } else {
    attrs = fmt::format(", branch_computations={{{}}}", fmt::join(comps, ", "));
  }
  return emit(op, s, shape, "conditional", operands, attrs);
}

}  // namespace tpusim::stablehlo::convert_detail
