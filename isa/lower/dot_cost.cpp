#include "isa/lower/dot_cost.h"

#include <algorithm>

#include "common/units.h"
#include "sim/timing/dma_timing.h"
#include "sim/timing/mxu_timing.h"
#include "sim/timing/vpu_timing.h"
#include "sim/timing/xlu_timing.h"

namespace tpusim::lower {

LoadedTiles loaded_tiles(const DotSpec& d, const DotTiling& t) {
  LoadedTiles l;
  // lhs canonical [M, K] per element, transposed [K, M]; a wide tile is
  // whole view rows (the side-by-side elements' columns), all of K when its
  // rows are K rows.
  l.lhs_rows = d.lhs_transposed ? (t.lw ? d.k : t.tk) : t.tm;
  l.lhs_cols = t.lw ? d.lhs_side * (d.lhs_transposed ? d.m : d.k) : (d.lhs_transposed ? t.tm : t.tk);
  // rhs canonical [K, N], transposed [N, K].
  l.rhs_rows = d.rhs_transposed ? t.tn : (t.rw ? d.k : t.tk);
  l.rhs_cols = t.rw ? d.rhs_side * (d.rhs_transposed ? d.k : d.n) : (d.rhs_transposed ? t.tk : t.tn);
  return l;
}

isa::DType mxu_stream_dtype(const MxuConfig& mxu, isa::DType d) {
  return isa::mxu_rate(mxu.rate, d) > 0 ? d : isa::DType::kBf16;
}

std::int64_t mxu_row_parts(const MxuConfig& mxu, std::int64_t tm, std::int64_t tn, std::int64_t min_rows) {
  const std::int64_t nmxu = std::max<std::int64_t>(1, mxu.count);
  const std::int64_t slices = ceil_div(tn, std::max<std::int64_t>(1, mxu.cols));
  if (slices >= nmxu) return 1;
  return std::max<std::int64_t>(1, std::min(nmxu / slices, ceil_div(tm, std::max<std::int64_t>(1, min_rows))));
}

StridedTile hbm_tile(isa::DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t view_cols,
                     bool whole_rows) {
  StridedTile s;
  s.rows = std::max<std::int64_t>(1, rows);
  s.row_bytes = static_cast<Bytes>(isa::dtype_bytes(dtype, std::max<std::int64_t>(1, cols)));
  const auto pitch = static_cast<Bytes>(isa::dtype_bytes(dtype, std::max<std::int64_t>(1, view_cols)));
  s.stride_bytes = whole_rows || s.row_bytes >= pitch ? s.row_bytes : pitch;
  return s;
}

double hbm_seconds_per_byte(const HbmConfig& hbm, const StridedTile& tile) {
  const HbmTransferTiming h = hbm_transfer(hbm, tile);
  return h.useful_bytes == 0 ? 0.0 : h.transfer_seconds / static_cast<double>(h.useful_bytes);
}

DotCost dot_cost(const DotCostInputs& in, const DotSpec& d, const DotTiling& t) {
  const ChipConfig& chip = *in.chip;
  const MxuConfig& mxu = chip.core.mxu;
  const std::int64_t nmxu = std::max<std::int64_t>(1, mxu.count);
  const std::int64_t R = std::max<std::int64_t>(1, mxu.rows), C = std::max<std::int64_t>(1, mxu.cols);
  const int cores = std::max(1, in.cores);
  const double bl = isa::dtype_bytes(d.lhs.dtype, 1024) / 1024.0;
  const double br = isa::dtype_bytes(d.rhs.dtype, 1024) / 1024.0;
  const double bo = isa::dtype_bytes(d.out.dtype, 1024) / 1024.0;
  const double clock = std::max(1.0, chip.clock);
  const double lat = std::max(0.0, chip.hbm.latency);
  const std::int64_t B = d.batch, M = d.m, N = d.n, K = d.k;
  const std::int64_t nm = ceil_div(M, t.tm), nn = ceil_div(N, t.tn), nk = ceil_div(K, t.tk);
  const bool inner = t.lw || t.rw;  // blocks with the side-by-side elements innermost
  const LoadedTiles raw = loaded_tiles(d, t);
  DotCost c;

  // Times each operand byte is read (output-stationary over k): a tile is
  // reloaded whenever the next step needs another one.
  const double lhs_f = t.lw ? 1.0 : static_cast<double>((inner || nk > 1) ? nn : 1);
  const double rhs_f = t.rw ? static_cast<double>(d.rhs_transposed && nn > 1 ? nm : 1)
                            : static_cast<double>((inner || nn > 1 || nk > 1) ? nm : 1);
  const double lhs_b = static_cast<double>(B * M * K) * bl * lhs_f;
  const double rhs_b = static_cast<double>(B * K * N) * br * rhs_f;
  const double out_b = static_cast<double>(B * M * N) * bo;
  c.hbm_bytes = lhs_b + rhs_b + out_b;

  // MXU: a block's N tile is cut into MXU-wide slices (and M into row parts
  // when the slices are fewer than the MXUs); each item is one weight load
  // and one matmul of part_rows rows per R-deep k slice.
  const std::int64_t p = mxu_row_parts(mxu, t.tm, t.tn, in.min_tile_rows);
  const std::int64_t items = ceil_div(t.tn, C) * p;
  const std::int64_t per_mxu = ceil_div(items, nmxu);
  const std::int64_t part_rows = ceil_div(t.tm, p);
  // Blocks turn round robin over the MXUs: with many blocks each MXU takes
  // items / MXUs of every block's work on average.
  const std::int64_t nblocks = B * nm * nn;
  const double per_mxu_avg = nblocks * items >= nmxu ? static_cast<double>(items) / static_cast<double>(nmxu)
                                                     : static_cast<double>(per_mxu);
  MatmulTile tile;
  tile.m_rows = part_rows;
  tile.k_depth = std::min(t.tk, R);
  tile.n_cols = std::min(t.tn, C);
  tile.mac_rate = std::max(1e-9, isa::mxu_rate(mxu.rate, mxu_stream_dtype(mxu, d.lhs_operand.value_or(d.lhs.dtype))));
  const MatmulTiming mt = mxu_matmul_timing(mxu, tile);
  // An item in steady state, as the Mxu unit charges it (sim/tensor_core.cpp):
  // with double-buffered ws weights the next tile loads while this one
  // streams; a bare array loads (os: nothing to load) after the last
  // matmul's results have drained.
  const bool overlapped = mxu.double_buffered_weights && mxu.dataflow == Dataflow::kWs;
  const Cycles load = mxu.dataflow == Dataflow::kOs ? 0 : mxu_weight_load_cycles(mxu);
  const Cycles item = overlapped ? std::max(mt.issue, load) : load + mt.latency;
  c.step_mxu_s = static_cast<double>(ceil_div(t.tk, R)) * per_mxu_avg * static_cast<double>(item) / clock;
  // Steps that do not overlap (core.mxu.step_sync): each one waits for the
  // step before to drain (mxu.fence), then loads its first weights.
  if (mxu.step_sync) {
    c.step_mxu_s += static_cast<double>((mt.latency - mt.issue) + load + chip.core.sequencer.dispatch_latency) / clock;
  }

  // Megacore: this core computes its share of the output blocks while the
  // other cores stream theirs through the same HBM.
  const std::int64_t my_blocks = in.split ? ceil_div(nblocks, cores) : nblocks;
  const double share = static_cast<double>(my_blocks) / static_cast<double>(nblocks);
  c.steps = static_cast<double>(my_blocks * nk);
  c.pops_s = static_cast<double>(my_blocks * per_mxu) *
             static_cast<double>(mxu_pop_cycles(part_rows, std::min(t.tn, C), chip.core.vpu.sublanes,
                                                chip.core.vpu.lanes)) /
             clock;

  // HBM: every byte at the rate the HBM model moves a tile of its shape
  // (short strided runs waste bursts and channels; whole view rows are dense).
  const StridedTile lhs_tile = hbm_tile(d.lhs.dtype, raw.lhs_rows, raw.lhs_cols, d.lhs.cols, t.lw);
  const StridedTile rhs_tile = hbm_tile(d.rhs.dtype, raw.rhs_rows, raw.rhs_cols, d.rhs.cols, t.rw);
  const StridedTile out_tile = hbm_tile(d.out.dtype, t.tm, t.tn, d.out.cols);
  const double fleet = share * static_cast<double>(cores);  // every core's traffic shares the device
  c.lhs_hbm_s = lhs_b * hbm_seconds_per_byte(chip.hbm, lhs_tile) * fleet;
  c.rhs_hbm_s = rhs_b * hbm_seconds_per_byte(chip.hbm, rhs_tile) * fleet;
  c.out_hbm_s = out_b * hbm_seconds_per_byte(chip.hbm, out_tile) * fleet;
  // A step's operand DMAs also take their whole transfer, issue to arrival
  // (dma_hbm_vmem_timing: HBM, VMEM and the engine's outstanding requests,
  // which cap one engine at dma.outstanding x dma.chunk per latency): a
  // slot's next load follows the matmuls that wait for this one's data. Each
  // operand has its own engine when there are two; a tile reloaded less
  // often than every step costs its share of the steps.
  const auto engine_s = [&](const StridedTile& tile, double bytes) {
    const double loads = bytes / std::max(1.0, static_cast<double>(tile.rows * tile.row_bytes));
    return loads * share / std::max(1.0, c.steps) *
           static_cast<double>(dma_hbm_vmem_timing(chip.core.dma, chip.hbm, chip.core.vmem, clock, tile).done) / clock;
  };
  // The next tile into an lhs slot waits for the last matmul reading the
  // slot to complete (its results drained: latency - issue after its rows).
  const double drain_s = static_cast<double>(mt.latency - mt.issue) / clock;
  const double lhs_engine_s = engine_s(lhs_tile, lhs_b) + drain_s, rhs_engine_s = engine_s(rhs_tile, rhs_b);
  const double step_engine_s = chip.core.dma.engines >= 2 ? std::max(lhs_engine_s, rhs_engine_s)
                                                          : lhs_engine_s + rhs_engine_s;
  c.step_dma_s = std::max((c.lhs_hbm_s + c.rhs_hbm_s + c.out_hbm_s) / c.steps + lat, step_engine_s);
  c.first_s = (hbm_transfer(chip.hbm, lhs_tile).transfer_seconds + hbm_transfer(chip.hbm, rhs_tile).transfer_seconds) *
                  static_cast<double>(cores) +
              lat;
  MatmulTile last_rows = tile;
  last_rows.m_rows = t.tm;
  c.last_s = hbm_transfer(chip.hbm, out_tile).transfer_seconds * static_cast<double>(cores) +
             static_cast<double>(mxu_matmul_timing(mxu, last_rows).latency) / clock + lat;

  // Preparing a transposed (XLU) or converted (VPU) operand's element tile,
  // the instructions' own costs (sim/timing/instruction_cost.cpp): the
  // lowering prepares step t + 1's tiles while the MXUs run step t's, so
  // a step's preparation competes with its MXU time; the first is exposed.
  const auto prepare_s = [&](bool transposed, isa::DType from, isa::DType to, std::int64_t rows, std::int64_t cols,
                             double bytes) {
    if (!transposed && from == to) return 0.0;
    Cycles cyc = 0;
    if (transposed) cyc += xlu_timing(chip.core.xlu, vregs_for_tile(chip.core.vpu, cols, rows, from)).issue;
    if (from != to) {
      VpuElementwise cvt;
      cvt.op = isa::VpuOp::kConvert;
      cvt.vregs = vregs_for_tile(chip.core.vpu, rows, cols, to);
      cvt.vmem_inputs = 1;
      cyc += vpu_elementwise_timing(chip.core.vpu, cvt).issue;
    }
    const double tile_bytes = std::max(1.0, static_cast<double>(isa::dtype_bytes(from, rows * cols)));
    const double per_step = bytes / tile_bytes * share / std::max(1.0, c.steps);
    return per_step * static_cast<double>(cyc) / clock;
  };
  const isa::DType lhs_mxu = mxu_stream_dtype(mxu, d.lhs_operand.value_or(d.lhs.dtype));
  const isa::DType rhs_mxu = mxu_stream_dtype(mxu, d.rhs_operand.value_or(d.rhs.dtype));
  c.step_prepare_s = prepare_s(d.lhs_transposed, d.lhs.dtype, lhs_mxu, t.tm, t.tk, lhs_b) +
                     prepare_s(d.rhs_transposed, d.rhs.dtype, rhs_mxu, t.tk, t.tn, rhs_b);
  c.first_s += c.step_prepare_s;

  // Instructions of a step: a weight load and a matmul per item and k slice,
  // plus the step's DMAs and waits; issued issue_width per cycle.
  const double step_instructions = static_cast<double>(ceil_div(t.tk, R) * items * 2 + 6);
  const double width = static_cast<double>(std::max<std::int64_t>(1, chip.core.sequencer.issue_width));
  c.step_issue_s = step_instructions / width / clock;
  c.instructions = c.steps * step_instructions;
  // Program size matters too (programs of at most a few million
  // instructions simulate in seconds): a mild penalty per instruction.
  // Per output block: its k steps and its pops. Blocks alternate the
  // accumulators' halves (the lowering's out slot), so a block's pops read
  // one half through the result path while the next block's matmuls stream
  // into the other (sim/core/mxu_array.h): the MXU's block time is its
  // streaming or its pops, whichever is longer. The DMAs of the next block's
  // tiles go on meanwhile: the MXU's block time competes with the block's
  // DMA time.
  const auto blocks = static_cast<double>(std::max<std::int64_t>(1, my_blocks));
  const auto k_steps = static_cast<double>(nk);
  const double block_s = std::max({k_steps * c.step_mxu_s, c.pops_s / blocks, k_steps * c.step_dma_s,
                                   k_steps * c.step_issue_s, k_steps * c.step_prepare_s});
  c.time_s = (blocks * block_s + c.first_s + c.last_s) *
             (1.0 + c.instructions / in.instruction_scale);
  return c;
}

}  // namespace tpusim::lower
