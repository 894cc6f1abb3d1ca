#include "isa/lower/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <numeric>
#include <vector>

#include "common/units.h"
#include "isa/lower/dot_cost.h"
#include "sim/timing/mxu_timing.h"

namespace tpusim::lower {
namespace {

using isa::DType;
using isa::TileRef;
using isa::VpuOp;

class Attention {
 public:
  Attention(Ctx& c, const hlo::AttentionCall& a, const AttentionArrays& arr) : c_(c), a_(a), arr_(arr) {
    const auto& mxu = c.chip.core.mxu;
    nmxu_ = std::max<std::int64_t>(1, mxu.count);
    R_ = std::max<std::int64_t>(1, mxu.rows);
    C_ = std::max<std::int64_t>(1, mxu.cols);
    dt_ = mxu_stream_dtype(mxu, arr.q.dtype);
    dqk_ = std::max<std::int64_t>(1, a.qk_dim);
    dv_ = std::max<std::int64_t>(1, a.v_dim);
    // The kernel's grid steps (core.attention): tpusim's blocks are at most
    // the grid step's rows, and a grid step covers gq_ x gkv_ of them.
    const auto& grid = c.chip.core.attention;
    grid_q_ = a.backward ? grid.block_q_bwd : grid.block_q;
    grid_kv_ = a.backward ? grid.block_kv_bwd : grid.block_kv;
    b_ = choose_block();
    // Queries too short to fill a block (decode: a token or a few per
    // sequence) are packed: the query heads sharing a key/value head are one
    // block's rows, and a (batch, kv head) group reads that head's K and V
    // once, as TPU decode kernels do (ragged paged attention packs a KV
    // head's queries). Unmasked forward only.
    const std::int64_t heads = std::max<std::int64_t>(1, a.heads), kv_heads = std::max<std::int64_t>(1, a.kv_heads);
    packed_ = !a.backward && !a.causal && heads % kv_heads == 0 && std::max<std::int64_t>(1, a.q_len) < b_;
    const std::int64_t qrows = std::max<std::int64_t>(1, a.q_len) * (packed_ ? heads / kv_heads : 1);
    bq_ = packed_ ? std::min(b_, round_up(qrows, c.row_align(dt_))) : b_;
    // Megacore: the cores split the (batch, head) groups.
    const auto [first, last] = c.core_share(std::max<std::int64_t>(1, a.batch) * (packed_ ? kv_heads : heads));
    groups_ = last - first;
    rows_ = std::max<std::int64_t>(c.min_tile_rows(), bq_ / 8);
    piece_ = std::min(b_, backward_piece(b_));
    nq_ = ceil_div(qrows, bq_);
    nkv_ = ceil_div(std::max<std::int64_t>(1, a.kv_len), b_);
    gq_ = grid_q_ > 0 ? std::max<std::int64_t>(1, grid_q_ / (a.backward ? b_ : bq_)) : 1;
    gkv_ = grid_kv_ > 0 ? std::max<std::int64_t>(1, grid_kv_ / b_) : 1;
    // Operands read head-major, [B*heads*S, D] (the layout XLA's TPU layout
    // assignment gives a kernel's operands, so a block is one contiguous
    // run; the relayout from the dump's BSHD is not charged): the stand-in
    // block of batch 0, head 0.
    q_ = c_.view(arr.q, a.batch * a.q_len * a.heads, dqk_);
    k_ = c_.view(arr.k, a.batch * a.kv_len * a.kv_heads, dqk_);
    v_ = c_.view(arr.v, a.batch * a.kv_len * a.kv_heads, dv_);
    ld_ = {c_.sem("attn.ld0"), c_.sem("attn.ld1")};
    sq_ = {c_.sem("attn.sq0"), c_.sem("attn.sq1")};
    ldk_ = {c_.sem("attn.k0"), c_.sem("attn.k1")};
    ldv_ = {c_.sem("attn.v0"), c_.sem("attn.v1")};
    st_ = c_.sem("attn.st");
  }

  std::string run() {
    std::int64_t pairs = 0;
    if (groups_ <= 0) return "flash attention: no (batch, head) group for this TensorCore";
    if (a_.backward) {
      pairs = backward();
    } else {
      pairs = forward();
    }
    const std::int64_t all = nq_ * nkv_;
    const std::string steps =
        gq_ * gkv_ > 1 ? fmt::format(", grid steps of {} x {} blocks (core.attention: {} x {} rows)", gq_, gkv_,
                                     grid_q_, grid_kv_)
                       : "";
    return fmt::format("flash attention{}: blocks of {} rows{}, {} of {} block pairs per {}{}{}{}",
                       a_.backward ? " backward (S and P recomputed; dV, dP, dQ, dK: five products)" : "", b_,
                       packed_ ? fmt::format(" ({} query rows: the query heads of a key/value head packed)", bq_) : "",
                       pairs, all, packed_ ? "key/value head" : "head",
                       a_.causal ? fmt::format(" ({} above the diagonal skipped, causal)", all - pairs) : "", steps,
                       a_.assumed.empty() ? "" : "; " + a_.assumed);
  }

