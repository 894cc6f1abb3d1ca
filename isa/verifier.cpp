#include "isa/verifier.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>

#include "common/units.h"
#include "isa/printer.h"

namespace tpusim::isa {
namespace {

constexpr std::size_t kNone = VerifyIssue::kNoInstruction;
// Cap on abstractly executed instructions (nested repeats run twice each).
constexpr std::size_t kMaxTrace = std::size_t{1} << 22;

std::int64_t ceil_to(std::int64_t v, std::int64_t m) { return m <= 0 ? v : (v + m - 1) / m * m; }

bool overlaps(const Program& p, const TileRef& a, const TileRef& b) {
  if (a.buffer != b.buffer) {
    // Tiles of two views of the same bytes: rectangles in different 2-D views
    // do not compare, so any two are taken to overlap (conservative).
    return a.buffer < p.buffers.size() && b.buffer < p.buffers.size() && p.storage(a.buffer) == p.storage(b.buffer);
  }
  return a.row < b.row + b.rows && b.row < a.row + a.rows && a.col < b.col + b.cols && b.col < a.col + a.cols;
}

// How a tile operand is used.
enum class Access { kRead, kWrite };

struct TileUse {
  const TileRef* tile;
  Access access;
  std::string_view role;
};

// An asynchronous copy whose completion has not been consumed by a wait.
struct InFlight {
  std::size_t producer;  // static instruction index
  TileRef dst;
  TileRef src;
  std::uint64_t id;
};

struct SemEvent {
  std::optional<std::uint64_t> inflight_id;  // set for DMA/collective signals
};

struct MxuState {
  bool loaded = false;
  std::int64_t k = 0;
  std::int64_t n = 0;
  bool has_results = false;
  std::int64_t result_cols = 0;
  // Width N of the results held per range of accumulator rows: first row ->
  // (rows, N). Matmuls into different rows may use weights of other widths.
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> results;
  void record(std::int64_t acc, std::int64_t rows, std::int64_t cols) {
    auto it = results.lower_bound(acc);
    if (it != results.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second.first > acc) it = prev;
    }
    while (it != results.end() && it->first < acc + rows) it = results.erase(it);
    results[acc] = {rows, cols};
  }
  // The width of the results at accumulator row `acc`, or -1 when none was recorded there.
  [[nodiscard]] std::int64_t width_at(std::int64_t acc) const {
    auto it = results.upper_bound(acc);
    if (it == results.begin()) return -1;
    --it;
    return it->first + it->second.first > acc ? it->second.second : -1;
  }
};

class Verifier {
 public:
  Verifier(const Program& p, const ChipConfig& chip, std::string_view source)
      : p_(p), chip_(chip), src_(source) {}

  VerifyReport run() {
    report_.summary.instructions = p_.code.size();
    report_.summary.buffers = p_.buffers.size();
    report_.summary.semaphores = p_.semaphores.size();
    report_.summary.vmem_capacity_bytes = static_cast<std::int64_t>(chip_.core.vmem.capacity);
    check_views();
    if (!match_repeats()) return std::move(report_);
    for (std::size_t i = 0; i < p_.code.size(); ++i) check_static(i);
    execute();
    check_capacity();
    std::stable_sort(report_.issues.begin(), report_.issues.end(), [](const auto& a, const auto& b) {
      return std::pair(a.diagnostic.line, a.diagnostic.column) <
             std::pair(b.diagnostic.line, b.diagnostic.column);
    });
    return std::move(report_);
  }

 private:
  // ---- reporting ----
  void error(VerifyError kind, std::size_t inst, SourceLoc loc, std::string message) {
    if (inst != kNone && !reported_.insert({kind, inst, message}).second) return;
    VerifyIssue issue;
    issue.kind = kind;
    issue.instruction = inst;
    issue.diagnostic.file = p_.file;
    issue.diagnostic.line = static_cast<int>(loc.line);
    issue.diagnostic.column = static_cast<int>(loc.column);
    issue.diagnostic.message = "[" + std::string(name(kind)) + "] " + message;
    // A lowered instruction carries the HLO op it came from: name it.
    if (inst != kNone && !p_.provenance(p_.code[inst]).empty())
      issue.diagnostic.message += " (from '" + std::string(p_.provenance(p_.code[inst])) + "')";
    if (!src_.empty() && loc.line > 0) {
      issue.diagnostic.source_line = std::string(line_of(src_, static_cast<int>(loc.line)));
    }
    report_.issues.push_back(std::move(issue));
  }
  void error(VerifyError kind, std::size_t inst, std::string message) {
    error(kind, inst, p_.code[inst].loc, std::move(message));
  }
  std::string line_ref(std::size_t inst) const {
    const SourceLoc l = p_.code[inst].loc;
    return l.line > 0 ? "line " + std::to_string(l.line) : "instruction " + std::to_string(inst);
  }
  std::string tile_text(const TileRef& t) const { return print_tile(p_, t); }
  const Buffer& buf(const TileRef& t) const { return p_.buffers[t.buffer]; }
  std::string sem_name(SemRef s) const { return p_.semaphores[s.id].name; }

  // ---- structure ----
  // A view re-shapes an earlier HBM buffer's bytes: same dtype and element
  // count, no placement of its own, not a view of a view.
  void check_views() {
    for (std::size_t v = 0; v < p_.buffers.size(); ++v) {
      const Buffer& b = p_.buffers[v];
      if (b.view_of == TileRef::kNone) continue;
      const auto bad = [&](const std::string& why) {
        error(VerifyError::kOperand, kNone, b.loc, "view " + b.name + " " + why);
      };
      if (b.view_of >= v) {
        bad("must name a buffer declared before it");
        continue;
      }
      const Buffer& base = p_.buffers[b.view_of];
      if (base.view_of != TileRef::kNone) bad("views " + base.name + ", itself a view (name its buffer)");
      if ((b.space != MemSpace::kHbm && b.space != MemSpace::kHost) || base.space != b.space) {
        bad("and the buffer it views must be in the same memory, hbm or host");
      }
      if (b.dtype != base.dtype) {
        bad("has dtype " + std::string(name(b.dtype)) + " but " + base.name + " is " + std::string(name(base.dtype)));
      }
      if (b.elements() != base.elements()) {
        bad("has " + std::to_string(b.elements()) + " elements but " + base.name + " has " +
            std::to_string(base.elements()));
      }
      if (b.offset >= 0) bad("has an offset (it shares " + base.name + "'s placement)");
    }
  }

