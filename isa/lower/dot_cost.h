// The compiler's estimate of a dot tiling's time (docs/lowering.md, "Dots").
// It is built from the pure timing functions the simulator charges
// (sim/timing): hbm_transfer for each operand's strided HBM tile, the MXU's
// matmul, weight-load and pop cycles. There is no second cost model here, so
// the tile choice follows the simulator's timing.
#pragma once

#include <cstdint>

#include "common/config.h"
#include "isa/lower/context.h"
#include "sim/timing/hbm_timing.h"

namespace tpusim::lower {

// One candidate tiling of a dot: tiles tm x tn x tk, and whether an operand
// is loaded wide (whole view rows holding the tiles of all the batch elements
// side by side, DotSpec::lhs_side / rhs_side).
struct DotTiling {
  std::int64_t tm = 0, tn = 0, tk = 0;
  bool lw = false, rw = false;
};

// The raw tiles one step loads, rows x cols of each operand's view (before
// the XLU transpose of a transposed operand).
struct LoadedTiles {
  std::int64_t lhs_rows = 0, lhs_cols = 0;
  std::int64_t rhs_rows = 0, rhs_cols = 0;
};
LoadedTiles loaded_tiles(const DotSpec& d, const DotTiling& t);

// The dtype the MXU streams for an operand of dtype `d`: its own when the
// MXU takes it (core.mxu.rate), else bf16 after a VPU convert in VMEM.
isa::DType mxu_stream_dtype(const MxuConfig& mxu, isa::DType d);

// Row parts a tm x tn block is cut into when its N tile has fewer MXU-wide
// column slices than there are MXUs (each part at least `min_rows` rows).
std::int64_t mxu_row_parts(const MxuConfig& mxu, std::int64_t tm, std::int64_t tn, std::int64_t min_rows);

// rows x cols elements of `dtype` in an HBM view `view_cols` wide, as the DMA
// reads them (at offset 0); whole view rows, or `whole_rows`, are dense.
StridedTile hbm_tile(isa::DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t view_cols,
                     bool whole_rows = false);

// Seconds the HBM device is busy per useful byte of transfers shaped like
// `tile`: hbm_transfer(tile).transfer_seconds / useful bytes.
double hbm_seconds_per_byte(const HbmConfig& hbm, const StridedTile& tile);

struct DotCostInputs {
  const ChipConfig* chip = nullptr;
  int cores = 1;                  // TensorCores sharing the HBM while the dot runs
  bool split = false;             // this program computes only its core's share of the blocks
  std::int64_t min_tile_rows = 64;
  // The program-size penalty's scale: time x (1 + instructions / this).
  double instruction_scale = 4e6;
};

// The estimate, term by term (docs/lowering.md gives the formula).
struct DotCost {
  double hbm_bytes = 0;        // operand and output bytes moved
  double lhs_hbm_s = 0, rhs_hbm_s = 0, out_hbm_s = 0;  // HBM busy time of all the dot's traffic
  double step_mxu_s = 0;       // one k step on the busiest MXU
  double step_dma_s = 0;       // one k step's share of this core's HBM time, plus a latency
  double step_issue_s = 0;     // one k step's instructions at the sequencer's issue width
  double step_prepare_s = 0;   // one k step's operand transposes (XLU) and converts (VPU)
  double pops_s = 0;           // popping this core's blocks
  double first_s = 0;          // the first operand tiles (not overlapped)
  double last_s = 0;           // the last block's drain and store (not overlapped)
  double steps = 0;            // k steps of this core
  double instructions = 0;
  double time_s = 0;
};
DotCost dot_cost(const DotCostInputs& in, const DotSpec& d, const DotTiling& t);

}  // namespace tpusim::lower