 private:
  // The largest power-of-two block (rows of Q and of K/V at a time) up to
  // 1024, and up to the kernel's grid step when one is set, whose VMEM fits
  // the budget and that the sequences fill.
  std::int64_t choose_block() const {
    const std::int64_t lanes = c_.lanes();
    const std::int64_t longest = std::max(a_.q_len, a_.kv_len);
    std::int64_t cap = 1024;
    for (const std::int64_t g : {grid_q_, grid_kv_}) {
      if (g > 0) cap = std::min(cap, g);
    }
    for (const std::int64_t b : {1024, 512, 256, 128}) {
      if (b > cap && b > 128) continue;
      if (b > lanes && b > longest) continue;
      if (footprint(b) <= c_.vmem_budget()) return b;
    }
    return std::min<std::int64_t>(128, std::max(lanes, longest));
  }
  // Rows of the backward's pieces: the rows of a weight tile (a piece
  // streams at least as long as the next weights take to load, one row a
  // cycle or faster: core.mxu.weight_load_rows_per_cycle; a faster load
  // does not make the pieces, and so the kernel's schedule, smaller), at
  // least the softmax's piece, in whole tiles of rows and of lanes: a piece
  // also slices the columns of P^T and dS^T.
  std::int64_t backward_piece(std::int64_t b) const {
    return round_up(std::max(b / 8, c_.chip.core.mxu.rows), std::lcm(c_.min_tile_rows(), c_.lanes()));
  }
  std::int64_t footprint(std::int64_t b) const {
    const auto fp = [&](DType d, std::int64_t r, std::int64_t cols) { return c_.vmem_footprint(d, r, cols); };
    // Per slot (two, so one block's softmax overlaps the next one's
    // products): the forward's S (f32) and P; the backward's S and dP (f32)
    // and P, P^T, dS, dS^T.
    const std::int64_t square = a_.backward ? 2 * fp(DType::kF32, b, b) + 4 * fp(dt_, b, b)
                                            : fp(DType::kF32, b, b) + fp(dt_, b, b);
    const std::int64_t rows = 10 * (fp(dt_, b, dqk_) + fp(dt_, b, dv_)) + 12 * fp(DType::kF32, b, std::max(dqk_, dv_)) +
                              nmxu_ * fp(DType::kF32, b, C_) + 16 * fp(DType::kF32, b, 1);
    // The backward's dV and dK partial products, per slot and piece.
    const std::int64_t pieces = a_.backward ? ceil_div(b, std::min(b, backward_piece(b))) : 0;
    const std::int64_t partials = 2 * pieces * (fp(DType::kF32, b, dqk_) + fp(DType::kF32, b, dv_));
    return 2 * square + rows + partials;
  }

  std::uint32_t buf(const std::string& name, DType d, std::int64_t rows, std::int64_t cols) {
    return c_.vmem(name, d, rows, cols);
  }
  TileRef whole(std::uint32_t b) const { return c_.whole(b); }
  // Block `blk` of the stand-in (batch 0, head 0) rows of a [B*heads*S, D] view.
  TileRef block(const Array& view, std::int64_t blk, std::int64_t d) const { return block(view, blk, d, b_); }
  TileRef block(const Array& view, std::int64_t blk, std::int64_t d, std::int64_t rows) const {
    const std::int64_t row = std::min(blk * rows, std::max<std::int64_t>(0, view.rows - rows));
    return c_.tile(view.buffer, row, std::min(rows, view.rows), 0, d);
  }

  void vpu(VpuOp op, const TileRef& dst, const TileRef& a, const TileRef& b = {}, const TileRef& c = {},
           double imm = 0) {
    c_.emit(isa::VpuElementwise{op, dst, a, b, c, imm});
  }
  void zero(const TileRef& t) { vpu(VpuOp::kMul, t, t, {}, {}, 0.0); }

