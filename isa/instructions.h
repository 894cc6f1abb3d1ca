// The instruction set: ONE X-macro table (STYLE.md practice 1). From it come
// the operand structs, the std::variant of instruction kinds, the Opcode enum,
// mnemonics, units, the assembler's operand parsing, the printer and
// docs/isa.md (isa/doc.h). Adding an instruction = adding one row.
//
// X(Struct, mnemonic, unit, fields, semantics)
//   Struct     the operand struct generated for the instruction
//   mnemonic   assembly name; an instruction whose first field is a Subop
//              (VPU op, reduce op, EUP op, collective kind) is written
//              `mnemonic.<subop>`, e.g. `vpu.add`, `vpu.reduce.sum`, `eup.exp`
//   unit       the unit whose in-order queue executes it
//   fields     (F(type, name, presence, default, doc) ...) its operands, written
//              `name=value` in assembly, in this order
//   semantics  precise meaning, for docs/isa.md and a future functional executor
//
// Tiles are 2-D windows `buf[r0:r1, c0:c1]` (half-open) of a buffer seen as
// rows × cols (rows = product of all but the last dimension). A tile row is
// contiguous; consecutive rows are one buffer row pitch apart, so every tile
// of an HBM buffer is a strided rectangular transfer.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <variant>

#include "isa/types.h"

