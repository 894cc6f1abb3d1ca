// XLU (cross-lane unit) and EUP (transcendental unit) timing: pure functions.
// Both are pipelined units with a throughput in vregs per cycle and a fixed
// latency; one instruction runs on one unit (the Xlu module spreads
// instructions over XluConfig::count units).
#pragma once

#include <cstdint>

#include "common/config.h"
#include "sim/timing/unit_timing.h"

namespace tpusim {

// Cycles to push `vregs` through a unit taking `vregs_per_cycle` per cycle:
// ceil(vregs / vregs_per_cycle) (0.5 per cycle = one vreg every 2 cycles).
Cycles throughput_cycles(std::int64_t vregs, double vregs_per_cycle);

// Transpose, permute or lane-reduce of `vregs` input vregs on one XLU:
// issue = throughput_cycles(vregs, xlu.vregs_per_cycle), done = issue - 1 + latency.
OpTiming xlu_timing(const XluConfig& xlu, std::int64_t vregs);

// A transcendental over `vregs` vregs: issue = throughput_cycles(vregs,
// eup.vregs_per_cycle), done = issue - 1 + latency.
OpTiming eup_timing(const EupConfig& eup, std::int64_t vregs);

}  // namespace tpusim