  // out (M x N, f32) = lhs (M x K) . rhs (K x N): rhs is the weights, in
  // R x C tiles; the N slices deal round robin over the MXUs, and a slice
  // whose K slices ran on several MXUs sums their partial products.
  // Each slice's partial sums go to the next free accumulator rows of its
  // MXU (a ring of 4 blocks of rows), so a slice's matmuls stream while an
  // earlier slice's results are popped; the rows are reused once the ring
  // comes round, after their pop.
  // With `piece` (row pieces of one step, each its own product), every K
  // slice of an N slice stays on one MXU and sums in its accumulators, and
  // the pieces alternate the MXUs: no partial products to add on the VPU.
  void product(const TileRef& out, const TileRef& lhs, const TileRef& rhs, std::int64_t piece = -1) {
    const std::int64_t M = lhs.rows, K = lhs.cols, N = rhs.cols;
    const std::int64_t nks = ceil_div(K, R_), nns = ceil_div(N, C_);
    for (std::int64_t ns = 0; ns < nns; ++ns) {
      const std::int64_t nc = std::min(C_, N - ns * C_);
      std::vector<std::int64_t> touched;
      std::map<std::int64_t, std::int64_t> acc;  // MXU -> its accumulator rows for this slice
      for (std::int64_t ks = 0; ks < nks; ++ks) {
        const std::int64_t kr = std::min(R_, K - ks * R_);
        const std::int64_t m = piece >= 0 ? (piece + ns) % nmxu_ : (ns * nks + ks) % nmxu_;
        const bool first = std::find(touched.begin(), touched.end(), m) == touched.end();
        if (first) {
          touched.push_back(m);
          std::int64_t& next = acc_next_[m];
          if (next + M > 4 * b_) next = 0;
          acc[m] = next;
          next += M;
        }
        c_.emit(isa::MxuLoadWeights{m, c_.tile(rhs.buffer, rhs.row + ks * R_, kr, rhs.col + ns * C_, nc)});
        c_.emit(isa::MxuMatmul{m, c_.tile(lhs.buffer, lhs.row, M, lhs.col + ks * R_, kr), acc[m],
                               first ? isa::AccMode::kOverwrite : isa::AccMode::kAccumulate});
      }
      const TileRef slice = c_.tile(out.buffer, out.row, M, out.col + ns * C_, nc);
      c_.emit(isa::MxuPop{touched.front(), slice, acc[touched.front()]});
      for (std::size_t p = 1; p < touched.size(); ++p) {
        const TileRef part = c_.tile(partial(p - 1, nc), 0, M, 0, nc);
        c_.emit(isa::MxuPop{touched[p], part, acc[touched[p]]});
        vpu(VpuOp::kAdd, slice, slice, part);
      }
    }
  }
  // dst (M x 1) = op over each row of src (M x N): the VPU folds the row's
  // halves together (into `scratch`, M x N/2) down to one vreg of lanes,
  // and the XLU reduces across those lanes, as a TPU kernel does (a lane
  // reduce of every vreg would keep the XLU busy N/lanes times as long).
  void row_reduce(isa::ReduceOp op, const TileRef& dst, const TileRef& src, const TileRef& scratch) {
    const VpuOp fold = op == isa::ReduceOp::kMax ? VpuOp::kMax : op == isa::ReduceOp::kMin ? VpuOp::kMin : VpuOp::kAdd;
    const std::int64_t lanes = c_.lanes();
    TileRef cur = src;
    std::int64_t cols = src.cols;
    while (cols > lanes && cols % (2 * lanes) == 0) {
      const std::int64_t h = cols / 2;
      const TileRef out = c_.tile(scratch.buffer, scratch.row, src.rows, scratch.col, h);
      vpu(fold, out, c_.tile(cur.buffer, cur.row, src.rows, cur.col, h), c_.tile(cur.buffer, cur.row, src.rows, cur.col + h, h));
      cur = out;
      cols = h;
    }
    c_.emit(isa::XluReduce{op, dst, c_.tile(cur.buffer, cur.row, src.rows, cur.col, cols)});
  }

  // Partial-product buffer i of a slice `cols` wide (b rows, the longest
  // product): one per width, so a narrow slice (a head dim under the MXU's
  // width) is its whole buffer's width, as VMEM tiling needs.
  std::uint32_t partial(std::size_t i, std::int64_t cols) {
    const auto key = std::make_pair(i, cols);
    if (auto it = parts_.find(key); it != parts_.end()) return it->second;
    return parts_.emplace(key, buf("attn.part", DType::kF32, b_, cols)).first->second;
  }

  // How B's write-back (dQ, read-modified-written per block on sq_[slot])
  // is ordered against the slot's next use.
  enum class WriteBack {
    kNone,          // B writes nothing back
    kWaitInB,       // B waits for its slot's previous write-back before refilling its staging buffer
    kWaitBeforeLoad,  // the write-back's rows are the ones the slot loads next: the load waits for it
  };

  // Steps first..last (step(i)): whole iterations of a `repeat` whose body
  // is the fewest steps that are whole slot pairs (the slots alternate) and
  // a multiple of `period` (the fences' pattern), the rest unrolled after it.
  void loop_steps(std::int64_t first, std::int64_t last, std::int64_t period,
                  const std::function<void(std::int64_t)>& step) {
    const std::int64_t body = period % 2 == 0 ? period : 2 * period;
    const std::int64_t iterations = std::max<std::int64_t>(0, last - first + 1) / body;
    std::int64_t i = first;
    if (iterations > 0) {
      c_.emit(isa::Repeat{iterations});
      for (std::int64_t t = 0; t < body; ++t) step(first + t);
      c_.emit(isa::End{});
      i += iterations * body;
    }
    for (; i <= last; ++i) step(i);
  }

  // n blocks in two stages, software-pipelined: A(slot) (the block's first
  // product) is issued before B of the block before it, so the MXU computes
  // block j+1's scores while the VPU/EUP/XLU work on block j. Block j+1's
  // loads are issued before B(j) and waited for after it, so they run under
  // B(j) (they start once B(j-1), the slot's last reader, is done), and the
  // sequencer's wait for them does not hold B(j) back. Slots alternate; the
  // steps k = 1..n-1 (each B(k-1) and A(k)) run inside `repeat`
  // (loop_steps), the first A and the last B outside.
  // A step starts a grid step of the kernel (an mxu.fence, Ctx::mxu_step)
  // when fence_at(k) (k = n: the last B); fence_at has period `period`.
  // Each write-back slot starts with one signal given up front; the last
  // write-backs are waited for at the end.
  void staged(std::int64_t n, const std::function<std::int64_t(int)>& load, const std::function<void(int)>& stage_a,
              const std::function<void(int)>& stage_b, const std::function<bool(std::int64_t)>& fence_at,
              std::int64_t period, WriteBack wb = WriteBack::kNone) {
    if (n <= 0) return;
    const bool stores = wb != WriteBack::kNone;
    const auto fetch = [&](int slot) {
      if (wb == WriteBack::kWaitBeforeLoad) c_.wait(sq_[static_cast<std::size_t>(slot)], 1);
      return load(slot);
    };
    const auto ready = [&](int slot, std::int64_t k) {
      c_.wait(ld_[static_cast<std::size_t>(slot)], k);
      stage_a(slot);
    };
    const auto step = [&](std::int64_t k) {  // B(k-1), A(k)
      const int slot = static_cast<int>(k % 2);
      if (fence_at(k)) c_.mxu_step();
      const std::int64_t loads = fetch(slot);
      stage_b(1 - slot);
      ready(slot, loads);
    };
    if (stores) {
      c_.emit(isa::SemSignal{sq_[0], 1});
      c_.emit(isa::SemSignal{sq_[1], 1});
    }
    if (fence_at(0)) c_.mxu_step();
    ready(0, fetch(0));
    loop_steps(1, n - 1, period, step);
    if (fence_at(n)) c_.mxu_step();
    stage_b(static_cast<int>((n - 1) % 2));
    if (stores) {
      c_.wait(sq_[0], 1);
      c_.wait(sq_[1], 1);
    }
  }

