// Internal to isa/lower: the program builder every lowering step writes
// through (buffers, VMEM placement, semaphores, provenance) and the pieces
// the driver (lower.cpp), the stream kernels (stream.cpp) and the MXU
// programs (dot.cpp) share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "isa/hlo/ir.h"
#include "isa/lower/lower.h"
#include "isa/program.h"

namespace tpusim::lower {

// How an HLO element type is stored: an ISA dtype plus a factor on the last
// dimension for types the ISA lacks (f64 = 2 x f32, c128 = 4 x f32, ...).
struct StoredType {
  isa::DType dtype = isa::DType::kF32;
  std::int64_t width = 1;
};
StoredType stored_type(hlo::ElementType t);

// An HBM-resident HLO array: one buffer seen as rows x cols, where cols is
// the last logical dimension (times the stored-type width) and rows the
// product of the others (row-major, the default layout).
struct Array {
  std::uint32_t buffer = isa::TileRef::kNone;
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  std::int64_t elements = 1;  // logical
  isa::DType dtype = isa::DType::kF32;
  hlo::Shape shape;  // logical
};

// A value: the arrays of its (flattened) tuple leaves.
struct Value {
  std::vector<Array> leaves;
};

class Ctx {
 public:
  Ctx(const hlo::Module& m, const ChipConfig& chip, const LowerOptions& opt, isa::Program& p,
      LowerReport& rep);

  const hlo::Module& module;
  const ChipConfig& chip;
  const LowerOptions& opt;
  isa::Program& prog;
  LowerReport& report;
  // Why an op is refused (a dot that cannot be chunked and would emit more
  // than opt.max_instructions), found before its program takes memory;
  // empty when none. The driver reports it.
  std::string oversize;

  // ---- emission ----
  void set_provenance(std::string_view label) { prov_ = prog.strings.intern(label); }
  [[nodiscard]] std::uint32_t provenance_id() const { return prov_; }
  void set_provenance_id(std::uint32_t id) { prov_ = id; }
  // The HLO instruction's file:line:col, carried by what is emitted next, so
  // verifier and simulation errors point at the HLO text.
  void set_location(isa::SourceLoc l) { loc_ = l; }
  template <typename Op>
  void emit(Op op) {
    prog.code.push_back(isa::Instruction{isa::Op(std::move(op)), prov_, loc_});
  }
  void dma(const isa::TileRef& dst, const isa::TileRef& src, isa::SemRef sem);
  void wait(isa::SemRef sem, std::int64_t count);
  isa::SemRef sem(std::string_view name);  // declared once, reused by every section

  // ---- buffers ----
  Array hbm_array(std::string_view name, const hlo::Shape& array_shape);
  Value hbm_value(std::string_view name, const hlo::Shape& shape);
  // The same bytes as `a` seen as rows x cols: `a` itself when that is its
  // view already, else an HBM view buffer (docs/isa.md) of a's buffer.
  Array view(const Array& a, std::int64_t rows, std::int64_t cols);
  // A VMEM buffer at a fixed offset in the current section's arena. Sections
  // drain all their DMAs before the next begins, so arenas may overlap.
  std::uint32_t vmem(std::string_view name, isa::DType d, std::int64_t rows, std::int64_t cols);
  // A section's staging buffers are dead at its end, also in a loop body
  // (each iteration writes them before reading them; the verifier checks
  // that), so every section starts its VMEM arena at 0.
  void begin_section();
  // A kernel's fixed start-up cost (core.sequencer.kernel_overhead): a
  // `delay` of that time in cycles, rounded, as the first instruction of the
  // section's provenance; nothing when it rounds to 0 cycles (the nominal
  // presets), so their programs are unchanged.
  void kernel_start();
  [[nodiscard]] std::int64_t kernel_overhead_cycles() const;
  // The start of one step of a kernel's MXU tile loop (a dot's k step, an
  // attention kernel's block step): an mxu.fence when core.mxu.step_sync is
  // true (the steps' MXU work does not overlap), nothing otherwise.
  void mxu_step();
  [[nodiscard]] std::int64_t vmem_used() const { return vmem_next_; }
  // The buffers allocated since vmem_used() was `mark` are dead (their
  // piece of the section waited for all its DMAs): later ones reuse the room.
  void vmem_rewind(std::int64_t mark) { vmem_next_ = std::min(vmem_next_, mark); }
  // Register allocation of a kernel's temporaries: of `candidates` (VMEM
  // buffers of the code emitted since `first_pc`), those that only the VPU,
  // the EUP and XLU reductions touch, always whole, move to vector registers, in order, while they
  // fit core.vpu.vregs less `reserved` (the registers the kernel's streamed
  // operands pass through). The kernel streams every tile a vreg-wide strip
  // at a time through its instructions (docs/lowering.md), so each such
  // buffer needs one register; the rest stay in VMEM (spilled). Returns how
  // many moved.
  std::size_t keep_in_registers(const std::vector<std::uint32_t>& candidates, std::size_t first_pc,
                                std::int64_t reserved);
  // Megacore: this core's contiguous share [first, last) of `items` units of
  // work (all of them when cores = 1).
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> core_share(std::int64_t items) const;
  [[nodiscard]] bool split_cores() const { return opt.cores > 1; }
  [[nodiscard]] std::int64_t vmem_budget() const;
  // Bytes of a VMEM buffer as the verifier counts it (padded to the tiling).
  [[nodiscard]] std::int64_t vmem_footprint(isa::DType d, std::int64_t rows, std::int64_t cols) const;
  [[nodiscard]] std::int64_t row_align(isa::DType d) const;  // sublane tiling rows
  // The sublane tiling of every dtype down to 4 bits (sublanes x 32/4: 64
  // rows on every preset): the smallest row tile of dots and stream chunks.
  [[nodiscard]] std::int64_t min_tile_rows() const { return row_align(isa::DType::kInt4); }
  [[nodiscard]] std::int64_t lanes() const;
  isa::TileRef tile(std::uint32_t buffer, std::int64_t row, std::int64_t rows, std::int64_t col,
                    std::int64_t cols) const;
  isa::TileRef whole(std::uint32_t buffer) const { return prog.whole(buffer); }

