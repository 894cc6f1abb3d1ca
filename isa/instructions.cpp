#include "isa/instructions.h"

#include <array>

namespace tpusim::isa {
namespace {

template <typename S>
constexpr bool first_field_is_subop() {
  bool result = false;
  bool first = true;
  S s{};
  for_each_field(s, [&](const FieldInfo& f, auto&) {
    if (first) result = f.presence == Presence::kSubop;
    first = false;
  });
  return result;
}

const std::array<OpcodeInfo, kNumOpcodes + 1>& table() {
  static const std::array<OpcodeInfo, kNumOpcodes + 1> kTable{{
#define X(S, mnemonic, unit, fields, doc) {mnemonic, Unit::unit, doc, first_field_is_subop<S>()},
      TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
      {"<invalid>", Unit::kSequencer, "", false},
  }};
  return kTable;
}

}  // namespace

std::string_view name(AccMode m) { return m == AccMode::kOverwrite ? "overwrite" : "accumulate"; }

std::string_view name(Unit u) {
  switch (u) {
    case Unit::kSequencer: return "sequencer";
    case Unit::kDma: return "dma";
    case Unit::kMxu: return "mxu";
    case Unit::kVpu: return "vpu";
    case Unit::kXlu: return "xlu";
    case Unit::kEup: return "eup";
    case Unit::kIci: return "ici";
  }
  return "?";
}

Op make_op(Opcode op) {
  static const std::array<Op (*)(), kNumOpcodes> kMake{
#define X(S, ...) []() -> Op { return S{}; },
      TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
  };
  const auto i = static_cast<std::size_t>(op);
  return i < kNumOpcodes ? kMake[i]() : Op{std::monostate{}};
}

const OpcodeInfo& opcode_info(Opcode op) {
  const auto i = static_cast<std::size_t>(op);
  return table()[i < kNumOpcodes ? i : kNumOpcodes];
}

}  // namespace tpusim::isa