  // The forward's KV blocks 0..n-1, software-pipelined with K and V loaded
  // apart: block j's K (needed by A: the transpose and S = Q K^T) two blocks
  // ahead, its V (needed by B: the softmax and P V) one block ahead. In
  // program order, step j is: A(j+1), the loads of K(j+2) and V(j+1), then
  // B(j). Step 0 runs first (its B starts the running max, sum and O
  // rather than updating them), the steady steps inside `repeat`
  // (loop_steps), the last two after it. A step starts a grid step of the kernel (an mxu.fence) when
  // fence_at(j + 1), the index of the A it issues (n: the last B alone);
  // fence_at has period `period`.
  // With `next` (the next group's loads, run once this group no longer
  // reads Q, slot 0 or block 1's K), blocks 0's K and V and block 1's K are
  // already in flight (the previous group's `next` issued them).
  void forward_blocks(std::int64_t n, const std::function<void(int)>& load_k, const std::function<void(int)>& load_v,
                      const std::function<void(int)>& stage_a, const std::function<void(int, bool)>& stage_b,
                      const std::function<bool(std::int64_t)>& fence_at, std::int64_t period,
                      const std::function<void()>& next = {}) {
    if (n <= 0) return;
    const auto step = [&](std::int64_t j, bool next_k) {
      const int slot = static_cast<int>(j % 2), other = 1 - slot;
      if (fence_at(j + 1)) c_.mxu_step();
      c_.wait(ldk_[static_cast<std::size_t>(other)], 1);
      stage_a(other);  // A(j+1)
      if (next_k) load_k(slot);  // K(j+2)
      load_v(other);  // V(j+1)
      c_.wait(ldv_[static_cast<std::size_t>(slot)], 1);
      stage_b(slot, j == 0);  // B(j)
    };
    if (!next) {
      load_k(0);
      load_v(0);
    }
    if (fence_at(0)) c_.mxu_step();
    c_.wait(ldk_[0], 1);
    stage_a(0);
    if (n == 1) {
      c_.wait(ldv_[0], 1);
      stage_b(0, true);
      if (next) next();
      return;
    }
    if (!next) load_k(1);
    step(0, n >= 3);
    loop_steps(1, n - 3, period, [&](std::int64_t j) { step(j, true); });  // they load K(j+2)
    if (n >= 3) step(n - 2, false);
    const int slot = static_cast<int>((n - 1) % 2);
    if (next && slot == 1) next();  // slot 0 is free: B(n-1) reads slot 1
    if (fence_at(n)) c_.mxu_step();
    c_.wait(ldv_[static_cast<std::size_t>(slot)], 1);
    stage_b(slot, false);  // j = n-1
    if (next && slot == 0) next();
  }

  // KV blocks query block i attends to.
  std::int64_t kv_blocks_for(std::int64_t i) const { return a_.causal ? std::min(nkv_, i + 1) : nkv_; }

