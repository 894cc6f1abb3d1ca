// Stream kernels: elementwise / broadcast / reduce work (a fusion without a
// dot, or one such top-level op) streamed through VMEM in row chunks of the
// iteration space with double-buffered DMAs. See docs/lowering.md.
#include <algorithm>
#include <array>
#include <initializer_list>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "isa/hlo/attribute_values.h"
#include "isa/lower/context.h"
#include "isa/lower/conv.h"
#include "isa/lower/fusion.h"

#include "common/units.h"

namespace tpusim::lower {
namespace {

using hlo::Opcode;

enum class Form : std::uint8_t { kScalar, kRow, kCol, kFull };

Form join(Form a, Form b) {
  if (a == b) return a;
  if (a == Form::kScalar) return b;
  if (b == Form::kScalar) return a;
  return Form::kFull;  // row x col, or anything with full
}

// The value of one inner instruction on the current chunk.
struct Val {
  Form form = Form::kScalar;
  isa::TileRef tile;
  isa::DType dtype = isa::DType::kF32;
  bool pooled = false;  // tile is a pool temp (freed after last use)
};

struct ArrayStream {
  Array a;
  bool streamed = false;      // per chunk (else resident: once)
  std::int64_t q = 0;         // rows per chunk
  std::uint32_t slot[2] = {isa::TileRef::kNone, isa::TileRef::kNone};
  std::uint32_t tail = isa::TileRef::kNone;
  std::uint32_t resident = isa::TileRef::kNone;
  bool aligned = false;       // same view as the iteration space: tiles feed ops directly
};


struct Step {
  bool eup = false;
  isa::VpuOp vop = isa::VpuOp::kCopy;
  isa::EupOp eop = isa::EupOp::kExp;
};

isa::VpuOp compare_op(const hlo::Instruction& x) {
  const auto d = hlo::word_attr(x, hlo::AttrId::kDirection).value_or("EQ");
  if (d == "NE") return isa::VpuOp::kCmpNe;
  if (d == "LT") return isa::VpuOp::kCmpLt;
  if (d == "LE") return isa::VpuOp::kCmpLe;
  if (d == "GT") return isa::VpuOp::kCmpGt;
  if (d == "GE") return isa::VpuOp::kCmpGe;
  return isa::VpuOp::kCmpEq;
}

isa::ReduceOp reduce_op(const hlo::Instruction& x) {
  for (const hlo::Computation* c : x.called_computations()) {
    if (c == nullptr || c->root() == nullptr) continue;
    const Opcode r = c->root()->opcode();
    if (r == Opcode::kMaximum) return isa::ReduceOp::kMax;
    if (r == Opcode::kMinimum) return isa::ReduceOp::kMin;
    break;
  }
  return isa::ReduceOp::kSum;
}

// Stages of a bitonic sorting network over n elements (padded to 2^L):
// L(L+1)/2, each compares every element with one partner.
std::int64_t bitonic_stages(std::int64_t n) {
  std::int64_t l = 0;
  while ((std::int64_t{1} << l) < n) ++l;
  return l * (l + 1) / 2;
}

// The sort's dimension and its length (1 when it has no array operand).
std::pair<int, std::int64_t> sort_dimension(const hlo::Instruction& x) {
  if (x.operand_count() == 0 || !x.operand(0)->shape().is_array()) return {0, 1};
  const hlo::Shape& s = x.operand(0)->shape();
  const auto dims = hlo::ints_attr(x, hlo::AttrId::kDimensions).value_or(hlo::Ints{});
  const std::int64_t d = dims.empty() ? s.rank() - 1 : dims[0];
  if (d < 0 || d >= s.rank()) return {0, 1};
  return {static_cast<int>(d), s.dim(static_cast<int>(d))};
}
std::int64_t sort_length(const hlo::Instruction& x) { return sort_dimension(x).second; }

class Streamer {
 public:
  Streamer(Ctx& ctx, const StreamKernel& k) : c_(ctx), k_(k) {}

  void run() {
    inputs_ = k_.inputs;
    outputs_ = k_.outputs;
    choose_space();
    plan_arrays();
    const std::size_t first_pc = c_.prog.code.size();
    emit_all();
    // The kernel's values between its loads and stores stay in vector
    // registers (one per streamed array's strip reserved).
    c_.keep_in_registers(temps_, first_pc, static_cast<std::int64_t>(ins_.size() + outs_.size()));
  }

 private:
  // The instructions run per chunk: the fused computation's or the group's.
  std::vector<const hlo::Instruction*> kernel_instructions() const {
    if (k_.group != nullptr) return k_.group->members;
    if (k_.body == nullptr) return {};
    return {k_.body->instructions().begin(), k_.body->instructions().end()};
  }

  // ---- iteration space and chunking ----
  void consider(const hlo::Shape& s) {
    if (!s.is_array()) return;
    const std::int64_t e = std::max<std::int64_t>(1, s.element_count());
    if (e <= space_elems_) return;
    space_elems_ = e;
    const std::int64_t last = s.rank() > 0 ? std::max<std::int64_t>(1, s.dim(s.rank() - 1)) : 1;
    cols_ = last * stored_type(s.element_type()).width;
    rows_ = std::max<std::int64_t>(1, e / last);
  }
  void choose_space() {
    for (const Array& a : inputs_) consider(a.shape);
    for (const Array& a : outputs_) consider(a.shape);
    int ops = 0;
    if (k_.body != nullptr || k_.group != nullptr) {
      for (const hlo::Instruction* x : kernel_instructions()) {
        if (x->has_shape()) consider(x->shape());
        ++ops;
      }
    } else if (k_.single != nullptr && k_.single->has_shape()) {
      consider(k_.single->shape());
      ops = 1;
    }
    const std::int64_t temps = std::min(ops, c_.opt.stream_max_live_temps) + 2 + widened_temps();
    std::int64_t per_row = row_bytes(temps);
    const std::int64_t align = c_.min_tile_rows();
    // Rows too wide for even the smallest chunk (a vocabulary-wide logits
    // row: 8 rows x 128256 columns x a dozen f32 temporaries pass 128 MiB):
    // an elementwise kernel sees the same elements as narrower rows.
    if (static_cast<double>(align * per_row) > c_.opt.stream_vmem_fraction * c_.chip.core.vmem.capacity) {
      fold_wide_rows(temps);
      per_row = row_bytes(temps);
    }
    std::int64_t q = std::min(c_.vmem_budget() / per_row,
                              std::max<std::int64_t>(1, c_.opt.stream_chunk_bytes / (round_up(cols_, c_.lanes()) * 4)));
    q = std::max(align, q / align * align);
    // Bound the program size: at most ~stream_target_chunks chunks per
    // kernel (still far below VMEM for the arrays of real models).
    const std::int64_t few = round_up(ceil_div(rows_, c_.opt.stream_target_chunks), align);
    const auto fits = [&](std::int64_t rows) {
      return static_cast<double>(rows * per_row) <= c_.opt.stream_vmem_fraction * c_.chip.core.vmem.capacity;
    };
    // Past stream_max_chunks chunks the chunk grows, as long as it fits VMEM
    // (more chunks then run as a loop, emit_all()).
    const std::int64_t capped = round_up(ceil_div(rows_, c_.opt.stream_max_chunks), align);
    q = std::max(q, fits(few) ? few : fits(capped) ? capped : q);
    q = whole_segments(q, fits);
    if (q >= rows_) q = rows_;
    q_ = q;
    chunks_ = ceil_div(rows_, q_);
  }

  // f32 copies of bf16 operands live at once where the VPU has no bf16 ALU
  // (vpu_in_f32: up to the three inputs of one op).
  [[nodiscard]] std::int64_t widened_temps() const {
    if (c_.chip.core.vpu.bf16_alu) return 0;
    std::int64_t bf16 = 0;
    for (const Array& a : inputs_) bf16 += a.dtype == isa::DType::kBf16 ? 1 : 0;
    return std::min<std::int64_t>(3, bf16);
  }
  // A sort along a dimension other than the last has segments of several
  // rows of the [rows, cols] view (the dims from the sorted one to the
  // last but one): a chunk holds whole segments when they fit VMEM; else
  // each chunk is sorted alone, an approximation (the merges across chunks
  // through HBM are not charged).
  template <typename Fits>
  std::int64_t whole_segments(std::int64_t q, const Fits& fits) {
    const hlo::Instruction* sort = kernel_sort();
    if (sort == nullptr || sort->operand_count() == 0) return q;
    const auto [d, n] = sort_dimension(*sort);
    const hlo::Shape& s = sort->operand(0)->shape();
    std::int64_t segment = 1;
    for (int i = d; i + 1 < s.rank(); ++i) segment *= std::max<std::int64_t>(1, s.dim(i));
    if (segment <= 1 || q % segment == 0) return q;
    const std::int64_t unit = std::lcm(segment, c_.min_tile_rows());
    const std::int64_t whole = std::max(unit, q / unit * unit);
    if (whole >= rows_ || fits(whole)) return whole;
    note_once(*sort, fmt::format("a sort segment of {} elements does not fit VMEM: each chunk sorted alone "
                                 "(merges across chunks not charged)", segment * cols_));
    return q;
  }
  // The kernel's sort (the op itself, or one fused in), if any.
  [[nodiscard]] const hlo::Instruction* kernel_sort() const {
    if (k_.single != nullptr) return k_.single->opcode() == Opcode::kSort ? k_.single : nullptr;
    for (const hlo::Instruction* x : kernel_instructions()) {
      if (x->opcode() == Opcode::kSort) return x;
    }
    return nullptr;
  }

