// Trip counts of `while` loops (what XLA's while_loop_analysis derives), for
// the lowering's `repeat N`: from backend_config's known_trip_count, or from
// the common induction pattern when that is absent:
//   init:  tuple(..., constant(S), ...)            element i of the while operand
//   cond:  compare(get-tuple-element(p, i), constant(L)), direction=LT|LE|GT|GE
//          (either operand order; the direction is mirrored when swapped)
//   body:  ROOT tuple(..., add(get-tuple-element(p, i), constant(D)), ...)
//          (or subtract(gte, constant(D)) for D counting down)
// with integer S, L, D. The count is the number of values S, S+D, S+2D, ...
// that satisfy the condition (0 when S fails it at once).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "isa/hlo/ir.h"

namespace tpusim::hlo {

struct TripCount {
  std::int64_t count = 0;
  // "known_trip_count" or "induction i: S to L step D (LT)" for notes.
  std::string source;
};

// The N of backend_config={"known_trip_count":{"n":"N"}} as written (a JSON
// string's content or a number's text), unchecked; nullopt when absent.
std::optional<std::string> known_trip_count_text(const Instruction& while_inst);
// That N when it is a whole number > 0.
std::optional<std::int64_t> known_trip_count(const Instruction& while_inst);
// The induction pattern above; nullopt when the loop does not match it (or the
// count would not fit in 62 bits).
std::optional<TripCount> induction_trip_count(const Instruction& while_inst);
// known_trip_count first, then the induction pattern.
std::optional<TripCount> while_trip_count(const Instruction& while_inst);

}  // namespace tpusim::hlo
