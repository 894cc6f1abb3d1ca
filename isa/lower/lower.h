// Lowering: compile an HLO module (isa/hlo) into an instruction stream (isa)
// for one TensorCore of a chip. docs/lowering.md describes tiling, loop
// order, double buffering, the fusion policy and every approximation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "isa/hlo/ir.h"
#include "isa/program.h"

namespace tpusim::lower {

struct LowerOptions {
  // Chip-dependent figures are not options: the MXU shape, the vreg
  // (sublanes x lanes) tiling and the smallest row tile (Ctx::min_tile_rows)
  // come from the chip config; the dot cost model calls sim/timing. The
  // fields below are compiler policy, each with the reason for its default.

  // Fraction of VMEM a section's staging buffers may use (the rest is headroom
  // for tails and temporaries).
  double vmem_budget_fraction = 0.4;
  // Refuse to emit programs larger than this (static instructions): a few
  // million instructions simulate in about a second (docs/architecture.md
  // measures 5-7 M instr/s). The config key simulation.max_program_instructions.
  std::size_t max_instructions = 4'000'000;
  // The dot cost model charges a program's size against this many
  // instructions: time x (1 + instructions / dot_instruction_scale), which
  // prefers compact programs among near-equal tilings (a policy constant, not
  // the refusal limit above, so raising that limit moves no tiling).
  double dot_instruction_scale = 4e6;
  // Target bytes of one streamed chunk of one array (elementwise kernels).
  std::int64_t stream_chunk_bytes = 1 << 20;
  // Stream kernels cut their iteration space into about this many chunks at
  // most (a chunk is then >= 1/256 of it), which keeps a kernel's program
  // small; the chunks may then use up to stream_vmem_fraction of VMEM, above
  // the budget (a kernel owns its section). Beyond that, at most
  // stream_max_chunks chunks.
  std::int64_t stream_target_chunks = 256;
  double stream_vmem_fraction = 0.8;
  std::int64_t stream_max_chunks = 4096;
  // A kernel of more chunks than this runs its steady middle as `repeat` of
  // a pair of chunks (same instructions, the pair's tiles standing in for
  // the others'): a 3 GB optimizer update is then a program of a few pairs.
  // Kernels up to stream_target_chunks stay unrolled.
  std::int64_t stream_repeat_min_chunks = 256;
  // VMEM a stream kernel reserves per row for temporaries: the results of at
  // most this many ops live at once (plus 2), each an f32 row.
  int stream_max_live_temps = 12;
  // An operand (or epilogue input) bigger than vmem_budget / this is streamed
  // in chunks; smaller ones are loaded once and stay resident.
  std::int64_t resident_budget_share = 8;
  // A batched dot whose one-element program has steps x batch above this is
  // emitted as one element's program inside `repeat B` (same timing, a
  // program B times smaller); below it the elements are unrolled, so their
  // loads and stores overlap.
  std::int64_t dot_repeat_min_steps = 4096;
  // A dot of more MXU steps than this is emitted as equal chunks of its
  // output inside `repeat` (one chunk's program; same bytes and timing per
  // chunk) plus the strips left over, so a huge product is a program of
  // bounded size. A step is up to ~100 instructions (weight loads, matmuls
  // and pops per MXU, its DMAs), so 4096 steps stay well under
  // max_instructions, however large the dot (bf16[1e6,1e6] x
  // bf16[1e6,1e6]: 4.7e8 steps; simulation.full_instruction_limit then
  // asks for --loops extrapolate).
  std::int64_t dot_chunk_max_steps = 4096;
  // A dynamic-update-slice is updated in place with one DMA per contiguous
  // block of the update; more blocks than this (a program of many tiny DMAs)
  // stream a copy instead.
  std::int64_t update_in_place_max_blocks = 256;
  // Iotas up to this many elements are preloaded constants in HBM; larger
  // ones are computed by a stream kernel (their bytes are then timed).
  std::int64_t preload_iota_max_elements = 4096;
  // Approximations: a reduce-window or select-and-scatter inside a kernel
  // costs one VPU pass per window element, at most this many.
  std::int64_t approx_max_window_passes = 64;
  // Force dot tile sizes (0 = chosen by the cost model; for experiments).
  std::int64_t dot_tile_m = 0, dot_tile_n = 0, dot_tile_k = 0;
  // Reuse: a top-level op structurally identical to one lowered before (same
  // computation of inputs stored alike; hlo/structural_key.h) is not lowered
  // again, and the simulator charges it the first one's time and counters
  // (isa::Program::reuse). Program size then follows a model's distinct ops,
  // not its unrolled layers. False: every op is lowered (the full program).
  bool reuse_repeated_ops = true;
  // Copies of an op simulated before the rest reuse them (round robin): 2,
  // because a copy's context can alternate between copies (on megacore chips
  // odd and even layers of an MLP differ by up to a third, as the previous
  // section's tail overlaps differently); 1 would charge every copy the
  // first's time.
  std::int64_t reuse_simulated_copies = 2;
  // while loops without backend_config known_trip_count run this many times.
  std::int64_t default_trip_count = 1;
  // Megacore: the program for TensorCore `core` of `cores` that split every
  // section's work (dot output blocks, stream chunks) and meet at a
  // core.barrier between sections; core 0 also issues the collectives and
  // the work too small to split. cores = 1: the whole module on one core.
  int core = 0;
  int cores = 1;
};

// What happened to one HLO instruction.
enum class NoteKind : std::uint8_t { kLowered, kFree, kApprox };
std::string_view name(NoteKind k);

struct LowerNote {
  std::string op;      // HLO instruction (or fusion) name
  std::string opcode;  // as written
  NoteKind kind = NoteKind::kLowered;
  std::string message;  // how it was lowered / what was approximated
};

struct LowerReport {
  std::vector<LowerNote> notes;            // one per top-level instruction (and per approximation)
  std::vector<std::string> approximations; // "approx:<opcode> <name>: why", de-duplicated by message
  std::size_t sections = 0;                // lowered units (fusion = one)
  // Ops lowered once and reused (LowerOptions::reuse_repeated_ops), in the
  // order of program.reuse: the op lowered and the later ops that reuse it.
  struct Reused {
    std::string op;
    std::vector<std::string> instances;
  };
  std::vector<Reused> reused;
  // Dot tiling chosen per dot: "name: B=.. M=.. K=.. N=.. tm=.. tn=.. tk=.. hbm_bytes=.."
  std::vector<std::string> tilings;
  [[nodiscard]] std::size_t count(NoteKind k) const;
};

struct Lowered {
  isa::Program program;
  LowerReport report;
};

// Compiles the module's entry computation. Never crashes on valid IR: ops it
// cannot model exactly are costed explicitly and listed in the report; an
// error names the instruction and file:line ("unsupported: X at f.hlo:12").
Result<Lowered> lower_module(const hlo::Module& module, const ChipConfig& chip,
                             const LowerOptions& options = {});

// The TensorCores the lowering splits work over on `chip`: tensorcores for a
// megacore chip, else 1 (a non-megacore chip's cores are separate devices).
int megacore_cores(const ChipConfig& chip);

// One program per TensorCore of a megacore chip (lower_module with core =
// 0..cores-1), else the single program. Every program declares the same HBM
// buffers in the same order, so they address one shared HBM image.
Result<std::vector<Lowered>> lower_for_chip(const hlo::Module& module, const ChipConfig& chip,
                                            LowerOptions options = {});

}  // namespace tpusim::lower
