#include "isa/lower/context.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

namespace tpusim::lower {

StoredType stored_type(hlo::ElementType t) {
  using hlo::ElementType;
  if (t == ElementType::kPred) return {isa::DType::kPred, 1};
  if (t == ElementType::kBF16) return {isa::DType::kBf16, 1};
  if (t == ElementType::kF16) return {isa::DType::kF16, 1};
  if (t == ElementType::kF8E5M2 || t == ElementType::kF8E5M2FNUZ) return {isa::DType::kFp8E5m2, 1};
  const int bits = hlo::element_type_bits(t);
  const char kind = hlo::element_type_kind(t);
  if (bits <= 0) return {isa::DType::kInt8, 1};  // token/opaque: 1 byte placeholder
  if (bits <= 4) return {isa::DType::kInt4, 1};
  if (bits <= 8) return {kind == 'f' ? isa::DType::kFp8 : isa::DType::kInt8, 1};
  if (bits <= 16) return {isa::DType::kF16, 1};
  const isa::DType wide = (kind == 'f' || kind == 'c') ? isa::DType::kF32 : isa::DType::kInt32;
  return {wide, std::max(1, bits / 32)};
}

Ctx::Ctx(const hlo::Module& m, const ChipConfig& c, const LowerOptions& o, isa::Program& p,
         LowerReport& rep)
    : module(m), chip(c), opt(o), prog(p), report(rep) {}

void Ctx::dma(const isa::TileRef& dst, const isa::TileRef& src, isa::SemRef s) {
  emit(isa::DmaStart{dst, src, s});
}

void Ctx::wait(isa::SemRef s, std::int64_t count) {
  if (count > 0) emit(isa::SemWait{s, count});
}

isa::SemRef Ctx::sem(std::string_view name) {
  if (auto it = sems_.find(name); it != sems_.end()) return isa::SemRef{it->second};
  const auto id = static_cast<std::uint32_t>(prog.semaphores.size());
  prog.semaphores.push_back(isa::Semaphore{std::string(name), 0, {}});
  sems_.emplace(std::string(name), id);
  return isa::SemRef{id};
}

std::string Ctx::unique(std::string_view base) {
  std::string b(base);
  for (char& ch : b) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                    ch == '_' || ch == '.';
    if (!ok) ch = '_';
  }
  if (b.empty() || (b[0] >= '0' && b[0] <= '9')) b = "b" + b;
  // "x", "x.1", "x.2", …, skipping names already handed out (an HLO name such
  // as "fusion.1" may come after "fusion" took "fusion.1" as its second copy).
  int& n = names_[b];
  for (;;) {
    std::string candidate = n == 0 ? b : b + "." + std::to_string(n);
    ++n;
    if (issued_.insert(candidate).second) return candidate;
  }
}

Array Ctx::hbm_array(std::string_view name, const hlo::Shape& s) {
  Array a;
  a.shape = s;
  const StoredType st = stored_type(s.element_type());
  a.dtype = st.dtype;
  const std::int64_t last = s.rank() > 0 ? std::max<std::int64_t>(1, s.dim(s.rank() - 1)) : 1;
  a.elements = std::max<std::int64_t>(1, s.element_count());
  a.cols = last * st.width;
  a.rows = std::max<std::int64_t>(1, a.elements / last);
  a.buffer = static_cast<std::uint32_t>(prog.buffers.size());
  isa::Buffer b;
  b.name = unique(name);
  b.space = isa::MemSpace::kHbm;
  b.dtype = a.dtype;
  b.shape = {a.rows, a.cols};
  prog.buffers.push_back(std::move(b));
  return a;
}

Array Ctx::view(const Array& a, std::int64_t rows, std::int64_t cols) {
  if (a.rows == rows && a.cols == cols) return a;
  Array v = a;
  v.rows = rows;
  v.cols = cols;
  v.buffer = static_cast<std::uint32_t>(prog.buffers.size());
  isa::Buffer b;
  b.name = unique(prog.buffers[prog.storage(a.buffer)].name + ".view");
  b.space = prog.buffers[prog.storage(a.buffer)].space;  // the viewed buffer's memory (hbm or host)
  b.dtype = a.dtype;
  b.shape = {rows, cols};
  b.view_of = prog.storage(a.buffer);
  prog.buffers.push_back(std::move(b));
  return v;
}