  // Bytes per row of the iteration space held in VMEM per chunk: two
  // slots and a tail of every streamed array, plus pooled temporaries.
  // (An array of the iteration space's elements counts as seen in rows of
  // cols_, as fold_wide_rows views it.)
  // resident_apart: arrays of fewer elements than the iteration space that
  // fit the resident budget are left out (held whole: resident_bytes()).
  [[nodiscard]] std::int64_t row_bytes(std::int64_t temps, bool resident_apart = false) const {
    std::int64_t per_row = 0;
    for (const auto* arrays : {&inputs_, &outputs_}) {
      for (const Array& a : *arrays) {
        if (!(resident_apart && small_resident(a))) per_row += 3 * array_row_bytes(a);
      }
    }
    per_row += temps * 2 * round_up(cols_, c_.lanes()) * 4;
    return std::max<std::int64_t>(1, per_row);
  }
  [[nodiscard]] bool small_resident(const Array& a) const {
    return a.elements < space_elems_ &&
           c_.vmem_footprint(a.dtype, a.rows, a.cols) <= c_.vmem_budget() / c_.opt.resident_budget_share;
  }
  [[nodiscard]] std::int64_t resident_bytes() const {
    std::int64_t n = 0;
    for (const auto* arrays : {&inputs_, &outputs_}) {
      for (const Array& a : *arrays) n += small_resident(a) ? c_.vmem_footprint(a.dtype, a.rows, a.cols) : 0;
    }
    return n;
  }

  // One slot's bytes per row of the iteration space. An array of the
  // space's elements in another view (a relayout into [524288, 1]) is
  // counted lane-padded as its slot will be: each of its narrow rows takes a
  // whole (sublanes x lanes) tile row in VMEM, 128x its bytes at one column.
  [[nodiscard]] std::int64_t array_row_bytes(const Array& a) const {
    const bool space = a.elements == space_elems_;
    if (space && a.cols != cols_ && a.rows > rows_) return ceil_div(c_.vmem_footprint(a.dtype, a.rows, a.cols), rows_);
    return isa::dtype_bytes(a.dtype, space ? cols_ : a.cols) * (space ? 1 : ceil_div(a.rows, rows_));
  }

  // An elementwise kernel (every array and value of the iteration space's
  // element count, or a scalar) computes the same whatever the 2-D view of
  // its elements: rows of cols_ / f elements, f the smallest divisor of
  // cols_ whose narrower rows (a multiple of the lanes where one exists)
  // fit the smallest chunk. The arrays are read and written through HBM
  // views of that shape (the same bytes).
  void fold_wide_rows(std::int64_t temps) {
    const auto full_or_scalar = [&](const hlo::Shape& sh) {
      if (!sh.is_array()) return false;
      const std::int64_t e = std::max<std::int64_t>(1, sh.element_count());
      return (e == space_elems_ || e == 1) && stored_type(sh.element_type()).width == 1;
    };
    for (const Array& a : inputs_) if (stored_type(a.shape.element_type()).width != 1) return;
    for (const Array& a : outputs_) if (stored_type(a.shape.element_type()).width != 1) return;
    const auto elementwise = [&](const hlo::Instruction& x) {
      if (!full_or_scalar(x.shape())) return false;
      const Opcode op = x.opcode();
      if (hlo::opcode_is_elementwise(op) || op == Opcode::kParameter || op == Opcode::kConstant ||
          op == Opcode::kCopy || op == Opcode::kBitcast || op == Opcode::kReshape) {
        return true;
      }
      return op == Opcode::kBroadcast && x.operand_count() == 1 &&
             std::max<std::int64_t>(1, x.operand(0)->shape().element_count()) == 1;
    };
    // A kernel with row broadcasts or reductions along the wide rows is
    // folded too (there is no schedule of whole rows that fits), as an
    // approximation: its broadcasts and reductions run per narrower row,
    // with the same bytes and about the same vector work.
    bool exact = k_.single == nullptr || elementwise(*k_.single);
    for (const hlo::Instruction* x : kernel_instructions()) exact = exact && elementwise(*x);
    const double room = c_.opt.stream_vmem_fraction * c_.chip.core.vmem.capacity;
    const std::int64_t cols = cols_, rows = rows_, align = c_.min_tile_rows();
    std::int64_t best = 0;
    // row_bytes() counts every array per row of the space; a small array held
    // whole (the per-token statistics of a loss, one row of 32768) is counted
    // once when no folding fits otherwise.
    for (const bool resident_apart : {false, true}) {
      const double fixed = resident_apart ? static_cast<double>(resident_bytes()) : 0.0;
      for (std::int64_t f = 2; f <= cols; ++f) {
        if (cols % f != 0) continue;
        cols_ = cols / f;
        rows_ = rows * f;
        const bool fits = static_cast<double>(align * row_bytes(temps, resident_apart)) + fixed <= room;
        if (fits && best == 0) best = f;  // the smallest that fits
        if (fits && cols_ % c_.lanes() == 0) {
          best = f;  // prefer lane-aligned rows
          break;
        }
        if (cols_ < c_.lanes()) break;
      }
      if (best != 0) break;
    }
    if (best == 0) {
      cols_ = cols;
      rows_ = rows;
      return;
    }
    cols_ = cols / best;
    rows_ = rows * best;
    for (auto* arrays : {&inputs_, &outputs_}) {
      for (Array& a : *arrays) {
        if (a.elements == space_elems_) a = c_.view(a, rows_, cols_);
      }
    }
    if (!exact) {
      const hlo::Instruction* x = k_.single != nullptr  ? k_.single
                                  : k_.group != nullptr ? k_.group->root
                                  : k_.body != nullptr  ? k_.body->root()
                                                        : nullptr;
      if (x != nullptr) {
        note_once(*x, fmt::format("rows of {} elements do not fit VMEM in the smallest chunk: streamed as rows of {}, "
                                  "its row broadcasts and reductions approximated per narrower row",
                                  cols, cols_));
      }
    }
  }

  void plan_arrays() {
    // Arrays held whole share one resident budget (row_bytes() already
    // counts every array as streamed): a kernel of many small outputs (32
    // lane-padded [8192,1] arrays of 4 MiB) streams those past the budget,
    // where two slots and a tail take less than the whole array.
    const std::int64_t resident_budget = c_.vmem_budget() / c_.opt.resident_budget_share;
    std::int64_t resident_bytes = 0;
    const auto plan = [&](const Array& a, bool is_output, std::string_view base) {
      ArrayStream s;
      s.a = a;
      const std::int64_t bytes = c_.vmem_footprint(a.dtype, a.rows, a.cols);
      const std::int64_t qa = std::min(a.rows, round_up(ceil_div(a.rows, chunks_), c_.min_tile_rows()));
      const std::int64_t streamed_bytes =
          2 * c_.vmem_footprint(a.dtype, qa, a.cols) + c_.vmem_footprint(a.dtype, a.rows % qa, a.cols);
      s.streamed = chunks_ > 1 && (a.elements >= space_elems_ || bytes > resident_budget ||
                                   (resident_bytes + bytes > resident_budget && streamed_bytes < bytes));
      if (!s.streamed) {
        resident_bytes += bytes;
        s.resident = c_.vmem(std::string(base) + ".res", a.dtype, a.rows, a.cols);
        return s;
      }
      s.aligned = a.rows == rows_ && a.cols == cols_;
      s.q = s.aligned ? q_ : round_up(ceil_div(a.rows, chunks_), c_.min_tile_rows());
      s.q = std::min(s.q, a.rows);
      s.slot[0] = c_.vmem(std::string(base) + ".s0", a.dtype, s.q, a.cols);
      s.slot[1] = c_.vmem(std::string(base) + ".s1", a.dtype, s.q, a.cols);
      const std::int64_t rem = a.rows % s.q;
      if (rem != 0) s.tail = c_.vmem(std::string(base) + ".tail", a.dtype, rem, a.cols);
      (void)is_output;
      return s;
    };
    for (std::size_t i = 0; i < inputs_.size(); ++i) ins_.push_back(plan(inputs_[i], false, "in" + std::to_string(i)));
    for (std::size_t i = 0; i < outputs_.size(); ++i) outs_.push_back(plan(outputs_[i], true, "out" + std::to_string(i)));
  }

