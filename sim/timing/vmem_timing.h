// VMEM (vector scratchpad SRAM) port time: pure functions of VmemConfig.
// VMEM delivers bytes_per_cycle over all its ports together; one access
// stream (a DMA write, a VPU load, an MXU operand read) uses one or more
// ports, each worth bytes_per_cycle / ports.
#pragma once

#include <cstdint>

#include "common/config.h"
#include "common/units.h"

namespace tpusim {

// Bytes one port moves per cycle: bytes_per_cycle / ports.
double vmem_port_bytes_per_cycle(const VmemConfig& vmem);

// Cycles to move `bytes` through `ports_used` ports (clamped to 1..ports),
// rounded up: ceil(bytes / (port_bytes_per_cycle · ports_used)).
Cycles vmem_access_cycles(const VmemConfig& vmem, Bytes bytes, std::int64_t ports_used = 1);

}  // namespace tpusim
