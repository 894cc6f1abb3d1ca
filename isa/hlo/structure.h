// Structural checks that every later walk relies on (after XLA's HloVerifier
// and CallGraph): dataflow inside a computation is acyclic, the call graph is
// acyclic and not deeper than kMaxCallDepth, and nothing calls the entry
// computation. Run by the parser on every module, before any shape check.
#pragma once

#include <optional>

#include "common/diagnostic.h"
#include "isa/hlo/ir.h"

namespace tpusim::hlo {

// Longest accepted chain of computations calling one another (entry → call →
// while body → …). Real models nest a few levels; the bound keeps the
// recursive walks of later stages (lowering, cost analysis) off the stack's end.
inline constexpr int kMaxCallDepth = 256;

// The first structural error, located at the offending instruction.
std::optional<Diagnostic> check_structure(const Module& module);

}  // namespace tpusim::hlo