  // Per head: per query block, the online softmax over its KV blocks.
  std::int64_t forward() {
    const std::int64_t b = b_, bq = bq_;  // KV rows and query rows of a block
    const Array out = c_.view(arr_.out_q, a_.batch * a_.q_len * a_.heads, dv_);
    // Two query buffers (the next block's Q loads during this one) and two
    // output staging buffers (a block's write-back runs during the next).
    const std::array<TileRef, 2> qs{whole(buf("attn.q", dt_, bq, dqk_)), whole(buf("attn.q", dt_, bq, dqk_))};
    const std::array<TileRef, 2> kb{whole(buf("attn.k", dt_, b, dqk_)), whole(buf("attn.k", dt_, b, dqk_))};
    const std::array<TileRef, 2> vb{whole(buf("attn.v", dt_, b, dv_)), whole(buf("attn.v", dt_, b, dv_))};
    const auto pair = [&](const char* n, DType d, std::int64_t r, std::int64_t cols) {
      return std::array<TileRef, 2>{whole(buf(n, d, r, cols)), whole(buf(n, d, r, cols))};
    };
    const auto kt = pair("attn.kT", dt_, dqk_, b);
    const auto s = pair("attn.s", DType::kF32, bq, b);
    const auto p = pair("attn.p", dt_, bq, b);
    const auto pv = pair("attn.pv", DType::kF32, bq, dv_);
    const auto mn = pair("attn.mnew", DType::kF32, bq, 1), mx = pair("attn.rowmax", DType::kF32, bq, 1);
    const auto ls = pair("attn.rowsum", DType::kF32, bq, 1), t = pair("attn.t", DType::kF32, bq, 1);
    const auto al = pair("attn.alpha", DType::kF32, bq, 1);
    const auto half = pair("attn.half", DType::kF32, bq, std::max<std::int64_t>(c_.lanes(), b / 2));
    const TileRef o = whole(buf("attn.o", DType::kF32, bq, dv_));
    const std::array<TileRef, 2> obs{whole(buf("attn.out", out.dtype, bq, dv_)), whole(buf("attn.out", out.dtype, bq, dv_))};
    const TileRef m = whole(buf("attn.m", DType::kF32, bq, 1)), l = whole(buf("attn.l", DType::kF32, bq, 1));
    std::int64_t pairs = 0;
    const auto load_k = [&](int slot) {
      const auto x = static_cast<std::size_t>(slot);
      c_.dma(kb[x], block(k_, slot, dqk_), ldk_[x]);
    };
    const auto load_v = [&](int slot) {
      const auto x = static_cast<std::size_t>(slot);
      c_.dma(vb[x], block(v_, slot, dv_), ldv_[x]);
    };
    // Packed short queries (one query block per group: decode) prefetch the
    // next group's Q and first K/V block under this group's last stages, as
    // a decode kernel pipelines its sequences; the loads issued for the
    // group after the last are waited for at the end.
    const bool ahead = packed_ && nq_ == 1;
    const auto next = [&] {
      c_.dma(qs[0], block(q_, 0, dqk_, bq), ld_[0]);
      load_k(0);
      load_v(0);
      if (nkv_ > 1) load_k(1);
    };
    if (ahead) next();
    c_.emit(isa::Repeat{groups_});
    for (std::int64_t i = 0; i < nq_; ++i) {
      const auto qx = static_cast<std::size_t>(i % 2);
      const TileRef q = qs[qx], ob = obs[qx];
      if (i == 0 && !ahead) c_.dma(q, block(q_, i, dqk_, bq), ld_[qx]);
      c_.wait(ld_[qx], 1);
      if (i + 1 < nq_) c_.dma(qs[1 - qx], block(q_, i + 1, dqk_, bq), ld_[1 - qx]);
      const std::int64_t n = kv_blocks_for(i);
      pairs += n;
      // O = alpha O + P V of the block in `slot` (alpha = 0 for the first).
      int pending = -1;
      const auto fold = [&](int slot) {
        const auto x = static_cast<std::size_t>(slot);
        vpu(VpuOp::kFma, o, o, al[x], pv[x]);
      };
      forward_blocks(
          n, load_k, load_v,
          [&](int slot) {
            const auto x = static_cast<std::size_t>(slot);
            c_.emit(isa::XluTranspose{kt[x], kb[x]});
            product(s[x], q, kt[x]);                                        // S = Q K^T
          },
          [&](int slot, bool first) {
            // Rows are independent: the softmax runs on eighths of the
            // rows, one step of the chain for every piece before the next
            // step (the order units take them), so the VPU, EUP and XLU
            // work on different pieces at once. The first KV block starts
            // the running max, sum and O (nothing to rescale).
            const auto x = static_cast<std::size_t>(slot);
            std::vector<std::int64_t> starts;
            for (std::int64_t r0 = 0; r0 < bq; r0 += rows_) starts.push_back(r0);
            const auto each = [&](const std::function<void(const std::function<TileRef(const TileRef&)>&)>& step) {
              for (const std::int64_t r0 : starts) {
                step([&](const TileRef& t0) { return c_.tile(t0.buffer, t0.row + r0, std::min(rows_, bq - r0), t0.col, t0.cols); });
              }
            };
            each([&](const auto& r) { row_reduce(isa::ReduceOp::kMax, r(mx[x]), r(s[x]), r(half[x])); });  // row max
            if (first) {
              each([&](const auto& r) { vpu(VpuOp::kCopy, r(mn[x]), r(mx[x])); });
            } else {
              each([&](const auto& r) { vpu(VpuOp::kMax, r(mn[x]), r(m), r(mx[x])); });                     // running max
            }
            each([&](const auto& r) { vpu(VpuOp::kSub, r(s[x]), r(s[x]), r(mn[x])); });                     // S - m
            each([&](const auto& r) { c_.emit(isa::EupUnary{isa::EupOp::kExp, r(s[x]), r(s[x])}); });      // exp
            each([&](const auto& r) { row_reduce(isa::ReduceOp::kSum, r(ls[x]), r(s[x]), r(half[x])); });  // row sum
            each([&](const auto& r) {
              if (first) {
                vpu(VpuOp::kCopy, r(l), r(ls[x]));
                vpu(VpuOp::kMul, r(al[x]), r(mx[x]), {}, {}, 0.0);                                         // alpha = 0
                // O = 0, written (not read) from the row max broadcast along
                // the rows, so no accumulator is read before it is written.
                vpu(VpuOp::kMul, r(o), r(mx[x]), {}, {}, 0.0);
              } else {
                vpu(VpuOp::kSub, r(t[x]), r(m), r(mn[x]));
                c_.emit(isa::EupUnary{isa::EupOp::kExp, r(al[x]), r(t[x])});                                // alpha
                vpu(VpuOp::kFma, r(l), r(l), r(al[x]), r(ls[x]));                                           // l
              }
              vpu(VpuOp::kCopy, r(m), r(mn[x]));
            });
            each([&](const auto& r) { vpu(VpuOp::kConvert, r(p[x]), r(s[x])); });                           // P
            // The previous block's O update, after this block's softmax: the
            // VPU does not wait for that block's P V before starting on the
            // next scores, so the products of one block run under the next
            // block's softmax.
            if (pending >= 0) fold(pending);
            // P V per quarter of the rows (each quarter reuses the loaded V
            // tiles for a quarter of the rows; smaller pieces would reload
            // the weights more often than they stream rows through them).
            // A block of one piece (short packed queries: decode) puts its
            // P V on the MXU of its slot, so consecutive blocks' products
            // alternate the MXUs (on one MXU they would hold its weight
            // loads while the other idles).
            const std::int64_t quarter = std::max(rows_, round_up(ceil_div(bq, 4), rows_));
            const std::int64_t first_piece = bq <= quarter ? slot : 0;
            for (std::int64_t r0 = 0; r0 < bq; r0 += quarter) {
              const auto r = [&](const TileRef& t0) {
                return c_.tile(t0.buffer, t0.row + r0, std::min(quarter, bq - r0), t0.col, t0.cols);
              };
              product(r(pv[x]), r(p[x]), vb[x], first_piece + r0 / quarter);                               // P V
            }
            pending = slot;
          },
          [&](std::int64_t k) { return i % gq_ == 0 && k % gkv_ == 0; }, gkv_,
          ahead ? std::function<void()>(next) : std::function<void()>());
      fold(pending);
      vpu(VpuOp::kDiv, o, o, l);
      if (i >= 2) c_.wait(st_, 1);  // block i-2's write-back read this staging buffer
      vpu(VpuOp::kConvert, ob, o);
      c_.dma(block(out, i, dv_, bq), ob, st_);
    }
    c_.wait(st_, std::min<std::int64_t>(nq_, 2));
    c_.emit(isa::End{});
    if (ahead) {
      c_.wait(ld_[0], 1);
      c_.wait(ldk_[0], 1);
      c_.wait(ldv_[0], 1);
      if (nkv_ > 1) c_.wait(ldk_[1], 1);
    }
    return pairs;
  }

