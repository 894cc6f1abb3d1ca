// MXU programs for dot (and dot fusions, convolution as GEMM): tiling,
// loop order, double-buffered DMAs and the split across MXUs. See
// docs/lowering.md for the derivation of the cost model used to choose tiles.
#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "isa/lower/context.h"
#include "isa/lower/dot_cost.h"

#include "common/units.h"

namespace tpusim::lower {
namespace {


// The chosen tiling with its estimate (dot_cost).
struct Tiling : DotTiling {
  double time_s = 0;
  double hbm_bytes = 0;
};

std::vector<std::int64_t> candidates(std::int64_t full, std::int64_t base) {
  std::vector<std::int64_t> v{full};
  for (std::int64_t t = base; t < full; t *= 2) v.push_back(t);
  return v;
}

class DotLowering {
 public:
  DotLowering(Ctx& c, const DotSpec& d) : c_(c), d_(d) {
    const auto& mxu = c.chip.core.mxu;
    nmxu_ = std::max<std::int64_t>(1, mxu.count);
    R_ = std::max<std::int64_t>(1, mxu.rows);
    C_ = std::max<std::int64_t>(1, mxu.cols);
    lhs_dt_ = mxu_stream_dtype(mxu, d.lhs_operand.value_or(d.lhs.dtype));
    rhs_dt_ = mxu_stream_dtype(mxu, d.rhs_operand.value_or(d.rhs.dtype));
    cores_ = std::max(1, c.opt.cores);
    split_ = cores_ > 1;
  }

  // The chosen tiling's estimated time (dot_cost), nothing emitted.
  double estimate() const { return choose().time_s; }

  void run() {
    // Many independent batch elements: one batch element's program inside
    // `repeat B` (same bytes and timing per element; the HBM tiles of
    // element 0 stand in for the others, and each element's first load and
    // last store are not overlapped with its neighbours').
    if (d_.batch > 1) {
      DotSpec one = d_;
      one.batch = 1;
      one.lhs_batch.clear();
      one.rhs_batch.clear();
      one.lhs_side = one.rhs_side = 1;
      DotLowering single(c_, one);
      single.split_ = false;  // megacore: the cores split the batch instead
      single.t_ = single.choose();
      const double per = static_cast<double>(ceil_div(one.m, single.t_.tm) * ceil_div(one.n, single.t_.tn) *
                                             ceil_div(one.k, single.t_.tk));
      if (per * static_cast<double>(d_.batch) > static_cast<double>(c_.opt.dot_repeat_min_steps)) {
        const auto [first, last] = split_ ? c_.core_share(d_.batch) : std::pair<std::int64_t, std::int64_t>{0, d_.batch};
        if (last <= first) return;  // more cores than batch elements: nothing for this one
        c_.emit(isa::Repeat{last - first});
        single.run();
        c_.emit(isa::End{});
        c_.report.tilings.back() += " repeat=" + std::to_string(last - first);
        return;
      }
    }
    t_ = choose();
    if (d_.batch == 1 && run_in_chunks()) return;
    record_tiling();
    emit();
  }

 private:
  void record_tiling() {
    c_.report.tilings.push_back(d_.name + ": B=" + std::to_string(d_.batch) + " M=" + std::to_string(d_.m) +
                                " K=" + std::to_string(d_.k) + " N=" + std::to_string(d_.n) +
                                " tm=" + std::to_string(t_.tm) + " tn=" + std::to_string(t_.tn) +
 " tk=" + std::to_string(t_.tk) +
                                (t_.lw ? " wide=lhs" : "") + (t_.rw ? " wide=rhs" : "") + " hbm_bytes=" + std::to_string(static_cast<std::int64_t>(t_.hbm_bytes)));
  }

  // Row parts of a block (N too narrow to feed all the MXUs).
  std::int64_t parts(std::int64_t tm, std::int64_t tn) const {
    return mxu_row_parts(c_.chip.core.mxu, tm, tn, c_.min_tile_rows());
  }

  // Whether an operand can be loaded wide: elements side by side, each
  // element's columns lane-aligned in VMEM, and (when its view rows are K
  // rows) all of K in one tile, since the wide tile then covers every k.
  bool wide_ok(bool lhs, std::int64_t t_free, std::int64_t tk, std::int64_t nk) const {
    const std::int64_t side = lhs ? d_.lhs_side : d_.rhs_side;
    if (side <= 1) return false;
    const bool transposed = lhs ? d_.lhs_transposed : d_.rhs_transposed;
    const bool k_rows = lhs ? transposed : !transposed;  // the view's rows are K
    if (k_rows && nk != 1) return false;
    const std::int64_t free_extent = lhs ? d_.m : d_.n;
    const std::int64_t y = k_rows ? free_extent : d_.k;  // an element's columns
    const std::int64_t chunk = k_rows ? t_free : tk;     // the columns one step reads
    const std::int64_t lanes = c_.lanes();
    return y % lanes == 0 && (chunk % lanes == 0 || chunk == y);
  }

  // Every candidate tiling that fits the VMEM budget, costed by dot_cost
  // (the simulator's timing functions); the cheapest wins.
  Tiling choose() const {
    const std::int64_t budget = c_.vmem_budget();
    DotCostInputs in;
    in.chip = &c_.chip;
    in.cores = cores_;
    in.split = split_;
    in.min_tile_rows = c_.min_tile_rows();
    in.instruction_scale = c_.opt.dot_instruction_scale;
    Tiling best;
    best.time_s = std::numeric_limits<double>::infinity();
    const std::int64_t M = d_.m, N = d_.n, K = d_.k;
    const auto& o = c_.opt;
    for (const std::int64_t tm : o.dot_tile_m > 0 ? std::vector<std::int64_t>{std::min(M, o.dot_tile_m)} : candidates(M, c_.min_tile_rows())) {
      for (const std::int64_t tn : o.dot_tile_n > 0 ? std::vector<std::int64_t>{std::min(N, o.dot_tile_n)} : candidates(N, C_)) {
        for (const std::int64_t tk : o.dot_tile_k > 0 ? std::vector<std::int64_t>{std::min(K, o.dot_tile_k)} : candidates(K, R_)) {
          const std::int64_t nk = ceil_div(K, tk);
          for (const bool lw : {false, true}) {
            if (lw && !wide_ok(true, tm, tk, nk)) continue;
            for (const bool rw : {false, true}) {
              if (rw && !wide_ok(false, tn, tk, nk)) continue;
              if (lw && rw && d_.lhs_side != d_.rhs_side) continue;
              const DotTiling t{tm, tn, tk, lw, rw};
              // Two slots of each operand tile and of its transposed copy,
              // each counted three times, the output staging three times,
              // and the two slots of a converted copy where they exceed an
              // operand tile's third count (a narrowing convert fits there).
              const LoadedTiles raw = loaded_tiles(d_, t);
              const std::int64_t lhs_raw = c_.vmem_footprint(d_.lhs.dtype, raw.lhs_rows, raw.lhs_cols);
              const std::int64_t rhs_raw = c_.vmem_footprint(d_.rhs.dtype, raw.rhs_rows, raw.rhs_cols);
              const std::int64_t lhs_fp = lhs_raw + (d_.lhs_transposed ? c_.vmem_footprint(d_.lhs.dtype, tm, tk) : 0);
              const std::int64_t rhs_fp = rhs_raw + (d_.rhs_transposed ? c_.vmem_footprint(d_.rhs.dtype, tk, tn) : 0);
              const auto cvt_extra = [&](isa::DType from, isa::DType to, std::int64_t rows, std::int64_t cols,
                                         std::int64_t raw_bytes) -> std::int64_t {
                return from == to ? 0 : std::max<std::int64_t>(0, 2 * c_.vmem_footprint(to, rows, cols) - raw_bytes);
              };
              const std::int64_t vm = 3 * (lhs_fp + rhs_fp) + cvt_extra(d_.lhs.dtype, lhs_dt_, tm, tk, lhs_raw) +
                                      cvt_extra(d_.rhs.dtype, rhs_dt_, tk, tn, rhs_raw) +
                                      3 * c_.vmem_footprint(d_.out.dtype, tm, tn) + epilogue_footprint(tm, tn);
              if (vm > budget) continue;
              const DotCost cost = dot_cost(in, d_, t);
              if (cost.time_s < best.time_s * (1 - 1e-9)) best = Tiling{t, cost.time_s, cost.hbm_bytes};
            }
          }
        }
      }
    }
    if (!std::isfinite(best.time_s)) {  // nothing fits the budget: smallest tiles
      best = Tiling{{std::min(M, c_.min_tile_rows()), std::min(N, C_), std::min(K, R_), false, false}, 0, 0};
    }
    return best;
  }