  // ---- report ----
  void note(const hlo::Instruction& inst, NoteKind kind, std::string message);
  void approx(const hlo::Instruction& inst, std::string why);
  std::string where(const hlo::Instruction& inst) const;  // file:line
  // Line and column of the instruction in the HLO text (lowered code points there).
  [[nodiscard]] isa::SourceLoc loc(const hlo::Instruction& inst) const;
  std::string unique(std::string_view base);                // unique buffer name

 private:
  std::uint32_t prov_ = 0;
  isa::SourceLoc loc_{};
  std::int64_t vmem_next_ = 0;
  std::map<std::string, std::uint32_t, std::less<>> sems_;
  std::map<std::string, int, std::less<>> names_;
  std::set<std::string, std::less<>> issued_;
};

// ---- stream kernels (stream.cpp) ----
// An elementwise/reduction kernel streamed through VMEM in row chunks with
// double-buffered DMAs. `body` is the computation whose instructions run on
// the VPU/EUP/XLU per chunk (a fused computation, or nullptr with `single`
// naming one top-level instruction treated as a one-op kernel).
struct FusionGroup;
struct StreamKernel {
  const hlo::Computation* body = nullptr;
  const hlo::Instruction* single = nullptr;
  // A group of the fusion policy (fusion.h): its members run per chunk, its
  // external operands are `inputs` in FusionGroup::inputs order.
  const FusionGroup* group = nullptr;
  std::vector<Array> inputs;   // in parameter (operand) order
  std::vector<Array> outputs;  // the root's leaves
  // Extra passes per element of the iteration space the ISA cannot express
  // directly (approximations): each adds one vpu op per chunk.
  int extra_vpu_passes = 0;
};
void lower_stream(Ctx& ctx, const StreamKernel& k);

// ---- MXU programs (dot.cpp) ----
// A batch dim of a dot operand read in place (dot_layout.h): batch element
// b's tile starts at sum over dims of index · (row_stride, col_stride) of the
// operand's 2-D view (indices in the dot's batch order, row-major).
struct BatchDim {
  std::int64_t size = 1, row_stride = 0, col_stride = 0;
};
struct DotSpec {
  std::int64_t batch = 1, m = 1, k = 1, n = 1;
  Array lhs, rhs, out;          // HBM arrays in canonical views
  bool lhs_transposed = false;  // lhs view is [B*K, M] instead of [B*M, K]
  bool rhs_transposed = false;  // rhs view is [B*N, K] instead of [B*K, N]
  // Where each batch element's tile starts (empty: batch-leading, element b
  // at row b times the tile's rows), and how many consecutive batch elements
  // share the rows of the view (their tiles side by side: one DMA of whole
  // view rows can load them all).
  std::vector<BatchDim> lhs_batch, rhs_batch;
  std::int64_t lhs_side = 1, rhs_side = 1;
  // Where this dot's output block starts in the arrays' buffers (a strip of
  // a larger dot: its lhs rows, rhs columns and output block are there).
  std::int64_t m_origin = 0, n_origin = 0;
  // The types the dot itself multiplies when its elementwise producers in a
  // fusion change the read array's (a quantization's scale, clip and
  // convert to fp8): each loaded tile is converted on the VPU and the MXU
  // runs at that type's rate. Unset: the arrays' own types.
  std::optional<isa::DType> lhs_operand, rhs_operand;
  int epilogue_vpu_ops = 0;     // elementwise ops applied to each output tile
  std::vector<Array> epilogue_inputs;  // extra operands read once per output tile
  std::string name;
};
void lower_dot(Ctx& ctx, const DotSpec& d);

}  // namespace tpusim::lower
