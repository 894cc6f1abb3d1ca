// Shape inference for the common opcodes (after XLA's ShapeInference): the
// shape an instruction's operands and attributes imply. Used by the verifier
// to check stated shapes, and by the parser for instructions written without
// a shape (`gte = get-tuple-element(t), index=0`).
#pragma once

#include <optional>
#include <string>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct InferredShape {
  // The implied shape; nullopt when the opcode is not covered, the attributes
  // needed are absent, or the output is not determined by the operands.
  std::optional<Shape> shape;
  // Set when operands/attributes are inconsistent (e.g. dot contracting
  // dimensions of different sizes); says what was expected.
  std::string error;
  // False when only the dimensions are implied (dot/convolution with a
  // preferred element type, convert): compare dims only.
  bool element_type_known = true;
};

InferredShape infer_shape(const Instruction& inst);

}  // namespace tpusim::hlo