  // Two VMEM buffers (`base.0`, `base.1`) per tile shape, allocated on first use.
  using SlotPairs = std::map<std::pair<std::int64_t, std::int64_t>, std::array<std::uint32_t, 2>>;
  std::uint32_t slot_buffer(SlotPairs& pairs, const std::string& base, isa::DType d, std::int64_t rows,
                            std::int64_t cols, int slot) {
    auto it = pairs.find({rows, cols});
    if (it == pairs.end()) {
      std::array<std::uint32_t, 2> b{c_.vmem(base + ".0", d, rows, cols), c_.vmem(base + ".1", d, rows, cols)};
      it = pairs.emplace(std::pair{rows, cols}, b).first;
    }
    return it->second[static_cast<std::size_t>(slot)];
  }
  // A two-slot ring of VMEM buffers per tile shape for one operand.
  struct Ring {
    std::string name;
    isa::DType dtype;
    SlotPairs bufs;
    isa::SemRef sem[2];
  };
  std::uint32_t ring_buffer(Ring& r, std::int64_t rows, std::int64_t cols, int slot) {
    return slot_buffer(r.bufs, r.name, r.dtype, rows, cols, slot);
  }
  // A single scratch buffer per shape (transposed / converted operands).
  std::uint32_t scratch(const std::string& name, isa::DType d, std::int64_t rows, std::int64_t cols) {
    auto key = std::tuple{name, rows, cols};
    auto it = scratch_.find(key);
    if (it == scratch_.end()) it = scratch_.emplace(key, c_.vmem(name, d, rows, cols)).first;
    return it->second;
  }

  struct StepIdx {
    std::int64_t b, mb, nb, kc;
  };

  // Where batch element b's tile starts in an operand's view (its tile has
  // `tile_rows` rows when the operand is batch-leading).
  static std::pair<std::int64_t, std::int64_t> origin(const std::vector<BatchDim>& dims, std::int64_t b,
                                                      std::int64_t tile_rows) {
    if (dims.empty()) return {b * tile_rows, 0};
    std::int64_t r = 0, c = 0;
    for (std::size_t i = dims.size(); i > 0; --i) {
      const BatchDim& d = dims[i - 1];
      const std::int64_t size = std::max<std::int64_t>(1, d.size);
      r += b % size * d.row_stride;
      c += b % size * d.col_stride;
      b /= size;
    }
    return {r, c};
  }

  // ---- emission, in named steps (emit() runs them) ----

  // One operand's tile of a step: the HBM tile to load (identified by
  // `key`) and where the step's element tile sits in the loaded buffer.
  // Per element: rows x0.. (xe rows), cols y0.. (ye cols) of the element at
  // `at` in the view. Wide: whole view rows, the element's columns picked
  // in VMEM.
  struct Plan {
    std::int64_t key = 0;
    isa::TileRef src;
    bool wide = false;
    std::int64_t sub_rows = 0, sub_col = 0, sub_cols = 0;
  };
  // Runs of consecutive steps that share a tile: one load each, into the
  // ring slots in turn. Run r+1 is loaded as soon as run r starts (its slot
  // held run r-1, which is done), so a tile shared by many steps (a wide
  // one) is fetched behind all of them, not one step ahead.
  struct Runs {
    std::vector<std::size_t> run_of, first;
    std::vector<std::uint32_t> buf;
    std::size_t issued = 0;
  };
  // An epilogue input too large to stay resident: streamed per output block.
  struct Streamed {
    const Array* a;
    bool out_shaped;
    SlotPairs bufs;
  };
  // An output write-back piece not yet issued (dst in HBM, src staging tile, slot).
  struct Write {
    isa::TileRef dst, src;
    int slot;
  };
  // One MXU item of a block: rows r0.. of the lhs tile times an MXU-wide
  // column slice c0.., on MXU `mxu`, accumulating at row `acc`.
  struct Item {
    std::int64_t r0, rows, c0, cols, mxu, acc;
  };
  // Everything the steps of one dot's program share.
  struct Emit {
    std::int64_t nm = 0, nn = 0, nk = 0, side = 1, out_blocks = 0;
    std::vector<StepIdx> steps;
    Ring lr, rr;
    isa::SemRef out_sem[2], res, epi_sem[2];
    std::array<std::int64_t, 2> out_pending{0, 0}, epi_pending{0, 0};
    int out_next = 0;
    SlotPairs out_bufs;
    std::int64_t res_count = 0;
    std::vector<Streamed> streamed;
    std::vector<isa::TileRef> epi_tiles;  // this block's streamed output-shaped tiles
    std::vector<Plan> lplan, rplan;
    Runs lruns, rruns;
    std::deque<Write> writes;
    std::int64_t write_per_step = 1;
    isa::TileRef lhs_ready, rhs_ready;          // tiles the MXU reads (after transpose/convert)
    std::int64_t lhs_elem = -1, rhs_elem = -1;  // the element tiles they hold
    int lhs_slot = 0, rhs_slot = 0;             // the prepared-tile slot the next preparation writes
    std::uint32_t out_buf = 0;
    int out_slot = 0;
    // The MXU of a block's first item turns round robin from block to block,
    // so blocks narrower than the MXUs (one 128-column slice, say) run on all
    // of them in turn instead of all on MXU 0.
    std::int64_t rot = 0;
  };

