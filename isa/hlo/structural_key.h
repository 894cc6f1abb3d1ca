// Structural identity of HLO, for reuse: two instructions with equal keys
// compute the same function of operands of the same shapes, whatever their
// names. A real model's unrolled layers hold many such copies (a 32-layer
// step has 32 of each layer op); the lowering compiles one of them
// (docs/lowering.md, "Reuse of repeated ops").
//
// The key of an instruction covers its opcode, shape (with layout), literal,
// parameter number, attributes and the keys of the computations it calls
// (recursively, operands named by position). It leaves out what does not
// change the computation: names, `metadata` (op_name, source lines) and
// `control-predecessors`, and `channel_id` (an id, one per collective
// instance). Operands are described by the caller (`operand` below).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

class StructuralKeys {
 public:
  // 64-bit hash of a computation's structure (memoized per computation).
  std::uint64_t of(const Computation& c);
  // The instruction's own part: everything but its operands.
  std::string of(const Instruction& x);

 private:
  std::string local(const Instruction& x, const std::unordered_map<const Instruction*, std::size_t>* index);
  std::unordered_map<const Computation*, std::uint64_t> memo_;
};

}  // namespace tpusim::hlo