  // Chunk i's tile of a streamed array (rows of its own view); nullopt if empty.
  std::optional<std::pair<isa::TileRef, isa::TileRef>> chunk_tiles(const ArrayStream& s, std::int64_t i) const {
    const std::int64_t r0 = i * s.q;
    if (r0 >= s.a.rows) return std::nullopt;
    const std::int64_t len = std::min(s.q, s.a.rows - r0);
    const std::uint32_t vb = len == s.q ? s.slot[i % 2] : s.tail;
    return std::pair{c_.tile(s.a.buffer, r0, len, 0, s.a.cols), c_.tile(vb, 0, len, 0, s.a.cols)};
  }

  // ---- temporaries ----
  // A temporary: `written` = the caller writes it first (an op's result),
  // else it is a stand-in read as is. Written temporaries come only from
  // buffers written before or fresh ones, so no buffer is first read and
  // later written (in a loop body, the verifier would take that for a value
  // carried from one iteration to the next).
  isa::TileRef temp(Form f, isa::DType d, std::int64_t len, bool written) {
    const std::int64_t r = (f == Form::kFull || f == Form::kCol) ? len : 1;
    const std::int64_t cc = (f == Form::kFull || f == Form::kRow) ? cols_ : 1;
    const std::tuple<isa::DType, std::int64_t, std::int64_t> key{d, r, cc};
    auto& pool = pool_[key];
    auto& unwritten = unwritten_pool_[key];
    std::uint32_t b;
    if (!written && !unwritten.empty()) {
      b = unwritten.back();
      unwritten.pop_back();
    } else if (!pool.empty()) {
      b = pool.back();
      pool.pop_back();
    } else {
      b = c_.vmem("t", d, r, cc);
      temps_.push_back(b);
    }
    if (written) written_.insert(b);
    return c_.tile(b, 0, r, 0, cc);
  }
  void release(const Val& v) {
    if (!v.pooled) return;
    const auto& b = c_.prog.buffers[v.tile.buffer];
    (written_.contains(v.tile.buffer) ? pool_ : unwritten_pool_)[{b.dtype, b.rows(), b.cols()}].push_back(
        v.tile.buffer);
  }

  Form form_of_shape(const hlo::Shape& s) const {
    if (!s.is_array()) return Form::kScalar;
    const std::int64_t e = std::max<std::int64_t>(1, s.element_count());
    if (e >= space_elems_) return Form::kFull;
    if (e == 1) return Form::kScalar;
    const std::int64_t last = s.rank() > 0 ? s.dim(s.rank() - 1) : 1;
    if (last * stored_type(s.element_type()).width == cols_) return Form::kRow;
    if (e <= rows_) return Form::kCol;
    return Form::kFull;
  }
  isa::DType dtype_of(const hlo::Shape& s) const {
    if (s.is_tuple()) return s.tuple_elements().empty() ? isa::DType::kF32 : dtype_of(s.tuple_elements()[0]);
    return stored_type(s.element_type()).dtype;
  }

  // A value with no instruction behind it in this chunk (a stand-in tile
  // of the right form and dtype).
  Val standin(Form f, isa::DType d, std::int64_t len, bool written = false) {
    Val v;
    v.form = f;
    v.dtype = d;
    v.tile = temp(f, d, len, written);
    v.pooled = true;
    return v;
  }
  // A result of form f: written into dst when given, else a pooled temporary.
  Val result(Form f, isa::DType d, std::int64_t len, const isa::TileRef* dst) {
    if (dst == nullptr) return standin(f, d, len, true);
    Val v;
    v.form = f;
    v.dtype = d;
    v.tile = *dst;
    return v;
  }

  // ---- element types as the chip has them (docs/lowering.md) ----
  // Where the VPU has no bf16 ALU (core.vpu.bf16_alu: false), bf16 float
  // arithmetic runs in f32, as XLA's TPU backend and Mosaic do: bf16
  // operands are converted up, the op computes in f32, and the value stays
  // f32 for its users (excess precision) until it is stored as bf16. An op
  // whose operands were already widened computes in f32 too.
  bool computes_in_f32(isa::VpuOp op, isa::DType d, std::initializer_list<const Val*> ins) const {
    if (op == isa::VpuOp::kConvert || c_.chip.core.vpu.bf16_alu) return false;
    bool f32_in = false, bf16_in = false;
    for (const Val* v : ins) {
      if (v == nullptr) continue;
      f32_in = f32_in || v->dtype == isa::DType::kF32;
      bf16_in = bf16_in || v->dtype == isa::DType::kBf16;
    }
    if (d == isa::DType::kBf16) return isa::vpu_op_is_arith(op) || f32_in;
    return f32_in && bf16_in;  // a compare of a widened and a bf16 value
  }
  // v as f32: a VPU convert into a temporary (released by the caller).
  Val to_f32(const Val& v, std::int64_t len) {
    if (v.dtype != isa::DType::kBf16) return v;
    const Val out = standin(v.form, isa::DType::kF32, len, true);
    c_.emit(isa::VpuElementwise{isa::VpuOp::kConvert, out.tile, v.tile, {}, {}, 0});
    return out;
  }
  // Writes f32 value v into dst (a bf16 staging tile) when given.
  Val store_as(const Val& v, isa::DType d, std::int64_t len, const isa::TileRef* dst) {
    if (dst == nullptr || c_.prog.buffers[dst->buffer].dtype == v.dtype) return v;
    const Val out = result(v.form, d, len, dst);
    c_.emit(isa::VpuElementwise{isa::VpuOp::kConvert, out.tile, v.tile, {}, {}, 0});
    release(v);
    return out;
  }
  Val vpu_in_f32(isa::VpuOp op, Form f, isa::DType d, std::int64_t len, std::array<const Val*, 3> in,
                 const isa::TileRef* dst_override, double imm) {
    std::array<Val, 3> up;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const bool pred_in = op == isa::VpuOp::kSelect && k == 0;
      if (in[k] == nullptr || pred_in || in[k]->dtype != isa::DType::kBf16) continue;
      up[k] = to_f32(*in[k], len);
      in[k] = &up[k];
    }
    const isa::DType rd = d == isa::DType::kPred ? d : isa::DType::kF32;
    const bool direct = dst_override != nullptr && c_.prog.buffers[dst_override->buffer].dtype == rd;
    Val out = vpu_native(op, f, rd, len, in[0], in[1], in[2], direct ? dst_override : nullptr, imm);
    for (Val& u : up) {
      if (u.pooled) release(u);
    }
    return direct ? out : store_as(out, d, len, dst_override);
  }

  Val vpu(isa::VpuOp op, Form f, isa::DType d, std::int64_t len, const Val* a, const Val* b, const Val* cc,
          const isa::TileRef* dst_override, double imm = 0) {
    if (computes_in_f32(op, d, {a, b, cc})) return vpu_in_f32(op, f, d, len, {a, b, cc}, dst_override, imm);
    return vpu_native(op, f, d, len, a, b, cc, dst_override, imm);
  }
  Val vpu_native(isa::VpuOp op, Form f, isa::DType d, std::int64_t len, const Val* a, const Val* b,
                 const Val* cc, const isa::TileRef* dst_override, double imm) {
    const Val out = result(f, d, len, dst_override);
    isa::VpuElementwise e;
    e.op = op;
    e.dst = out.tile;
    e.a = a->tile;
    if (b != nullptr) e.b = b->tile;
    if (cc != nullptr) e.c = cc->tile;
    e.imm = imm;
    c_.emit(e);
    return out;
  }

  // ---- per-opcode handlers (XLA's Handle<Op> style) ----
  // One inner instruction on the current chunk: its operands' values, the
  // chunk's rows, the tile its result should land in (the kernel's output
  // staging, or nullptr), the operands' joined form and the result dtype.
  struct OpArgs {
    const hlo::Instruction& x;
    const std::vector<const Val*>& ops;
    std::int64_t len = 0;
    const isa::TileRef* dst = nullptr;
    Form f = Form::kScalar;
    isa::DType d = isa::DType::kF32;
  };
  // A table entry: the handler and what it emits (elementwise ops share the
  // binary/unary/EUP hooks and differ only in the unit op).
  struct Rule;
  using Handler = std::vector<Val> (Streamer::*)(const OpArgs&, const Rule&);
  struct Rule {
    Handler handle = nullptr;
    isa::VpuOp vop = isa::VpuOp::kCopy;
    isa::EupOp eop = isa::EupOp::kExp;
    std::vector<Step> steps;  // a chain of unit ops (an op the units lack)
  };
  static constexpr std::size_t kOpcodes = static_cast<std::size_t>(Opcode::kUnknown) + 1;

