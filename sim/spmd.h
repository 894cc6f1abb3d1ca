// SPMD execution of one program on a multi-chip system (DESIGN.md principle 8):
// - full mode: one SystemC elaboration with a TensorCore and HBM per chip,
//   each running the program as its own device id; collectives synchronize
//   their groups through the CollectiveFabric and take the network time;
// - symmetric mode: chip 0 alone, every collective timed on the network with
//   all chips participating (by symmetry, every chip issues it at once).
// Both use one NetworkCollectiveTimer, so they agree wherever the chips run
// in lockstep; full mode adds what symmetry hides (members issuing late,
// members that never issue: a deadlock, reported).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"
#include "interconnect/collectives.h"
#include "isa/program.h"
#include "sim/collective_fabric.h"
#include "sim/simulate.h"

namespace tpusim {

struct SpmdOptions {
  std::optional<SpmdMode> mode;  // nullopt = full up to system.full_mode_max_chips, then symmetric
  // nullopt = system.collective_algorithm of the chip config.
  std::optional<interconnect::CollectiveAlgorithm> algorithm;
  SimOptions sim;  // the trace covers chip 0
};

struct ChipTime {
  std::int64_t device = 0;
  double seconds = 0;          // the chip's program end
  double compute_s = 0;        // some non-ICI unit busy
  double communication_s = 0;  // a collective in flight
  double exposed_s = 0;        // a collective in flight and nothing else busy
};

struct AxisUse {
  std::string axis;  // "x", "y", "z", "dcn"
  std::int64_t links = 0;  // link directions (DCN: egress + ingress ports)
  double busy_s = 0;       // summed over those links and all collectives
  double utilization = 0;  // busy / links / step time
};

struct SpmdResult {
  SimResult sim;  // stats of every chip (chipN.*); provenance, cycles of chip 0
  SpmdMode mode = SpmdMode::kSymmetric;
  std::int64_t chips = 1;
  std::string topology;                // Topology::describe()
  std::vector<ChipTime> chip_times;    // symmetric: chip 0 only
  std::vector<CollectiveRow> collectives;
  std::vector<AxisUse> axes;
  std::uint64_t network_runs = 0;      // distinct collectives simulated on the network
};

// `programs`: one (every chip runs it) or one per chip (full mode only; tests
// use it to make members late or absent). Runs once per process.
// "4x4x4" -> "[4,4,4]" (the YAML list for system.topology); "" when the text
// is not 1 to 3 positive extents joined by 'x'. (--system, validate step rows.)
std::string system_to_yaml_list(const std::string& text);
// "[true,true]" for a "[4,4]" list (every axis wraps).
std::string wrap_all_list(const std::string& yaml_list);
// The system.wraparound override of --wrap (every axis of `yaml_list`) or
// --no-wrap (none); "" for neither (the config or its wrap_rule decides).
std::string wraparound_override(std::optional<bool> wrap, const std::string& yaml_list);

Result<SpmdResult> simulate_spmd(const ChipConfig& chip, std::vector<isa::Program> programs,
                                 const SpmdOptions& options = {});
// Megacore chips: every chip runs core_programs[c] on its TensorCore c (the
// lowering's per-core programs, synchronized by core.barrier, sharing the
// chip's HBM). Core 0 issues the collectives.
Result<SpmdResult> simulate_spmd_cores(const ChipConfig& chip, std::vector<isa::Program> core_programs,
                                       const SpmdOptions& options = {});

// What `tpusim run` simulates for a compiled module: the chip alone
// (simulate_cores) or, with multi_chip, the system of chip.system
// (simulate_spmd_cores). `core_programs`: one per TensorCore of a megacore
// chip, else one. `spmd` is set for multi-chip runs (its `sim` moved out).
struct SystemRun {
  SimResult sim;
  std::optional<SpmdResult> spmd;
};
Result<SystemRun> simulate_system(const ChipConfig& chip, std::vector<isa::Program> core_programs, bool multi_chip,
                                  const SpmdOptions& options = {});

}  // namespace tpusim
