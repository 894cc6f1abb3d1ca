// Shape checks (after XLA's ShapeInference / HloVerifier) for the common
// opcodes: the shape an instruction states must agree with the shape its
// operands and attributes imply. Each disagreement is a Diagnostic located at
// the instruction, saying what was expected.
#pragma once

#include <vector>

#include "common/diagnostic.h"
#include "isa/hlo/ir.h"

namespace tpusim::hlo {

std::vector<Diagnostic> verify_module(const Module& module);

}  // namespace tpusim::hlo