  bool match_repeats() {
    match_.assign(p_.code.size(), kNone);
    outer_.assign(p_.code.size(), {kNone, kNone});
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < p_.code.size(); ++i) {
      const Opcode c = opcode(p_.code[i].op);
      if (c == Opcode::kRepeat) {
        stack.push_back(i);
      } else if (c == Opcode::kEnd) {
        if (stack.empty()) {
          error(VerifyError::kOperand, i, "`end` without a matching `repeat`");
          return false;
        }
        match_[stack.back()] = i;
        match_[i] = stack.back();
        stack.pop_back();
      }
    }
    if (!stack.empty()) {
      error(VerifyError::kOperand, stack.back(), "`repeat` has no matching `end`");
      return false;
    }
    // Outermost enclosing repeat of each instruction, for live ranges.
    for (std::size_t i = 0; i < p_.code.size(); ++i) {
      if (opcode(p_.code[i].op) == Opcode::kRepeat && outer_[i].first == kNone) {
        for (std::size_t j = i; j <= match_[i]; ++j) outer_[j] = {i, match_[i]};
      }
    }
    return true;
  }

  // ---- static, per-instruction checks ----
  bool check_tile(std::size_t i, const TileRef& t, std::string_view role) {
    if (t.buffer >= p_.buffers.size()) {
      error(VerifyError::kOperand, i, std::string(role) + " names no declared buffer");
      return false;
    }
    const Buffer& b = buf(t);
    if (t.rows <= 0 || t.cols <= 0 || t.row < 0 || t.col < 0 || t.row + t.rows > b.rows() ||
        t.col + t.cols > b.cols()) {
      error(VerifyError::kOutOfBounds, i,
            std::string(role) + " tile " + tile_text(t) + " is outside buffer " + b.name + " (" +
                std::to_string(b.rows()) + " x " + std::to_string(b.cols()) + ")");
      return false;
    }
    if (b.space == MemSpace::kVreg && (t.row != 0 || t.col != 0 || t.rows != b.rows() || t.cols != b.cols())) {
      // A kernel streams its values strip by strip: a register holds the
      // strip of a whole value, not a part of it.
      error(VerifyError::kOperand, i,
            std::string(role) + " tile " + tile_text(t) + " is part of vreg buffer " + b.name +
                " (a vreg operand names its whole buffer)");
      return false;
    }
    if (b.space == MemSpace::kVmem) {
      const auto [sub, lanes] = vmem_tiling(b.dtype);
      const auto misaligned = [&](std::int64_t start, std::int64_t len, std::int64_t extent,
                                  std::int64_t unit) {
        return start % unit != 0 || ((start + len) % unit != 0 && start + len != extent);
      };
      if (misaligned(t.row, t.rows, b.rows(), sub) || misaligned(t.col, t.cols, b.cols(), lanes)) {
        error(VerifyError::kMisaligned, i,
              std::string(role) + " tile " + tile_text(t) + " is not aligned to the (" +
                  std::to_string(sub) + ", " + std::to_string(lanes) + ") VMEM tiling of " +
                  std::string(name(b.dtype)) +
                  ": row and column ranges must start on a tile boundary and end on one or at "
                  "the buffer's edge");
      }
    }
    return true;
  }
  std::pair<std::int64_t, std::int64_t> vmem_tiling(DType d) const {
    const std::int64_t packing = std::max<std::int64_t>(1, 32 / std::max<std::int64_t>(1, dtype_bits(d)));
    return {std::max<std::int64_t>(1, chip_.core.vpu.sublanes) * packing,
            std::max<std::int64_t>(1, chip_.core.vpu.lanes)};
  }
  void expect_space(std::size_t i, const TileRef& t, std::string_view role,
                    std::initializer_list<MemSpace> spaces) {
    if (t.buffer >= p_.buffers.size()) return;
    if (std::find(spaces.begin(), spaces.end(), buf(t).space) != spaces.end()) return;
    std::string allowed;
    for (const MemSpace s : spaces) allowed += (allowed.empty() ? "" : " or ") + std::string(name(s));
    error(VerifyError::kOperand, i,
          std::string(role) + " " + tile_text(t) + " is in " + std::string(name(buf(t).space)) +
              "; " + std::string(opcode_info(opcode(p_.code[i].op)).mnemonic) + " needs " + allowed);
  }
  void expect_shape(std::size_t i, const TileRef& t, std::int64_t rows, std::int64_t cols,
                    std::string_view role, std::string_view why) {
    if (t.rows == rows && t.cols == cols) return;
    error(VerifyError::kOperand, i,
          std::string(role) + " " + tile_text(t) + " is " + std::to_string(t.rows) + " x " +
              std::to_string(t.cols) + ", expected " + std::to_string(rows) + " x " +
              std::to_string(cols) + " (" + std::string(why) + ")");
  }
  bool check_mxu_index(std::size_t i, std::int64_t mxu) {
    if (mxu >= 0 && mxu < std::max<std::int64_t>(1, chip_.core.mxu.count)) return true;
    error(VerifyError::kOperand, i,
          "mxu=" + std::to_string(mxu) + " but the core has " +
              std::to_string(chip_.core.mxu.count) + " MXU(s)");
    return false;
  }
  void check_mxu_dtype(std::size_t i, const TileRef& t, std::string_view role) {
    if (t.buffer >= p_.buffers.size()) return;
    const DType d = buf(t).dtype;
    if (mxu_rate(chip_.core.mxu.rate, d) > 0) return;
    error(VerifyError::kMxuDtype, i,
          std::string(role) + " dtype " + std::string(name(d)) + " is not supported by the " +
              (chip_.name.empty() ? std::string("configured") : chip_.name) +
              " MXU (core.mxu.rate for it is 0)");
  }

