#include "sim/timing/xlu_timing.h"

#include <algorithm>
#include <cmath>

namespace tpusim {

Cycles throughput_cycles(std::int64_t vregs, double vregs_per_cycle) {
  if (vregs <= 0) return 0;
  if (vregs_per_cycle <= 0) vregs_per_cycle = 1.0;  // the loader forbids 0
  return static_cast<Cycles>(std::ceil(static_cast<double>(vregs) / vregs_per_cycle - 1e-9));
}

OpTiming xlu_timing(const XluConfig& xlu, std::int64_t vregs) {
  OpTiming t;
  t.issue = throughput_cycles(vregs, xlu.vregs_per_cycle);
  t.done = pipelined_done(t.issue, static_cast<Cycles>(std::max<std::int64_t>(1, xlu.latency)));
  return t;
}

OpTiming eup_timing(const EupConfig& eup, std::int64_t vregs) {
  OpTiming t;
  t.issue = throughput_cycles(vregs, eup.vregs_per_cycle);
  t.done = pipelined_done(t.issue, static_cast<Cycles>(std::max<std::int64_t>(1, eup.latency)));
  return t;
}

}  // namespace tpusim
