// MXU timing. The bare model is derived from SCALE-Sim v2 (scalesim-project/
// scale-sim-v2, v2.0.2, MIT), read for its cycle accounting, not copied:
//
//  * scalesim/compute/systolic_compute_{ws,os,is}.py build, per fold, demand
//    matrices with one row per cycle. For WS (create_ifmap_demand_mat): a
//    prefix of arr_row null rows (weights shifting in), the T = M ifmap rows,
//    a suffix of arr_col - 1 rows (outputs draining across the columns), then
//    skew_matrix() adds arr_row - 1 rows (the diagonal wavefront down the
//    rows). Every fold is padded to the full array even when partially
//    mapped, so its length does not depend on the fold's size:
//        ws: R + M + (C - 1) + (R - 1)          = 2R + C + M - 2
//        os: T = K, no prefix (outputs stay put; create_ofmap_demand_mat
//            prefix T - 1, plus R rows, plus skew C - 1)  = R + C + K - 2
//        is: prefix R (inputs shifting in), T = N, same as ws = 2R + C + N - 2
//    Folds are concatenated with no overlap (the row_fold × col_fold loops).
//  * scalesim/memory/double_buffered_scratchpad_mem.py
//    service_memory_requests() walks the demand rows one per cycle and sets
//    total_cycles to the service cycle of the last ofmap row: with no stalls
//    that is the 0-based index folds·per_fold - 1 (scalesim_total_cycles).
#include "sim/timing/mxu_timing.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace tpusim {
namespace {


// Cycles to stream `t` operand rows at `mac_rate` times the bf16 rate.
Cycles streamed_cycles(std::int64_t t, double mac_rate) {
  if (t <= 0) return 0;
  if (mac_rate <= 0) mac_rate = 1.0;  // unsupported dtypes are the verifier's job
  return static_cast<Cycles>(std::ceil(static_cast<double>(t) / mac_rate));
}

std::int64_t positive(std::int64_t v) { return std::max<std::int64_t>(v, 1); }

}  // namespace

std::optional<Dataflow> parse_dataflow(std::string_view text) {
  Dataflow d{};
  if (!parse_enum(text, d)) return std::nullopt;
  return d;
}

std::string_view dataflow_name(Dataflow d) { return enum_name(d); }

FoldMapping fold_mapping(Dataflow d, const GemmShape& g, std::int64_t rows, std::int64_t cols) {
  FoldMapping f;
  switch (d) {
    case Dataflow::kWs: f.sr = g.k; f.sc = g.n; f.t = g.m; break;
    case Dataflow::kOs: f.sr = g.m; f.sc = g.n; f.t = g.k; break;
    case Dataflow::kIs: f.sr = g.k; f.sc = g.m; f.t = g.n; break;
  }
  if (g.m <= 0 || g.k <= 0 || g.n <= 0) return f;  // empty GEMM: no folds
  f.row_folds = ceil_div(f.sr, positive(rows));
  f.col_folds = ceil_div(f.sc, positive(cols));
  return f;
}

double GemmTiming::utilization(std::int64_t rows, std::int64_t cols) const {
  if (total == 0 || rows <= 0 || cols <= 0) return 0.0;
  return static_cast<double>(macs) /
         (static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(total));
}

Cycles scalesim_total_cycles(Cycles count) { return count == 0 ? 0 : count - 1; }

Cycles mxu_weight_load_cycles(const MxuConfig& mxu) {
  return static_cast<Cycles>(ceil_div(positive(mxu.rows), positive(mxu.weight_load_rows_per_cycle)));
}

Cycles mxu_drain_cycles(const MxuConfig& mxu) {
  return static_cast<Cycles>(positive(mxu.rows) - 1 + positive(mxu.cols) - 1 +
                             std::max<std::int64_t>(mxu.drain_extra_cycles, 0));
}

GemmTiming mxu_gemm_bare(const MxuConfig& mxu, Dataflow d, const GemmShape& g, double mac_rate) {
  GemmTiming r;
  r.mapping = fold_mapping(d, g, mxu.rows, mxu.cols);
  if (r.mapping.folds() == 0) return r;
  // ws/is: the stationary operand shifts in first (SCALE-Sim's R-row prefix);
  // os: the outputs are the stationary operand and start at zero, no prefix.
  const Cycles prefix = d == Dataflow::kOs ? 0 : mxu_weight_load_cycles(mxu);
  r.cycles_per_fold = prefix + streamed_cycles(r.mapping.t, mac_rate) + mxu_drain_cycles(mxu);
  r.total = static_cast<Cycles>(r.mapping.folds()) * r.cycles_per_fold;
  r.macs = static_cast<Cycles>(g.m) * static_cast<Cycles>(g.k) * static_cast<Cycles>(g.n);
  return r;
}

GemmTiming mxu_gemm_double_buffered(const MxuConfig& mxu, const GemmShape& g, double mac_rate) {
  GemmTiming r;
  r.mapping = fold_mapping(Dataflow::kWs, g, mxu.rows, mxu.cols);
  if (r.mapping.folds() == 0) return r;
  // Timeline: the first weight tile loads (L), then fold f streams (S) while
  // tile f+1 loads into the shadow buffer; fold f+1 starts when both are done,
  // so each later fold adds max(S, L). The last fold's results then travel
  // the (R-1)+(C-1) skew and the accumulator path: paid once.
  const Cycles load = mxu_weight_load_cycles(mxu);
  const Cycles stream = streamed_cycles(r.mapping.t, mac_rate);
  r.cycles_per_fold = std::max(stream, load);
  r.total = load + static_cast<Cycles>(r.mapping.folds() - 1) * r.cycles_per_fold + stream +
            mxu_drain_cycles(mxu);
  r.macs = static_cast<Cycles>(g.m) * static_cast<Cycles>(g.k) * static_cast<Cycles>(g.n);
  return r;
}

GemmTiming mxu_gemm(const MxuConfig& mxu, const GemmShape& g, double mac_rate) {
  const Dataflow d = mxu.dataflow;
  if (d == Dataflow::kWs && mxu.double_buffered_weights) {
    return mxu_gemm_double_buffered(mxu, g, mac_rate);
  }
  return mxu_gemm_bare(mxu, d, g, mac_rate);
}

MatmulTiming mxu_matmul_timing(const MxuConfig& mxu, const MatmulTile& t) {
  MatmulTiming r;
  r.issue = streamed_cycles(t.m_rows, t.mac_rate);
  r.latency = r.issue == 0 ? 0 : r.issue + mxu_drain_cycles(mxu);
  return r;
}

Cycles mxu_matmul_cycles(const MxuConfig& mxu, const MatmulTile& t) {
  return mxu_matmul_timing(mxu, t).issue;
}

Cycles mxu_pop_cycles(std::int64_t m_rows, std::int64_t n_cols, std::int64_t sublanes,
                      std::int64_t lanes) {
  if (m_rows <= 0 || n_cols <= 0) return 0;
  return static_cast<Cycles>(ceil_div(m_rows, positive(sublanes)) *
                             ceil_div(n_cols, positive(lanes)));
}

}  // namespace tpusim
