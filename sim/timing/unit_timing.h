// The cost of one instruction on a pipelined unit, as the pure timing
// functions return it and the SystemC modules charge it.
#pragma once

#include "common/units.h"

namespace tpusim {

struct OpTiming {
  // Cycles the unit is occupied: the next instruction on the same unit may
  // start this many cycles after this one started.
  Cycles issue = 0;
  // Cycles from start until the last result is written and consumers may
  // read it. For a pipelined unit: issue - 1 + latency.
  Cycles done = 0;
};

// issue - 1 + latency for issue > 0; 0 for no work.
inline Cycles pipelined_done(Cycles issue, Cycles latency) {
  return issue == 0 ? 0 : issue - 1 + latency;
}

}  // namespace tpusim
