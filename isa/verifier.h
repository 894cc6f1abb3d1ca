// Verifier: is an instruction stream legal on a chip? (`tpusim check`)
//
// Checks, each reported with the instruction's (or declaration's) location:
//  * tiles inside their buffers; VMEM tiles aligned to the VPU tiling
//    (sublanes · 32/bits rows × lanes columns, from the chip config);
//  * VMEM (and SMEM) capacity: fixed buffers inside the memory, live buffers
//    not overlapping, the live set at any point fitting the capacity;
//  * hazards: reading (or overwriting) a tile that an asynchronous DMA or
//    collective writes (or reads) before a sem.wait consumed its signal;
//  * deadlock: a sem.wait that can never be satisfied (the sequencer issues in
//    order, so only earlier instructions can signal);
//  * MXU state: matmul without loaded weights, pop without results;
//  * dtype not supported by the configured MXU (rate 0);
//  * operand rules (shapes, memory spaces, arity, dtypes) from docs/isa.md.
//
// `repeat` bodies are analysed as if run min(count, 2) times, which exposes
// hazards carried from one iteration to the next. Signals on one semaphore
// are assumed to be consumed in the order they were produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "isa/program.h"

namespace tpusim::isa {

// X(enumerator, name, doc)
#define TPUSIM_ISA_VERIFY_ERRORS(X)                                                          \
  X(kOutOfBounds, "out-of-bounds", "a tile reaches outside its buffer")                      \
  X(kMisaligned, "misaligned", "a VMEM tile or buffer breaks the (sublanes, lanes) tiling")  \
  X(kCapacity, "capacity", "buffers do not fit the memory, or live buffers overlap")         \
  X(kUnwaitedDma, "unwaited-dma", "a tile is used while an async copy into/out of it runs")  \
  X(kDeadlock, "deadlock", "a semaphore wait that can never be satisfied")                   \
  X(kMxuNoWeights, "mxu-no-weights", "matmul without loaded weights, or pop without results") \
  X(kMxuDtype, "mxu-dtype", "an MXU input dtype the configured MXU does not support")        \
  X(kVpuDtype, "vpu-dtype", "bf16 arithmetic on a VPU without a bf16 ALU (core.vpu.bf16_alu)") \
  X(kOperand, "operand", "operand shape, memory space, arity or dtype breaks the ISA rules")

enum class VerifyError : std::uint8_t {
#define X(e, ...) e,
  TPUSIM_ISA_VERIFY_ERRORS(X)
#undef X
};
std::string_view name(VerifyError e);

struct VerifyIssue {
  VerifyError kind = VerifyError::kOperand;
  std::size_t instruction = kNoInstruction;  // index into Program::code
  Diagnostic diagnostic;                     // "file:line:col: [kind] message"
  static constexpr std::size_t kNoInstruction = static_cast<std::size_t>(-1);
};

struct VerifySummary {
  std::size_t instructions = 0;           // static
  std::uint64_t executed_instructions = 0;  // with repeat counts
  std::size_t buffers = 0;
  std::size_t semaphores = 0;
  std::int64_t peak_vmem_bytes = 0;  // largest live VMEM footprint (tile-padded)
  std::int64_t vmem_capacity_bytes = 0;
};

struct VerifyReport {
  std::vector<VerifyIssue> issues;
  VerifySummary summary;
  [[nodiscard]] bool ok() const { return issues.empty(); }
  [[nodiscard]] std::vector<Diagnostic> diagnostics() const;
  // "ok: 12 instructions (1536 executed), 5 buffers, 2 semaphores; peak VMEM
  // 1.5 MiB of 128 MiB" or "3 errors".
  [[nodiscard]] std::string format_summary() const;
  [[nodiscard]] std::size_t count(VerifyError kind) const;
};

// `source` (optional) is the assembly text, for the offending line and caret.
VerifyReport verify(const Program& p, const ChipConfig& chip, std::string_view source = {});

// The footprint of the `space` buffers live at each instruction of `p`, as
// the capacity check counts it: a buffer from its first to its last use,
// widened to the outermost loop around its uses when the loop carries its
// value; VMEM bytes tile-padded, vector registers counted. Empty when the
// program's repeats do not match.
std::vector<std::int64_t> live_footprint(const Program& p, const ChipConfig& chip, MemSpace space);

}  // namespace tpusim::isa
