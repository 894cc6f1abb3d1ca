// MXU (systolic matrix unit) timing: pure functions, no SystemC
// (DESIGN.md principle 1). Two families:
//
//  * Whole-GEMM cycle counts for an R×C array in the three SCALE-Sim v2
//    dataflows (ws/os/is) with folding, in the "bare" mode that reproduces
//    SCALE-Sim v2.0.2 (no overlap between folds, no memory stalls), and in a
//    TPU-style weight-stationary mode with double-buffered weights.
//  * Per-tile costs the SystemC Mxu module charges for one instruction:
//    weight load, matmul (stream M rows through a K<=R deep tile), result pop.
//
// Conventions: a Cycles value is a *count* of cycles from the first cycle of
// the operation (cycle 0) to the end of the last one. SCALE-Sim's "Total
// Cycles" is instead the 0-based index of the cycle in which the last output
// is written, i.e. count - 1; `scalesim_total_cycles` converts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/config.h"
#include "common/units.h"

namespace tpusim {

// "ws" | "os" | "is" (the values of core.mxu.dataflow, common/config.h); nullopt otherwise.
std::optional<Dataflow> parse_dataflow(std::string_view text);
std::string_view dataflow_name(Dataflow d);

// One GEMM A[M,K] · B[K,N]: M rows stream, K is the reduction depth, N the
// output width (SCALE-Sim's column order).
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
};

// How a GEMM maps onto the array in one dataflow (SCALE-Sim v2 naming):
// the operand held stationary is tiled Sr×Sc over the R×C array (Sr along the
// rows, Sc along the columns), T is the number of cycles one fold streams.
//   ws: Sr = K, Sc = N, T = M   (weights stationary, ifmap rows stream)
//   os: Sr = M, Sc = N, T = K   (outputs stationary, K streams)
//   is: Sr = K, Sc = M, T = N   (inputs stationary, filter columns stream)
struct FoldMapping {
  std::int64_t sr = 0;
  std::int64_t sc = 0;
  std::int64_t t = 0;
  std::int64_t row_folds = 0;  // ceil(Sr / R)
  std::int64_t col_folds = 0;  // ceil(Sc / C)
  [[nodiscard]] std::int64_t folds() const { return row_folds * col_folds; }
};
FoldMapping fold_mapping(Dataflow d, const GemmShape& g, std::int64_t rows, std::int64_t cols);

struct GemmTiming {
  FoldMapping mapping;
  Cycles cycles_per_fold = 0;  // bare mode; in double-buffered mode the steady-state step
  Cycles total = 0;            // count of cycles, first input to last output written
  Cycles macs = 0;             // M·K·N useful multiply-accumulates
  // useful MACs / (R·C·total): the array's compute utilization.
  [[nodiscard]] double utilization(std::int64_t rows, std::int64_t cols) const;
};

// Bare array, exactly SCALE-Sim v2.0.2's compute model (see mxu_timing.cpp):
// each fold = fill prefix + T streamed cycles + drain, folds back to back with
// no overlap. Uses mxu.rows, mxu.cols and the given dataflow; ignores
// double_buffered_weights. `mac_rate` (the dtype's rate multiplier, 1 for
// bf16) divides the streamed cycles T.
GemmTiming mxu_gemm_bare(const MxuConfig& mxu, Dataflow d, const GemmShape& g,
                         double mac_rate = 1.0);

// TPU-style weight-stationary GEMM with double-buffered weights: the weight
// tile of fold f+1 loads while fold f streams, so a fold costs
// max(streamed rows, weight load) and the fill/drain skew is paid once.
GemmTiming mxu_gemm_double_buffered(const MxuConfig& mxu, const GemmShape& g,
                                    double mac_rate = 1.0);

// Dispatch on the config: dataflow `ws` with double_buffered_weights uses
// mxu_gemm_double_buffered, everything else mxu_gemm_bare.
GemmTiming mxu_gemm(const MxuConfig& mxu, const GemmShape& g, double mac_rate = 1.0);

// SCALE-Sim's COMPUTE_REPORT "Total Cycles" for a run that takes `count`
// cycles: the index of the last cycle (count - 1, 0 for an empty run).
Cycles scalesim_total_cycles(Cycles count);

// ---- Per-tile costs for the Mxu module -------------------------------------

// Cycles to shift a weight tile into the array: the weights enter at the top
// edge and shift down through all R rows (as SCALE-Sim's R-cycle prefix),
// weight_load_rows_per_cycle rows per cycle, whatever the tile's K <= R.
Cycles mxu_weight_load_cycles(const MxuConfig& mxu);

// One matmul instruction: M rows of a K-deep (K <= R), N-wide (N <= C) tile.
struct MatmulTile {
  std::int64_t m_rows = 0;
  std::int64_t k_depth = 0;
  std::int64_t n_cols = 0;
  double mac_rate = 1.0;  // dtype multiplier from MxuRates (bf16 = 1)
};

struct MatmulTiming {
  // Cycles the array's input edge is occupied: ceil(M / mac_rate). The next
  // matmul (same or freshly switched weights) may start streaming after this.
  Cycles issue = 0;
  // Cycles from the first row entering to the last result landing in the
  // accumulators: issue + (R - 1) skew down the rows + (C - 1) across the
  // columns + drain_extra_cycles. A pop of these rows may start after this.
  Cycles latency = 0;
};
MatmulTiming mxu_matmul_timing(const MxuConfig& mxu, const MatmulTile& t);
// The issue (occupancy) part of mxu_matmul_timing.
Cycles mxu_matmul_cycles(const MxuConfig& mxu, const MatmulTile& t);
// Fill + drain part: (R - 1) + (C - 1) + drain_extra_cycles.
Cycles mxu_drain_cycles(const MxuConfig& mxu);

// Popping M result rows of N f32 accumulators into vector registers of
// sublanes × lanes: one vreg per cycle, ceil(M / sublanes) · ceil(N / lanes).
Cycles mxu_pop_cycles(std::int64_t m_rows, std::int64_t n_cols, std::int64_t sublanes,
                      std::int64_t lanes);

}  // namespace tpusim