  // Per head: delta = rowsum(dO o O) per query block; then per KV block, its
  // query blocks (from the diagonal on, causal) recompute S and P and run
  // the five products; dQ is read, added to and written back per pair.
  std::int64_t backward() {
    const std::int64_t b = b_;
    const Array o = c_.view(arr_.o, a_.batch * a_.q_len * a_.heads, dv_);
    const Array d_o = c_.view(arr_.d_o, a_.batch * a_.q_len * a_.heads, dv_);
    const Array dq = c_.view(arr_.out_q, a_.batch * a_.q_len * a_.heads, dqk_);
    const Array dk = c_.view(arr_.out_k, a_.batch * a_.kv_len * a_.kv_heads, dqk_);
    const Array dv = c_.view(arr_.out_v, a_.batch * a_.kv_len * a_.kv_heads, dv_);
    // The softmax statistics per query row (the forward's log-sum-exp, and
    // delta): f32 [S, 1] per head, small.
    const Array stats = c_.hbm_array("attn.stats", hlo::Shape(hlo::ElementType::kF32, {2 * nq_ * b, 1}));
    const auto stat = [&](std::int64_t which, std::int64_t blk) {
      return c_.tile(stats.buffer, which * nq_ * b + blk * b, b, 0, 1);
    };
    const TileRef kb = whole(buf("attn.k", dt_, b, dqk_)), vb = whole(buf("attn.v", dt_, b, dv_));
    const TileRef kt = whole(buf("attn.kT", dt_, dqk_, b)), vt = whole(buf("attn.vT", dt_, dv_, b));
    std::array<TileRef, 2> qb{}, dob{}, dqb{}, dqw{}, lse{}, delta{};
    // dQ's write-back leaves from its own staging buffer (so the slot's next
    // load need not wait for it), to stand-in rows at the end of dQ, apart
    // from the rows the slots load; when dQ is too short for that, to the
    // rows the slot loads next, and that load waits for it.
    const bool apart = dq.rows >= 4 * b;
    const WriteBack wb = apart ? WriteBack::kWaitInB : WriteBack::kWaitBeforeLoad;
    const auto dq_out = [&](int slot) {
      const std::int64_t row = apart ? dq.rows - (slot + 1) * b : std::min<std::int64_t>(slot, nq_ - 1) * b;
      return c_.tile(dq.buffer, row, b, 0, dqk_);
    };
    for (std::size_t sl = 0; sl < 2; ++sl) {
      qb[sl] = whole(buf("attn.q", dt_, b, dqk_));
      dob[sl] = whole(buf("attn.do", dt_, b, dv_));
      dqb[sl] = whole(buf("attn.dq", dq.dtype, b, dqk_));
      dqw[sl] = whole(buf("attn.dqout", dq.dtype, b, dqk_));
      lse[sl] = whole(buf("attn.lse", DType::kF32, b, 1));
      delta[sl] = whole(buf("attn.delta", DType::kF32, b, 1));
    }
    const auto pair = [&](const char* n, DType d, std::int64_t r, std::int64_t cols) {
      return std::array<TileRef, 2>{whole(buf(n, d, r, cols)), whole(buf(n, d, r, cols))};
    };
    const auto s = pair("attn.s", DType::kF32, b, b), dp = pair("attn.dp", DType::kF32, b, b);
    const auto p = pair("attn.p", dt_, b, b), pt = pair("attn.pT", dt_, b, b);
    const auto ds = pair("attn.ds", dt_, b, b), dst = pair("attn.dsT", dt_, b, b);
    const auto tq = pair("attn.tq", DType::kF32, b, dqk_), dqf = pair("attn.dqf", DType::kF32, b, dqk_);
    for (std::size_t sl = 0; sl < 2; ++sl) {
      for (std::int64_t r0 = 0; r0 < b; r0 += piece_) {
        tvp_[sl].push_back(whole(buf("attn.tvp", DType::kF32, b, dv_)));
        tkp_[sl].push_back(whole(buf("attn.tkp", DType::kF32, b, dqk_)));
      }
    }
    const TileRef dkf = whole(buf("attn.dk", DType::kF32, b, dqk_)), dvf = whole(buf("attn.dv", DType::kF32, b, dv_));
    const TileRef tv = whole(buf("attn.tvd", DType::kF32, b, dv_));
    const TileRef ob = whole(buf("attn.o", dt_, b, dv_)), prod = whole(buf("attn.odo", DType::kF32, b, dv_));
    const TileRef dkb = whole(buf("attn.dkout", dk.dtype, b, dqk_)), dvb = whole(buf("attn.dvout", dv.dtype, b, dv_));
    std::int64_t pairs = 0;
    c_.emit(isa::Repeat{groups_});
    // delta = rowsum(dO o O), one pass over O and dO.
    for (std::int64_t i = 0; i < nq_; ++i) {
      c_.dma(ob, block(o, i, dv_), ld_[1]);
      c_.dma(dob[0], block(d_o, i, dv_), ld_[1]);
      c_.wait(ld_[1], 2);
      vpu(VpuOp::kConvert, prod, ob);
      vpu(VpuOp::kConvert, tv, dob[0]);
      vpu(VpuOp::kMul, prod, prod, tv);
      c_.emit(isa::XluReduce{isa::ReduceOp::kSum, delta[0], prod});
      c_.dma(stat(1, i), delta[0], st_);
      c_.wait(st_, 1);
    }
    for (std::int64_t j = 0; j < nkv_; ++j) {
      c_.dma(kb, block(k_, j, dqk_), ld_[1]);
      c_.dma(vb, block(v_, j, dv_), ld_[1]);
      c_.wait(ld_[1], 2);
      c_.emit(isa::XluTranspose{kt, kb});
      c_.emit(isa::XluTranspose{vt, vb});
      // dK and dV start at zero (written from the loaded K and V, so no
      // accumulator is read before it is written).
      vpu(VpuOp::kConvert, dkf, kb);
      zero(dkf);
      vpu(VpuOp::kConvert, dvf, vb);
      zero(dvf);
      const std::int64_t first = a_.causal ? std::min(j, nq_) : 0;
      const std::int64_t n = nq_ - first;
      pairs += n;
      // The query blocks' stand-in rows alternate with the slot; a slot's
      // dQ write-back completes before that slot reads dQ again.
      staged(
          n,
          [&](int slot) {
            const auto sl = static_cast<std::size_t>(slot);
            const std::int64_t blk = std::min<std::int64_t>(slot, nq_ - 1);
            c_.dma(qb[sl], block(q_, blk, dqk_), ld_[sl]);
            c_.dma(dob[sl], block(d_o, blk, dv_), ld_[sl]);
            c_.dma(dqb[sl], block(dq, blk, dqk_), ld_[sl]);
            c_.dma(lse[sl], stat(0, blk), ld_[sl]);
            c_.dma(delta[sl], stat(1, blk), ld_[sl]);
            return std::int64_t{5};
          },
          [&](int slot) {
            const auto x = static_cast<std::size_t>(slot);
            product(s[x], qb[x], kt);                                 // S = Q K^T (recomputed)
          },
          [&](int slot) {
            // The chain P -> dV, dP -> dS -> dQ, dK runs on row pieces of
            // the query block, each step for every piece before the next
            // step (the order the units take them), so the MXU works on one
            // piece while the VPU, EUP and XLU work on another. dP needs
            // only dO, so its products go first and fill the MXU while the
            // first piece's P is made. A piece is at least as many rows as a
            // weight tile has, so the weights reloaded per piece load while
            // the previous piece streams.
            const auto x = static_cast<std::size_t>(slot);
            vpu(VpuOp::kConvert, dqf[x], dqb[x]);  // the dQ read in first: the slot's next load may then start
            std::vector<std::int64_t> starts;
            for (std::int64_t r0 = 0; r0 < b; r0 += piece_) starts.push_back(r0);
            const auto rows_of = [&](const TileRef& t0, std::int64_t r0) {
              return c_.tile(t0.buffer, t0.row + r0, std::min(piece_, b - r0), t0.col, t0.cols);
            };
            const auto cols_of = [&](const TileRef& t0, std::int64_t r0) {
              return c_.tile(t0.buffer, t0.row, t0.rows, t0.col + r0, std::min(piece_, b - r0));
            };
            for (std::size_t k = 0; k < starts.size(); ++k) {  // dP = dO V^T
              product(rows_of(dp[x], starts[k]), rows_of(dob[x], starts[k]), vt, static_cast<std::int64_t>(k));
            }
            for (const std::int64_t r0 : starts) {
              vpu(VpuOp::kSub, rows_of(s[x], r0), rows_of(s[x], r0), rows_of(lse[x], r0));
              c_.emit(isa::EupUnary{isa::EupOp::kExp, rows_of(s[x], r0), rows_of(s[x], r0)});  // P = exp(S - lse)
              vpu(VpuOp::kConvert, rows_of(p[x], r0), rows_of(s[x], r0));
            }
            for (const std::int64_t r0 : starts) c_.emit(isa::XluTranspose{cols_of(pt[x], r0), rows_of(p[x], r0)});
            for (std::size_t k = 0; k < starts.size(); ++k) {  // dV += P^T dO, per piece of the contraction
              product(tvp_[x][k], cols_of(pt[x], starts[k]), rows_of(dob[x], starts[k]), static_cast<std::int64_t>(k));
            }
            for (const std::int64_t r0 : starts) {
              vpu(VpuOp::kSub, rows_of(dp[x], r0), rows_of(dp[x], r0), rows_of(delta[x], r0));
              vpu(VpuOp::kMul, rows_of(dp[x], r0), rows_of(dp[x], r0), rows_of(s[x], r0));  // dS = P o (dP - delta)
              vpu(VpuOp::kConvert, rows_of(ds[x], r0), rows_of(dp[x], r0));
            }
            for (std::size_t k = 0; k < starts.size(); ++k) {  // dQ += dS K
              product(rows_of(tq[x], starts[k]), rows_of(ds[x], starts[k]), kb, static_cast<std::int64_t>(k));
            }
            for (const std::int64_t r0 : starts) c_.emit(isa::XluTranspose{cols_of(dst[x], r0), rows_of(ds[x], r0)});
            for (std::size_t k = 0; k < starts.size(); ++k) {  // dK += dS^T Q, per piece of the contraction
              product(tkp_[x][k], cols_of(dst[x], starts[k]), rows_of(qb[x], starts[k]), static_cast<std::int64_t>(k));
            }
            vpu(VpuOp::kAdd, dqf[x], dqf[x], tq[x]);
            if (wb == WriteBack::kWaitInB) c_.wait(sq_[x], 1);  // the slot's last write-back has left dqw
            vpu(VpuOp::kConvert, dqw[x], dqf[x]);
            c_.dma(dq_out(slot), dqw[x], sq_[x]);
            for (const TileRef& t : tvp_[x]) vpu(VpuOp::kAdd, dvf, dvf, t);
            for (const TileRef& t : tkp_[x]) vpu(VpuOp::kAdd, dkf, dkf, t);
          },
          [&](std::int64_t k) { return j % gkv_ == 0 && (first + k) % gq_ == 0; }, gq_, wb);
      vpu(VpuOp::kConvert, dkb, dkf);
      vpu(VpuOp::kConvert, dvb, dvf);
      c_.dma(block(dk, j, dqk_), dkb, st_);
      c_.dma(block(dv, j, dv_), dvb, st_);
      c_.wait(st_, 2);
    }
    c_.emit(isa::End{});
    return pairs;
  }

