#include "isa/hlo/structural_key.h"

#include <string_view>

namespace tpusim::hlo {
namespace {

bool ignored(const Attribute& a) {
  return a.id == AttrId::kMetadata || a.id == AttrId::kControlPredecessors || a.id == AttrId::kChannelId;
}

bool names_computations(const Attribute& a) {
  const AttrKind k = attr_kind(a.id);
  return k == AttrKind::kComputation || k == AttrKind::kComputationList || k == AttrKind::kComputationOrList;
}

}  // namespace

std::string StructuralKeys::local(const Instruction& x,
                                  const std::unordered_map<const Instruction*, std::size_t>* index) {
  std::string k;
  k.reserve(128);
  k += x.opcode_text();
  k += ' ';
  if (x.has_shape()) k += x.shape().to_string(true);
  if (x.parameter_number() >= 0) k += " p" + std::to_string(x.parameter_number());
  if (!x.literal().empty()) {
    k += " lit(";
    k += x.literal();
    k += ')';
  }
  if (index != nullptr) {
    k += " (";
    for (const Instruction* o : x.operands()) {
      const auto it = index->find(o);
      k += it == index->end() ? std::string("?") : std::to_string(it->second);
      k += ',';
    }
    k += ')';
  }
  for (const Attribute& a : x.attributes()) {
    if (ignored(a)) continue;
    k += ' ';
    k += a.name;
    k += '=';
    if (!names_computations(a)) k += a.value;
  }
  // Called computations in order (their names left out, their structure in).
  for (const Computation* c : x.called_computations()) {
    k += " c";
    k += std::to_string(c == nullptr ? 0 : of(*c));
  }
  return k;
}

std::uint64_t StructuralKeys::of(const Computation& c) {
  if (const auto it = memo_.find(&c); it != memo_.end()) return it->second;
  memo_[&c] = 0;  // a (rejected) cycle would read this, not recurse forever
  std::unordered_map<const Instruction*, std::size_t> index;
  index.reserve(c.instructions().size());
  std::string text;
  for (const Instruction* x : c.instructions()) index.emplace(x, index.size());
  for (const Instruction* x : c.instructions()) {
    text += local(*x, &index);
    if (x == c.root()) text += " ROOT";
    text += ';';
  }
  const std::uint64_t h = std::hash<std::string_view>{}(text);
  memo_[&c] = h;
  return h;
}

std::string StructuralKeys::of(const Instruction& x) { return local(x, nullptr); }

}  // namespace tpusim::hlo
