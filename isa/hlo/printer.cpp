#include "isa/hlo/printer.h"

#include "isa/hlo/values.h"

namespace tpusim::hlo {
namespace {

void append_attrs(std::string& out, std::span<const Attribute> attrs) {
  for (const Attribute& a : attrs) {
    out += ", ";
    out += a.name;
    out += '=';
    append_normalized(out, a.value);
  }
}

}  // namespace

void append_instruction(std::string& out, const Instruction& inst, const PrintOptions& options) {
  if (inst.is_root()) out += "ROOT ";
  out += '%';
  out += inst.name();
  out += " = ";
  inst.shape().append_to(out);
  out += ' ';
  out += inst.opcode_text();
  out += '(';
  if (inst.opcode() == Opcode::kParameter) {
    out += std::to_string(inst.parameter_number());
  } else if (inst.opcode() == Opcode::kConstant) {
    append_normalized(out, inst.literal());
  } else {
    bool first = true;
    for (const Instruction* op : inst.operands()) {
      if (!first) out += ", ";
      first = false;
      if (options.print_operand_shapes) {
        op->shape().append_to(out);
        out += ' ';
      }
      out += '%';
      out += op->name();
    }
  }
  out += ')';
  append_attrs(out, inst.attributes());
}

std::string print_instruction(const Instruction& inst, const PrintOptions& options) {
  std::string out;
  append_instruction(out, inst, options);
  return out;
}

std::string print_module(const Module& module, const PrintOptions& options) {
  std::string out;
  out.reserve(module.instruction_count() * 96);
  out += "HloModule ";
  out += module.name();
  append_attrs(out, module.attributes());
  out += "\n";
  if (!module.stack_frames().empty()) {
    out += '\n';
    out += module.stack_frames();
  }
  for (const Computation* c : module.computations()) {
    out += '\n';
    if (c->is_entry()) out += "ENTRY ";
    out += '%';
    out += c->name();
    if (c->has_signature()) {
      out += " (";
      bool first = true;
      for (const SignatureParam& p : c->signature_params()) {
        if (!first) out += ", ";
        first = false;
        out += p.name;
        out += ": ";
        p.shape->append_to(out);
      }
      out += ") -> ";
      c->signature_result()->append_to(out);
    }
    out += " {\n";
    for (const Instruction* i : c->instructions()) {
      out += "  ";
      append_instruction(out, *i, options);
      out += '\n';
    }
    out += '}';
    append_attrs(out, c->attributes());
    out += '\n';
  }
  return out;
}

}  // namespace tpusim::hlo
