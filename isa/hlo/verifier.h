// Shape checks (after XLA's ShapeInference / HloVerifier) for the common
// opcodes: the shape an instruction states must agree with the shape its
// operands and attributes imply. Each disagreement is a Diagnostic located at
// the instruction, saying what was expected.
//
// Like XLA's unverified parse, a stated shape that differs from the inferred
// one (or a signature that differs from the parameters) is kept and only
// warned about; `strict` (XLA's verifier, `--strict`) makes those errors.
// Operands that no shape can reconcile are errors either way.
#pragma once

#include <vector>

#include "common/diagnostic.h"
#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct VerifyResult {
  std::vector<Diagnostic> errors;
  std::vector<Diagnostic> warnings;
};

VerifyResult verify_module(const Module& module, bool strict = false);

}  // namespace tpusim::hlo