  static std::int64_t extent(std::int64_t idx, std::int64_t t, std::int64_t full) {
    return std::min(t, full - idx * t);
  }

  // A dot of more steps than LowerOptions::dot_chunk_max_steps: the
  // largest region of whole R x C chunks of the output, each a grid of
  // a x b blocks of this dot's own tiling, runs as one chunk's program
  // inside `repeat R*C` (as for batch elements: the chunk's tiles stand in
  // for the others'; a chunk's blocks run as they would in the unrolled
  // schedule). The rows below that region and the columns right of it are
  // dots of their own (at their place in the operands and the output),
  // chunked the same way when they are large. The chunk grid is the one
  // that emits the fewest steps (the chunk plus the leftover strips).
  // False when the dot is small enough to unroll, or has wide operand
  // tiles (batch elements side by side) or a K loop longer than the limit.
  bool run_in_chunks() {
    const std::int64_t nm = ceil_div(d_.m, t_.tm), nn = ceil_div(d_.n, t_.tn), nk = ceil_div(d_.k, t_.tk);
    const auto limit = std::max<std::int64_t>(1, c_.opt.dot_chunk_max_steps);
    if (static_cast<double>(nm) * static_cast<double>(nn) * static_cast<double>(nk) <= static_cast<double>(limit) ||
        d_.lhs_side > 1 || d_.rhs_side > 1 || nk > limit) {
      return false;
    }
    // A chunk is a whole block rows of every column when a block row fits
    // the limit: the unrolled schedule's own order (output blocks row by
    // row, each lhs tile reused along the row), cut into r equal runs of
    // rows inside `repeat r`, the rows left over (fewer than a) after them.
    // Otherwise a x b whole blocks, repeated r x c times, with the strips
    // below and right of them. Either way the leftover strips are emitted
    // once with the same blocks (chunked again when larger than the limit).
    // Each chunk and strip fills and drains its own pipeline: of the grids
    // emitted in at most 1.5 x limit steps, the one with the fewest
    // restarts wins, then the one emitted in the fewest steps.
    // (A dot narrower than one block, a strip, chunks its one partial block.)
    const std::int64_t bm = nm == 1 ? d_.m : t_.tm, bn = nn == 1 ? d_.n : t_.tn;
    const std::int64_t fm = d_.m / bm, fn = d_.n / bn;
    struct Grid {
      std::int64_t a = 0, b = 0;  // b = nn: the whole width (with a partial last block)
      double emitted = 0, restarts = 0;
    };
    const auto strip = [&](double steps) -> std::pair<double, double> {  // {emitted, restarts}
      if (steps <= 0) return {0.0, 0.0};
      if (steps <= static_cast<double>(limit)) return {steps, 1.0};
      return {static_cast<double>(limit), std::ceil(steps / static_cast<double>(limit)) + 1};
    };
    const double budget = 1.5 * static_cast<double>(limit);
    Grid best;
    const auto better = [&](const Grid& g) {
      if (best.a == 0) return true;
      const bool fits = g.emitted <= budget, best_fits = best.emitted <= budget;
      if (fits != best_fits) return fits;
      if (!fits) return g.emitted < best.emitted;
      const bool rows = g.b == nn, best_rows = best.b == nn;
      if (rows != best_rows) return rows;
      return g.restarts < best.restarts || (g.restarts == best.restarts && g.emitted < best.emitted);
    };
    const auto consider = [&](std::int64_t a, std::int64_t b) {
      const std::int64_t r = fm / a, c = b == nn ? 1 : fn / b;
      const auto below = strip(static_cast<double>(nm - r * a) * static_cast<double>(nn * nk));
      const auto right = b == nn ? std::pair{0.0, 0.0}
                                 : strip(static_cast<double>(r * a) * static_cast<double>((nn - c * b) * nk));
      const Grid g{a, b, static_cast<double>(a * b * nk) + below.first + right.first,
                   static_cast<double>(r * c) + below.second + right.second};
      if (better(g)) best = g;
    };
    for (std::int64_t a = 1; a <= fm && a * nn * nk <= limit; ++a) consider(a, nn);
    for (std::int64_t b = 1; b <= fn && b * nk <= limit; ++b) {
      for (std::int64_t a = 1; a <= fm && a * b * nk <= limit; ++a) consider(a, b);
    }
    if (best.a == 0) return false;
    const std::int64_t r = fm / best.a, c = best.b == nn ? 1 : fn / best.b;
    const std::int64_t rows = best.a * bm, cols = best.b == nn ? d_.n : best.b * bn;
    const std::int64_t main_rows = r * rows, main_cols = c * cols;
    // The chunk and each strip wait for all their DMAs at their end: each
    // reuses the VMEM the one before it had.
    const std::int64_t mark = c_.vmem_used();
    {
      const DotSpec chunk = sub_spec(0, rows, 0, cols, false);
      DotLowering one(c_, chunk);
      one.split_ = false;  // megacore: the cores split the chunks instead
      const auto [first, last] = split_ ? c_.core_share(r * c) : std::pair<std::int64_t, std::int64_t>{0, r * c};
      if (last > first) {
        c_.emit(isa::Repeat{last - first});
        one.t_ = t_;  // this dot's tiling: the chunk's blocks are the dot's blocks
        one.record_tiling();
        one.emit();
        c_.emit(isa::End{});
        c_.report.tilings.back() += " chunks=" + std::to_string(r) + "x" + std::to_string(c);
      }
    }
    // The strips: this dot's blocks, chunked again when large.
    if (main_cols < d_.n) run_strip(sub_spec(0, main_rows, main_cols, d_.n - main_cols, true), mark);
    if (main_rows < d_.m) run_strip(sub_spec(main_rows, d_.m - main_rows, 0, d_.n, true), mark);
    return true;
  }
  void run_strip(const DotSpec& spec, std::int64_t vmem_mark) {
    c_.vmem_rewind(vmem_mark);
    DotLowering strip(c_, spec);
    strip.split_ = split_;
    strip.t_ = t_;
    if (strip.run_in_chunks()) return;
    strip.record_tiling();
    strip.emit();
  }

  void refuse(double steps) {
    c_.oversize = fmt::format("would emit {:.3g} MXU tile steps (no chunks: wide operand tiles or a K loop "
                              "longer than dot_chunk_max_steps), more than the {} instructions a program may have "
                              "(simulation.max_program_instructions)",
                              steps, c_.opt.max_instructions);
  }

