#include <algorithm>
#include <fmt/format.h>

#include "isa/hlo/opcode.h"
#include "isa/stablehlo/attributes.h"
#include "isa/stablehlo/chlo.h"
#include "isa/stablehlo/convert_internal.h"

namespace tpusim::stablehlo::convert_detail {

bool Converter::chlo_unary(const Op& op, Scope& s) {
  if (op.name == "chlo.top_k") {
    std::vector<std::int64_t> k;
    if (!ints(op, "k", k) || k.size() != 1) return fail(op.at, "chlo.top_k needs 'k = N'");
    return simple(op, s, "topk", fmt::format(", k={}, largest=true", k[0]));
  }
  return simple(op, s, op.name.substr(5));
}

std::vector<std::int64_t> Converter::dims_of(const std::string& hlo) {
  std::vector<std::int64_t> out;
  const auto open = hlo.find('['), close = hlo.find(']');
  if (open == std::string::npos || close == std::string::npos || close == open + 1) return out;
  for (std::string_view d(hlo.data() + open + 1, close - open - 1); !d.empty();) {
    out.push_back(to_int(d));
    const auto comma = d.find(',');
    d = comma == std::string_view::npos ? std::string_view() : d.substr(comma + 1);
  }
  return out;
}

bool Converter::chlo_broadcast(const Op& op, Scope& s) {
  std::vector<Value> args;
  Shape shape;
  if (!operand_values(op, s, args) || !result_shape(op, shape)) return false;
  const auto out_dims = dims_of(shape.hlo);
  std::vector<std::int64_t> mapping;
  const bool given = ints(op, "broadcast_dimensions", mapping);
  std::vector<std::string> names;
  for (const Value& a : args) {
    const auto in = dims_of(a.shape.hlo);
    const std::string etype = a.shape.hlo.substr(0, a.shape.hlo.find('['));
    if (in == out_dims) {
      names.push_back(a.name);
      continue;
    }
    if (in.size() > out_dims.size()) return fail(op.at, fmt::format("'{}': an operand has a higher rank than the result", op.name));
    std::vector<std::int64_t> kept_dims, kept_map;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const std::int64_t to = given && i < mapping.size() ? mapping[i] : static_cast<std::int64_t>(out_dims.size() - in.size() + i);
      if (to < 0 || to >= static_cast<std::int64_t>(out_dims.size())) return fail(op.at, fmt::format("'{}': bad broadcast dimension", op.name));
      if (in[i] == out_dims[static_cast<std::size_t>(to)]) kept_dims.push_back(in[i]), kept_map.push_back(to);
      else if (in[i] != 1) return fail(op.at, fmt::format("'{}': operand dimension {} of size {} does not broadcast", op.name, i, in[i]));
    }
    std::string name = a.name;
    if (kept_dims.size() != in.size()) {
      name = fmt::format("{}.reshape{}", s.prefix, s.lines.size());
      add_line(s, fmt::format("%{} = {}[{}] reshape(%{})", name, etype, join(kept_dims), a.name), op.at);
    }
    const std::string b = fmt::format("{}.broadcast{}", s.prefix, s.lines.size());
    add_line(s, fmt::format("%{} = {}[{}] broadcast(%{}), dimensions={{{}}}", b, etype, join(out_dims), name, join(kept_map)), op.at);
    names.push_back(b);
  }
  std::string opcode(op.name.substr(std::string_view("chlo.broadcast_").size()));
  std::replace(opcode.begin(), opcode.end(), '_', '-');
  std::string attrs;
  if (opcode == "compare") {
    const std::string dir = word_in(op, {"EQ", "NE", "LT", "LE", "GT", "GE"});
    if (dir.empty()) return fail(op.at, "chlo.broadcast_compare needs a comparison_direction");
    attrs = ", direction=" + dir;
  } else if (!hlo::opcode_from_name(opcode) || !hlo::opcode_is_elementwise(*hlo::opcode_from_name(opcode))) {
    return fail(op.at, fmt::format("unsupported operation '{}'", op.name));
  }
  return emit(op, s, shape, opcode, names, attrs);
}

bool Converter::chlo_expand(const Op& op, Scope& s) {
  std::vector<Value> args;
  Shape shape;
  if (!operand_values(op, s, args) || !result_shape(op, shape)) return false;
  const std::string result = strip_layouts(shape.hlo);
  std::vector<std::string> names;
  for (const Value& a : args) {
    if (strip_layouts(a.shape.hlo) != result) {
      return fail(op.at, fmt::format("'{}': operand of type {} differs from the result's {}", op.name, a.shape.hlo, result));
    }
    names.push_back(a.name);
  }
  const std::string base = op.results.empty() ? fmt::format("v{}", s.lines.size()) : sanitize(op.results[0].substr(1));
  ChloExpansion e;
  std::string error;
  if (!expand_chlo(op.name, names, result, fmt::format("{}.{}", s.prefix, base), e, error)) return fail(op.at, error);
  for (std::string& l : e.lines) add_line(s, std::move(l), op.at);
  return emit(op, s, shape, e.opcode, e.args, e.attrs);
}

}  // namespace tpusim::stablehlo::convert_detail