Value Ctx::hbm_value(std::string_view name, const hlo::Shape& s) {
  Value v;
  if (s.is_tuple()) {
    for (const auto& e : s.tuple_elements()) {
      Value sub = hbm_value(name, e);
      for (auto& l : sub.leaves) v.leaves.push_back(std::move(l));
    }
  } else if (s.is_buffer() && !s.tuple_elements().empty()) {
    return hbm_value(name, s.tuple_elements()[0]);
  } else if (s.is_array()) {
    v.leaves.push_back(hbm_array(name, s));
  }
  return v;
}

std::int64_t Ctx::lanes() const { return std::max<std::int64_t>(1, chip.core.vpu.lanes); }

std::int64_t Ctx::row_align(isa::DType d) const {
  const std::int64_t bits = std::max<std::int64_t>(1, isa::dtype_bits(d));
  return std::max<std::int64_t>(1, chip.core.vpu.sublanes) * std::max<std::int64_t>(1, 32 / bits);
}

std::int64_t Ctx::vmem_footprint(isa::DType d, std::int64_t rows, std::int64_t cols) const {
  const auto up = [](std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; };
  return isa::dtype_bytes(d, up(rows, row_align(d)) * up(cols, lanes()));
}

std::int64_t Ctx::vmem_budget() const {
  const auto& vmem = chip.core.vmem;
  if (vmem.scoped_limit > 0) return static_cast<std::int64_t>(std::min(vmem.scoped_limit, vmem.capacity));
  return static_cast<std::int64_t>(vmem.capacity * opt.vmem_budget_fraction);
}

void Ctx::begin_section() {
  vmem_next_ = 0;
  // Megacore: the previous section's outputs (written by every core) are
  // complete before this one reads them.
  if (opt.cores > 1 && report.sections > 0) emit(isa::CoreBarrier{});
  ++report.sections;
}

std::int64_t Ctx::kernel_overhead_cycles() const {
  return std::llround(chip.core.sequencer.kernel_overhead * chip.clock);
}

void Ctx::mxu_step() {
  if (chip.core.mxu.step_sync) emit(isa::MxuFence{});
}

void Ctx::kernel_start() {
  if (const std::int64_t cycles = kernel_overhead_cycles(); cycles > 0) emit(isa::Delay{cycles});
}

std::pair<std::int64_t, std::int64_t> Ctx::core_share(std::int64_t items) const {
  const std::int64_t n = std::max(1, opt.cores), c = std::clamp<std::int64_t>(opt.core, 0, n - 1);
  return {items * c / n, items * (c + 1) / n};
}

std::uint32_t Ctx::vmem(std::string_view name, isa::DType d, std::int64_t rows, std::int64_t cols) {
  // Offsets on the vreg tile (the verifier's VMEM alignment rule).
  const std::int64_t align = std::max<std::int64_t>(1, chip.core.vpu.sublanes) * lanes() * 4;
  isa::Buffer b;
  b.name = unique(name);
  b.space = isa::MemSpace::kVmem;
  b.dtype = d;
  b.shape = {std::max<std::int64_t>(1, rows), std::max<std::int64_t>(1, cols)};
  b.offset = vmem_next_;
  vmem_next_ += (vmem_footprint(d, b.shape[0], b.shape[1]) + align - 1) / align * align;
  prog.buffers.push_back(std::move(b));
  return static_cast<std::uint32_t>(prog.buffers.size() - 1);
}

