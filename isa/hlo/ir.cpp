#include "isa/hlo/ir.h"

namespace tpusim::hlo {

const Attribute* Instruction::attribute(AttrId id) const {
  for (const Attribute& a : attrs_)
    if (a.id == id) return &a;
  return nullptr;
}

const Attribute* Instruction::attribute(std::string_view name) const {
  for (const Attribute& a : attrs_)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {
std::string_view strip_percent(std::string_view s) {
  if (!s.empty() && s.front() == '%') s.remove_prefix(1);
  return s;
}
}  // namespace

Computation* Instruction::called(AttrId id) const {
  const Attribute* a = attribute(id);
  if (!a || !parent_ || !parent_->parent()) return nullptr;
  std::string_view v = a->value;
  // calls={x} holds a single computation in braces.
  if (!v.empty() && v.front() == '{') {
    v.remove_prefix(1);
    while (!v.empty() && (v.back() == '}' || v.back() == ' ')) v.remove_suffix(1);
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  }
  return parent_->parent()->find_computation(strip_percent(v));
}

Computation* Instruction::fused_computation() const {
  if (opcode_ != Opcode::kFusion || called_.empty()) return nullptr;
  return called_.front();
}

Instruction* Computation::find_instruction(std::string_view name) const {
  name = strip_percent(name);
  for (Instruction* i : instructions_)
    if (i->name() == name) return i;
  return nullptr;
}

const Attribute* Module::attribute(AttrId id) const {
  for (const Attribute& a : attrs_)
    if (a.id == id) return &a;
  return nullptr;
}

Computation* Module::find_computation(std::string_view name) const {
  auto it = computation_index_.find(strip_percent(name));
  return it == computation_index_.end() ? nullptr : it->second;
}

std::size_t Module::memory_bytes() const {
  std::size_t bytes = arena_.bytes_reserved() + shape_bytes_;
  for (const Computation* c : computations_) {
    bytes += sizeof(Computation) + c->instructions().capacity() * sizeof(Instruction*) +
             c->parameters().capacity() * sizeof(Instruction*) +
             c->signature_params().capacity() * sizeof(SignatureParam);
  }
  bytes += computation_index_.size() * (sizeof(std::string_view) + 3 * sizeof(void*));
  for (const std::string& s : strings_) bytes += sizeof(std::string) + s.capacity();
  return bytes;
}

}  // namespace tpusim::hlo
