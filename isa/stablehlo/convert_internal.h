// Internal to the StableHLO -> HLO conversion (convert.h): the converter's
// state and its handlers, defined by concern in convert.cpp (types, values,
// plain ops, the op table, the module), convert_regions.cpp (regions:
// reduce, while, if/case, functions, implicit captures) and
// convert_chlo.cpp (chlo ops).
#pragma once

#include <cctype>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "isa/hlo/element_type.h"
#include "isa/stablehlo/attributes.h"
#include "isa/stablehlo/convert.h"

namespace tpusim::stablehlo::convert_detail {

struct Shape {
  std::string hlo;  // "f32[2,3]", "(f32[], s32[])"
  std::vector<Shape> elements;  // tuple elements
};

struct Value {
  std::string name;  // HLO instruction name
  Shape shape;
  std::size_t line = 0;  // the computation line that defines it
};

struct Line {
  std::string text;
  Token origin;
};

struct Scope {
  std::string prefix;
  std::map<std::string, Value, std::less<>> values;
  std::vector<Line> lines;
  std::vector<Value> params;
  std::string root;  // set by the return op
  std::vector<Token> extra_returns;  // values the return op also returns (a while body's captures)
  const Scope* parent = nullptr;  // the enclosing computation's scope (null for a function)
  // Captured constants re-created in this computation: the MLIR name and
  // the constant's HLO text after its name (`s32[] constant(10)`).
  std::vector<std::pair<Token, std::string>> constants;
};

inline bool is(const Token& t, std::string_view s) { return t.text == s && t.kind != TokKind::kString; }
inline bool opens(const Token& t) { return t.kind == TokKind::kPunct && (t.text == "(" || t.text == "[" || t.text == "{" || t.text == "<"); }
inline bool closes(const Token& t) { return t.kind == TokKind::kPunct && (t.text == ")" || t.text == "]" || t.text == "}" || t.text == ">"); }

inline std::string sanitize(std::string_view s) {
  std::string out;
  for (const char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ? c : '_';
  return out;
}

// A shape given as HLO text (an `xla_shape` attribute).
inline Shape hlo_shape(const std::string& text) {
  Shape out{text, {}};
  for (const auto& e : tuple_elements(text)) out.elements.push_back(hlo_shape(e));
  return out;
}

inline std::string join(const std::vector<std::int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// MLIR element type -> HLO element type name ("" when unknown).
inline std::string element_type(std::string_view t) {
  if (t == "i1") return "pred";
  if (t == "complex<f32>") return "c64";
  if (t == "complex<f64>") return "c128";
  std::string s;
  for (const char c : t) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.starts_with("ui")) s = "u" + s.substr(2);
  else if (s.starts_with("si")) s = "s" + s.substr(2);
  else if (s.starts_with("i")) s = "s" + s.substr(1);
  return hlo::element_type_from_name(s) ? s : "";
}
class Converter {
 public:
  Converter(const MlirModule& m, std::string_view src, const std::string& file) : m_(m), src_(src), file_(file) {}
  Result<HloText> run();

 private:
  using Handler = bool (Converter::*)(const Op&, Scope&);
  struct Rule {
    std::string_view name;
    Handler handler;
  };
  static const std::vector<Rule>& rules();

  const MlirModule& m_;
  std::string_view src_;
  const std::string& file_;
  std::vector<Diagnostic> errs_;
  HloText out_;
  std::set<std::string, std::less<>> done_, active_;
  int regions_ = 0;
  bool has_collectives_ = false;

  bool fail(const Token& at, std::string msg);

  // ---- types ----
  bool shape_of(const Token& t, Shape& out);
  bool tuple_shape(const Token& t, std::string_view inner, Shape& out);
  // Result types: the types after the op's last top-level ':' (after '->' when there is one).
  std::vector<Token> result_types(const Op& op, bool all = false);
  bool result_shape(const Op& op, Shape& out);
  // The tuple of `types` (each an element of `out`).
  template <typename Types>
  bool tuple_shape(const Types& types, Shape& out) {
    std::vector<std::string> hlos;
    for (const auto& t : types) {
      Shape e;
      if (!shape_of(t, e)) return false;
      hlos.push_back(e.hlo);
      out.elements.push_back(e);
    }
    out.hlo = fmt::format("({})", fmt::join(hlos, ", "));
    return true;
  }

  // ---- attributes ----
  // The integers of `key = [..]`, `key = array<i64: ..>`, `key = N`; `second` gets `[..] x [..]`'s right list.
  bool ints(const Op& op, std::string_view key, std::vector<std::int64_t>& out, std::vector<std::int64_t>* second = nullptr);
  static void read_list(const std::vector<Token>& t, std::size_t& k, std::vector<std::int64_t>& out);
  static std::int64_t to_int(std::string_view s);
  static std::string word_in(const Op& op, std::initializer_list<std::string_view> words);

  // ---- values ----
  bool operands(const Op& op, Scope& s, std::vector<std::string>& out);
  bool operand_values(const Op& op, Scope& s, std::vector<Value>& out);
  bool use(const Token& t, Scope& s, std::string& name);
  void add_line(Scope& s, std::string text, const Token& origin) { s.lines.push_back({std::move(text), origin}); }
  std::string metadata(const Op& op) const;
  // One HLO instruction for `op`'s result(s).
  bool emit(const Op& op, Scope& s, const Shape& shape, std::string_view opcode, const std::vector<std::string>& args,
            const std::string& attrs);
  bool emit_raw(const Op& op, Scope& s, const Shape& stated, std::string_view opcode, const std::string& ops,
                const std::string& attrs);
  bool simple(const Op& op, Scope& s, std::string_view opcode, const std::string& attrs = "");

  // ---- ops ----
  bool elementwise(const Op& op, Scope& s);
  bool constant(const Op& op, Scope& s);
  bool scalar(const Token& dense, const Shape& shape, std::string& literal);
  // `dense<0x7F800000>`: a float's bit pattern, as MLIR prints non-finite values.
  bool float_bits(const Token& dense, std::string_view hex, const Shape& shape, std::string& literal);
  bool hex_scalar(const Token& dense, std::string_view hex, const Shape& shape, std::string& literal);
  bool broadcast(const Op& op, Scope& s);
  bool transpose(const Op& op, Scope& s);
  bool iota(const Op& op, Scope& s);
  bool concatenate(const Op& op, Scope& s);
  bool compare(const Op& op, Scope& s);
  bool dot_general(const Op& op, Scope& s);
  bool dot(const Op& op, Scope& s);
  bool slice(const Op& op, Scope& s);
  // `%x [0:2, 1:4:2]`: the numbers between '[' and ']' in start:limit[:stride] groups.
  bool slice_pretty(const Op& op, std::vector<std::int64_t>& start, std::vector<std::int64_t>& limit,
                    std::vector<std::int64_t>& strides);
  bool get_tuple_element(const Op& op, Scope& s);
  bool custom_call(const Op& op, Scope& s);
  bool call(const Op& op, Scope& s);
  bool ret(const Op& op, Scope& s);
  // reduce: `applies stablehlo.add` (one line) or a reducer region.
  bool reduce(const Op& op, Scope& s);
  // `applies stablehlo.add`: a two-parameter scalar computation of that op.
  bool applies(const Op& op, Scope& s, std::string& body);
  // while: one tuple operand, condition and body computations over it.
  bool while_loop(const Op& op, Scope& s);
  // A region whose block arguments are the elements of one tuple parameter.
  bool tuple_region(const Region& r, std::vector<BlockArg> iter, const Shape& shape, Scope& outer, std::string& name,
                    std::vector<Token> extra_returns = {}, const std::vector<std::pair<Token, std::string>>& constants = {});
  // A value of an enclosing scope used inside a region that is not a while,
  // if or case (a reduce, sort, scatter, reduce_window, select_and_scatter,
  // all_reduce, ... body): XLA's conversion to HLO rejects it ("requires all
  // operands to be defined in the parent region for export"); so do we, at
  // the use. (In the printer's form of while/if/case, with block arguments
  // for the loop tuple or the branch operands, captures are not converted either.)
  bool no_captures(const Region& r, const Scope& outer, const Op& owner);
  // A region with scalar (or tensor) block arguments as parameters (reduce bodies).
  // `from`: values the block arguments stand for (a fusion's operands, a
  // while's tuple): an argument of their type takes their layout.
  bool region(const Region& r, Scope& outer, std::string& name, const std::vector<Value>& from, const Op& owner);
  bool parameters(const std::vector<BlockArg>& args, Scope& s, const std::vector<Value>& from = {});
  // Converts the ops of `r` into computation `name` and appends it to the output.
  bool body(const Region& r, Scope& s, bool entry, const std::string& name);
  bool function(const Func& f, bool entry);
  bool convert_op(const Op& op, Scope& s);
  // Values `r` (with its nested regions) uses but does not define, in first-use order.
  static void captures(const Region& r, std::set<std::string_view>& defined, std::vector<Token>& out);
  // if/case whose branches use values of the enclosing function (JAX's
  // form): as XLA's conversion does, each branch's captured values become
  // its operand (a tuple) and the branch computation's parameter.
  bool conditional(const Op& op, Scope& s);
  // An op printed from HLO (printer.h): its HLO attributes are `hlo.*`
  // entries, it is an mhlo op, or it needs no attribute at all.
  bool generic_form(const Op& op, const std::string& opcode);
  // Operands, result, `hlo.*` attributes and regions, one to one.
  bool generic(const Op& op, Scope& s, const std::string& opcode);
  bool convolution(const Op& op, Scope& s);
  // chlo ops XLA has an HLO op for: erf, tan, top_k (XLA's TopK: values and indices).
  bool chlo_unary(const Op& op, Scope& s);
  static std::vector<std::int64_t> dims_of(const std::string& hlo);
  // chlo.broadcast_<op>: each operand broadcast to the result's dimensions
  // (numpy's trailing alignment, or broadcast_dimensions), size-1
  // dimensions reshaped away first, then the elementwise op, as XLA's
  // chlo legalization does.
  bool chlo_broadcast(const Op& op, Scope& s);
  // chlo ops XLA expands into elementwise sequences (chlo.h).
  bool chlo_expand(const Op& op, Scope& s);
  bool rng_bit_generator(const Op& op, Scope& s);
  bool reverse(const Op& op, Scope& s);
};

}  // namespace tpusim::stablehlo::convert_detail