  // The dot of output rows m0.. (m rows) and columns n0.. (n columns) of
  // this one (batch 1): its lhs rows (columns when transposed), rhs
  // columns (rows when transposed), output and output-shaped epilogue
  // inputs cut to that block; other epilogue inputs keep their share.
  // `placed`: the block reads and writes at its place in the buffers;
  // otherwise at the origin (a chunk standing in for its copies).
  DotSpec sub_spec(std::int64_t m0, std::int64_t m, std::int64_t n0, std::int64_t n, bool placed) const {
    DotSpec s = d_;
    s.name = d_.name;
    const auto cut = [](Array& a, std::int64_t rows, std::int64_t cols) {
      const double share = static_cast<double>(rows * cols) / static_cast<double>(std::max<std::int64_t>(1, a.rows * a.cols));
      a.rows = rows;
      a.cols = cols;
      a.elements = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(static_cast<double>(a.elements) * share)));
    };
    if (d_.lhs_transposed) {
      cut(s.lhs, d_.lhs.rows, m);
    } else {
      cut(s.lhs, m, d_.lhs.cols);
    }
    if (d_.rhs_transposed) {
      cut(s.rhs, n, d_.rhs.cols);
    } else {
      cut(s.rhs, d_.rhs.rows, n);
    }
    cut(s.out, m, n);
    for (Array& a : s.epilogue_inputs) {
      if (a.rows == d_.out.rows && a.cols == d_.out.cols) cut(a, m, n);
    }
    s.m = m;
    s.n = n;
    s.m_origin = placed ? d_.m_origin + m0 : d_.m_origin;
    s.n_origin = placed ? d_.n_origin + n0 : d_.n_origin;
    return s;
  }

  void emit() {
    const std::int64_t B = d_.batch;
    Emit e;
    e.nm = ceil_div(d_.m, t_.tm);
    e.nn = ceil_div(d_.n, t_.tn);
    e.nk = ceil_div(d_.k, t_.tk);
    // A program that would pass the instruction limit stops here, before its
    // step list takes memory (the driver reports the limit).
    const double steps =
        static_cast<double>(B) * static_cast<double>(e.nm) * static_cast<double>(e.nn) * static_cast<double>(e.nk);
    if (steps > static_cast<double>(c_.opt.max_instructions)) {
      refuse(steps);
      return;
    }
    // Megacore: this core's contiguous share of the output blocks (in
    // b, mb, nb order, so a core keeps the lhs reuse across nb; with wide
    // loads g, mb, nb, j for batch element b = g·S + j, so consecutive
    // blocks share the wide tile).
    const auto [first_block, last_block] =
        split_ ? c_.core_share(B * e.nm * e.nn) : std::pair<std::int64_t, std::int64_t>{0, B * e.nm * e.nn};
    if (last_block <= first_block) return;  // more cores than output blocks: nothing for this one
    e.side = t_.lw ? d_.lhs_side : t_.rw ? d_.rhs_side : 1;
    order_steps(e, first_block, last_block);
    e.lr = Ring{"lhs", d_.lhs.dtype, {}, {c_.sem("lhs0"), c_.sem("lhs1")}};
    e.rr = Ring{"rhs", d_.rhs.dtype, {}, {c_.sem("rhs0"), c_.sem("rhs1")}};
    e.out_sem[0] = c_.sem("out0");
    e.out_sem[1] = c_.sem("out1");
    e.res = c_.sem("res");
    load_epilogue_inputs(e);
    e.epi_sem[0] = c_.sem("epi0");
    e.epi_sem[1] = c_.sem("epi1");
    e.out_blocks = B * e.nm * e.nn;
    plan_operand_tiles(e);
    e.lruns = runs_of(e.lplan);
    e.rruns = runs_of(e.rplan);
    issue_loads(e.lr, e.lruns, e.lplan, 1);
    issue_loads(e.rr, e.rruns, e.rplan, 1);
    c_.wait(e.res, e.res_count);
    for (std::size_t t = 0; t < e.steps.size(); ++t) {
      emit_step(e, t);
      if (c_.prog.code.size() > c_.opt.max_instructions) return;
    }
    flush_writes(e, e.writes.size());
    c_.wait(e.out_sem[e.out_next], e.out_pending[static_cast<std::size_t>(e.out_next)]);
    c_.wait(e.out_sem[e.out_next ^ 1], e.out_pending[static_cast<std::size_t>(e.out_next ^ 1)]);
  }

  // The k steps of this core's output blocks, in block order.
  void order_steps(Emit& e, std::int64_t first_block, std::int64_t last_block) const {
    const std::int64_t nm = e.nm, nn = e.nn, side = e.side;
    e.steps.reserve(static_cast<std::size_t>((last_block - first_block) * e.nk));
    for (std::int64_t ob = first_block; ob < last_block; ++ob) {
      std::int64_t b = 0, mb = 0, nb = 0;
      if (side > 1) {
        const std::int64_t g = ob / (nm * nn * side), j = ob % side;
        b = g * side + j;
        mb = ob / (nn * side) % nm;
        nb = ob / side % nn;
      } else {
        b = ob / (nm * nn);
        mb = ob / nn % nm;
        nb = ob % nn;
      }
      for (std::int64_t kc = 0; kc < e.nk; ++kc) e.steps.push_back({b, mb, nb, kc});
    }
  }

  // Small epilogue inputs stay resident. Large ones (a residual of the
  // output's shape, say) are streamed: each output block reads its tile of
  // an output-shaped input, or an equal share of the rows of any other,
  // double-buffered with the output staging and waited on before the
  // epilogue (so every epilogue input is read from HBM exactly once).
  void load_epilogue_inputs(Emit& e) {
    for (const Array& a : d_.epilogue_inputs) {
      if (c_.vmem_footprint(a.dtype, a.rows, a.cols) > c_.vmem_budget() / c_.opt.resident_budget_share) {
        e.streamed.push_back({&a, a.rows == d_.out.rows && a.cols == d_.out.cols, {}});
        continue;
      }
      const std::uint32_t vb = c_.vmem("epi", a.dtype, a.rows, a.cols);
      c_.dma(c_.whole(vb), c_.whole(a.buffer), e.res);
      ++e.res_count;
    }
  }