  Ctx& c_;
  const hlo::AttentionCall& a_;
  const AttentionArrays& arr_;
  std::int64_t nmxu_ = 1, R_ = 128, C_ = 128;
  DType dt_ = DType::kBf16;
  std::int64_t dqk_ = 1, dv_ = 1, groups_ = 1, b_ = 128, nq_ = 1, nkv_ = 1;
  std::int64_t bq_ = 128;  // query rows of a forward block (b_, or fewer when packed_)
  bool packed_ = false;     // short queries: a KV head's query heads packed into a block's rows
  std::int64_t grid_q_ = 0, grid_kv_ = 0;  // the kernel's grid step in rows (core.attention; 0 = a block)
  std::int64_t gq_ = 1, gkv_ = 1;          // blocks of Q and of K/V in a grid step
  std::int64_t rows_ = 64;  // rows of the softmax's pieces (an eighth of a query block)
  std::int64_t piece_ = 128;  // rows of the backward's pieces
  std::array<std::vector<TileRef>, 2> tvp_, tkp_;  // per slot, per piece: dV and dK partial products
  Array q_, k_, v_;
  std::array<isa::SemRef, 2> ld_{}, sq_{}, ldk_{}, ldv_{};
  isa::SemRef st_{};
  std::map<std::pair<std::size_t, std::int64_t>, std::uint32_t> parts_;
  std::map<std::int64_t, std::int64_t> acc_next_;  // MXU -> its next free accumulator row
};

}  // namespace

std::string lower_attention(Ctx& c, const hlo::AttentionCall& call, const AttentionArrays& arrays) {
  return Attention(c, call, arrays).run();
}

}  // namespace tpusim::lower