  // bf16 arithmetic where the vector unit has none: the compiler must
  // convert to f32 around the op (docs/lowering.md, Element types).
  void check_vpu_dtype(std::size_t i, const std::string& op, bool needs_f32) {
    if (!needs_f32) return;
    error(VerifyError::kVpuDtype, i,
          op + " on bf16 needs a bf16 ALU, which the " +
              (chip_.name.empty() ? std::string("configured") : chip_.name) +
              " VPU lacks (core.vpu.bf16_alu: false): convert to f32 around it");
  }

  void check_static(std::size_t i) {
    const Instruction& inst = p_.code[i];
    std::visit([&](const auto& s) { check_op(i, s); }, inst.op);
  }

  void check_op(std::size_t i, const std::monostate&) {
    error(VerifyError::kOperand, i, "invalid instruction");
  }
  void check_op(std::size_t i, const DmaStart& s) {
    const bool dst_ok = check_tile(i, s.dst, "dst");  // both checked, each reports
    const bool src_ok = check_tile(i, s.src, "src");
    const bool ok = dst_ok && src_ok;
    check_sem(i, s.sem);
    if (!ok) return;
    expect_shape(i, s.dst, s.src.rows, s.src.cols, "dst", "a DMA copies src's shape");
    if (buf(s.dst).dtype != buf(s.src).dtype) {
      error(VerifyError::kOperand, i, "dst dtype " + std::string(name(buf(s.dst).dtype)) +
                                          " differs from src dtype " + std::string(name(buf(s.src).dtype)) +
                                          " (DMAs do not convert)");
    }
    const MemSpace a = buf(s.src).space, b = buf(s.dst).space;
    if ((a == MemSpace::kSmem && b == MemSpace::kVmem) || (a == MemSpace::kVmem && b == MemSpace::kSmem)) {
      error(VerifyError::kOperand, i, "DMA between VMEM and SMEM is not supported (go through HBM)");
    }
    if ((a == MemSpace::kHost) != (b == MemSpace::kHost) && a != MemSpace::kHbm && b != MemSpace::kHbm) {
      error(VerifyError::kOperand, i, "host memory is reached from HBM only (DMA hbm <-> host over the host link)");
    }
    if (a == MemSpace::kVreg || b == MemSpace::kVreg) {
      error(VerifyError::kOperand, i, "vector registers are not addressable by DMA (vpu, eup and xlu.reduce operands only)");
    }
    if (a == MemSpace::kHost && b == MemSpace::kHost) {
      error(VerifyError::kOperand, i, "DMA from host memory to host memory is not the chip's to do");
    }
  }
  void check_sem(std::size_t i, SemRef s) {
    if (s.id >= p_.semaphores.size()) error(VerifyError::kOperand, i, "sem names no declared semaphore");
  }
  void check_op(std::size_t i, const SemWait& s) {
    check_sem(i, s.sem);
    if (s.count < 1) error(VerifyError::kOperand, i, "count must be >= 1");
  }
  void check_op(std::size_t i, const SemSignal& s) {
    check_sem(i, s.sem);
    if (s.count < 1) error(VerifyError::kOperand, i, "count must be >= 1");
  }
  void check_op(std::size_t i, const MxuLoadWeights& s) {
    check_mxu_index(i, s.mxu);
    if (!check_tile(i, s.src, "src")) return;
    expect_space(i, s.src, "src", {MemSpace::kVmem});
    check_mxu_dtype(i, s.src, "weight");
    const auto& m = chip_.core.mxu;
    if (s.src.rows > m.rows || s.src.cols > m.cols) {
      error(VerifyError::kOperand, i,
            "weight tile " + tile_text(s.src) + " is " + std::to_string(s.src.rows) + " x " +
                std::to_string(s.src.cols) + ", larger than the " + std::to_string(m.rows) + " x " +
                std::to_string(m.cols) + " MXU");
    }
  }
  void check_op(std::size_t i, const MxuMatmul& s) {
    check_mxu_index(i, s.mxu);
    if (s.acc < 0) error(VerifyError::kOperand, i, "acc must be >= 0");
    if (!check_tile(i, s.lhs, "lhs")) return;
    expect_space(i, s.lhs, "lhs", {MemSpace::kVmem});
    check_mxu_dtype(i, s.lhs, "lhs");
  }
  void check_op(std::size_t i, const MxuPop& s) {
    check_mxu_index(i, s.mxu);
    if (s.acc < 0) error(VerifyError::kOperand, i, "acc must be >= 0");
    if (!check_tile(i, s.dst, "dst")) return;
    expect_space(i, s.dst, "dst", {MemSpace::kVmem});
  }
  void check_op(std::size_t i, const VpuElementwise& s) {
    const bool dst_ok = check_tile(i, s.dst, "dst");  // both checked, each reports
    const bool a_ok = check_tile(i, s.a, "a");
    bool ok = dst_ok && a_ok;
    if (s.b.present()) ok = check_tile(i, s.b, "b") && ok;
    if (s.c.present()) ok = check_tile(i, s.c, "c") && ok;
    if (!ok) return;
    const int arity = vpu_op_inputs(s.op);
    const int given = 1 + (s.b.present() ? 1 : 0) + (s.c.present() ? 1 : 0);
    if (s.c.present() && !s.b.present()) {
      error(VerifyError::kOperand, i, "c is given without b");
    } else if (given > arity || given < arity - 1) {
      error(VerifyError::kOperand, i,
            "vpu." + std::string(name(s.op)) + " takes " + std::to_string(arity) + " input(s); " +
                std::to_string(given) + " tile(s) given (imm may stand for the last one only)");
    }
    const TileRef* inputs[] = {&s.a, &s.b, &s.c};
    const char* roles[] = {"a", "b", "c"};
    for (int k = 0; k < 3; ++k) {
      const TileRef& t = *inputs[k];
      if (!t.present()) continue;
      expect_space(i, t, roles[k], {MemSpace::kVmem, MemSpace::kVreg});
      if ((t.rows != s.dst.rows && t.rows != 1) || (t.cols != s.dst.cols && t.cols != 1)) {
        error(VerifyError::kOperand, i,
              std::string(roles[k]) + " " + tile_text(t) + " (" + std::to_string(t.rows) + " x " +
                  std::to_string(t.cols) + ") does not match or broadcast to dst " +
                  tile_text(s.dst) + " (" + std::to_string(s.dst.rows) + " x " +
                  std::to_string(s.dst.cols) + ")");
      }
    }
    expect_space(i, s.dst, "dst", {MemSpace::kVmem, MemSpace::kVreg});
    // Dtype rules (docs/isa.md): convert changes dtype, compares make pred,
    // select takes a pred first input, everything else keeps one dtype.
    const DType dd = buf(s.dst).dtype;
    const LatencyClass cls = latency_class(s.op);
    const auto want = [&](const TileRef& t, DType d, std::string_view role) {
      if (t.present() && buf(t).dtype != d) {
        error(VerifyError::kOperand, i,
              std::string(role) + " is " + std::string(name(buf(t).dtype)) + ", vpu." +
                  std::string(name(s.op)) + " needs " + std::string(name(d)) + " here");
      }
    };
    if (s.op == VpuOp::kConvert) return;
    check_vpu_dtype(i, "vpu." + std::string(name(s.op)), vpu_needs_f32(chip_.core.vpu, s.op, dd));
    if (s.op == VpuOp::kSelect) {
      want(s.a, DType::kPred, "a");
      want(s.b, dd, "b");
      want(s.c, dd, "c");
    } else if (cls == LatencyClass::kCompare) {
      want(s.dst, DType::kPred, "dst");
      if (s.b.present()) want(s.b, buf(s.a).dtype, "b");
    } else {
      want(s.a, dd, "a");
      want(s.b, dd, "b");
      want(s.c, dd, "c");
    }
  }
  // The VPU, the EUP and the XLUs' reductions read and write vector
  // registers as well as VMEM (`registers`); the MXU, the DMA engines and
  // the XLUs' transposes and lane rotations (which move data between
  // strips) go through VMEM.
  bool unary_tiles(std::size_t i, const TileRef& dst, const TileRef& src, bool registers = true) {
    const bool dst_ok = check_tile(i, dst, "dst");  // both checked, each reports
    const bool src_ok = check_tile(i, src, "src");
    const bool ok = dst_ok && src_ok;
    if (ok && registers) {
      expect_space(i, dst, "dst", {MemSpace::kVmem, MemSpace::kVreg});
      expect_space(i, src, "src", {MemSpace::kVmem, MemSpace::kVreg});
    } else if (ok) {
      expect_space(i, dst, "dst", {MemSpace::kVmem});
      expect_space(i, src, "src", {MemSpace::kVmem});
    }
    return ok;
  }
  void check_op(std::size_t i, const VpuReduce& s) {
    if (unary_tiles(i, s.dst, s.src)) expect_shape(i, s.dst, 1, s.src.cols, "dst", "reduction along rows");
  }
  void check_op(std::size_t i, const XluTranspose& s) {
    if (unary_tiles(i, s.dst, s.src, false)) expect_shape(i, s.dst, s.src.cols, s.src.rows, "dst", "transpose");
  }
  void check_op(std::size_t i, const XluPermute& s) {
    if (unary_tiles(i, s.dst, s.src, false)) expect_shape(i, s.dst, s.src.rows, s.src.cols, "dst", "permute keeps the shape");
  }
  void check_op(std::size_t i, const XluReduce& s) {
    if (unary_tiles(i, s.dst, s.src)) expect_shape(i, s.dst, s.src.rows, 1, "dst", "reduction across lanes");
  }
  void check_op(std::size_t i, const EupUnary& s) {
    if (!unary_tiles(i, s.dst, s.src)) return;
    expect_shape(i, s.dst, s.src.rows, s.src.cols, "dst", "elementwise");
    check_vpu_dtype(i, "eup." + std::string(name(s.op)), eup_needs_f32(chip_.core.vpu, buf(s.src).dtype));
  }
  void check_op(std::size_t i, const Repeat& s) {
    if (s.count < 1) error(VerifyError::kOperand, i, "repeat count must be >= 1");
  }
  void check_op(std::size_t, const End&) {}
  void check_op(std::size_t, const Barrier&) {}
  void check_op(std::size_t, const CoreBarrier&) {}
  void check_op(std::size_t, const MxuFence&) {}
  void check_op(std::size_t i, const Delay& s) {
    if (s.cycles < 0) error(VerifyError::kOperand, i, "delay cycles must be >= 0");
  }
  void check_op(std::size_t i, const Collective& s) {
    const bool dst_ok = check_tile(i, s.dst, "dst");  // both checked, each reports
    const bool src_ok = check_tile(i, s.src, "src");
    const bool ok = dst_ok && src_ok;
    check_sem(i, s.sem);
    if (ok) {
      expect_space(i, s.dst, "dst", {MemSpace::kHbm, MemSpace::kVmem});
      expect_space(i, s.src, "src", {MemSpace::kHbm, MemSpace::kVmem});
      if (s.op == CollectiveKind::kAllReduce || s.op == CollectiveKind::kCollectivePermute ||
          s.op == CollectiveKind::kAllToAll) {
        expect_shape(i, s.dst, s.src.rows, s.src.cols, "dst", "this collective keeps the shape");
      }
    }
    if (!s.groups.present()) return;
    if (s.groups.id >= p_.replica_groups.size()) {
      error(VerifyError::kOperand, i, "groups names no replica groups");
      return;
    }
    std::set<std::int64_t> seen;
    for (const auto& g : p_.replica_groups[s.groups.id]) {
      if (s.op == CollectiveKind::kCollectivePermute) {
        if (g.size() != 2) error(VerifyError::kOperand, i, "collective_permute groups are [source, target] pairs");
        continue;
      }
      for (const std::int64_t r : g) {
        if (!seen.insert(r).second) {
          error(VerifyError::kOperand, i, "replica " + std::to_string(r) + " appears in two groups");
        }
      }
    }
  }