  // Each step's lhs and rhs tiles.
  void plan_operand_tiles(Emit& e) const {
    const std::int64_t M = d_.m, N = d_.n, K = d_.k, nm = e.nm, nn = e.nn, nk = e.nk;
    const auto plan = [&](const Array& a, bool wide, std::int64_t key, std::pair<std::int64_t, std::int64_t> at,
                          std::int64_t x0, std::int64_t xe, std::int64_t y0, std::int64_t ye) {
      Plan p;
      p.key = key;
      p.wide = wide;
      p.src = wide ? c_.tile(a.buffer, at.first + x0, xe, 0, a.cols) : c_.tile(a.buffer, at.first + x0, xe, at.second + y0, ye);
      p.sub_rows = xe;
      p.sub_col = at.second + y0;
      p.sub_cols = ye;
      return p;
    };
    e.lplan.reserve(e.steps.size());
    e.rplan.reserve(e.steps.size());
    for (const StepIdx& s : e.steps) {
      const std::int64_t m0 = d_.m_origin + s.mb * t_.tm, k0 = s.kc * t_.tk, n0 = d_.n_origin + s.nb * t_.tn;
      const std::int64_t me = extent(s.mb, t_.tm, M), ke = extent(s.kc, t_.tk, K), ne = extent(s.nb, t_.tn, N);
      const std::int64_t g = s.b / e.side;
      // Tile identities: per element, or per wide tile (which spans every
      // element of group g and every column of the view).
      const std::int64_t lkey = !t_.lw ? (s.b * nm + s.mb) * nk + s.kc : d_.lhs_transposed ? g : g * nm + s.mb;
      const std::int64_t rkey = !t_.rw ? (s.b * nk + s.kc) * nn + s.nb : d_.rhs_transposed ? g * nn + s.nb : g;
      // lhs canonical [M, K] per element, transposed [K, M]; rhs canonical
      // [K, N], transposed [N, K].
      const auto lat = origin(d_.lhs_batch, s.b, d_.lhs_transposed ? K : M);
      e.lplan.push_back(d_.lhs_transposed ? plan(d_.lhs, t_.lw, lkey, lat, k0, ke, m0, me)
                                          : plan(d_.lhs, t_.lw, lkey, lat, m0, me, k0, ke));
      const auto rat = origin(d_.rhs_batch, s.b, d_.rhs_transposed ? N : K);
      e.rplan.push_back(d_.rhs_transposed ? plan(d_.rhs, t_.rw, rkey, rat, n0, ne, k0, ke)
                                          : plan(d_.rhs, t_.rw, rkey, rat, k0, ke, n0, ne));
    }
  }

  static Runs runs_of(const std::vector<Plan>& p) {
    Runs r;
    for (std::size_t t = 0; t < p.size(); ++t) {
      if (t == 0 || p[t].key != p[t - 1].key) r.first.push_back(t);
      r.run_of.push_back(r.first.size() - 1);
    }
    r.buf.assign(r.first.size(), 0);
    return r;
  }

  // Issues the loads of runs up to (not including) `upto`.
  void issue_loads(Ring& ring, Runs& runs, const std::vector<Plan>& p, std::size_t upto) {
    for (; runs.issued < std::min(upto, runs.first.size()); ++runs.issued) {
      const std::size_t r = runs.issued;
      const int slot = static_cast<int>(r % 2);
      const isa::TileRef& src = p[runs.first[r]].src;
      runs.buf[r] = ring_buffer(ring, src.rows, src.cols, slot);
      c_.dma(c_.whole(runs.buf[r]), src, ring.sem[slot]);
    }
  }

  // The element tile of step t in its loaded buffer (stored orientation).
  isa::TileRef sub_tile(const Runs& runs, const std::vector<Plan>& p, std::size_t t) const {
    const std::uint32_t buf = runs.buf[runs.run_of[t]];
    return p[t].wide ? c_.tile(buf, 0, p[t].sub_rows, p[t].sub_col, p[t].sub_cols) : c_.whole(buf);
  }

  void flush_writes(Emit& e, std::size_t n) {
    for (std::size_t i = 0; i < n && !e.writes.empty(); ++i) {
      const Write w = e.writes.front();
      e.writes.pop_front();
      c_.dma(w.dst, w.src, e.out_sem[w.slot]);
      ++e.out_pending[static_cast<std::size_t>(w.slot)];
    }
  }

  // Step t: load ahead, ready the operand tiles, start a block (kc = 0),
  // the matmuls, prepare the next step's tiles, finish the block (last kc)
  // or issue pending write pieces.
  //
  // An operand the MXU reads as loaded is waited for at its step. One that
  // is transposed (XLU) or converted (VPU) first is prepared one step ahead,
  // into the other of two prepared-tile slots, right after this step's
  // matmuls: the XLU and VPU work on step t + 1's tiles while the MXUs run
  // step t's, as a compiled kernel's schedule interleaves a fused operand
  // producer with the matmuls (only the first step's preparation is exposed).
  //
  // A prepared operand's loaded tile is free once prepared, so its loads run
  // a step further ahead: the load into a slot is issued as soon as the tile
  // it held has been prepared (the load waits for that preparation, which
  // this step's matmuls wait for anyway).
  void emit_step(Emit& e, std::size_t t) {
    const StepIdx& s = e.steps[t];
    c_.mxu_step();
    const std::size_t lrun = e.lruns.run_of[t], rrun = e.rruns.run_of[t];
    const bool lp = lhs_prepared(), rp = rhs_prepared();
    if (!lp || t == 0) issue_loads(e.lr, e.lruns, e.lplan, lrun + 2);
    if (!rp || t == 0) issue_loads(e.rr, e.rruns, e.rplan, rrun + 2);
    if (t == 0 || !lp) ready_lhs(e, t);
    if (t == 0 || !rp) ready_rhs(e, t);
    const auto last_of_run = [&](const Runs& r) { return t + 1 == e.steps.size() || r.run_of[t + 1] != r.run_of[t]; };
    if (lp) issue_loads(e.lr, e.lruns, e.lplan, lrun + (last_of_run(e.lruns) ? 3 : 2));
    if (rp) issue_loads(e.rr, e.rruns, e.rplan, rrun + (last_of_run(e.rruns) ? 3 : 2));
    const std::int64_t me = extent(s.mb, t_.tm, d_.m), ke = extent(s.kc, t_.tk, d_.k), ne = extent(s.nb, t_.tn, d_.n);
    if (s.kc == 0) begin_block(e, s, me, ne);
    const std::vector<Item> items = block_items(me, ne, e.rot, e.out_slot);
    emit_matmuls(e, s, items, ke);
    if (t + 1 < e.steps.size()) {
      if (lp) ready_lhs(e, t + 1);
      if (rp) ready_rhs(e, t + 1);
    }
    if (s.kc + 1 == e.nk) {
      finish_block(e, s, t, items, me, ne);
    } else {
      flush_writes(e, static_cast<std::size_t>(e.write_per_step));
    }
  }