namespace tpusim::isa {

// A 2-D window of a declared buffer. 24 bytes.
struct TileRef {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t buffer = kNone;  // index into Program::buffers
  std::int32_t col = 0;
  std::int64_t row = 0;
  std::int32_t rows = 0;
  std::int32_t cols = 0;
  [[nodiscard]] bool present() const { return buffer != kNone; }
  friend bool operator==(const TileRef&, const TileRef&) = default;
};

struct SemRef {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t id = kNone;  // index into Program::semaphores
  [[nodiscard]] bool present() const { return id != kNone; }
  friend bool operator==(const SemRef&, const SemRef&) = default;
};

// Replica groups of a collective, interned in Program::replica_groups.
struct GroupsRef {
  static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t id = kNone;
  [[nodiscard]] bool present() const { return id != kNone; }
  friend bool operator==(const GroupsRef&, const GroupsRef&) = default;
};

enum class AccMode : std::uint8_t { kAccumulate, kOverwrite };
std::string_view name(AccMode m);

enum class Unit : std::uint8_t { kSequencer, kDma, kMxu, kVpu, kXlu, kEup, kIci };
std::string_view name(Unit u);

enum class Presence : std::uint8_t { kRequired, kOptional, kSubop };

// clang-format off
#define TPUSIM_ISA_INSTRUCTIONS(X)                                                                 \
  X(DmaStart, "dma.start", kDma,                                                                   \
    (F(TileRef, dst, kRequired, {}, "destination tile (HBM, VMEM, SMEM or host)")                  \
     F(TileRef, src, kRequired, {}, "source tile, same shape and dtype as dst")                    \
     F(SemRef, sem, kRequired, {}, "semaphore incremented by 1 when the copy has completed")),     \
    "Asynchronously copy src to dst (HBM->VMEM, VMEM->HBM, VMEM->VMEM, HBM<->SMEM, HBM<->host "    \
    "over the host link, host.bandwidth each way). Each tile "                                       \
    "row is one contiguous run; rows step by the buffer's row pitch (strided rectangular tile). "  \
    "Issue does not wait; reading dst (or writing src) is legal only after a sem.wait that "       \
    "consumes this DMA's signal.")                                                                 \
  X(SemWait, "sem.wait", kSequencer,                                                               \
    (F(SemRef, sem, kRequired, {}, "semaphore")                                                    \
     F(std::int64_t, count, kOptional, 1, "signals to consume")),                                  \
    "Stall issue until sem >= count, then sem -= count. Signals are consumed in the order they "  \
    "were produced.")                                                                              \
  X(SemSignal, "sem.signal", kSequencer,                                                           \
    (F(SemRef, sem, kRequired, {}, "semaphore")                                                    \
     F(std::int64_t, count, kOptional, 1, "amount to add")),                                       \
    "sem += count at issue.")                                                                      \
  X(MxuLoadWeights, "mxu.load_weights", kMxu,                                                      \
    (F(std::int64_t, mxu, kOptional, 0, "matrix unit index")                                       \
     F(TileRef, src, kRequired, {}, "K x N weight tile in VMEM, K <= mxu rows, N <= mxu cols")),   \
    "Shift src into the MXU's weight buffer (W = src). With double-buffered weights it fills the " \
    "shadow buffer while earlier matmuls stream, and becomes active for the next matmul.")         \
  X(MxuMatmul, "mxu.matmul", kMxu,                                                                 \
    (F(std::int64_t, mxu, kOptional, 0, "matrix unit index")                                       \
     F(TileRef, lhs, kRequired, {}, "M x K tile in VMEM streamed through the array")               \
     F(std::int64_t, acc, kOptional, 0, "first accumulator row")                                   \
     F(AccMode, mode, kOptional, AccMode::kAccumulate, "accumulate | overwrite")),                 \
    "Stream the M rows of lhs through the loaded K x N weights W: for i < M, j < N: "              \
    "ACC[acc+i, j] = (mode == overwrite ? 0 : ACC[acc+i, j]) + sum_k f32(lhs[i, k]) * f32(W[k, j]).") \
  X(MxuPop, "mxu.pop", kMxu,                                                                       \
    (F(std::int64_t, mxu, kOptional, 0, "matrix unit index")                                       \
     F(TileRef, dst, kRequired, {}, "M x N destination tile in VMEM")                              \
     F(std::int64_t, acc, kOptional, 0, "first accumulator row")),                                 \
    "dst[i, j] = convert(ACC[acc+i, j]) to dst's dtype (RNE), then ACC[acc+i, j] = 0. Reads "       \
    "through the result path once the matmuls that wrote those rows have landed; later matmuls "    \
    "into other rows stream meanwhile.")                                                           \
  X(VpuElementwise, "vpu", kVpu,                                                                   \
    (F(VpuOp, op, kSubop, VpuOp::kAdd, "operation; its latency class is in the VPU op table")      \
     F(TileRef, dst, kRequired, {}, "result tile (VMEM or vector registers)")                      \
     F(TileRef, a, kRequired, {}, "first input")                                                   \
     F(TileRef, b, kOptional, {}, "second input (binary and ternary ops)")                         \
     F(TileRef, c, kOptional, {}, "third input (fma, select)")                                     \
     F(double, imm, kOptional, 0.0, "scalar replacing the last missing input")),                   \
    "dst[i, j] = op(a[i, j], b[i, j], c[i, j]) per element. An input with 1 row (1 column) "       \
    "broadcasts along the rows (columns). `imm` stands for the op's last input when that input "   \
    "is not given. Inputs and dst share one dtype except: convert (dst dtype differs), "           \
    "comparisons (dst is pred), select (a is pred).")                                              \
  X(VpuReduce, "vpu.reduce", kVpu,                                                                 \
    (F(ReduceOp, op, kSubop, ReduceOp::kSum, "sum | max | min")                                    \
     F(TileRef, dst, kRequired, {}, "1 x N result tile")                                           \
     F(TileRef, src, kRequired, {}, "M x N input tile")),                                          \
    "dst[0, j] = op over i of src[i, j]: reduction along rows (sublanes, then across vregs).")     \
  X(XluTranspose, "xlu.transpose", kXlu,                                                           \
    (F(TileRef, dst, kRequired, {}, "N x M result tile")                                           \
     F(TileRef, src, kRequired, {}, "M x N input tile")),                                          \
    "dst[j, i] = src[i, j].")                                                                      \
  X(XluPermute, "xlu.permute", kXlu,                                                               \
    (F(TileRef, dst, kRequired, {}, "M x N result tile")                                           \
     F(TileRef, src, kRequired, {}, "M x N input tile")                                            \
     F(std::int64_t, shift, kOptional, 0, "lane rotation")),                                       \
    "dst[i, (j + shift) mod N] = src[i, j] (lane rotation).")                                      \
  X(XluReduce, "xlu.reduce", kXlu,                                                                 \
    (F(ReduceOp, op, kSubop, ReduceOp::kSum, "sum | max | min")                                    \
     F(TileRef, dst, kRequired, {}, "M x 1 result tile")                                           \
     F(TileRef, src, kRequired, {}, "M x N input tile")),                                          \
    "dst[i, 0] = op over j of src[i, j]: reduction across lanes.")                                 \
  X(EupUnary, "eup", kEup,                                                                           \
    (F(EupOp, op, kSubop, EupOp::kExp, "transcendental")                                           \
     F(TileRef, dst, kRequired, {}, "result tile")                                                 \
     F(TileRef, src, kRequired, {}, "input tile, same shape")),                                    \
    "dst[i, j] = op(src[i, j]) computed in f32, converted to dst's dtype.")                        \
  X(Repeat, "repeat", kSequencer,                                                                  \
    (F(std::int64_t, count, kRequired, 0, "iterations, >= 1")),                                    \
    "Issue the instructions up to the matching `end` count times in a row.")                       \
  X(End, "end", kSequencer, (),                                                                    \
    "Close the innermost `repeat`.")                                                               \
  X(Barrier, "barrier", kSequencer, (),                                                            \
    "Stall issue until every earlier instruction on every unit (DMAs included) has completed.")   \
  X(CoreBarrier, "core.barrier", kSequencer, (),                                                   \
    "Megacore sync: stall issue until every earlier instruction on every unit of this TensorCore " \
    "except in-flight collectives (DMAs included) has completed and every TensorCore of the chip " \
    "has reached its matching core.barrier (the n-th of each core's program). On a one-core chip " \
    "it is a barrier that leaves collectives in flight.")                                          \
  X(MxuFence, "mxu.fence", kSequencer, (),                                                        \
    "Stall issue until every earlier instruction on the matrix units has completed (their "        \
    "results landed in the accumulators); DMAs and the other units go on. The compiler starts "    \
    "each step of a kernel's MXU tile loop with one when core.mxu.step_sync is true (the loop's "  \
    "back edge is a schedule boundary: a step's weights load after the step before has drained).") \
  X(Delay, "delay", kSequencer,                                                                    \
    (F(std::int64_t, cycles, kRequired, 0, "core cycles, >= 0")),                                  \
    "Stall issue for cycles core cycles; the units go on with what was issued before. The "        \
    "compiler starts every kernel with one when core.sequencer.kernel_overhead > 0 (a kernel's "   \
    "fixed start-up cost).")                                                                       \
  X(Collective, "collective", kIci,                                                                \
    (F(CollectiveKind, op, kSubop, CollectiveKind::kAllReduce, "collective kind")                  \
     F(TileRef, dst, kRequired, {}, "result tile (HBM or VMEM)")                                   \
     F(TileRef, src, kRequired, {}, "input tile (HBM or VMEM)")                                    \
     F(GroupsRef, groups, kOptional, {}, "replica groups [[0,1],[2,3]]; pairs for permute")        \
     F(SemRef, sem, kRequired, {}, "semaphore incremented by 1 when done")),                       \
    "Placeholder for the multi-chip model: asynchronously run the collective over the replica "    \
    "groups (all replicas when omitted; [source, target] pairs for collective_permute) and "       \
    "signal sem. A single chip completes it as a local copy.")
// clang-format on

#define TPUSIM_ISA_STRIP(...) __VA_ARGS__

// Operand structs: one member per F(...), default-initialized from the table.
#define F(type, fname, presence, def, doc) type fname = type(def);
#define X(S, mnemonic, unit, fields, doc)                \
  struct S {                                             \
    TPUSIM_ISA_STRIP fields                              \
    friend bool operator==(const S&, const S&) = default; \
  };
TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
#undef F

#define X(S, ...) S,
using Op = std::variant<TPUSIM_ISA_INSTRUCTIONS(X) std::monostate>;
#undef X

enum class Opcode : std::uint8_t {
#define X(S, ...) k##S,
  TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
  kInvalid
};

// Static facts about one field of an instruction (for assembler, printer, docs).
struct FieldInfo {
  std::string_view name;
  Presence presence;
  std::string_view doc;
};

// Calls fn(const FieldInfo&, Field&) for every field of an operand struct, in
// table order. Works on const and non-const structs.
#define F(type, fname, presence, def, doc) fn(FieldInfo{#fname, Presence::presence, doc}, s.fname);
#define X(S, mnemonic, unit, fields, doc)                                  \
  template <typename Fn>                                                   \
  void for_each_field([[maybe_unused]] S& s, [[maybe_unused]] Fn&& fn) {   \
    TPUSIM_ISA_STRIP fields                                                \
  }                                                                        \
  template <typename Fn>                                                   \
  void for_each_field([[maybe_unused]] const S& s, [[maybe_unused]] Fn&& fn) { \
    TPUSIM_ISA_STRIP fields                                                \
  }
TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
#undef F

// Calls fn(const FieldInfo&, const Field& a_field, const Field& b_field) for
// every field of two structs of the same kind (the printer compares against
// defaults with it).
#define F(type, fname, presence, def, doc) \
  fn(FieldInfo{#fname, Presence::presence, doc}, a.fname, b.fname);
#define X(S, mnemonic, unit, fields, doc)                                                      \
  template <typename Fn>                                                                       \
  void for_each_field_pair([[maybe_unused]] const S& a, [[maybe_unused]] const S& b,           \
                           [[maybe_unused]] Fn&& fn) {                                         \
    TPUSIM_ISA_STRIP fields                                                                    \
  }
TPUSIM_ISA_INSTRUCTIONS(X)
#undef X
#undef F

struct OpcodeInfo {
  std::string_view mnemonic;
  Unit unit;
  std::string_view semantics;
  bool has_subop;  // the first field is written in the mnemonic
};

// Table facts by opcode; opcode(op) is op.index().
const OpcodeInfo& opcode_info(Opcode op);
// A default-constructed instruction of kind `op` (monostate for kInvalid).
Op make_op(Opcode op);
inline Opcode opcode(const Op& op) { return static_cast<Opcode>(op.index()); }
constexpr std::size_t kNumOpcodes = static_cast<std::size_t>(Opcode::kInvalid);

}  // namespace tpusim::isa