  // ---- abstract execution: hazards, semaphores, MXU state ----
  // Runs [begin, end) abstractly. A repeat body runs min(count, 2) times (that
  // exposes hazards carried across iterations); the semaphore effect of the
  // count - 2 iterations not run is added from the last run's net change.
  void run_range(std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end && steps_ < kMaxTrace; ++i) {
      if (opcode(p_.code[i].op) != Opcode::kRepeat) {
        ++steps_;
        step(i);
        continue;
      }
      const std::int64_t count = std::get<Repeat>(p_.code[i].op).count;
      const std::int64_t runs = std::clamp<std::int64_t>(count, 1, 2);
      std::vector<std::size_t> before(sems_.size(), 0);
      for (std::int64_t r = 0; r < runs; ++r) {
        for (std::size_t k = 0; k < sems_.size(); ++k) before[k] = sems_[k].size();
        run_range(i + 1, match_[i]);
      }
      const std::int64_t skipped = count - runs;
      for (std::size_t k = 0; skipped > 0 && k < sems_.size(); ++k) {
        const auto delta = static_cast<std::int64_t>(sems_[k].size()) - static_cast<std::int64_t>(before[k]);
        if (delta > 0) {
          // Signals of the skipped (earlier) iterations: older than the last run's.
          sems_[k].insert(sems_[k].begin(), static_cast<std::size_t>(delta * skipped), SemEvent{});
        } else if (delta < 0) {
          const auto need = static_cast<std::size_t>(-delta * skipped);
          if (sems_[k].size() < need) {
            error(VerifyError::kDeadlock, i,
                  "each iteration consumes " + std::to_string(-delta) + " more signal(s) of '" +
                      p_.semaphores[k].name + "' than it produces; " + std::to_string(count) +
                      " iterations run out of signals");
            sems_[k].clear();
          } else {
            sems_[k].erase(sems_[k].begin(), sems_[k].begin() + static_cast<std::ptrdiff_t>(need));
          }
        }
      }
      i = match_[i];
    }
  }

  std::uint64_t executed(std::size_t begin, std::size_t end) const {
    std::uint64_t n = 0;
    for (std::size_t i = begin; i < end; ++i) {
      if (opcode(p_.code[i].op) == Opcode::kRepeat) {
        const auto count = static_cast<std::uint64_t>(std::max<std::int64_t>(0, std::get<Repeat>(p_.code[i].op).count));
        n += 2 + count * executed(i + 1, match_[i]);  // repeat and end themselves count once
        i = match_[i];
      } else {
        ++n;
      }
    }
    return n;
  }

  void execute() {
    report_.summary.executed_instructions = executed(0, p_.code.size());
    sems_.assign(p_.semaphores.size(), {});
    for (std::size_t s = 0; s < p_.semaphores.size(); ++s) {
      for (std::int64_t k = 0; k < p_.semaphores[s].initial; ++k) sems_[s].push_back(SemEvent{});
    }
    signalled_anywhere_.assign(p_.semaphores.size(), false);
    for (const Instruction& inst : p_.code) {
      std::visit(
          [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (std::is_same_v<S, DmaStart> || std::is_same_v<S, SemSignal> ||
                          std::is_same_v<S, Collective>) {
              if (s.sem.id < signalled_anywhere_.size()) signalled_anywhere_[s.sem.id] = true;
            }
          },
          inst.op);
    }
    mxus_.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, chip_.core.mxu.count)), {});
    run_range(0, p_.code.size());
  }

  void use(std::size_t i, std::initializer_list<TileUse> uses) {
    for (const TileUse& u : uses) {
      if (!u.tile->present() || u.tile->buffer >= p_.buffers.size()) continue;
      for (const InFlight& f : inflight_) {
        const bool raw_or_waw = overlaps(p_, *u.tile, f.dst);
        const bool war = u.access == Access::kWrite && overlaps(p_, *u.tile, f.src);
        if (!raw_or_waw && !war) continue;
        const std::string verb = u.access == Access::kRead ? "reads" : "writes";
        const std::string what = raw_or_waw ? "writes" : "reads";
        error(VerifyError::kUnwaitedDma, i,
              std::string(u.role) + " " + verb + " " + tile_text(*u.tile) + " while the " +
                  std::string(opcode_info(opcode(p_.code[f.producer].op)).mnemonic) + " at " +
                  line_ref(f.producer) + " that " + what + " it may still be running; wait on "
                  "its semaphore first");
      }
    }
  }

  void start_async(std::size_t i, const TileRef& dst, const TileRef& src, SemRef sem) {
    use(i, {{&src, Access::kRead, "src"}, {&dst, Access::kWrite, "dst"}});
    const std::uint64_t id = next_id_++;
    inflight_.push_back(InFlight{i, dst, src, id});
    if (sem.id < sems_.size()) sems_[sem.id].push_back(SemEvent{id});
  }

  void step(std::size_t i) {
    const Op& op = p_.code[i].op;
    std::visit(
        [&](const auto& s) {
          using S = std::decay_t<decltype(s)>;
          if constexpr (std::is_same_v<S, DmaStart> || std::is_same_v<S, Collective>) {
            start_async(i, s.dst, s.src, s.sem);
          } else if constexpr (std::is_same_v<S, SemSignal>) {
            if (s.sem.id < sems_.size()) {
              for (std::int64_t k = 0; k < s.count; ++k) sems_[s.sem.id].push_back(SemEvent{});
            }
          } else if constexpr (std::is_same_v<S, SemWait>) {
            wait(i, s);
          } else if constexpr (std::is_same_v<S, Barrier>) {
            inflight_.clear();
          } else if constexpr (std::is_same_v<S, CoreBarrier>) {
            // Collectives stay in flight (their -done waits on the semaphore).
            std::erase_if(inflight_, [&](const InFlight& f) {
              return f.producer < p_.code.size() && isa::opcode(p_.code[f.producer].op) != Opcode::kCollective;
            });
          } else if constexpr (std::is_same_v<S, MxuLoadWeights>) {
            use(i, {{&s.src, Access::kRead, "src"}});
            if (auto* m = mxu(s.mxu)) {
              m->loaded = true;
              m->k = s.src.rows;
              m->n = s.src.cols;
            }
          } else if constexpr (std::is_same_v<S, MxuMatmul>) {
            use(i, {{&s.lhs, Access::kRead, "lhs"}});
            if (auto* m = mxu(s.mxu)) {
              if (!m->loaded) {
                error(VerifyError::kMxuNoWeights, i,
                      "mxu.matmul on MXU " + std::to_string(s.mxu) +
                          " before any mxu.load_weights on it");
              } else {
                if (s.lhs.cols != m->k) {
                  error(VerifyError::kOperand, i,
                        "lhs " + tile_text(s.lhs) + " has K = " + std::to_string(s.lhs.cols) +
                            " columns but the loaded weights have K = " + std::to_string(m->k) + " rows");
                }
                m->has_results = true;
                m->result_cols = m->n;
                m->record(s.acc, s.lhs.rows, m->n);
              }
            }
          } else if constexpr (std::is_same_v<S, MxuPop>) {
            use(i, {{&s.dst, Access::kWrite, "dst"}});
            if (auto* m = mxu(s.mxu)) {
              if (!m->has_results) {
                error(VerifyError::kMxuNoWeights, i,
                      "mxu.pop on MXU " + std::to_string(s.mxu) + " with no mxu.matmul results to pop");
              } else {
                const std::int64_t at = m->width_at(s.acc);
                const std::int64_t width = at >= 0 ? at : m->result_cols;
                if (s.dst.cols != width) {
                  error(VerifyError::kOperand, i,
                        "dst " + tile_text(s.dst) + " has " + std::to_string(s.dst.cols) +
                            " columns but the results at accumulator row " + std::to_string(s.acc) + " are N = " +
                            std::to_string(width) + " wide");
                }
              }
            }
          } else if constexpr (std::is_same_v<S, VpuElementwise>) {
            use(i, {{&s.a, Access::kRead, "a"}, {&s.b, Access::kRead, "b"}, {&s.c, Access::kRead, "c"},
                    {&s.dst, Access::kWrite, "dst"}});
          } else if constexpr (std::is_same_v<S, VpuReduce> || std::is_same_v<S, XluTranspose> ||
                               std::is_same_v<S, XluPermute> || std::is_same_v<S, XluReduce> ||
                               std::is_same_v<S, EupUnary>) {
            use(i, {{&s.src, Access::kRead, "src"}, {&s.dst, Access::kWrite, "dst"}});
          }
        },
        op);
  }

  MxuState* mxu(std::int64_t index) {
    if (index < 0 || static_cast<std::size_t>(index) >= mxus_.size()) return nullptr;
    return &mxus_[static_cast<std::size_t>(index)];
  }

  void wait(std::size_t i, const SemWait& s) {
    if (s.sem.id >= sems_.size() || s.count < 1) return;
    auto& q = sems_[s.sem.id];
    if (static_cast<std::int64_t>(q.size()) < s.count) {
      const std::string sem = sem_name(s.sem);
      if (!signalled_anywhere_[s.sem.id] && p_.semaphores[s.sem.id].initial == 0) {
        error(VerifyError::kDeadlock, i,
              "sem.wait on '" + sem + "' can never finish: no instruction ever signals '" + sem + "'");
      } else {
        error(VerifyError::kDeadlock, i,
              "sem.wait on '" + sem + "' needs " + std::to_string(s.count) + " signal(s) but at most " +
                  std::to_string(q.size()) +
                  " can arrive: issue is in order, so only earlier instructions can signal it");
      }
      q.clear();
      return;
    }
    for (std::int64_t k = 0; k < s.count; ++k) {
      const SemEvent e = q.front();
      q.pop_front();
      if (e.inflight_id) {
        std::erase_if(inflight_, [&](const InFlight& f) { return f.id == *e.inflight_id; });
      }
    }
  }

  // ---- capacity and liveness ----
  // Bytes, or for a vector-register buffer registers: one, as the unit
  // streams its tiles a vreg-wide strip at a time through every instruction
  // of the kernel (the buffer holds that strip's value).
  std::int64_t footprint(const Buffer& b) const {
    if (b.space == MemSpace::kVreg) return 1;
    if (b.space != MemSpace::kVmem) return b.bytes();
    const auto [sub, lanes] = vmem_tiling(b.dtype);
    return dtype_bytes(b.dtype, ceil_to(b.rows(), sub) * ceil_to(b.cols(), lanes));
  }

  // Live range of each buffer (first, last instruction), indexed by buffer.
  struct LiveRanges {
    std::vector<std::size_t> first, last;
  };

  void check_capacity() {
    const LiveRanges r = live_ranges();
    check_space(MemSpace::kVmem, static_cast<std::int64_t>(chip_.core.vmem.capacity), r.first, r.last);
    check_space(MemSpace::kSmem, static_cast<std::int64_t>(chip_.core.smem.capacity), r.first, r.last);
    check_space(MemSpace::kVreg, chip_.core.vpu.vregs, r.first, r.last);
    check_space(MemSpace::kHbm, static_cast<std::int64_t>(chip_.hbm.capacity), r.first, r.last);
  }

 public:
  // The footprint of `space`'s buffers live at each instruction (empty when
  // the repeats do not match).
  std::vector<std::int64_t> live_footprint(MemSpace space) {
    if (!match_repeats()) return {};
    const LiveRanges r = live_ranges();
    return live_at(buffers_in(space), r.first, r.last);
  }

 private:
  // The buffers of `space` with memory of their own (not views).
  std::vector<std::size_t> buffers_in(MemSpace space) const {
    std::vector<std::size_t> ids;
    for (std::size_t b = 0; b < p_.buffers.size(); ++b) {
      if (p_.buffers[b].space == space && p_.buffers[b].view_of == TileRef::kNone) ids.push_back(b);
    }
    return ids;
  }

  // Sum of the footprints of `ids` live at each instruction.
  std::vector<std::int64_t> live_at(const std::vector<std::size_t>& ids, const std::vector<std::size_t>& first,
                                    const std::vector<std::size_t>& last) const {
    std::vector<std::int64_t> live(p_.code.size() + 1, 0);
    for (const std::size_t b : ids) {
      if (first[b] == kNone) continue;
      live[first[b]] += footprint(p_.buffers[b]);
      live[last[b] + 1] -= footprint(p_.buffers[b]);
    }
    for (std::size_t i = 1; i < live.size(); ++i) live[i] += live[i - 1];
    live.pop_back();
    return live;
  }

  LiveRanges live_ranges() const {
    // Live range of each buffer: first..last instruction using it. A VMEM
    // buffer a loop reads before writing it in an iteration (and writes
    // somewhere) carries a value from one iteration to the next: its range
    // widens to the outermost repeat around its uses, as does every buffer
    // of another memory. One each iteration writes before reading it (a
    // staging buffer of a loop body's section) is live from that write to
    // its last use, so later sections of the body may reuse its memory.
    const std::size_t nb = p_.buffers.size();
    std::vector<std::size_t> first(nb, kNone), last(nb, 0);
    std::vector<std::size_t> wide_first(nb, kNone), wide_last(nb, 0);
    std::vector<bool> carried(nb, false), written(nb, false);
    std::set<std::pair<std::uint32_t, std::size_t>> seen_in_loop;  // (buffer, loop) used
    std::map<std::uint32_t, bool> reads;  // this instruction's buffers: read (or only written)
    for (std::size_t i = 0; i < p_.code.size(); ++i) {
      reads.clear();
      std::visit(
          [&](const auto& s) {
            using S = std::decay_t<decltype(s)>;
            if constexpr (!std::is_same_v<S, std::monostate>) {
              for_each_field(s, [&](const FieldInfo& info, const auto& field) {
                if constexpr (std::is_same_v<std::decay_t<decltype(field)>, TileRef>) {
                  if (!field.present() || field.buffer >= nb) return;
                  const std::uint32_t b = p_.storage(field.buffer);  // a view keeps its storage live
                  first[b] = std::min(first[b], i);
                  last[b] = std::max(last[b], i);
                  const auto [lo, hi] = outer_[i].first == kNone ? std::pair{i, i} : outer_[i];
                  wide_first[b] = std::min(wide_first[b], lo);
                  wide_last[b] = std::max(wide_last[b], hi);
                  reads[b] = reads[b] || info.name != "dst";
                  if (info.name == "dst") written[b] = true;
                }
              });
            }
          },
          p_.code[i].op);
      if (outer_[i].first == kNone) continue;
      for (const auto& [b, read] : reads) {
        // The loop's first use of b reads it (also a read-modify-write).
        if (seen_in_loop.insert({b, outer_[i].first}).second && read) carried[b] = true;
      }
    }
    for (std::size_t b = 0; b < nb; ++b) {
      // (A buffer nothing writes holds no value to carry.)
      const MemSpace space = p_.buffers[b].space;
      if ((carried[b] && written[b]) || (space != MemSpace::kVmem && space != MemSpace::kVreg)) {
        first[b] = wide_first[b];
        last[b] = wide_last[b];
      }
    }
    return LiveRanges{std::move(first), std::move(last)};
  }

  // Overlapping fixed placements that are live at the same time. A sweep over
  // time keeps the live buffers ordered by offset: in a legal program they are
  // disjoint, so only the neighbours of a new buffer can collide with it
  // (O(n log n)); after the first collision every live buffer is compared.
  void check_overlaps(const std::string& mem, const std::vector<std::size_t>& ids,
                      const std::vector<std::size_t>& first, const std::vector<std::size_t>& last) {
    std::vector<std::size_t> placed;
    for (const std::size_t b : ids) {
      if (p_.buffers[b].offset >= 0 && first[b] != kNone && footprint(p_.buffers[b]) > 0) placed.push_back(b);
    }
    std::stable_sort(placed.begin(), placed.end(), [&](std::size_t x, std::size_t y) { return first[x] < first[y]; });
    std::multimap<std::int64_t, std::size_t> live;  // offset -> buffer
    auto by_last = [&](std::size_t x, std::size_t y) { return last[x] > last[y]; };
    std::vector<std::size_t> expiry;  // min-heap on last use
    bool collided = false;
    for (const std::size_t b : placed) {
      while (!expiry.empty() && last[expiry.front()] < first[b]) {
        const std::size_t gone = expiry.front();
        std::pop_heap(expiry.begin(), expiry.end(), by_last);
        expiry.pop_back();
        auto [lo, hi] = live.equal_range(p_.buffers[gone].offset);
        for (auto it = lo; it != hi; ++it) {
          if (it->second == gone) {
            live.erase(it);
            break;
          }
        }
      }
      const Buffer& nb = p_.buffers[b];
      const std::int64_t begin = nb.offset, end = nb.offset + footprint(nb);
      std::vector<std::size_t> hits;
      auto it = live.lower_bound(begin);
      for (auto f = it; f != live.end() && f->first < end; ++f) hits.push_back(f->second);
      for (auto r = it; r != live.begin();) {
        --r;
        if (r->first + footprint(p_.buffers[r->second]) > begin) hits.push_back(r->second);
        if (!collided) break;
      }
      std::sort(hits.begin(), hits.end());
      for (const std::size_t other : hits) {
        collided = true;
        const std::size_t lo_id = std::min(other, b), hi_id = std::max(other, b);
        error(VerifyError::kCapacity, kNone, p_.buffers[hi_id].loc,
              mem + " buffers " + p_.buffers[lo_id].name + " and " + p_.buffers[hi_id].name +
                  " overlap in memory while both are live (" + line_ref(std::max(first[lo_id], first[hi_id])) + ")");
      }
      live.emplace(begin, b);
      expiry.push_back(b);
      std::push_heap(expiry.begin(), expiry.end(), by_last);
    }
  }

  void check_space(MemSpace space, std::int64_t capacity, const std::vector<std::size_t>& first,
                   const std::vector<std::size_t>& last) {
    const std::string mem(name(space));
    // Vector-register buffers count registers (footprint()), the rest bytes.
    const auto amount = [&](std::int64_t v) {
      return space == MemSpace::kVreg ? std::to_string(v) + " vector register" + (v == 1 ? "" : "s")
                                      : format_quantity(static_cast<double>(v), Dimension::kBytes);
    };
    const std::int64_t vreg_bytes = std::max<std::int64_t>(1, chip_.core.vpu.sublanes) *
                                    std::max<std::int64_t>(1, chip_.core.vpu.lanes) * 4;
    const std::vector<std::size_t> ids = buffers_in(space);  // a view has no memory of its own
    for (const std::size_t b : ids) {
      const Buffer& buffer = p_.buffers[b];
      const std::int64_t size = footprint(buffer);
      if (capacity > 0 && buffer.offset >= 0 && buffer.offset + size > capacity) {
        error(VerifyError::kCapacity, kNone, buffer.loc,
              "buffer " + buffer.name + " (" + amount(size) +
                  " at offset " + std::to_string(buffer.offset) + ") ends past the " + mem +
                  " capacity of " + amount(capacity));
      } else if (capacity > 0 && buffer.offset < 0 && size > capacity) {
        error(VerifyError::kCapacity, kNone, buffer.loc,
              "buffer " + buffer.name + " needs " + amount(size) +
                  ", more than the " + mem + " capacity of " +
                  amount(capacity));
      }
      if (space == MemSpace::kVreg && buffer.offset >= 0) {
        error(VerifyError::kOperand, kNone, buffer.loc,
              "vreg buffer " + buffer.name + " has an offset (vector registers have no address)");
      }
      if (space == MemSpace::kVmem && buffer.offset >= 0 && buffer.offset % vreg_bytes != 0) {
        error(VerifyError::kMisaligned, kNone, buffer.loc,
              "VMEM buffer " + buffer.name + " offset " + std::to_string(buffer.offset) +
                  " is not a multiple of the " + std::to_string(vreg_bytes) + "-byte vector register tile");
      }
    }
    check_overlaps(mem, ids, first, last);
    // The live set at each instruction.
    if (p_.code.empty()) return;
    const std::vector<std::int64_t> live_bytes = live_at(ids, first, last);
    std::int64_t peak = 0;
    bool reported = false;
    for (std::size_t i = 0; i < p_.code.size(); ++i) {
      const std::int64_t live = live_bytes[i];
      peak = std::max(peak, live);
      if (!reported && capacity > 0 && live > capacity) {
        reported = true;
        std::string names;
        for (const std::size_t b : ids) {
          if (first[b] != kNone && first[b] <= i && i <= last[b]) {
            names += (names.empty() ? "" : ", ") + p_.buffers[b].name;
          }
        }
        error(VerifyError::kCapacity, i,
              "live " + mem + " buffers need " + amount(live) +
                  " here, more than the capacity of " +
                  amount(capacity) + ": " + names);
      }
    }
    if (space == MemSpace::kVmem) report_.summary.peak_vmem_bytes = peak;
  }

  const Program& p_;
  const ChipConfig& chip_;
  std::string_view src_;
  VerifyReport report_;
  std::set<std::tuple<VerifyError, std::size_t, std::string>> reported_;
  std::vector<std::size_t> match_;
  std::vector<std::pair<std::size_t, std::size_t>> outer_;
  std::size_t steps_ = 0;
  std::vector<std::deque<SemEvent>> sems_;
  std::vector<bool> signalled_anywhere_;
  std::vector<InFlight> inflight_;
  std::vector<MxuState> mxus_;
  std::uint64_t next_id_ = 0;
};

}  // namespace