  // A me x ne block's MXU items: MXU-wide column slices, each cut into row
  // parts when there are fewer slices than MXUs; dealt round robin from `rot`.
  // Blocks alternate the halves of each MXU's accumulators with their out
  // slot, so one block's pops overlap the next block's matmuls.
  std::vector<Item> block_items(std::int64_t me, std::int64_t ne, std::int64_t rot, int slot) const {
    const std::int64_t p = parts(me, ne);
    const std::int64_t part_rows = std::min(me, round_up(ceil_div(me, p), c_.min_tile_rows()));
    const std::int64_t nsub = ceil_div(ne, C_);
    const std::int64_t half = nsub * ceil_div(me, part_rows) * part_rows;  // at least any MXU's rows of a block
    std::vector<Item> items;
    std::vector<std::int64_t> per_mxu(static_cast<std::size_t>(nmxu_), 0);
    for (std::int64_t ns = 0; ns < nsub; ++ns) {
      for (std::int64_t pr = 0; pr * part_rows < me; ++pr) {
        const std::int64_t mx = (static_cast<std::int64_t>(items.size()) + rot) % nmxu_;
        Item it{pr * part_rows, std::min(part_rows, me - pr * part_rows), ns * C_, std::min(C_, ne - ns * C_), mx,
                slot * half + per_mxu[static_cast<std::size_t>(mx)] * part_rows};
        ++per_mxu[static_cast<std::size_t>(mx)];
        items.push_back(it);
      }
    }
    return items;
  }

  // A new output block: its staging slot (drained), and the loads of its
  // streamed epilogue inputs.
  void begin_block(Emit& e, const StepIdx& s, std::int64_t me, std::int64_t ne) {
    e.out_slot = e.out_next;
    e.out_next ^= 1;
    // Pieces of the block that used this slot must be issued before it is
    // reused; their completion is waited for only where this block first
    // writes the slot (finish_block), so its matmuls do not wait for them.
    while (std::any_of(e.writes.begin(), e.writes.end(), [&](const Write& w) { return w.slot == e.out_slot; })) {
      flush_writes(e, 1);
    }
    e.out_buf = slot_buffer(e.out_bufs, "acc", d_.out.dtype, me, ne, e.out_slot);
    e.epi_tiles.clear();
    const std::int64_t m0 = d_.m_origin + s.mb * t_.tm, n0 = d_.n_origin + s.nb * t_.tn;
    for (Streamed& st : e.streamed) {
      const Array& a = *st.a;
      std::int64_t r0 = s.b * d_.m + m0, rows = me, c0 = n0, cols = ne;
      if (!st.out_shaped) {
        const std::int64_t out_block = (s.b * e.nm + s.mb) * e.nn + s.nb;
        const std::int64_t share = ceil_div(a.rows, e.out_blocks);
        r0 = std::min(a.rows, out_block * share);
        rows = std::min(share, a.rows - r0);
        c0 = 0;
        cols = a.cols;
        if (rows <= 0) continue;
      }
      const std::uint32_t vb = slot_buffer(st.bufs, "epi", a.dtype, rows, cols, e.out_slot);
      c_.dma(c_.whole(vb), c_.tile(a.buffer, r0, rows, c0, cols), e.epi_sem[e.out_slot]);
      ++e.epi_pending[static_cast<std::size_t>(e.out_slot)];
      if (st.out_shaped) e.epi_tiles.push_back(c_.whole(vb));
    }
  }

  // The step's weight loads and matmuls, R rows of K at a time.
  void emit_matmuls(const Emit& e, const StepIdx& s, const std::vector<Item>& items, std::int64_t ke) {
    const std::int64_t ksubs = ceil_div(ke, R_);
    for (std::int64_t ks = 0; ks < ksubs; ++ks) {
      const std::int64_t kr = std::min(R_, ke - ks * R_);
      for (const Item& it : items) {
        c_.emit(isa::MxuLoadWeights{it.mxu, c_.tile(e.rhs_ready.buffer, e.rhs_ready.row + ks * R_, kr,
                                                    e.rhs_ready.col + it.c0, it.cols)});
        c_.emit(isa::MxuMatmul{it.mxu, c_.tile(e.lhs_ready.buffer, e.lhs_ready.row + it.r0, it.rows,
                                               e.lhs_ready.col + ks * R_, kr),
                               it.acc,
                               (s.kc == 0 && ks == 0) ? isa::AccMode::kOverwrite : isa::AccMode::kAccumulate});
      }
    }
  }

  // The block's last step: pops, the VPU epilogue, and its write-back
  // pieces queued.
  void finish_block(Emit& e, const StepIdx& s, std::size_t t, const std::vector<Item>& items, std::int64_t me,
                    std::int64_t ne) {
    e.rot = (e.rot + static_cast<std::int64_t>(items.size())) % nmxu_;
    // The epilogue's dtype: the output's, or f32 where the VPU has no bf16
    // ALU (the pops then write an f32 tile, converted once at the end).
    const isa::DType ed = epilogue_dtype();
    const std::uint32_t acc = ed == d_.out.dtype ? e.out_buf : scratch("acc.f32", ed, me, ne);
    // The slot's previous write-back has left before the slot is written
    // (by the pops, or by the convert of a widened epilogue).
    const auto drain_slot = [&] {
      c_.wait(e.out_sem[e.out_slot], e.out_pending[static_cast<std::size_t>(e.out_slot)]);
      e.out_pending[static_cast<std::size_t>(e.out_slot)] = 0;
    };
    if (acc == e.out_buf) drain_slot();
    for (const Item& it : items) {
      c_.emit(isa::MxuPop{it.mxu, c_.tile(acc, it.r0, it.rows, it.c0, it.cols), it.acc});
    }
    c_.wait(e.epi_sem[e.out_slot], e.epi_pending[static_cast<std::size_t>(e.out_slot)]);
    e.epi_pending[static_cast<std::size_t>(e.out_slot)] = 0;
    emit_epilogue(e, acc, ed);
    if (acc != e.out_buf) {
      drain_slot();
      emit_convert(c_.whole(e.out_buf), c_.whole(acc));
    }
    // The block's write-back is cut into row pieces issued over the next
    // block's k steps, so one large write does not hold the HBM queue
    // ahead of the next operand loads (a kernel's pipelined write-back).
    const std::int64_t m0 = d_.m_origin + s.mb * t_.tm, n0 = d_.n_origin + s.nb * t_.tn;
    const std::int64_t align = c_.row_align(d_.out.dtype);
    const std::int64_t pieces = std::max<std::int64_t>(1, std::min(e.nk, me / std::max(align, c_.min_tile_rows())));
    const std::int64_t piece_rows = round_up(ceil_div(me, pieces), align);
    for (std::int64_t r = 0; r < me; r += piece_rows) {
      const std::int64_t rows = std::min(piece_rows, me - r);
      e.writes.push_back({c_.tile(d_.out.buffer, s.b * d_.m + m0 + r, rows, n0, ne), c_.tile(e.out_buf, r, rows, 0, ne),
                          e.out_slot});
    }
    e.write_per_step = ceil_div(static_cast<std::int64_t>(e.writes.size()), e.nk);
    if (e.nk == 1 || t + 1 == e.steps.size()) flush_writes(e, e.writes.size());
  }