std::size_t Ctx::keep_in_registers(const std::vector<std::uint32_t>& candidates, std::size_t first_pc,
                                   std::int64_t reserved) {
  std::int64_t room = chip.core.vpu.vregs - reserved;
  if (room <= 0 || candidates.empty()) return 0;
  // Buffers some other unit (an XLU, the MXU, a DMA) touches need VMEM.
  std::set<std::uint32_t> wanted(candidates.begin(), candidates.end()), vmem_only, used;
  for (std::size_t pc = first_pc; pc < prog.code.size(); ++pc) {
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (!std::is_same_v<T, std::monostate>) {
            constexpr bool registers = std::is_same_v<T, isa::VpuElementwise> ||
                                       std::is_same_v<T, isa::VpuReduce> || std::is_same_v<T, isa::EupUnary> ||
                                       std::is_same_v<T, isa::XluReduce>;
            isa::for_each_field(op, [&](const isa::FieldInfo&, const auto& field) {
              if constexpr (std::is_same_v<std::decay_t<decltype(field)>, isa::TileRef>) {
                if (!field.present() || !wanted.contains(field.buffer)) return;
                used.insert(field.buffer);
                // A part of a value (a sort's halves) is read across strips.
                const isa::Buffer& b = prog.buffers[field.buffer];
                const bool whole = field.row == 0 && field.col == 0 && field.rows == b.rows() && field.cols == b.cols();
                if (!registers || !whole) vmem_only.insert(field.buffer);
              }
            });
          }
        },
        prog.code[pc].op);
  }
  std::size_t moved = 0;
  for (const std::uint32_t b : candidates) {
    if (room == 0) break;
    isa::Buffer& buf = prog.buffers[b];
    if (!used.contains(b) || vmem_only.contains(b) || buf.space != isa::MemSpace::kVmem ||
        buf.view_of != isa::TileRef::kNone) {
      continue;
    }
    buf.space = isa::MemSpace::kVreg;
    buf.offset = -1;
    --room;
    ++moved;
  }
  return moved;
}

isa::TileRef Ctx::tile(std::uint32_t buffer, std::int64_t row, std::int64_t rows, std::int64_t col,
                       std::int64_t cols) const {
  isa::TileRef t;
  t.buffer = buffer;
  t.row = row;
  t.rows = static_cast<std::int32_t>(rows);
  t.col = static_cast<std::int32_t>(col);
  t.cols = static_cast<std::int32_t>(cols);
  return t;
}

std::string Ctx::where(const hlo::Instruction& inst) const {
  const auto& src = module.source();
  const std::size_t end = std::min<std::size_t>(inst.offset(), src.text.size());
  const auto line = 1 + std::count(src.text.begin(), src.text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
  return src.name + ":" + std::to_string(line);
}

isa::SourceLoc Ctx::loc(const hlo::Instruction& inst) const {
  const auto& src = module.source();
  const std::size_t end = std::min<std::size_t>(inst.offset(), src.text.size());
  const std::size_t line_start = src.text.rfind('\n', end == 0 ? 0 : end - 1);
  const std::size_t col0 = line_start == std::string::npos || end == 0 ? end : end - line_start - 1;
  const auto line = 1 + std::count(src.text.begin(), src.text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
  return isa::SourceLoc{static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(col0 + 1)};
}

void Ctx::note(const hlo::Instruction& inst, NoteKind kind, std::string message) {
  report.notes.push_back(LowerNote{std::string(inst.name()), std::string(inst.opcode_text()), kind,
                                   std::move(message)});
}

void Ctx::approx(const hlo::Instruction& inst, std::string why) {
  std::string line = "approx:" + std::string(inst.opcode_text()) + " " + std::string(inst.name()) + ": " + why;
  note(inst, NoteKind::kApprox, why);
  report.approximations.push_back(std::move(line));
}

std::string_view name(NoteKind k) {
  switch (k) {
    case NoteKind::kLowered: return "lowered";
    case NoteKind::kFree: return "free";
    case NoteKind::kApprox: return "approx";
  }
  return "?";
}

std::size_t LowerReport::count(NoteKind k) const {
  return static_cast<std::size_t>(
      std::count_if(notes.begin(), notes.end(), [&](const LowerNote& n) { return n.kind == k; }));
}

}  // namespace tpusim::lower
