// chlo ops that XLA has no HLO op for and expands into sequences of
// elementwise ops (acosh, asin, lgamma, erf_inv, next_after, ...): the same
// sequence as the StableHLO project's chlo legalization
// (ChloLegalizeToStablehlo.cpp, ChloDecompositionPatterns*.td), op for op,
// so that cost analysis counts the FLOPs and transcendentals XLA's does.
// Values are not simulated, so a constant of an array shape is an elided
// literal of the operand's shape (what `getConstantLike` builds); a scalar
// one keeps its value.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tpusim::stablehlo {

struct ChloExpansion {
  // HLO instruction lines ("%name = f32[4] add(%a, %b)") computing the
  // operands of the last op, which the caller emits under the op's own name.
  std::vector<std::string> lines;
  std::string opcode;              // the last op: "select", "convert", ...
  std::vector<std::string> args;   // its operands (HLO names, without '%')
  std::string attrs;               // its attributes (", direction=LT")
};

// True for the chlo op names expand_chlo takes ("chlo.acosh", ...).
bool is_expanded_chlo(std::string_view mlir_name);

// Expands `mlir_name` applied to `args` (HLO names) of array shape
// `shape` ("f32[20,20]", every operand's and the result's) with names
// prefixed `prefix`. False with `error` set for an element type not
// expanded here (integers; complex except for cosh and sinh, whose
// legalization for complex operands of the inverse functions is a long
// series of approximation regions).
bool expand_chlo(std::string_view mlir_name, const std::vector<std::string>& args, const std::string& shape,
                 const std::string& prefix, ChloExpansion& out, std::string& error);

}  // namespace tpusim::stablehlo