  // VMEM of the epilogue per output block: two slots of each streamed
  // output-shaped input, its copy converted to the epilogue dtype, and the
  // f32 tile the pops write where the epilogue is widened.
  std::int64_t epilogue_footprint(std::int64_t tm, std::int64_t tn) const {
    const isa::DType ed = epilogue_dtype();
    std::int64_t bytes = ed != d_.out.dtype ? c_.vmem_footprint(ed, tm, tn) : 0;
    for (const Array& a : d_.epilogue_inputs) {
      if (a.rows != d_.out.rows || a.cols != d_.out.cols) continue;
      if (c_.vmem_footprint(a.dtype, a.rows, a.cols) <= c_.vmem_budget() / c_.opt.resident_budget_share) continue;
      bytes += 2 * c_.vmem_footprint(a.dtype, tm, tn) + (a.dtype != ed ? c_.vmem_footprint(ed, tm, tn) : 0);
    }
    return bytes;
  }
  isa::DType epilogue_dtype() const {
    const bool widen = d_.epilogue_vpu_ops > 0 && isa::vpu_needs_f32(c_.chip.core.vpu, isa::VpuOp::kAdd, d_.out.dtype);
    return widen ? isa::DType::kF32 : d_.out.dtype;
  }
  void emit_convert(const isa::TileRef& dst, const isa::TileRef& src) {
    c_.emit(isa::VpuElementwise{isa::VpuOp::kConvert, dst, src, {}, {}, 0});
  }
  // The fused elementwise ops on the popped tile `acc` (dtype ed); the
  // first ones consume the streamed output-shaped inputs, converted to ed
  // first when stored in another dtype (a bf16 residual of an f32 output).
  void emit_epilogue(const Emit& e, std::uint32_t acc, isa::DType ed) {
    for (int k = 0; k < d_.epilogue_vpu_ops; ++k) {
      isa::VpuElementwise op{isa::VpuOp::kAdd, c_.whole(acc), c_.whole(acc), {}, {}, 0};
      if (static_cast<std::size_t>(k) < e.epi_tiles.size()) {
        op.b = e.epi_tiles[static_cast<std::size_t>(k)];
        if (c_.prog.buffers[op.b.buffer].dtype != ed) {
          const isa::TileRef cvt = c_.whole(scratch("epi.cvt" + std::to_string(k), ed, op.b.rows, op.b.cols));
          emit_convert(cvt, op.b);
          op.b = cvt;
        }
      }
      c_.emit(op);
    }
  }

  // Whether an operand's tiles are transposed or converted before the MXU
  // reads them (then prepared a step ahead, emit_step).
  [[nodiscard]] bool lhs_prepared() const { return d_.lhs_transposed || d_.lhs.dtype != lhs_dt_; }
  [[nodiscard]] bool rhs_prepared() const { return d_.rhs_transposed || d_.rhs.dtype != rhs_dt_; }

  // Step t's lhs (rhs) tile for the MXU: waited for when its run starts, and
  // prepared when it is a new element tile (a fresh load, or another
  // element's columns of a wide tile), each preparation into the other slot.
  void ready_lhs(Emit& e, std::size_t t) {
    const StepIdx& s = e.steps[t];
    ready(e.lr, e.lruns, e.lplan, t, (s.b * e.nm + s.mb) * e.nk + s.kc, d_.lhs_transposed, lhs_dt_, "lhsT",
          extent(s.mb, t_.tm, d_.m), extent(s.kc, t_.tk, d_.k), e.lhs_ready, e.lhs_elem, e.lhs_slot);
  }
  void ready_rhs(Emit& e, std::size_t t) {
    const StepIdx& s = e.steps[t];
    ready(e.rr, e.rruns, e.rplan, t, (s.b * e.nk + s.kc) * e.nn + s.nb, d_.rhs_transposed, rhs_dt_, "rhsT",
          extent(s.kc, t_.tk, d_.k), extent(s.nb, t_.tn, d_.n), e.rhs_ready, e.rhs_elem, e.rhs_slot);
  }
  void ready(const Ring& ring, const Runs& runs, const std::vector<Plan>& plan, std::size_t t, std::int64_t elem,
             bool transposed, isa::DType mxu_dt, const std::string& name, std::int64_t rows, std::int64_t cols,
             isa::TileRef& tile, std::int64_t& held, int& slot) {
    const std::size_t run = runs.run_of[t];
    const bool fresh = runs.first[run] == t;
    if (fresh) c_.wait(ring.sem[run % 2], 1);
    if (fresh || elem != held) {
      tile = prepare(sub_tile(runs, plan, t), transposed, mxu_dt, name, slot, rows, cols);
      slot ^= 1;
      held = elem;
    }
  }

  // Transposes (XLU) and/or converts (VPU) a freshly loaded tile into the
  // rows x cols tile in the dtype the MXU reads, in prepared-tile slot
  // `slot`. Returns the buffer to read (the loaded tile when neither is needed).
  isa::TileRef prepare(const isa::TileRef& raw, bool transposed, isa::DType mxu_dt, const std::string& name,
                       int slot, std::int64_t rows, std::int64_t cols) {
    isa::TileRef cur = raw;
    const isa::DType raw_dt = c_.prog.buffers[raw.buffer].dtype;
    const std::string base = name + "." + std::to_string(slot);
    if (transposed) {
      const std::uint32_t t = scratch(base, raw_dt, rows, cols);
      c_.emit(isa::XluTranspose{c_.whole(t), cur});
      cur = c_.whole(t);
    }
    if (raw_dt != mxu_dt) {
      const std::uint32_t v = scratch(base + ".cvt", mxu_dt, rows, cols);
      isa::VpuElementwise e;
      e.op = isa::VpuOp::kConvert;
      e.dst = c_.whole(v);
      e.a = cur;
      c_.emit(e);
      cur = c_.whole(v);
    }
    return cur;
  }

  Ctx& c_;
  const DotSpec& d_;
  std::int64_t nmxu_ = 1, R_ = 128, C_ = 128;
  isa::DType lhs_dt_ = isa::DType::kBf16, rhs_dt_ = isa::DType::kBf16;
  Tiling t_;
  int cores_ = 1;       // TensorCores sharing the HBM while this dot runs
  bool split_ = false;  // this program computes only its core's share
  std::map<std::tuple<std::string, std::int64_t, std::int64_t>, std::uint32_t> scratch_;
};

}  // namespace

