// The cost of one instruction on a pipelined unit, as the pure timing
// functions return it and the SystemC modules charge it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/units.h"

namespace tpusim {

// The resource an instruction's time goes to: what the report names as an
// op's limiter (the resource its instructions kept busiest, app/report).
enum class Resource : std::uint8_t {
  kMxuCompute,    // mxu.matmul, mxu.pop
  kMxuWeights,    // mxu.load_weights
  kVpuAlu,        // VPU ops whose ALU work is the longest term
  kVpuLoadStore,  // VPU ops whose vreg loads or stores are
  kEup,
  kXlu,
  kHbm,           // DMAs with an HBM side
  kVmem,          // VMEM-to-VMEM DMAs, and ops the VMEM bandwidth held up
  kIci,           // collectives
  kHost,          // DMAs between HBM and host memory (the host link)
  kCount,
};
inline constexpr std::size_t kResources = static_cast<std::size_t>(Resource::kCount);
// "MXU", "MXU weights", "VPU ALU", "VPU ld/st", "EUP", "XLU", "HBM", "VMEM", "ICI", "host link".
std::string_view resource_name(Resource r);

struct OpTiming {
  // Cycles the unit is occupied: the next instruction on the same unit may
  // start this many cycles after this one started.
  Cycles issue = 0;
  // Cycles from start until the last result is written and consumers may
  // read it. For a pipelined unit: issue - 1 + latency.
  Cycles done = 0;
  // The longest term of `issue`, where the unit has several (the VPU).
  Resource limit = Resource::kVpuAlu;
};

// issue - 1 + latency for issue > 0; 0 for no work.
inline Cycles pipelined_done(Cycles issue, Cycles latency) {
  return issue == 0 ? 0 : issue - 1 + latency;
}

}  // namespace tpusim