  static const std::array<Rule, kOpcodes>& rules() {
    static const std::array<Rule, kOpcodes> table = [] {
      std::array<Rule, kOpcodes> t{};
      const auto set = [&t](std::initializer_list<Opcode> ops, const Rule& r) {
        for (const Opcode op : ops) t[static_cast<std::size_t>(op)] = r;
      };
      using V = isa::VpuOp;
      using E = isa::EupOp;
      const auto vpu_step = [](V v) { return Step{false, v, {}}; };
      const auto eup_step = [](E e) { return Step{true, {}, e}; };
      set({Opcode::kAdd}, {&Streamer::handle_binary, V::kAdd, {}, {}});
      set({Opcode::kSubtract}, {&Streamer::handle_binary, V::kSub, {}, {}});
      set({Opcode::kMultiply}, {&Streamer::handle_binary, V::kMul, {}, {}});
      set({Opcode::kDivide}, {&Streamer::handle_binary, V::kDiv, {}, {}});
      set({Opcode::kMaximum}, {&Streamer::handle_binary, V::kMax, {}, {}});
      set({Opcode::kMinimum}, {&Streamer::handle_binary, V::kMin, {}, {}});
      set({Opcode::kAnd}, {&Streamer::handle_binary, V::kAnd, {}, {}});
      set({Opcode::kOr}, {&Streamer::handle_binary, V::kOr, {}, {}});
      set({Opcode::kXor}, {&Streamer::handle_binary, V::kXor, {}, {}});
      // Shifts: one bitwise VPU op each.
      set({Opcode::kShiftLeft, Opcode::kShiftRightArithmetic, Opcode::kShiftRightLogical},
          {&Streamer::handle_binary, V::kAnd, {}, {}});
      set({Opcode::kAbs}, {&Streamer::handle_unary, V::kAbs, {}, {}});
      set({Opcode::kNegate}, {&Streamer::handle_unary, V::kNeg, {}, {}});
      // Bit counts and sign: one VPU op each, costed as abs.
      set({Opcode::kPopulationCount, Opcode::kClz, Opcode::kSign}, {&Streamer::handle_unary, V::kAbs, {}, {}});
      set({Opcode::kNot}, {&Streamer::handle_not, {}, {}, {}});
      set({Opcode::kConvert, Opcode::kBitcastConvert, Opcode::kReducePrecision, Opcode::kStochasticConvert,
           Opcode::kFloor, Opcode::kCeil, Opcode::kRoundNearestAfz, Opcode::kRoundNearestEven, Opcode::kReal,
           Opcode::kImag},
          {&Streamer::handle_convert, {}, {}, {}});
      set({Opcode::kComplex}, {&Streamer::handle_complex, {}, {}, {}});
      set({Opcode::kCompare}, {&Streamer::handle_compare, {}, {}, {}});
      set({Opcode::kIsFinite}, {&Streamer::handle_is_finite, {}, {}, {}});
      set({Opcode::kSelect}, {&Streamer::handle_select, {}, {}, {}});
      set({Opcode::kClamp}, {&Streamer::handle_clamp, {}, {}, {}});
      set({Opcode::kExp}, {&Streamer::handle_eup, {}, E::kExp, {}});
      set({Opcode::kLog}, {&Streamer::handle_eup, {}, E::kLog, {}});
      set({Opcode::kRsqrt}, {&Streamer::handle_eup, {}, E::kRsqrt, {}});
      set({Opcode::kSqrt}, {&Streamer::handle_eup, {}, E::kSqrt, {}});
      set({Opcode::kTanh}, {&Streamer::handle_eup, {}, E::kTanh, {}});
      set({Opcode::kLogistic}, {&Streamer::handle_eup, {}, E::kLogistic, {}});
      set({Opcode::kErf}, {&Streamer::handle_eup, {}, E::kErf, {}});
      set({Opcode::kExpm1}, {&Streamer::handle_chain, {}, {}, {eup_step(E::kExp), vpu_step(V::kSub)}});
      set({Opcode::kLog1p}, {&Streamer::handle_chain, {}, {}, {vpu_step(V::kAdd), eup_step(E::kLog)}});
      // x^y = exp(y log x); cbrt likewise.
      set({Opcode::kCbrt, Opcode::kPower},
          {&Streamer::handle_chain, {}, {}, {eup_step(E::kLog), vpu_step(V::kMul), eup_step(E::kExp)}});
      set({Opcode::kRemainder},
          {&Streamer::handle_chain, {}, {}, {vpu_step(V::kDiv), vpu_step(V::kMul), vpu_step(V::kSub)}});
      set({Opcode::kSin, Opcode::kCos, Opcode::kTan, Opcode::kAtan2},
          {&Streamer::handle_trig, {}, {}, {vpu_step(V::kMul), eup_step(E::kTanh)}});
      // Views of the chunk: no unit work.
      set({Opcode::kBroadcast, Opcode::kReshape, Opcode::kBitcast, Opcode::kCopy, Opcode::kSlice,
           Opcode::kGetTupleElement, Opcode::kOptimizationBarrier, Opcode::kDomain, Opcode::kReverse},
          {&Streamer::handle_view, {}, {}, {}});
      set({Opcode::kTranspose}, {&Streamer::handle_transpose, {}, {}, {}});
      set({Opcode::kTuple}, {&Streamer::handle_tuple, {}, {}, {}});
      set({Opcode::kReduce}, {&Streamer::handle_reduce, {}, {}, {}});
      set({Opcode::kSort}, {&Streamer::handle_sort, {}, {}, {}});
      set({Opcode::kConvolution}, {&Streamer::handle_depthwise, {}, {}, {}});
      set({Opcode::kIota, Opcode::kRng, Opcode::kRngBitGenerator}, {&Streamer::handle_generated, {}, {}, {}});
      set({Opcode::kConcatenate, Opcode::kPad, Opcode::kDynamicSlice, Opcode::kDynamicUpdateSlice},
          {&Streamer::handle_resize, {}, {}, {}});
      return t;
    }();
    return table;
  }

  // Emits one inner instruction on chunk rows `len`; returns its leaves.
  // Ops without a table entry (gather, scatter, sort, reduce-window, ...)
  // are approximated (handle_approx).
  std::vector<Val> lower_inst(const hlo::Instruction& x, std::vector<const Val*> ops, std::int64_t len,
                              const isa::TileRef* dst) {
    const Opcode op = x.opcode();
    const isa::DType d = x.has_shape() ? dtype_of(x.shape()) : isa::DType::kF32;
    Form f = Form::kScalar;
    for (const Val* v : ops) f = join(f, v->form);
    if (ops.empty() && op != Opcode::kIota && op != Opcode::kRng && op != Opcode::kRngBitGenerator) {
      return {standin(form_of_shape(x.shape()), d, len)};
    }
    const OpArgs a{x, ops, len, dst, f, d};
    const Rule& r = rules()[static_cast<std::size_t>(op)];
    return r.handle != nullptr ? (this->*r.handle)(a, r) : handle_approx(a, r);
  }

  // Brings operand v to form `to` (a broadcast copy) so unary units (EUP)
  // can read it with dst's shape.
  Val widen(const OpArgs& a, const Val& v, Form to) {
    if (v.form == to) return v;
    return vpu(v.dtype == a.d ? isa::VpuOp::kCopy : isa::VpuOp::kConvert, to, a.d, a.len, &v, nullptr, nullptr,
               nullptr);
  }
  Val eup(const OpArgs& a, isa::EupOp e, const Val& src, const isa::TileRef* over) {
    Val in = widen(a, src, a.f);
    if (isa::eup_needs_f32(c_.chip.core.vpu, in.dtype)) {
      Val up = to_f32(in, a.len);
      if (in.tile.buffer != src.tile.buffer) release(in);
      in = up;
    }
    const isa::DType rd = in.dtype == isa::DType::kF32 && a.d == isa::DType::kBf16 && !c_.chip.core.vpu.bf16_alu
                              ? isa::DType::kF32
                              : a.d;
    const bool direct = over != nullptr && c_.prog.buffers[over->buffer].dtype == rd;
    Val out = result(a.f, rd, a.len, direct ? over : nullptr);
    c_.emit(isa::EupUnary{e, out.tile, in.tile});
    if (in.tile.buffer != src.tile.buffer) release(in);
    return direct ? out : store_as(out, a.d, a.len, over);
  }
  // A value with no unit work: the instruction's result as a stand-in.
  std::vector<Val> standin_of(const OpArgs& a) { return {standin(form_of_shape(a.x.shape()), a.d, a.len)}; }
  // One VPU op of the joined form into dst.
  std::vector<Val> one(const OpArgs& a, isa::VpuOp v, const Val* x, const Val* y = nullptr, const Val* z = nullptr,
                       double imm = 0) {
    return {vpu(v, a.f, a.d, a.len, x, y, z, a.dst, imm)};
  }

