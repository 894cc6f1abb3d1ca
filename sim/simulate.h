// One simulation of one program on one chip: elaborate the SystemC modules
// from the config, run to completion (or to a detected deadlock), and return
// the stats. SystemC elaborates once per process (DESIGN.md principle 7), so
// simulate() may be called once per process; a second call is an error.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "common/stats.h"
#include "isa/program.h"
#include "sim/tensor_core.h"

namespace tpusim {

// The trace's event budget (about 100 bytes an event: ~200 MB): a run
// expected to write more merges runs of one op's slices (SimOptions).
inline constexpr double kTraceEventBudget = 2e6;

struct SimOptions {
  std::string trace_path;          // "" = no trace
  // Merge same-provenance slices closer than this; < 0: automatic (0 unless
  // the run's expected slices pass trace_event_budget, then every run of one
  // op's slices on a track is merged).
  double trace_merge_gap_s = -1;
  double trace_event_budget = kTraceEventBudget;
  // Instructions a chip executes (all its TensorCores; 0 = unknown): with
  // the traced chips, the trace's expected slices.
  double trace_instructions_per_chip = 0;
  // The chips whose TensorCores the trace shows (a multi-chip run); empty:
  // every simulated chip.
  std::vector<std::int64_t> trace_chips;
  // The trace's HLO-op slices carry these in their args: op -> its metadata
  // op_name (the framework's name), when the module has one.
  std::map<std::string, std::string> trace_op_names;
};

struct ProvenanceRow {
  std::string name;  // HLO op / fusion / label ("(unlabelled)" for none)
  ProvenanceStats stats;  // over all occurrences
  std::int64_t occurrences = 1;  // > 1: a reused op (isa::Program::reuse) and its identical copies
};

struct SimResult {
  bool finished = false;             // false: deadlock, see `blocked`
  std::vector<std::string> blocked;  // waiting parties with source locations
  double seconds = 0;                // simulated time of the program
  double cycles = 0;
  StatsRegistry stats;
  std::vector<ProvenanceRow> provenance;  // sorted by attributed time, descending
  std::vector<std::string> notes;          // modelling approximations used in this run
  std::vector<LoopExtrapolation> loops;    // loops extrapolated (simulation.loops = extrapolate), core 0
  std::vector<SectionReuse> reused;        // ops reused for identical copies (isa::Program::reuse), core 0
  std::vector<CoreUse> cores;              // chip 0's TensorCores that ran, their stats (the report reads these)
};

// Places buffers without an offset (a bump allocator per memory space) and
// runs the program on core 0 of the chip. Returns a diagnostic for programs
// that cannot run (capacity exceeded, an MXU without weights, …).
Result<SimResult> simulate(const ChipConfig& chip, isa::Program program, const SimOptions& options = {});
// One program per TensorCore (megacore: the lowering's per-core programs,
// synchronized by core.barrier), all sharing the chip's HBM; `cores` holds 1
// program or chip.tensorcores. Time is the last core's end; the provenance
// rows take their time from core 0's timeline and sum FLOPs, bytes and busy
// time over the cores.
Result<SimResult> simulate_cores(const ChipConfig& chip, std::vector<isa::Program> cores,
                                 const SimOptions& options = {});

namespace detail {
// False when this process has already elaborated a simulation.
bool claim_elaboration();
// Places buffers without an offset; a message when a memory overflows.
std::string place_buffers(const ChipConfig& chip, isa::Program& p);
// Provenance rows of one chip's cores (programs[i] ran on cores[i]): time from
// core 0, the rest summed by name; sorted by attributed time, descending.
std::vector<ProvenanceRow> merge_provenance(const std::vector<const TensorCore*>& cores,
                                            const std::vector<const isa::Program*>& programs);
}  // namespace detail

}  // namespace tpusim
