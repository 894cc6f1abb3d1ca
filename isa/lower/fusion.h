// tpusim's fusion policy for modules that arrive unfused (XLA's
// *.before_optimizations.txt dumps): producer-consumer fusion of elementwise
// chains, in the spirit of XLA's instruction fusion pass, so that both dump
// styles run. Modules that already hold a fusion instruction are taken as
// XLA fused them and left alone. docs/lowering.md describes the policy:
//
//  - fusible: elementwise unary/binary/ternary ops (compare, select, clamp
//    included), convert, broadcast and constants with an array shape; a
//    reduce may be the root (consumer) of a group (XLA's input fusion) but is
//    never fused into another op; dots, convolutions, data movement,
//    collectives and control flow are never fused.
//  - walking the computation backwards, a fusible producer joins its users'
//    group when all of its users are in one group; a broadcast or constant
//    whose users sit in several groups is duplicated into each (cheap to
//    recompute, as XLA does); any other fusible op starts a group of its own.
//  - a dot whose users all sit in one group rooted at an elementwise op of the
//    dot's shape becomes that group's hero (XLA's output fusion): the group
//    runs as the dot's MXU program with the other members as its epilogue on
//    each output tile; the dot's operand producers are not fused into it.
//  - a group of two or more ops runs as one VMEM-streamed kernel (or, with a
//    hero, one MXU program) reading its external operands and writing its
//    root, and its roofline is costed at the group's boundary (like a fusion
//    in HloCostAnalysis; a group with a hero at the MXU rate).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "isa/hlo/analysis.h"
#include "isa/hlo/ir.h"

namespace tpusim::lower {

struct FusionGroup {
  const hlo::Instruction* root = nullptr;
  const hlo::Instruction* hero = nullptr;  // a dot whose epilogue the other members are (output fusion)
  std::vector<const hlo::Instruction*> members;  // in program order, root last
  std::vector<const hlo::Instruction*> inputs;   // external operands, in first-use order
};

struct FusionPlan {
  std::vector<FusionGroup> groups;  // only groups of two or more ops
  // Root -> its group; a fused-away (non-root) member -> the first group it is in.
  std::unordered_map<const hlo::Instruction*, std::size_t> group_of_root;
  std::unordered_map<const hlo::Instruction*, std::size_t> fused_into;
};

// True when the module holds a fusion instruction anywhere (XLA fused it).
bool module_is_fused(const hlo::Module& module);

// The groups of one computation (empty for computations of fused modules).
FusionPlan plan_fusion(const hlo::Module& module, const hlo::Computation& computation);

// The `tpusim analyze` roofline of the module as tpusim runs it: for an
// unfused module each group is one row (named after its root, opcode
// "fusion") costed at its boundary; the rows of its members disappear. For a
// fused module: hlo::roofline unchanged.
hlo::RooflineReport roofline_as_lowered(const hlo::Module& module, const hlo::RooflineRates& rates);

}  // namespace tpusim::lower