  std::vector<Val> handle_binary(const OpArgs& a, const Rule& r) {
    if (a.ops.size() < 2) return one(a, isa::VpuOp::kCopy, a.ops[0]);
    return one(a, r.vop, a.ops[0], a.ops[1]);
  }
  std::vector<Val> handle_unary(const OpArgs& a, const Rule& r) {
    if (a.ops.empty()) return standin_of(a);
    return one(a, r.vop, a.ops[0]);
  }
  std::vector<Val> handle_not(const OpArgs& a, const Rule& /*r*/) {
    return one(a, isa::VpuOp::kXor, a.ops[0], nullptr, nullptr, -1);
  }
  std::vector<Val> handle_convert(const OpArgs& a, const Rule& /*r*/) {
    return {vpu(isa::VpuOp::kConvert, a.ops[0]->form, a.d, a.len, a.ops[0], nullptr, nullptr, a.dst)};
  }
  std::vector<Val> handle_complex(const OpArgs& a, const Rule& /*r*/) { return one(a, isa::VpuOp::kConvert, a.ops[0]); }
  std::vector<Val> handle_compare(const OpArgs& a, const Rule& /*r*/) {
    if (a.ops.size() < 2) return handle_unary(a, Rule{nullptr, isa::VpuOp::kCopy, {}, {}});
    return {vpu(compare_op(a.x), a.f, isa::DType::kPred, a.len, a.ops[0], a.ops[1], nullptr, a.dst)};
  }
  std::vector<Val> handle_is_finite(const OpArgs& a, const Rule& /*r*/) {
    return {vpu(isa::VpuOp::kCmpEq, a.f, isa::DType::kPred, a.len, a.ops[0], a.ops[0], nullptr, a.dst)};
  }
  std::vector<Val> handle_select(const OpArgs& a, const Rule& /*r*/) {
    if (a.ops.size() < 3) return handle_unary(a, Rule{nullptr, isa::VpuOp::kCopy, {}, {}});
    return one(a, isa::VpuOp::kSelect, a.ops[0], a.ops[1], a.ops[2]);
  }
  std::vector<Val> handle_clamp(const OpArgs& a, const Rule& /*r*/) {
    if (a.ops.size() < 3) return handle_unary(a, Rule{nullptr, isa::VpuOp::kCopy, {}, {}});
    Val t = vpu(isa::VpuOp::kMax, join(a.ops[0]->form, a.ops[1]->form), a.d, a.len, a.ops[1], a.ops[0], nullptr,
                nullptr);
    Val r = vpu(isa::VpuOp::kMin, a.f, a.d, a.len, &t, a.ops[2], nullptr, a.dst);
    release(t);
    return {r};
  }
  std::vector<Val> handle_eup(const OpArgs& a, const Rule& r) { return {eup(a, r.eop, *a.ops[0], a.dst)}; }
  // The rule's steps in turn; the first VPU step of a binary op takes the
  // second operand, the last writes dst.
  std::vector<Val> handle_chain(const OpArgs& a, const Rule& r) {
    Val cur = *a.ops[0];
    bool first_step = true;
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const Step& s = r.steps[i];
      const isa::TileRef* over = i + 1 == r.steps.size() ? a.dst : nullptr;
      Val next;
      if (s.eup) {
        next = eup(a, s.eop, cur, over);
      } else if (isa::vpu_op_inputs(s.vop) >= 2 && a.ops.size() >= 2 && first_step) {
        next = vpu(s.vop, a.f, a.d, a.len, &cur, a.ops[1], nullptr, over);
      } else {
        next = vpu(s.vop, a.f, a.d, a.len, &cur, nullptr, nullptr, over, 1.0);
      }
      if (!first_step) release(cur);
      cur = next;
      first_step = false;
    }
    return {cur};
  }
  std::vector<Val> handle_trig(const OpArgs& a, const Rule& r) {
    note_once(a.x, "no sin/cos/tan on the EUP: costed as one EUP op (tanh) plus a VPU range reduction");
    return handle_chain(a, r);
  }
  std::vector<Val> handle_view(const OpArgs& a, const Rule& /*r*/) { return {*a.ops[0]}; }
  std::vector<Val> handle_transpose(const OpArgs& a, const Rule& /*r*/) {
    const Val& in = *a.ops[0];
    if (in.form != Form::kFull) return {in};
    const Val out = result(Form::kFull, a.d, a.len, a.dst);
    // A transpose that moves the minor dimension is a lane shuffle.
    c_.emit(isa::XluPermute{out.tile, in.tile, 0});
    return {out};
  }
  std::vector<Val> handle_tuple(const OpArgs& a, const Rule& /*r*/) {
    std::vector<Val> out;
    for (const Val* v : a.ops) out.push_back(*v);
    return out;
  }
  // Reduce (and multi-output reduce): XLU lane reduces for the minor
  // dimension, VPU reduces across rows for the others.
  std::vector<Val> handle_reduce(const OpArgs& a, const Rule& /*r*/) {
    const hlo::Instruction& x = a.x;
    const auto& ops = a.ops;
    const std::int64_t len = a.len;
    const std::size_t n = std::max<std::size_t>(1, ops.size() / 2);
    std::vector<Val> out;
    const auto dims = hlo::ints_attr(x, hlo::AttrId::kDimensions).value_or(hlo::Ints{});
    const hlo::Instruction* in0 = x.operand(0);
    const int rank = in0->has_shape() && in0->shape().is_array() ? in0->shape().rank() : 0;
    bool last = false, others = false;
    for (const std::int64_t dd : dims) {
      if (dd == rank - 1) {
        last = true;
      } else if (dd >= 0 && dd < rank && in0->shape().dim(static_cast<int>(dd)) > 1) {
        others = true;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      Val cur = *ops[i];
      const isa::DType vd = cur.dtype;
      if (last && (cur.form == Form::kFull || cur.form == Form::kRow)) {
        const Val r = standin(cur.form == Form::kFull ? Form::kCol : Form::kScalar, vd, len, true);  // the reduce writes it
        c_.emit(isa::XluReduce{reduce_op(x), r.tile, cur.tile});
        cur = r;
      }
      if (others && (cur.form == Form::kFull || cur.form == Form::kCol)) {
        const Val r = standin(cur.form == Form::kFull ? Form::kRow : Form::kScalar, vd, len, true);  // the reduce writes it
        c_.emit(isa::VpuReduce{reduce_op(x), r.tile, cur.tile});
        if (cur.pooled && cur.tile.buffer != ops[i]->tile.buffer) release(cur);
        cur = r;
      }
      if (cur.tile.buffer == ops[i]->tile.buffer) {
        cur = vpu(isa::VpuOp::kCopy, cur.form, vd, len, &cur, nullptr, nullptr, nullptr);
      }
      out.push_back(cur);
    }
    return out;
  }

  // iota, rng: one VPU pass producing the result.
  std::vector<Val> handle_generated(const OpArgs& a, const Rule& /*r*/) {
    const hlo::Instruction& x = a.x;
    const std::int64_t len = a.len;
    const isa::DType d = a.d;
    Val v = standin(form_of_shape(x.shape().is_tuple() && !x.shape().tuple_elements().empty()
                                      ? x.shape().tuple_elements().back()
                                      : x.shape()),
                    d, len);
    return {vpu(isa::VpuOp::kAdd, v.form, v.dtype, len, &v, nullptr, nullptr, nullptr, 1.0)};
  }

  // concatenate, pad, dynamic-(update-)slice: a copy into the result's form.
  std::vector<Val> handle_resize(const OpArgs& a, const Rule& /*r*/) {
    const hlo::Instruction& x = a.x;
    const auto& ops = a.ops;
    const std::int64_t len = a.len;
    const isa::DType d = a.d;
    const Form rf = join(form_of_shape(x.shape()), ops[0]->form);
    Val v = widen(a, *ops[0], rf);
    if (v.tile.buffer == ops[0]->tile.buffer) v = vpu(isa::VpuOp::kCopy, rf, d, len, &v, nullptr, nullptr, nullptr);
    return {v};
  }

  // Sort: a bitonic network along the sort dimension (docs/lowering.md),
  // on chunks that hold whole segments (choose_space). Per stage: each op
  // of the comparator once over the chunk's pairs (the left half of its
  // columns against the right half), then per operand a compare-exchange:
  // two selects under the comparator's mask, one writing each half. The
  // last stage writes the output staging tiles.
  std::vector<Val> handle_sort(const OpArgs& a, const Rule& /*r*/) {
    const std::int64_t stages = bitonic_stages(sort_length(a.x));
    std::vector<Val> cur;
    for (const Val* v : a.ops) cur.push_back(v->form == Form::kFull ? *v : standin(Form::kFull, v->dtype, a.len));
    if (stages == 0 || cur.empty()) return cur;
    std::vector<bool> fresh(cur.size(), false);
    for (std::int64_t s = 0; s < stages; ++s) {
      const isa::TileRef mask = compare_pairs(a.x, cur[0], a.len);
      for (std::size_t k = 0; k < cur.size(); ++k) {
        const isa::TileRef* dst = s + 1 == stages ? output_tile(k) : nullptr;
        Val next = dst != nullptr ? result(Form::kFull, cur[k].dtype, a.len, dst)
                   : fresh[k]     ? cur[k]
                                  : standin(Form::kFull, cur[k].dtype, a.len, true);
        exchange(mask, cur[k].tile, next.tile, a.len);
        if (fresh[k] && next.tile.buffer != cur[k].tile.buffer) release(cur[k]);
        fresh[k] = next.pooled;
        cur[k] = next;
      }
    }
    return cur;
  }
  // A depthwise convolution (conv.h; the driver sends only those here): per
  // window element, a multiply of the shifted input by that element's
  // per-channel weight and an add into the output, both over the chunk's
  // output tile: 2 x window VPU ops per output element, HloCostAnalysis's
  // FLOPs. The shifted input is the input chunk when it has the output's
  // shape (stride 1), else a stand-in of that shape (the shifts and
  // strided reads within VMEM are not charged).
  std::vector<Val> handle_depthwise(const OpArgs& a, const Rule& r) {
    if (&a.x != k_.single || !is_depthwise(a.x)) return handle_approx(a, r);  // inside a fused kernel
    const std::optional<isa::TileRef> chunk_out = conv_output_tile(a);
    if (!chunk_out) return standin_of(a);  // the output's rows ended in an earlier chunk
    const isa::TileRef out = *chunk_out;
    const isa::DType d = c_.prog.buffers[out.buffer].dtype;
    const isa::TileRef& in0 = a.ops[0]->tile;
    const isa::TileRef in = in0.rows == out.rows && in0.cols == out.cols ? in0 : scratch_tile("conv.window", d, out);
    const isa::TileRef prod = scratch_tile("conv.product", d, out);
    const std::int64_t window = conv_gemm(a.x).window;
    for (std::int64_t j = 0; j < window; ++j) {
      isa::VpuElementwise mul;
      mul.op = isa::VpuOp::kMul;
      mul.dst = prod;
      mul.a = in;
      mul.imm = 1.0;  // the window element's weight (a per-channel broadcast)
      c_.emit(mul);
      isa::VpuElementwise add;
      add.op = isa::VpuOp::kAdd;
      add.dst = out;
      add.a = j == 0 ? prod : out;
      if (j > 0) add.b = prod;
      c_.emit(add);
    }
    Val v;
    v.form = Form::kFull;
    v.dtype = d;
    v.tile = out;
    return {v};
  }
  // The output rows of the current chunk: the staging tile of a streamed
  // output, else the chunk's share of the resident output's rows.
  std::optional<isa::TileRef> conv_output_tile(const OpArgs& a) {
    if (a.dst != nullptr) return *a.dst;
    const ArrayStream& s = outs_.at(0);
    if (s.streamed) {
      const auto t = chunk_tiles(s, chunk_);
      return t ? std::optional(t->second) : std::nullopt;
    }
    const std::int64_t q = ceil_div(s.a.rows, chunks_);
    const std::int64_t r0 = chunk_ * q;
    if (r0 >= s.a.rows) return std::nullopt;
    return c_.tile(s.resident, r0, std::min(q, s.a.rows - r0), 0, s.a.cols);
  }
  // A kernel-wide VMEM buffer of t's shape (the largest seen first: the
  // first chunk's), its tile at t's rows.
  isa::TileRef scratch_tile(const std::string& name, isa::DType d, const isa::TileRef& t) {
    auto [it, added] = scratch_.try_emplace(name, isa::TileRef::kNone);
    if (added) it->second = c_.vmem(name, d, t.rows, t.cols);
    return c_.tile(it->second, 0, t.rows, 0, t.cols);
  }

  // Whether a stage's pairs are half a vreg row or less apart: halves that
  // are no whole number of lanes cannot be addressed as tiles, so each
  // element meets its partner by a lane rotation (XLU) of the whole tile,
  // and the compare and select run over the whole tile.
  [[nodiscard]] bool lane_pairs() const { return cols_ >= 2 && (cols_ / 2) % c_.lanes() != 0; }
  // The left and right halves of a chunk tile: the pairs of one stage.
  // With lane pairs: the whole tile and its copy rotated by half the row.
  [[nodiscard]] std::pair<isa::TileRef, isa::TileRef> halves(const isa::TileRef& t, std::int64_t len) {
    if (lane_pairs()) {
      const isa::TileRef whole = c_.tile(t.buffer, t.row, len, t.col, cols_);
      const isa::TileRef rotated =
          c_.tile(pairs_buffer(c_.prog.buffers[t.buffer].dtype, 3 + static_cast<int>(rotations_++ % 2)), 0, len, 0,
                  cols_);
      c_.emit(isa::XluPermute{rotated, whole, cols_ / 2});
      return {whole, rotated};
    }
    const std::int64_t h = std::max<std::int64_t>(1, cols_ / 2);
    const isa::TileRef left = c_.tile(t.buffer, t.row, len, t.col, h);
    return {left, cols_ >= 2 * h ? c_.tile(t.buffer, t.row, len, t.col + h, h) : left};
  }
  // One compare-exchange of an operand: dst's halves get the pair's two
  // elements in the order the mask says (with lane pairs, one select over
  // the whole tile against the rotated copy).
  void exchange(const isa::TileRef& mask, const isa::TileRef& src, const isa::TileRef& dst, std::int64_t len) {
    const auto [sl, sr] = halves(src, len);
    if (lane_pairs()) {
      c_.emit(isa::VpuElementwise{isa::VpuOp::kSelect, c_.tile(dst.buffer, dst.row, len, dst.col, cols_), mask, sl,
                                  sr, 0});
      return;
    }
    const auto [dl, dr] = halves(dst, len);
    for (const auto& [to, first, second] : {std::tuple{dl, sl, sr}, std::tuple{dr, sr, sl}}) {
      isa::VpuElementwise e;
      e.op = isa::VpuOp::kSelect;
      e.dst = to;
      e.a = mask;
      e.b = first;
      e.c = second;
      c_.emit(e);
    }
  }
  // One stage's comparator over the pairs of the keys: compares as
  // compares, its other ops (NaN and -0 canonicalization) as one ALU op
  // each. Returns the mask (the last compare's pred result).
  isa::TileRef compare_pairs(const hlo::Instruction& x, const Val& keys, std::int64_t len) {
    auto [left, right] = halves(keys.tile, len);
    const std::int64_t half_cols = left.cols;
    const auto pairs = [&](isa::DType d, int slot = 0) { return c_.tile(pairs_buffer(d, slot), 0, len, 0, half_cols); };
    // A VPU without a bf16 ALU runs a bf16 comparator's arithmetic on f32
    // copies of both halves (one convert each per stage).
    const auto ops = comparator_ops(x);
    const bool arith = std::any_of(ops.begin(), ops.end(), [](const auto* op) { return op->opcode() != Opcode::kCompare; });
    const bool widen = arith && keys.dtype == isa::DType::kBf16 && !c_.chip.core.vpu.bf16_alu;
    if (widen) {
      for (auto* half : {&left, &right}) {
        const isa::TileRef up = pairs(isa::DType::kF32, half == &left ? 1 : 2);
        c_.emit(isa::VpuElementwise{isa::VpuOp::kConvert, up, *half, {}, {}, 0});
        *half = up;
      }
    }
    bool compared = false;
    for (const hlo::Instruction* op : ops) {
      const bool cmp = op->opcode() == Opcode::kCompare;
      isa::VpuElementwise e;
      e.op = cmp ? compare_op(*op) : isa::VpuOp::kMax;
      e.dst = pairs(cmp ? isa::DType::kPred : widen ? isa::DType::kF32 : dtype_of(op->shape()));
      e.a = left;
      e.b = right;
      c_.emit(e);
      compared = compared || cmp;
    }
    if (!compared) {
      isa::VpuElementwise e;
      e.op = isa::VpuOp::kCmpLt;
      e.dst = pairs(isa::DType::kPred);
      e.a = left;
      e.b = right;
      c_.emit(e);
    }
    return pairs(isa::DType::kPred);
  }
  // The comparator's ops that do unit work (not parameters or constants).
  static std::vector<const hlo::Instruction*> comparator_ops(const hlo::Instruction& x) {
    std::vector<const hlo::Instruction*> ops;
    const hlo::Computation* cmp = x.called(hlo::AttrId::kToApply);
    if (cmp != nullptr) {
      for (const hlo::Instruction* y : cmp->instructions()) {
        const Opcode op = y->opcode();
        if (op != Opcode::kParameter && op != Opcode::kConstant && op != Opcode::kTuple) ops.push_back(y);
      }
    }
    if (ops.empty() && cmp != nullptr && cmp->root() != nullptr) ops.push_back(cmp->root());
    return ops;
  }
  // A written pairs buffer of dtype d ([chunk rows, half the columns]).
  // `slot` tells apart buffers of one dtype (the f32 copies of both halves).
  std::uint32_t pairs_buffer(isa::DType d, int slot = 0) {
    auto [it, added] = pairs_.try_emplace({d, slot}, isa::TileRef::kNone);
    if (added) it->second = c_.vmem("sort.pairs", d, q_, lane_pairs() ? cols_ : std::max<std::int64_t>(1, cols_ / 2));
    return it->second;
  }
  // The staging tile of output k for the current chunk, when the kernel
  // writes that output aligned with its iteration space.
  const isa::TileRef* output_tile(std::size_t k) const {
    return k < chunk_outputs_.size() && chunk_outputs_[k] ? &*chunk_outputs_[k] : nullptr;
  }

  std::vector<Val> handle_approx(const OpArgs& a, const Rule& /*r*/) {
    const hlo::Instruction& x = a.x;
    const auto& ops = a.ops;
    const std::int64_t len = a.len;
    const isa::DType d = a.d;
    const Form f = a.f;
    const Opcode op = a.x.opcode();
    // Ops with no VPU form (gather, scatter, reduce-window, map,
    // custom-call, ... inside a kernel): one VPU pass per operand over
    // the result; listed as approximations.
    note_once(x, "costed as VPU passes over the kernel's iteration space");
    const Form rf = join(form_of_shape(x.shape().is_tuple() && !x.shape().tuple_elements().empty()
                                           ? x.shape().tuple_elements()[0]
                                           : x.shape()),
                         f);
    int passes = static_cast<int>(ops.size());
    if (op == Opcode::kReduceWindow || op == Opcode::kSelectAndScatter) {
      std::int64_t w = 1;
      if (auto win = hlo::window_attr(x)) {
        for (const auto& wd : *win) w *= std::max<std::int64_t>(1, wd.size);
      }
      passes = static_cast<int>(std::min(w, c_.opt.approx_max_window_passes));
    }
    Val cur = standin(rf, d, len);
    for (int p = 0; p < std::max(1, passes); ++p) {
      const Val& in = (p < static_cast<int>(ops.size()) && ops[static_cast<std::size_t>(p)]->dtype == d)
                          ? *ops[static_cast<std::size_t>(p)]
                          : cur;
      Val next = vpu(isa::VpuOp::kMax, rf, d, len, &cur, &in, nullptr, nullptr);
      release(cur);
      cur = next;
    }
    std::vector<Val> out;
    const std::size_t leaves = x.shape().is_tuple() ? std::max<std::size_t>(1, x.shape().tuple_elements().size()) : 1;
    for (std::size_t i = 0; i < leaves; ++i) out.push_back(cur);
    return out;
  }

  void note_once(const hlo::Instruction& x, std::string why) {
    if (noted_.insert(&x).second) c_.approx(x, std::move(why));
  }

  // ---- one chunk of compute ----
  // The chunk's input leaves as values: streamed aligned inputs are their
  // chunk tiles, the rest stand-ins of `len` rows.
  std::vector<Val> chunk_inputs(std::int64_t i, std::int64_t len) {
    std::vector<Val> in_vals;
    for (const ArrayStream& s : ins_) {
      Val v;
      v.dtype = s.a.dtype;
      if (s.streamed && s.aligned) {
        v.form = Form::kFull;
        v.tile = chunk_tiles(s, i)->second;
      } else {
        v = standin(form_of_shape(s.a.shape), s.a.dtype, len);
      }
      in_vals.push_back(v);
    }
    return in_vals;
  }

  // One instruction of a fused body or group: its value's leaves from its
  // operands' (a tuple passes them through; the root writes `root_dst`).
  std::vector<Val> body_value(const hlo::Instruction& x, const std::map<const hlo::Instruction*, std::vector<Val>>& vals,
                              const std::vector<Val>& in_vals, std::int64_t len, const isa::TileRef* dst) {
    if (x.opcode() == Opcode::kParameter) {
      const auto p = static_cast<std::size_t>(std::max<std::int64_t>(0, x.parameter_number()));
      if (p < in_vals.size()) return {in_vals[p]};
      return {standin(form_of_shape(x.shape()), dtype_of(x.shape()), len)};
    }
    if (x.opcode() == Opcode::kConstant) return {standin(form_of_shape(x.shape()), dtype_of(x.shape()), len)};
    if (x.opcode() == Opcode::kTuple) {
      std::vector<Val> leaves;
      for (const hlo::Instruction* o : x.operands()) {
        auto it = vals.find(o);
        if (it != vals.end()) leaves.insert(leaves.end(), it->second.begin(), it->second.end());
      }
      return leaves;
    }
    std::vector<const Val*> ops;
    for (const hlo::Instruction* o : x.operands()) {
      auto it = vals.find(o);
      if (it == vals.end() || it->second.empty()) continue;
      std::size_t leaf = 0;
      if (x.opcode() == Opcode::kGetTupleElement) {
        leaf = static_cast<std::size_t>(std::max<std::int64_t>(0, hlo::int_attr(x, hlo::AttrId::kIndex).value_or(0)));
        if (leaf >= it->second.size()) leaf = 0;
      }
      ops.push_back(&it->second[leaf]);
    }
    if (ops.empty() && x.operand_count() > 0) return {standin(form_of_shape(x.shape()), dtype_of(x.shape()), len)};
    return lower_inst(x, ops, len, dst);
  }

  // The fused body's (or group's) instructions in order over one chunk;
  // returns the root's leaves. An output the root wrote in place leaves
  // `out_tiles`.
  std::vector<Val> lower_body(const std::vector<Val>& in_vals, std::int64_t len,
                              std::vector<std::optional<isa::TileRef>>& out_tiles) {
    const std::vector<const hlo::Instruction*> insts = kernel_instructions();
    std::map<const hlo::Instruction*, std::vector<Val>> vals;
    std::map<const hlo::Instruction*, int> uses;
    for (const hlo::Instruction* x : insts) {
      for (const hlo::Instruction* o : x->operands()) ++uses[o];
    }
    // A group's external operands are its stream inputs.
    if (k_.group != nullptr) {
      for (std::size_t i = 0; i < k_.group->inputs.size() && i < in_vals.size(); ++i) {
        vals[k_.group->inputs[i]] = {in_vals[i]};
      }
    }
    const hlo::Instruction* root = k_.body != nullptr ? k_.body->root() : k_.group->root;
    // The root writes the single aligned output directly.
    const isa::TileRef* root_dst = nullptr;
    if (outs_.size() == 1 && out_tiles[0] && root != nullptr && !root->shape().is_tuple()) root_dst = &*out_tiles[0];
    for (const hlo::Instruction* x : insts) {
      const bool computed = x->opcode() != Opcode::kParameter && x->opcode() != Opcode::kConstant;
      const isa::TileRef* dst = x == root ? root_dst : nullptr;
      vals[x] = body_value(*x, vals, in_vals, len, dst);
      if (!computed) continue;
      if (dst != nullptr && x->opcode() != Opcode::kTuple && !vals[x].empty() && vals[x][0].tile == *dst) {
        out_tiles[0].reset();
      }
      // Free operands no longer used (pooled temps only; the tuple keeps its leaves).
      for (const hlo::Instruction* o : x->operands()) {
        if (--uses[o] == 0 && o != root && x->opcode() != Opcode::kTuple) {
          bool shared = false;
          for (const Val& v : vals[o]) {
            for (const Val& w : vals[x]) shared = shared || v.tile == w.tile;
          }
          if (!shared) {
            for (const Val& v : vals[o]) release(v);
          }
        }
      }
    }
    return root != nullptr ? vals[root] : std::vector<Val>{};
  }

  // Aligned outputs not written in place: a copy (or convert) from the result.
  void materialize_outputs(const std::vector<Val>& results, const std::vector<std::optional<isa::TileRef>>& out_tiles,
                           std::int64_t len) {
    for (std::size_t o = 0; o < outs_.size(); ++o) {
      if (!out_tiles[o]) continue;
      const Val* src = o < results.size() ? &results[o] : (results.empty() ? nullptr : &results[0]);
      if (src != nullptr && src->tile == *out_tiles[o]) continue;  // written in place (a sort's last stage)
      Val tmp;
      if (src == nullptr) {
        tmp = standin(Form::kFull, outs_[o].a.dtype, len);
        src = &tmp;
      }
      isa::VpuElementwise e;
      e.op = src->dtype == outs_[o].a.dtype ? isa::VpuOp::kCopy : isa::VpuOp::kConvert;
      e.dst = *out_tiles[o];
      e.a = src->tile;
      c_.emit(e);
    }
  }

  void compute_chunk(std::int64_t i) {
    const std::int64_t r0 = i * q_;
    const std::int64_t len = std::min(q_, rows_ - r0);
    const std::vector<Val> in_vals = chunk_inputs(i, len);
    // Output staging tiles for aligned streamed outputs.
    std::vector<std::optional<isa::TileRef>> out_tiles;
    for (const ArrayStream& s : outs_) {
      if (s.streamed && s.aligned) {
        out_tiles.push_back(chunk_tiles(s, i)->second);
      } else {
        out_tiles.emplace_back();
      }
    }
    chunk_outputs_ = out_tiles;
    chunk_ = i;
    std::vector<Val> results;  // root leaves
    if (k_.body == nullptr && k_.single == nullptr && k_.group == nullptr) {
      results = in_vals;  // a pure copy
    } else if (k_.body == nullptr && k_.group == nullptr) {
      std::vector<const Val*> ops;
      for (const Val& v : in_vals) ops.push_back(&v);
      const isa::TileRef* dst = (!out_tiles.empty() && out_tiles[0]) ? &*out_tiles[0] : nullptr;
      if (k_.single->shape().is_tuple()) dst = nullptr;
      results = lower_inst(*k_.single, ops, len, dst);
      if (dst != nullptr && !results.empty() && results[0].tile == *dst) out_tiles[0].reset();
    } else {
      results = lower_body(in_vals, len, out_tiles);
    }
    materialize_outputs(results, out_tiles, len);
    // Return every pooled temp: the next chunk starts from a full pool.
    // (Pool buffers are reused; the scoreboard orders the reuse.)
    pool_.clear();
    unwritten_pool_.clear();
    for (const std::uint32_t b : temps_) {
      const auto& buf = c_.prog.buffers[b];
      (written_.contains(b) ? pool_ : unwritten_pool_)[{buf.dtype, buf.rows(), buf.cols()}].push_back(b);
    }
  }

  // ---- the chunk loop ----
  void emit_all() {
    // Megacore: each core streams a contiguous share of the chunks; a kernel
    // of fewer chunks than cores runs on core 0. Resident (small) outputs
    // are written back by core 0.
    std::int64_t lo = 0, hi = chunks_;
    const bool split = c_.split_cores() && chunks_ >= c_.opt.cores;
    if (split) {
      std::tie(lo, hi) = c_.core_share(chunks_);
    } else if (c_.opt.core != 0) {
      return;
    }
    if (hi <= lo) return;
    const bool writes_resident = c_.opt.core == 0;
    const isa::SemRef in[2] = {c_.sem("in0"), c_.sem("in1")};
    const isa::SemRef out[2] = {c_.sem("out0"), c_.sem("out1")};
    const isa::SemRef res = c_.sem("res");
    std::int64_t res_count = 0;
    for (const ArrayStream& s : ins_) {
      if (s.streamed) continue;
      c_.dma(c_.whole(s.resident), c_.whole(s.a.buffer), res);
      ++res_count;
    }
    const auto prefetch = [&](std::int64_t i) {
      std::int64_t n = 0;
      for (const ArrayStream& s : ins_) {
        if (!s.streamed) continue;
        if (auto t = chunk_tiles(s, i)) {
          c_.dma(t->second, t->first, in[i % 2]);
          ++n;
        }
      }
      return n;
    };
    std::vector<std::int64_t> in_count(static_cast<std::size_t>(chunks_), 0);
    std::vector<std::int64_t> out_count(static_cast<std::size_t>(chunks_), 0);
    in_count[static_cast<std::size_t>(lo)] = prefetch(lo);
    c_.wait(res, res_count);
    const auto iteration = [&](std::int64_t i) {
      const auto ui = static_cast<std::size_t>(i);
      if (i + 1 < hi) in_count[ui + 1] = prefetch(i + 1);
      c_.wait(in[i % 2], in_count[ui]);
      if (i >= lo + 2) c_.wait(out[i % 2], out_count[ui - 2]);
      compute_chunk(i);
      for (const ArrayStream& s : outs_) {
        if (!s.streamed) continue;
        if (auto t = chunk_tiles(s, i)) {
          c_.dma(t->first, t->second, out[i % 2]);
          ++out_count[ui];
        }
      }
    };
    // Many chunks: the steady middle (full chunks, after the first two and
    // before the last two) as `repeat` of a pair of chunks (the two VMEM
    // slots alternate): the same instructions as unrolled, the pair's tiles
    // standing in for the others' (as a dot's batch elements do).
    std::int64_t i = lo;
    // Below full_end, chunk i+1 is full for every streamed array (arrays of
    // other row counts than the iteration space have chunks of their own size).
    std::int64_t full_end = std::min(hi - 2, rows_ / q_ - 1);
    for (const auto* streams : {&ins_, &outs_}) {
      for (const ArrayStream& st : *streams) {
        if (st.streamed) full_end = std::min(full_end, st.a.rows / std::max<std::int64_t>(1, st.q) - 1);
      }
    }
    const std::int64_t pairs =
        chunks_ > c_.opt.stream_repeat_min_chunks ? std::max<std::int64_t>(0, (full_end - (lo + 2)) / 2) : 0;
    for (; i < hi; ++i) {
      if (pairs >= 2 && i == lo + 2) {
        c_.emit(isa::Repeat{pairs});
        iteration(i);
        iteration(i + 1);
        c_.emit(isa::End{});
        // What the next iterations wait for, as in the unrolled schedule.
        for (std::int64_t k = i + 2; k < i + 2 * pairs; ++k) {
          out_count[static_cast<std::size_t>(k)] = out_count[static_cast<std::size_t>(i)];  // chunks written
        }
        for (std::int64_t k = i + 3; k <= i + 2 * pairs; ++k) {
          in_count[static_cast<std::size_t>(k)] = in_count[static_cast<std::size_t>(i + 2)];  // chunks prefetched
        }
        i += 2 * pairs - 1;
        continue;
      }
      iteration(i);
      if (c_.prog.code.size() > c_.opt.max_instructions) return;
    }
    if (hi - lo >= 2) c_.wait(out[hi % 2], out_count[static_cast<std::size_t>(hi - 2)]);
    c_.wait(out[(hi - 1) % 2], out_count[static_cast<std::size_t>(hi - 1)]);
    std::int64_t n = 0;
    for (const ArrayStream& s : outs_) {
      if (s.streamed || !writes_resident) continue;
      c_.dma(c_.whole(s.a.buffer), c_.whole(s.resident), res);
      ++n;
    }
    c_.wait(res, n);
  }

  Ctx& c_;
  const StreamKernel& k_;
  std::vector<Array> inputs_, outputs_;  // the kernel's arrays, through narrower views when folded
  std::int64_t space_elems_ = 0, rows_ = 1, cols_ = 1, q_ = 1, chunks_ = 1;
  std::int64_t rotations_ = 0;  // sort: rotated copies made (two buffers in turn)
  std::vector<ArrayStream> ins_, outs_;
  std::map<std::tuple<isa::DType, std::int64_t, std::int64_t>, std::vector<std::uint32_t>> pool_, unwritten_pool_;
  std::set<std::uint32_t> written_;  // temporaries some op has written
  std::vector<std::uint32_t> temps_;
  std::set<const hlo::Instruction*> noted_;
  std::map<std::pair<isa::DType, int>, std::uint32_t> pairs_;  // sort: comparator results per dtype, slot
  std::map<std::string, std::uint32_t, std::less<>> scratch_;  // kernel-wide buffers by name
  std::int64_t chunk_ = 0;  // the chunk being computed
  std::vector<std::optional<isa::TileRef>> chunk_outputs_;  // aligned output staging tiles of the chunk
};

}  // namespace

void lower_stream(Ctx& ctx, const StreamKernel& k) {
  Streamer s(ctx, k);
  s.run();
}

}  // namespace tpusim::lower
