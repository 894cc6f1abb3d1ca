// The cost of one instruction in isolation: a pure function of the chip
// config and the program (DESIGN.md principle 1). The TensorCore module adds
// what only a running simulation knows: queueing on shared HBM and VMEM,
// dependencies, MXU weight state.
#pragma once

#include <optional>

#include "common/config.h"
#include "isa/program.h"
#include "sim/timing/hbm_timing.h"
#include "sim/timing/unit_timing.h"

namespace tpusim {

struct InstructionCost {
  OpTiming timing;           // unit occupancy (issue) and completion (done), cycles
  double flops = 0;          // useful FLOPs (MXU: 2 per MAC; VPU/EUP: 1 per element)
  double transcendentals = 0;
  Bytes vmem_bytes = 0;      // VMEM traffic, reads + writes
  // An HBM side of a DMA: the strided tile as laid out in HBM, and its direction.
  std::optional<StridedTile> hbm_tile;
  bool hbm_write = false;
  // A DMA between HBM and host memory: the bytes over the host link, and
  // its direction (host to HBM: MoveToDevice).
  Bytes host_bytes = 0;
  bool host_to_device = false;
};

// Byte layout of a tile of a placed buffer (offset >= 0) as a strided transfer.
StridedTile strided_tile(const isa::Program& p, const isa::TileRef& t);
// Bytes of a tile (rows x cols elements of the buffer's dtype).
Bytes tile_bytes(const isa::Program& p, const isa::TileRef& t);

// Costs of the non-MXU units (DMA, VPU, XLU, EUP, ICI placeholder). MXU costs
// depend on the loaded weights and live in the Mxu unit (sim/tensor_core.cpp).
InstructionCost instruction_cost(const ChipConfig& chip, const isa::Program& p, const isa::Instruction& inst);

// Seconds of the single-chip collective placeholder: bytes / (links ×
// bandwidth × efficiency) + one hop latency + the collective start-up.
double placeholder_collective_seconds(const ChipConfig& chip, double bytes);

}  // namespace tpusim