namespace {

// The f32 operands a dot multiplies as bf16: the MXU has no f32 rate (each
// loaded tile is converted on the VPU) or runs f32 at the bf16 rate (XLA's
// DEFAULT precision: one bf16 pass). Either way an f32 tile takes twice a
// bf16 tile's HBM bytes and VMEM room, so the tiles are smaller and each
// re-read costs twice as much, while a bf16 copy gives the same products.
struct PreConvert {
  bool lhs = false, rhs = false;
};

PreConvert f32_operands(const Ctx& c, const DotSpec& d) {
  const MxuConfig& mxu = c.chip.core.mxu;
  const bool as_bf16 = mxu_stream_dtype(mxu, isa::DType::kF32) == isa::DType::kBf16 ||
                       isa::mxu_rate(mxu.rate, isa::DType::kF32) == isa::mxu_rate(mxu.rate, isa::DType::kBf16);
  const auto narrowed = [&](const Array& a, const std::optional<isa::DType>& op) {
    return as_bf16 && !op && a.dtype == isa::DType::kF32;
  };
  return {narrowed(d.lhs, d.lhs_operand), narrowed(d.rhs, d.rhs_operand)};
}

// Rows per chunk of the convert pass: the most whose two slots (f32 in,
// bf16 out) fit the VMEM budget, a multiple of the f32 row tiling.
std::int64_t convert_chunk_rows(const Ctx& c, const Array& a) {
  const std::int64_t align = c.row_align(isa::DType::kF32);
  std::int64_t r = a.rows;
  const auto fits = [&](std::int64_t rows) {
    return 2 * (c.vmem_footprint(isa::DType::kF32, rows, a.cols) + c.vmem_footprint(isa::DType::kBf16, rows, a.cols)) <=
           c.vmem_budget();
  };
  while (r > align && !fits(r)) r = std::max(align, round_up(r / 2, align));
  return fits(r) ? r : 0;
}

// Seconds the convert pass over `a` keeps the HBM busy (read f32, write
// bf16, whole rows), plus a kernel's start-up and one access latency.
double convert_seconds(const Ctx& c, const Array& a) {
  const HbmConfig& hbm = c.chip.hbm;
  const double in = static_cast<double>(a.rows * a.cols) * 4, out = in / 2;
  const double per_byte = hbm_seconds_per_byte(hbm, hbm_tile(isa::DType::kF32, a.rows, a.cols, a.cols, true));
  return (in + out) * per_byte + c.chip.core.sequencer.kernel_overhead + 2 * hbm.latency;
}

// A separate pass writing `src` (f32) as a bf16 array, in chunks of rows
// through two VMEM slots: chunk i+1 loads while chunk i is converted on the
// VPU and written back.
Array emit_convert_pass(Ctx& c, const Array& src, const std::string& name, std::int64_t chunk) {
  const Array dst = c.hbm_array(name, hlo::Shape(hlo::ElementType::kBF16, {src.rows, src.cols}));
  const std::int64_t n = ceil_div(src.rows, chunk);
  const std::array<isa::SemRef, 2> ld{c.sem("cvt.ld0"), c.sem("cvt.ld1")}, st{c.sem("cvt.st0"), c.sem("cvt.st1")};
  std::array<std::uint32_t, 2> in{}, out{};
  for (std::size_t s = 0; s < 2; ++s) {
    in[s] = c.vmem("cvt.in", isa::DType::kF32, chunk, src.cols);
    out[s] = c.vmem("cvt.out", isa::DType::kBf16, chunk, src.cols);
  }
  const auto rows_of = [&](std::int64_t i) { return std::min(chunk, src.rows - i * chunk); };
  c.kernel_start();
  c.dma(c.tile(in[0], 0, rows_of(0), 0, src.cols), c.tile(src.buffer, 0, rows_of(0), 0, src.cols), ld[0]);
  for (std::int64_t i = 0; i < n; ++i) {
    const auto s = static_cast<std::size_t>(i % 2);
    const std::int64_t r = rows_of(i);
    if (i + 1 < n) {
      const std::int64_t rn = rows_of(i + 1);
      c.dma(c.tile(in[1 - s], 0, rn, 0, src.cols), c.tile(src.buffer, (i + 1) * chunk, rn, 0, src.cols), ld[1 - s]);
    }
    c.wait(ld[s], 1);
    if (i >= 2) c.wait(st[s], 1);  // chunk i-2's write-back read this slot
    c.emit(isa::VpuElementwise{isa::VpuOp::kConvert, c.tile(out[s], 0, r, 0, src.cols), c.tile(in[s], 0, r, 0, src.cols),
                               {}, {}, 0});
    c.dma(c.tile(dst.buffer, i * chunk, r, 0, src.cols), c.tile(out[s], 0, r, 0, src.cols), st[s]);
  }
  c.wait(st[0], 1);  // each slot's last write-back (the loop waited for the others)
  if (n >= 2) c.wait(st[1], 1);
  return dst;
}

}  // namespace

void lower_dot(Ctx& ctx, const DotSpec& d) {
  // f32 operands of a bf16 MXU pass: converted inside the dot, tile by tile,
  // or first by a pass of their own (read once as f32, written as bf16) when
  // the dot's estimate with bf16 operands plus that pass is lower, as a
  // compiler free to fuse the convert or not would choose. One TensorCore,
  // unbatched dots.
  const PreConvert pc = f32_operands(ctx, d);
  if ((pc.lhs || pc.rhs) && ctx.opt.cores <= 1 && d.batch == 1 && d.lhs_batch.empty() && d.rhs_batch.empty()) {
    DotSpec bf = d;
    double pass_s = 0;
    const std::int64_t lchunk = pc.lhs ? convert_chunk_rows(ctx, d.lhs) : 0;
    const std::int64_t rchunk = pc.rhs ? convert_chunk_rows(ctx, d.rhs) : 0;
    if ((!pc.lhs || lchunk > 0) && (!pc.rhs || rchunk > 0)) {
      if (pc.lhs) {
        bf.lhs.dtype = isa::DType::kBf16;
        pass_s += convert_seconds(ctx, d.lhs);
      }
      if (pc.rhs) {
        bf.rhs.dtype = isa::DType::kBf16;
        pass_s += convert_seconds(ctx, d.rhs);
      }
      const double fused = DotLowering(ctx, d).estimate(), separate = DotLowering(ctx, bf).estimate() + pass_s;
      if (separate < fused) {
        // Each pass waits for all its DMAs: its VMEM slots are free again
        // for the next pass and for the dot's tiles.
        const std::int64_t mark = ctx.vmem_used();
        if (pc.lhs) bf.lhs = emit_convert_pass(ctx, d.lhs, d.name + ".lhs.bf16", lchunk);
        ctx.vmem_rewind(mark);
        if (pc.rhs) bf.rhs = emit_convert_pass(ctx, d.rhs, d.name + ".rhs.bf16", rchunk);
        ctx.vmem_rewind(mark);
        ctx.report.tilings.push_back(fmt::format("{}: f32 {} converted to bf16 by a pass of their own first "
                                                 "(estimated {:.4g} us with the pass, {:.4g} us converting each tile)",
                                                 d.name, pc.lhs && pc.rhs ? "lhs and rhs" : pc.lhs ? "lhs" : "rhs",
                                                 separate * 1e6, fused * 1e6));
        DotLowering l(ctx, bf);
        l.run();
        return;
      }
    }
  }
  DotLowering l(ctx, d);
  l.run();
}

}  // namespace tpusim::lower
