#include "isa/hlo/verifier.h"

#include "isa/hlo/lexer.h"
#include "isa/hlo/shape_inference.h"
#include "isa/hlo/source.h"
#include "isa/hlo/values.h"
#include "isa/hlo/while_loop.h"

namespace tpusim::hlo {
namespace {

// Same structure and dimensions; element types too when `types` is set.
// Layouts and dynamic-ness are not compared (a bounded dim states its bound).
bool agrees(const Shape& stated, const Shape& inferred, bool types) {
  if (stated.is_tuple() != inferred.is_tuple()) return false;
  if (stated.is_tuple()) {
    if (stated.tuple_elements().size() != inferred.tuple_elements().size()) return false;
    for (std::size_t i = 0; i < stated.tuple_elements().size(); ++i)
      if (!agrees(stated.tuple_elements()[i], inferred.tuple_elements()[i], types)) return false;
    return true;
  }
  if (types && stated.element_type() != inferred.element_type()) return false;
  return stated.dims() == inferred.dims();
}

class Verifier {
 public:
  Verifier(const Module& m, bool strict) : m_(m), strict_(strict) {}

  VerifyResult run() {
    for (const Computation* c : m_.computations()) {
      check_signature(*c);
      for (const Instruction* i : c->instructions()) check(*i);
    }
    return std::move(out_);
  }

 private:
  void report(std::uint32_t offset, std::string message) {
    out_.errors.push_back(make_diagnostic(m_.source().name, m_.source().text, offset, std::move(message)));
  }
  // What XLA's parser keeps but its verifier rejects.
  void report_lax(std::uint32_t offset, std::string message) {
    if (strict_) return report(offset, std::move(message));
    out_.warnings.push_back(make_diagnostic(m_.source().name, m_.source().text, offset,
                                            std::move(message) + " (kept as stated; an error under --strict)"));
  }

  // backend_config={"known_trip_count":{"n":"N"}}: N a whole number in int64
  // (XLA's WhileLoopBackendConfig holds it as int64).
  void check_trip_count(const Instruction& inst) {
    const Attribute* a = inst.attribute(AttrId::kBackendConfig);
    if (a == nullptr) return;
    const auto n = known_trip_count_text(inst);
    if (!n) return;
    std::int64_t v = 0;
    if (!parse_int(*n, v) || v < 0)
      report(a->offset, "while '%" + std::string(inst.name()) + "': known_trip_count " + std::string(*n) +
                            " is not a whole number between 0 and 2^63-1");
  }

  void check_signature(const Computation& c) {
    if (!c.has_signature()) return;
    const auto& params = c.parameters();
    if (c.signature_params().size() != params.size()) {
      report_lax(c.offset(), "computation '%" + std::string(c.name()) + "' declares " +
                             std::to_string(c.signature_params().size()) + " parameters in its signature but has " +
                             std::to_string(params.size()) + " parameter instructions");
      return;
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Shape& declared = *c.signature_params()[i].shape;
      if (!declared.compatible(params[i]->shape()))
        report_lax(params[i]->offset(), "parameter " + std::to_string(i) + " of '%" + std::string(c.name()) +
                                        "' has shape " + params[i]->shape().to_string(false) +
                                        " but the signature declares " + declared.to_string(false));
    }
    if (c.signature_result() && c.root() && !c.signature_result()->compatible(c.root()->shape()))
      report_lax(c.root()->offset(), "root of '%" + std::string(c.name()) + "' has shape " +
                                     c.root()->shape().to_string(false) + " but the signature declares " +
                                     c.signature_result()->to_string(false));
  }

  // A constant's literal must hold one value per element (elided `{...}`
  // and complex/tuple literals are not counted; a single unbraced value
  // fills the whole array).
  void check_literal(const Instruction& inst) {
    const Shape& s = inst.shape();
    if (!s.is_array() || element_type_kind(s.element_type()) == 'c' || s.has_dynamic_dims()) return;
    Lexer lex(inst.literal());
    std::int64_t leaves = 0;
    bool braced = false;
    while (lex.peek().kind != Tok::kEof) {
      const Token t = lex.next();
      if (t.kind == Tok::kLParen || t.kind == Tok::kError) return;
      braced |= t.kind == Tok::kLBrace;
      if (t.kind == Tok::kWord) {
        if (lex.text(t) == "...") return;
        ++leaves;
      }
    }
    // XLA also accepts one unbraced value for a whole array (a splat).
    if (!braced && leaves == 1) return;
    if (leaves != s.element_count())
      report(inst.offset(), "constant '%" + std::string(inst.name()) + "' has " + std::to_string(leaves) +
                                " values but its shape " + s.to_string(false) + " has " +
                                std::to_string(s.element_count()) + " elements");
  }

  void check(const Instruction& inst) {
    if (inst.opcode() == Opcode::kConstant) return check_literal(inst);
    if (inst.opcode() == Opcode::kWhile) check_trip_count(inst);
    const int arity = opcode_arity(inst.opcode());
    const OpCategory cat = opcode_category(inst.opcode());
    const bool fixed = cat == OpCategory::kElementwiseUnary || cat == OpCategory::kElementwiseBinary ||
                       cat == OpCategory::kElementwiseTernary || inst.opcode() == Opcode::kGetTupleElement ||
                       inst.opcode() == Opcode::kReshape || inst.opcode() == Opcode::kTranspose ||
                       inst.opcode() == Opcode::kBroadcast || inst.opcode() == Opcode::kConvolution;
    if (fixed && arity >= 0 && inst.operand_count() != static_cast<std::size_t>(arity)) {
      report(inst.offset(), std::string(inst.opcode_text()) + " takes " + std::to_string(arity) +
                                " operand(s) but '%" + std::string(inst.name()) + "' has " +
                                std::to_string(inst.operand_count()));
      return;
    }
    InferredShape inferred = infer_shape(inst);
    if (!inferred.error.empty()) {
      report(inst.offset(), "'%" + std::string(inst.name()) + "' (" + std::string(inst.opcode_text()) +
                                "): " + inferred.error);
      return;
    }
    if (inferred.shape && !agrees(inst.shape(), *inferred.shape, inferred.element_type_known)) {
      report_lax(inst.offset(), "shape mismatch for '%" + std::string(inst.name()) + "' (" +
                                std::string(inst.opcode_text()) + "): the instruction states " +
                                inst.shape().to_string(false) + " but its operands imply " +
                                inferred.shape->to_string(false) +
                                (inferred.element_type_known ? "" : " (element type not compared)"));
    }
  }

  const Module& m_;
  const bool strict_;
  VerifyResult out_;
};

}  // namespace

VerifyResult verify_module(const Module& module, bool strict) { return Verifier(module, strict).run(); }

}  // namespace tpusim::hlo
