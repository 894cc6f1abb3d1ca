#include "isa/stablehlo/printer.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <set>
#include <vector>

#include "isa/hlo/attribute_values.h"
#include "isa/hlo/values.h"
#include "isa/stablehlo/names.h"
#include "isa/stablehlo/print_attributes.h"

namespace tpusim::stablehlo {
namespace {

using hlo::AttrId;
using hlo::Computation;
using hlo::Instruction;
using hlo::Opcode;
using hlo::Shape;

// HLO element type -> MLIR element type: pred -> i1, s32 -> i32, u8 -> ui8,
// f8e4m3fn -> f8E4M3FN, c64 -> complex<f32>.
std::string mlir_element(hlo::ElementType t) {
  const std::string_view n = hlo::element_type_name(t);
  if (t == hlo::ElementType::kPred) return "i1";
  if (t == hlo::ElementType::kC64) return "complex<f32>";
  if (t == hlo::ElementType::kC128) return "complex<f64>";
  if (n.starts_with("s")) return "i" + std::string(n.substr(1));
  if (n.starts_with("u")) return "ui" + std::string(n.substr(1));
  if (n.size() > 3 && (n.starts_with("f8") || n.starts_with("f4") || n.starts_with("f6"))) {
    std::string out(n.substr(0, 2));
    for (const char c : n.substr(2)) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
  }
  return std::string(n);
}

std::string mlir_type(const Shape& s) {
  if (s.is_buffer()) return mlir_type(s.tuple_elements().at(0));
  if (s.is_tuple()) {
    std::vector<std::string> parts;
    for (const Shape& e : s.tuple_elements()) parts.push_back(mlir_type(e));
    return fmt::format("tuple<{}>", fmt::join(parts, ", "));
  }
  if (s.is_token()) return "!stablehlo.token";
  std::string out = "tensor<";
  for (const std::int64_t d : s.dims()) out += fmt::format("{}x", std::max<std::int64_t>(d, 0));
  return out + mlir_element(s.element_type()) + ">";
}

// True when the MLIR type loses something of the HLO shape: a layout other
// than the default major-to-minor one, tiles, a memory space, bounded
// dynamic dimensions, a buffer shape.
bool needs_xla_shape(const Shape& s) {
  if (s.is_buffer() || s.has_dynamic_dims()) return true;
  if (s.is_tuple()) {
    for (const Shape& e : s.tuple_elements()) {
      if (needs_xla_shape(e)) return true;
    }
    return false;
  }
  if (!s.layout()) return false;
  const hlo::Layout& l = *s.layout();
  if (!l.tiles.empty() || l.element_size_bits != 0 || l.memory_space != 0 || !l.other_items.empty()) return true;
  for (std::size_t i = 0; i < l.minor_to_major.size(); ++i) {
    if (l.minor_to_major[i] != static_cast<std::int64_t>(l.minor_to_major.size() - 1 - i)) return true;
  }
  return false;
}

bool bare_id(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (const char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-')) return false;
  }
  return true;
}

// An SSA name for an HLO name (HLO names are valid MLIR suffix ids except
// when they start with a digit and hold more than digits).
std::string ssa(std::string_view name) { return bare_id(name) ? fmt::format("%{}", name) : fmt::format("%v{}", name); }

// A function symbol, as XLA's importer sanitizes computation names ('-' -> '_').
std::string symbol(std::string_view name) {
  std::string out;
  for (const char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ? c : '_';
  return "@" + out;
}

std::string ints(const std::vector<std::int64_t>& v) { return fmt::format("{}", fmt::join(v, ", ")); }
std::string array(const std::vector<std::int64_t>& v) { return fmt::format("array<i64{}{}>", v.empty() ? "" : ": ", ints(v)); }

// A non-finite float as MLIR's hexadecimal bit pattern.
std::string float_bits(std::string_view word, hlo::ElementType t) {
  double v = 0;
  hlo::parse_float(word, v);
  if (t == hlo::ElementType::kF64) return fmt::format("0x{:016X}", std::bit_cast<std::uint64_t>(v));
  const auto f = std::bit_cast<std::uint32_t>(static_cast<float>(v));
  if (t == hlo::ElementType::kBF16) return fmt::format("0x{:04X}", f >> 16);
  if (t == hlo::ElementType::kF16) {
    const std::uint32_t sign = (f >> 16) & 0x8000;
    return fmt::format("0x{:04X}", sign | 0x7C00 | (std::isnan(v) ? 0x200 : 0));
  }
  return fmt::format("0x{:08X}", f);
}

// One literal element: floats always carry a '.', non-finite ones are bits.
std::string element(std::string_view w, hlo::ElementType t) {
  const char kind = hlo::element_type_kind(t);
  if (kind != 'f' && kind != 'c') return std::string(w);
  if (w.find("inf") != std::string_view::npos || w.find("nan") != std::string_view::npos) {
    return kind == 'f' ? float_bits(w, t) : "0.0";
  }
  if (w.find_first_of(".eE") == std::string_view::npos) return std::string(w) + ".0";
  return std::string(w);
}

// An HLO literal (`1.5`, `{ {1, 2}, {3, 4} }`, `{...}`) as a dense attribute.
std::string dense(const Instruction& inst) {
  const std::string_view lit = inst.literal();
  const Shape& s = inst.shape();
  if (lit.find("...") != std::string_view::npos || s.is_tuple()) return "dense_resource<__elided__>";
  std::string out = "dense<";
  for (std::size_t i = 0; i < lit.size();) {
    const char c = lit[i];
    if (c == '{' || c == '}') {
      out += c == '{' ? '[' : ']';
      ++i;
    } else if (c == ',' || c == '(' || c == ')') {
      out += c;
      out += c == ',' ? " " : "";
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else {
      const std::size_t end = lit.find_first_of("{},() \t\n", i);
      out += element(lit.substr(i, end - i), s.element_type());
      i = end == std::string_view::npos ? lit.size() : end;
    }
  }
  return out + "> : " + mlir_type(s);
}

class Printer {
 public:
  explicit Printer(const hlo::Module& m) : m_(m) {}
  std::string run();

 private:
  const hlo::Module& m_;
  std::string out_;
  std::set<const Computation*> functions_;  // targets of kCall: func.func, called with func.call

  void line(int indent, std::string_view text) {
    out_.append(static_cast<std::size_t>(indent) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  void function(const Computation& c);
  void instructions(const Computation& c, int indent, bool is_function);
  void instruction(const Instruction& inst, int indent);
  void regions(const Instruction& inst, int indent);
  std::vector<const Computation*> region_computations(const Instruction& inst) const;
  std::vector<std::string> attributes(const Instruction& inst) const;
  std::string spec_attribute(const Instruction& inst, const hlo::Attribute& a) const;
};

// The computations an instruction's regions stand for, in region order.
std::vector<const Computation*> Printer::region_computations(const Instruction& inst) const {
  const bool pred = inst.operand_count() > 0 && inst.operand(0)->shape().element_type() == hlo::ElementType::kPred;
  std::vector<const Computation*> out;
  auto names = region_attributes(inst.opcode_text(), pred).names;
  if (inst.opcode() == Opcode::kCustomCall) names.push_back("to_apply");  // read back as called_computations
  for (const std::string& name : names) {
    const hlo::Attribute* a = inst.attribute(name);
    if (a == nullptr) continue;
    std::string_view v = a->value;
    while (!v.empty()) {
      const std::size_t begin = v.find_first_not_of("{}%, \t\n");
      if (begin == std::string_view::npos) break;
      const std::size_t end = v.find_first_of("{}, \t\n", begin);
      const Computation* c = m_.find_computation(v.substr(begin, end - begin));
      if (c != nullptr) out.push_back(c);
      v = end == std::string_view::npos ? std::string_view() : v.substr(end);
    }
  }
  return out;
}

// An attribute in the StableHLO specification's form, or "" when it has none.
std::string Printer::spec_attribute(const Instruction& inst, const hlo::Attribute& a) const {
  const Opcode op = inst.opcode();
  const auto list = [&] { return hlo::ints_attr(inst, a.id).value_or(std::vector<std::int64_t>{}); };
  switch (a.id) {
    case AttrId::kSharding: return "mhlo.sharding = " + escape_string(a.value);
    case AttrId::kCustomCallTarget: return fmt::format("call_target_name = {}", a.value);
    case AttrId::kBackendConfig:
      return a.value.starts_with("\"") ? fmt::format("backend_config = {}", a.value) : "";
    case AttrId::kKind:
      return op == Opcode::kFusion ? fmt::format("fusion_kind = #mhlo<fusion_kind {}>", a.value) : "";
    case AttrId::kDirection: return fmt::format("comparison_direction = #stablehlo<comparison_direction {}>", a.value);
    case AttrId::kIndex: return op == Opcode::kGetTupleElement ? fmt::format("index = {} : i32", a.value) : "";
    case AttrId::kIotaDimension: return fmt::format("iota_dimension = {} : i64", a.value);
    case AttrId::kDimensions:
      if (op == Opcode::kBroadcast) return "broadcast_dimensions = " + array(list());
      if (op == Opcode::kTranspose) return "permutation = " + array(list());
      if (op == Opcode::kReduce || op == Opcode::kReverse) return "dimensions = " + array(list());
      if (op == Opcode::kConcatenate && list().size() == 1) return fmt::format("dimension = {} : i64", list()[0]);
      return "";
    case AttrId::kSlice: {
      if (op != Opcode::kSlice) return "";
      std::vector<std::int64_t> start, limit, stride;
      for (const auto& r : hlo::slice_attr(inst).value_or(std::vector<hlo::SliceRange>{})) {
        start.push_back(r.start), limit.push_back(r.limit), stride.push_back(r.stride);
      }
      return fmt::format("start_indices = {}, limit_indices = {}, strides = {}", array(start), array(limit), array(stride));
    }
    default: break;
  }
  if (a.name == "type" && op == Opcode::kCompare) return fmt::format("compare_type = #stablehlo<comparison_type {}>", a.value);
  return "";
}

std::vector<std::string> Printer::attributes(const Instruction& inst) const {
  std::vector<std::string> out;
  const RegionAttrs regions = region_attributes(inst.opcode_text(), false);
  const RegionAttrs pred_regions = region_attributes(inst.opcode_text(), true);
  const auto is_region = [&](std::string_view n) {
    for (const auto* r : {&regions, &pred_regions}) {
      if (std::find(r->names.begin(), r->names.end(), n) != r->names.end()) return true;
    }
    return (inst.opcode() == Opcode::kCall || inst.opcode() == Opcode::kCustomCall) && n == "to_apply";
  };
  bool dot_done = false;
  // The specification's attributes go where the first HLO attribute they stand for was.
  SpecAttributes spec_attrs = print_spec_attributes(inst, m_);
  for (const hlo::Attribute& a : inst.attributes()) {
    if (is_region(a.name) || a.id == AttrId::kMetadata || a.id == AttrId::kControlPredecessors) continue;
    if (std::find(spec_attrs.covers.begin(), spec_attrs.covers.end(), a.name) != spec_attrs.covers.end()) {
      for (std::string& text : spec_attrs.attrs) out.push_back(std::move(text));
      spec_attrs.attrs.clear();
      continue;
    }
    const bool dot_dims = a.id == AttrId::kLhsBatchDims || a.id == AttrId::kRhsBatchDims ||
                          a.id == AttrId::kLhsContractingDims || a.id == AttrId::kRhsContractingDims;
    if (inst.opcode() == Opcode::kDot && dot_dims) {
      if (dot_done) continue;
      dot_done = true;
      const auto dims = [&](AttrId id) { return ints(hlo::ints_attr(inst, id).value_or(std::vector<std::int64_t>{})); };
      out.push_back(fmt::format(
          "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [{}], rhs_batching_dimensions = [{}], "
          "lhs_contracting_dimensions = [{}], rhs_contracting_dimensions = [{}]>",
          dims(AttrId::kLhsBatchDims), dims(AttrId::kRhsBatchDims), dims(AttrId::kLhsContractingDims),
          dims(AttrId::kRhsContractingDims)));
      continue;
    }
    std::string spec = spec_attribute(inst, a);
    if (spec.empty()) {
      const std::string name = fmt::format("{}{}", kHloAttrPrefix, a.name);
      spec = fmt::format("{} = {}", bare_id(name) && name.find('-') == std::string::npos ? name : escape_string(name),
                         escape_string(a.value));
    }
    // The custom-call target comes first: readers of the pretty form take the first string.
    if (a.id == AttrId::kCustomCallTarget) out.insert(out.begin(), std::move(spec));
    else out.push_back(std::move(spec));
  }
  if (needs_xla_shape(inst.shape())) out.push_back(fmt::format("{} = {}", kXlaShapeAttr, escape_string(inst.shape().to_string())));
  return out;
}

void Printer::regions(const Instruction& inst, int indent) {
  const auto comps = region_computations(inst);
  if (comps.empty()) return;
  out_ += " ({\n";
  for (std::size_t i = 0; i < comps.size(); ++i) {
    if (i > 0) out_ += std::string(static_cast<std::size_t>(indent) * 2, ' ') + "}, {\n";
    instructions(*comps[i], indent + 1, false);
  }
  out_ += std::string(static_cast<std::size_t>(indent) * 2, ' ') + "})";
}

void Printer::instruction(const Instruction& inst, int indent) {
  std::vector<std::string> operands, types;
  for (const Instruction* o : inst.operands()) {
    operands.push_back(ssa(o->name()));
    types.push_back(mlir_type(o->shape()));
  }
  const auto attrs = attributes(inst);
  const std::string attr_dict = attrs.empty() ? "" : fmt::format(" {{{}}}", fmt::join(attrs, ", "));
  std::string loc;
  if (const auto md = hlo::metadata_attr(inst); md && !md->op_name.empty()) loc = " loc(" + escape_string(md->op_name) + ")";
  const std::string sig = fmt::format("({}) -> {}", fmt::join(types, ", "), mlir_type(inst.shape()));
  out_.append(static_cast<std::size_t>(indent) * 2, ' ');
  if (inst.opcode() == Opcode::kCall && inst.called(AttrId::kToApply) != nullptr) {
    out_ += fmt::format("{} = func.call {}({}){} : {}{}\n", ssa(inst.name()), symbol(inst.called(AttrId::kToApply)->name()),
                        fmt::join(operands, ", "), attr_dict, sig, loc);
    return;
  }
  if (inst.opcode() == Opcode::kConstant) {
    out_ += fmt::format("{} = \"stablehlo.constant\"() {{value = {}{}}} : () -> {}{}\n", ssa(inst.name()), dense(inst),
                        attrs.empty() ? "" : ", " + fmt::format("{}", fmt::join(attrs, ", ")), mlir_type(inst.shape()), loc);
    return;
  }
  std::string name = mlir_op_name(inst.opcode_text());
  if (inst.opcode() == Opcode::kConditional && inst.operand_count() > 0 &&
      inst.operand(0)->shape().element_type() == hlo::ElementType::kPred) {
    name = "stablehlo.if";
  }
  out_ += fmt::format("{} = \"{}\"({})", ssa(inst.name()), name, fmt::join(operands, ", "));
  regions(inst, indent);
  out_ += fmt::format("{} : {}{}\n", attr_dict, sig, loc);
}

// A computation's body: block arguments (regions), its instructions, and the return of its root.
void Printer::instructions(const Computation& c, int indent, bool is_function) {
  if (!is_function && !c.parameters().empty()) {
    std::vector<std::string> args;
    for (const Instruction* p : c.parameters()) {
      if (p != nullptr) args.push_back(fmt::format("{}: {}", ssa(p->name()), mlir_type(p->shape())));
    }
    line(indent - 1, fmt::format("^bb0({}):", fmt::join(args, ", ")));
  }
  for (const Instruction* inst : c.instructions()) {
    if (inst->opcode() != Opcode::kParameter) instruction(*inst, indent);
  }
  const Instruction* root = c.root();
  const std::string_view ret = is_function ? "func.return" : "stablehlo.return";
  if (root != nullptr) line(indent, fmt::format("\"{}\"({}) : ({}) -> ()", ret, ssa(root->name()), mlir_type(root->shape())));
}

void Printer::function(const Computation& c) {
  std::vector<std::string> args;
  for (const Instruction* p : c.parameters()) {
    if (p == nullptr) continue;
    std::vector<std::string> attrs;
    for (const hlo::Attribute& a : p->attributes()) {
      if (a.id == AttrId::kSharding) attrs.push_back("mhlo.sharding = " + escape_string(a.value));
      else if (a.id != AttrId::kMetadata) attrs.push_back(fmt::format("{}{} = {}", kHloAttrPrefix, a.name, escape_string(a.value)));
    }
    if (needs_xla_shape(p->shape())) attrs.push_back(fmt::format("{} = {}", kXlaShapeAttr, escape_string(p->shape().to_string())));
    args.push_back(fmt::format("{}: {}{}", ssa(p->name()), mlir_type(p->shape()),
                               attrs.empty() ? "" : fmt::format(" {{{}}}", fmt::join(attrs, ", "))));
  }
  const std::string result = c.root() != nullptr ? mlir_type(c.root()->shape()) : "()";
  line(1, fmt::format("func.func {}{}({}) -> {} {{", c.is_entry() ? "" : "private ", c.is_entry() ? "@main" : symbol(c.name()),
                      fmt::join(args, ", "), result));
  instructions(c, 2, true);
  line(1, "}");
}

std::string Printer::run() {
  for (const Computation* c : m_.computations()) {
    for (const Instruction* inst : c->instructions()) {
      if (inst->opcode() == Opcode::kCall && inst->called(AttrId::kToApply) != nullptr) functions_.insert(inst->called(AttrId::kToApply));
    }
  }
  std::vector<std::string> attrs;
  // Device counts as XLA's importer writes them, and (like every HLO module
  // attribute) verbatim: the reader then keeps them even without collectives.
  for (const hlo::Attribute& a : m_.attributes()) {
    if (a.name == "num_partitions") attrs.push_back(fmt::format("mhlo.num_partitions = {} : i32", a.value));
    if (a.name == "replica_count") attrs.push_back(fmt::format("mhlo.num_replicas = {} : i32", a.value));
    attrs.push_back(fmt::format("{}{} = {}", kHloAttrPrefix, a.name, escape_string(a.value)));
  }
  const std::string name(m_.name());
  line(0, fmt::format("module @{}{} {{", bare_id(name) && name.find('-') == std::string::npos ? name : escape_string(name),
                      attrs.empty() ? "" : fmt::format(" attributes {{{}}}", fmt::join(attrs, ", "))));
  for (const Computation* c : m_.computations()) {
    if (functions_.contains(c) && !c->is_entry()) function(*c);
  }
  if (m_.entry() != nullptr) function(*m_.entry());
  line(0, "}");
  return std::move(out_);
}

}  // namespace

std::string print_stablehlo(const hlo::Module& module) { return Printer(module).run(); }

}  // namespace tpusim::stablehlo
