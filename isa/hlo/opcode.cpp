#include "isa/hlo/opcode.h"

#include <algorithm>
#include <array>

namespace tpusim::hlo {
namespace {

struct OpcodeInfo {
  std::string_view name;
  int arity;
  OpCategory category;
  bool transcendental;
};

constexpr std::array kInfo = {
#define TPUSIM_X(e, name, arity, cat, trans) OpcodeInfo{name, arity, OpCategory::cat, trans},
    TPUSIM_HLO_OPCODES(TPUSIM_X)
#undef TPUSIM_X
        OpcodeInfo{"unknown", -1, OpCategory::kUnknown, false},
};

constexpr std::size_t kKnown = kInfo.size() - 1;

// Sorted (name, opcode) pairs for binary search; built once from the table.
struct NameIndex {
  std::array<std::pair<std::string_view, Opcode>, kKnown> entries{};
  constexpr NameIndex() {
    for (std::size_t i = 0; i < kKnown; ++i) entries[i] = {kInfo[i].name, static_cast<Opcode>(i)};
    std::sort(entries.begin(), entries.end());
  }
};

const NameIndex& name_index() {
  static const NameIndex index;  // immutable after construction
  return index;
}

const OpcodeInfo& info(Opcode op) { return kInfo[static_cast<std::size_t>(op)]; }

}  // namespace

std::string_view opcode_name(Opcode op) { return info(op).name; }
int opcode_arity(Opcode op) { return info(op).arity; }
OpCategory opcode_category(Opcode op) { return info(op).category; }
bool opcode_is_transcendental(Opcode op) { return info(op).transcendental; }
bool opcode_is_elementwise(Opcode op) {
  const OpCategory c = info(op).category;
  return c == OpCategory::kElementwiseUnary || c == OpCategory::kElementwiseBinary ||
         c == OpCategory::kElementwiseTernary;
}
int opcode_count() { return static_cast<int>(kKnown); }

std::optional<Opcode> opcode_from_name(std::string_view name) {
  const auto& e = name_index().entries;
  auto it = std::lower_bound(e.begin(), e.end(), name,
                             [](const auto& p, std::string_view n) { return p.first < n; });
  if (it != e.end() && it->first == name) return it->second;
  return std::nullopt;
}

std::string_view op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::kElementwiseUnary: return "elementwise-unary";
    case OpCategory::kElementwiseBinary: return "elementwise-binary";
    case OpCategory::kElementwiseTernary: return "elementwise-ternary";
    case OpCategory::kParameter: return "parameter";
    case OpCategory::kConstant: return "constant";
    case OpCategory::kTuple: return "tuple";
    case OpCategory::kDataMovement: return "data-movement";
    case OpCategory::kContraction: return "contraction";
    case OpCategory::kReduction: return "reduction";
    case OpCategory::kCollective: return "collective";
    case OpCategory::kAsyncDone: return "async-done";
    case OpCategory::kControlFlow: return "control-flow";
    case OpCategory::kFusion: return "fusion";
    case OpCategory::kCustomCall: return "custom-call";
    case OpCategory::kSideEffect: return "side-effect";
    case OpCategory::kOther: return "other";
    case OpCategory::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace tpusim::hlo