std::string_view name(VerifyError e) {
  switch (e) {
#define X(en, text, doc) \
  case VerifyError::en: return text;
    TPUSIM_ISA_VERIFY_ERRORS(X)
#undef X
  }
  return "?";
}

std::vector<Diagnostic> VerifyReport::diagnostics() const {
  std::vector<Diagnostic> out;
  out.reserve(issues.size());
  for (const auto& i : issues) out.push_back(i.diagnostic);
  return out;
}

std::size_t VerifyReport::count(VerifyError kind) const {
  return static_cast<std::size_t>(
      std::count_if(issues.begin(), issues.end(), [&](const VerifyIssue& i) { return i.kind == kind; }));
}

std::string VerifyReport::format_summary() const {
  if (!ok()) {
    return std::to_string(issues.size()) + (issues.size() == 1 ? " error" : " errors");
  }
  return "ok: " + std::to_string(summary.instructions) + " instructions (" +
         std::to_string(summary.executed_instructions) + " executed), " +
         std::to_string(summary.buffers) + " buffers, " + std::to_string(summary.semaphores) +
         " semaphores; peak VMEM " +
         format_quantity(static_cast<double>(summary.peak_vmem_bytes), Dimension::kBytes) + " of " +
         format_quantity(static_cast<double>(summary.vmem_capacity_bytes), Dimension::kBytes);
}

VerifyReport verify(const Program& p, const ChipConfig& chip, std::string_view source) {
  return Verifier(p, chip, source).run();
}

std::vector<std::int64_t> live_footprint(const Program& p, const ChipConfig& chip, MemSpace space) {
  return Verifier(p, chip, {}).live_footprint(space);
}

}  // namespace tpusim::isa
