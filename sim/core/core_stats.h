// A TensorCore's stats as groups (common/stats.h): the registry names are
// chipN.coreM.<member>, chipN.coreM.sequencer.<member>,
// chipN.coreM.vmem.<member> and chipN.coreM.<unit>.<member>; the report
// reads the Values structs (CoreUse) rather than parsing names.
#pragma once

#include <string>
#include <vector>

#include "common/stats.h"
#include "isa/types.h"

namespace tpusim {

#define TPUSIM_CORE_STATS(X)                                                                 \
  X(cycles, kCycles, "core cycles from start to the last instruction's completion")           \
  X(instructions, kCount, "dynamic instructions issued (repeats expanded)")
#define TPUSIM_SEQUENCER_STATS(X)                                                            \
  X(stall_semaphore_cycles, kCycles, "issue stalled in sem.wait")                            \
  X(stall_queue_full_cycles, kCycles, "issue stalled on a full unit queue")                  \
  X(stall_barrier_cycles, kCycles, "issue stalled in barrier")                               \
  X(stall_core_barrier_cycles, kCycles, "issue stalled in core.barrier (own drain and the other TensorCores)") \
  X(stall_mxu_fence_cycles, kCycles, "issue stalled in mxu.fence (the MXUs draining between tile-loop steps)") \
  X(stall_delay_cycles, kCycles, "issue stalled in delay (kernel start-up cost)")
#define TPUSIM_VMEM_STATS(X)                              \
  X(bytes, kBytes, "VMEM traffic of all units")           \
  X(busy_cycles, kCycles, "cycles VMEM bandwidth was in use")
#define TPUSIM_UNIT_STATS(X)                                          \
  X(busy_cycles, kCycles, "cycles the unit was occupied")             \
  X(instructions, kCount, "instructions executed")                    \
  X(dependency_stall_cycles, kCycles, "cycles the queue head waited on operands")

TPUSIM_STAT_GROUP(CoreCounters, TPUSIM_CORE_STATS);
TPUSIM_STAT_GROUP(SequencerStats, TPUSIM_SEQUENCER_STATS);
TPUSIM_STAT_GROUP(VmemStats, TPUSIM_VMEM_STATS);
TPUSIM_STAT_GROUP(UnitCounters, TPUSIM_UNIT_STATS);

// One unit's figures after a run.
struct UnitUse {
  std::string name;  // "mxu0", "vpu", "dma2", "ici", …
  isa::Unit kind = isa::Unit::kVpu;
  UnitCounters::Values counters;
  double flops = 0;  // MXU and VPU (chipN.coreM.<unit>.flops)
  double bytes = 0;  // DMA engines (chipN.coreM.<unit>.bytes)
};

// One TensorCore's figures after a run.
struct CoreUse {
  CoreCounters::Values core;
  SequencerStats::Values sequencer;
  VmemStats::Values vmem;
  std::vector<UnitUse> units;  // in the order the core has them
};

}  // namespace tpusim
