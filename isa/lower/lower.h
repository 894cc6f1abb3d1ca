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
  // Fraction of VMEM a section's staging buffers may use (the rest is headroom
  // for tails and temporaries).
  double vmem_budget_fraction = 0.4;
  // Refuse to emit programs larger than this (static instructions).
  std::size_t max_instructions = 4'000'000;
  // Target bytes of one streamed chunk of one array (elementwise kernels).
  std::int64_t stream_chunk_bytes = 1 << 20;
  // Force dot tile sizes (0 = chosen by the cost model; for experiments).
  std::int64_t dot_tile_m = 0, dot_tile_n = 0, dot_tile_k = 0;
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
