#include "sim/system.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <limits>
#include <memory>
#include <systemc>

#include "memory/hbm_model.h"
#include "sim/chip.h"
#include "sim/collective_timer.h"
#include "sim/trace.h"

namespace tpusim {
namespace {

// Link use per ICI axis (and DCN) over the step: the report's axis table
// and the system.* stats.
void axis_use(const NetworkCollectiveTimer& timer, const CollectiveFabric& fabric, double step, SpmdResult& out) {
  constexpr const char* kAxis[] = {"x", "y", "z"};
  std::array<std::int64_t, interconnect::kMaxAxes> axis_links{};
  std::int64_t dcn_ports = 0;
  for (interconnect::LinkId l = 0; l < timer.topology().num_links(); ++l) {
    const auto& info = timer.topology().link(l);
    if (info.kind == interconnect::LinkKind::kIci) {
      if (info.to < 0) continue;  // the end of an axis without wraparound: no link
      axis_links[static_cast<size_t>(info.axis)] += 1;
    } else {
      dcn_ports += 1;
    }
  }
  for (int a = 0; a < timer.topology().rank(); ++a) {
    const auto links = axis_links[static_cast<size_t>(a)];
    const double busy = fabric.axis_busy_s()[static_cast<size_t>(a)];
    if (timer.topology().dim(a) < 2) continue;
    out.axes.push_back(AxisUse{kAxis[a], links, busy,
                               links > 0 && step > 0 ? busy / static_cast<double>(links) / step : 0.0});
  }
  if (timer.topology().slices() > 1) {
    out.axes.push_back(AxisUse{"dcn", dcn_ports, fabric.dcn_busy_s(),
                               dcn_ports > 0 && step > 0 ? fabric.dcn_busy_s() / static_cast<double>(dcn_ports) / step
                                                         : 0.0});
  }
  StatsRegistry& stats = out.sim.stats;
  stats.add("system.chips", StatUnit::kCount, "chips in the system").value = static_cast<double>(out.chips);
  stats.add("system.network_runs", StatUnit::kCount, "distinct collectives simulated on the network").value =
      static_cast<double>(out.network_runs);
  for (const AxisUse& a : out.axes) {
    stats.add("system.ici." + a.axis + ".busy_s", StatUnit::kSeconds, "link busy time summed over the axis' links").value = a.busy_s;
    stats.add("system.ici." + a.axis + ".utilization", StatUnit::kRatio, "busy / links / step time").value = a.utilization;
  }
}

// Every chip runs `ncores` programs: one, or one per TensorCore.
std::optional<Diagnostic> check_programs(const ChipConfig& chip,
                                         const std::vector<std::vector<isa::Program>>& programs,
                                         const std::string& file) {
  if (programs.empty() || programs.front().empty()) return Diagnostic{file, 0, 0, "internal: no program to run", ""};
  const std::size_t ncores = programs.front().size();
  for (const auto& c : programs) {
    if (c.size() != ncores || (ncores > 1 && static_cast<std::int64_t>(ncores) != chip.tensorcores)) {
      return Diagnostic{file, 0, 0,
                        fmt::format("internal: {} programs for a chip of {} TensorCores", c.size(), chip.tensorcores),
                        ""};
    }
  }
  return std::nullopt;
}

// What the report says about how the system was simulated.
void setup_notes(const ChipConfig& chip, const std::vector<std::vector<isa::Program>>& programs,
                 const SpmdResult& out, bool network, SimResult& result) {
  const std::size_t ncores = programs.front().size();
  if (ncores > 1 && chip.simulation.loops != LoopMode::kFull) {
    result.notes.push_back("megacore: only loops around whole sections (HLO while loops) are extrapolated; a "
                           "kernel's own loops run in full on each TensorCore");
  }
  if (chip.tensorcores > static_cast<std::int64_t>(ncores)) {
    result.notes.push_back(fmt::format("the program runs on TensorCore 0 of {}; the others idle", chip.tensorcores));
  } else if (ncores > 1) {
    result.notes.push_back(fmt::format("megacore: {} TensorCores{} run their share of every section and meet at "
                                       "core.barrier; they share the chip's HBM",
                                       ncores, network ? " per chip" : ""));
  }
  if (network) {
    for (const auto& axis : wraparound_notes(chip.system)) result.notes.push_back("wraparound: " + axis);
    result.notes.push_back(
        out.mode == SpmdMode::kFull
            ? fmt::format("full mode: {} chips simulated; each collective completes at its group's last issue + the "
                          "network time of all its groups on the {}",
                          out.chips, out.topology)
            : fmt::format("symmetric mode: chip 0 simulated; each collective timed on the {} with all {} chips "
                          "issuing it at once",
                          out.topology, out.chips));
    return;
  }
  for (const auto& inst : programs.front().front().code) {
    if (isa::opcode(inst.op) == isa::Opcode::kCollective) {
      result.notes.push_back("collectives are timed as bytes / total ICI bandwidth + one hop (single-chip placeholder)");
      break;
    }
  }
}

// Derived figures as formulas over the counters (common/stats.h): the
// report reads them, stats.json shows them with their expressions. Step-time
// ratios are over the system's step; per-chip figures are chip 0's (the one
// a report describes), over the TensorCores that ran.
void derived_stats(const ChipConfig& chip, SimResult& result) {
  StatsRegistry& s = result.stats;
  s.add("system.seconds", StatUnit::kSeconds, "step time: when the last chip finished").value = result.seconds;
  s.add("system.cycles", StatUnit::kCycles, "step time in clock cycles").value = result.cycles;
  const std::size_t cores = result.cores.size();
  std::vector<std::string> mxu_flops, vmem_busy;
  for (std::size_t c = 0; c < cores; ++c) {
    const std::string core = fmt::format("chip0.core{}", c);
    vmem_busy.push_back(core + ".vmem.busy_cycles");
    for (const UnitUse& u : result.cores[c].units) {
      const std::string unit = core + "." + u.name;
      s.add_ratio(unit + ".utilization", StatUnit::kRatio, "share of the step the unit was busy",
                  unit + ".busy_cycles", "system.cycles");
      if (u.kind == isa::Unit::kMxu) mxu_flops.push_back(unit + ".flops");
    }
  }
  s.add("chip0.tensorcores_run", StatUnit::kCount, "TensorCores of chip 0 that ran a program").value =
      static_cast<double>(cores);
  s.add_sum("chip0.mxu.flops", StatUnit::kFlops, "FLOPs of the MXUs", mxu_flops);
  ChipConfig one_core = chip;
  one_core.tensorcores = 1;
  s.add("chip0.mxu.peak_flops_per_s", StatUnit::kFlopsPerSecond, "bf16 peak of the TensorCores that ran").value =
      derive(one_core).peak_flops_bf16 * static_cast<double>(cores);
  s.add_ratio("chip0.mxu.flop_utilization", StatUnit::kRatio, "MXU FLOPs over the step at the bf16 peak",
              "chip0.mxu.flops", "system.seconds", "chip0.mxu.peak_flops_per_s");
  s.add_sum("chip0.hbm.bytes", StatUnit::kBytes, "bytes read and written by the program",
            {"chip0.hbm.read_bytes", "chip0.hbm.write_bytes"});
  s.add("chip0.hbm.peak_bytes_per_s", StatUnit::kBytesPerSecond, "HBM bandwidth (hbm.bandwidth)").value =
      chip.hbm.bandwidth;
  s.add_ratio("chip0.hbm.bytes_per_s", StatUnit::kBytesPerSecond, "HBM bytes per second of the step",
              "chip0.hbm.bytes", "system.seconds");
  s.add_ratio("chip0.hbm.bandwidth_utilization", StatUnit::kRatio, "HBM bytes over the step at the peak bandwidth",
              "chip0.hbm.bytes", "system.seconds", "chip0.hbm.peak_bytes_per_s");
  s.add_sum("chip0.vmem.busy_cycles", StatUnit::kCycles, "VMEM busy cycles summed over the TensorCores", vmem_busy);
  s.add_ratio("chip0.vmem.utilization", StatUnit::kRatio, "VMEM busy share of the step, averaged over the TensorCores",
              "chip0.vmem.busy_cycles", "system.cycles", "chip0.tensorcores_run");
}

// After the run: step time, per-chip times, loops, reuse, provenance and the
// cores' use, from the simulated chips (chip 0 stands for the others).
void collect(const ChipConfig& chip, const std::vector<std::vector<isa::Program>>& programs,
             const std::vector<std::unique_ptr<Chip>>& chips, bool network, SpmdResult& out) {
  SimResult& result = out.sim;
  result.finished = true;
  double step = 0;
  for (std::size_t d = 0; d < chips.size(); ++d) {
    const Chip& c = *chips[d];
    const auto device = static_cast<std::int64_t>(d);
    if (!c.finished()) {
      result.finished = false;
      c.blocked(network ? fmt::format("chip {}", d) : std::string(), result.blocked);
    }
    const double end = c.end_seconds();
    step = std::max(step, end);
    if (network) {
      // Core 0 issues the chip's collectives: its timeline splits compute and communication.
      const TensorCore& core0 = c.core(0);
      out.chip_times.push_back(ChipTime{device, end, core0.compute_seconds(), core0.communication_seconds(),
                                        core0.exposed_communication_seconds()});
    }
    result.stats.add(fmt::format("chip{}.seconds", d), StatUnit::kSeconds, "simulated time of the program").value = end;
  }
  result.seconds = step;
  result.cycles = std::round(step * chip.clock);
  result.loops = chips.front()->core(0).extrapolated_loops();
  for (auto& note : loop_notes(result.loops)) result.notes.push_back(std::move(note));
  result.reused = chips.front()->core(0).reused_sections();
  for (auto& note : reuse_notes(result.reused)) result.notes.push_back(std::move(note));
  std::vector<const TensorCore*> views;
  std::vector<const isa::Program*> progs;
  for (std::size_t c = 0; c < programs.front().size(); ++c) {
    views.push_back(&chips.front()->core(c));
    progs.push_back(&programs.front()[c]);
  }
  result.provenance = detail::merge_provenance(views, progs);
  for (const TensorCore* core : views) result.cores.push_back(core->use());
  derived_stats(chip, result);
}

}  // namespace

Result<SpmdResult> run_system(const ChipConfig& chip, std::vector<std::vector<isa::Program>> programs,
                              const SpmdOptions& options, bool network) {
  const std::string file =
      programs.empty() || programs.front().empty() ? std::string("<program>") : programs.front().front().file;
  if (auto bad = check_programs(chip, programs, file)) return *bad;
  const std::size_t ncores = programs.front().size();
  const HbmModelInfo* hbm_model = find_hbm_model(chip.hbm.model);
  if (hbm_model == nullptr) {
    return Diagnostic{file, 0, 0, fmt::format("internal: hbm.model '{}' is not a registered HBM model", chip.hbm.model),
                      ""};
  }

  SpmdResult out;
  std::optional<interconnect::Topology> topology;
  std::int64_t n = 1;
  if (network) {
    auto topo = interconnect::Topology::from_config(chip.system);
    if (!topo.ok()) return topo.errors();
    topology = std::move(topo).value();
    n = topology->num_devices();
    out.mode = options.mode.value_or(n > chip.system.full_mode_max_chips ? SpmdMode::kSymmetric : SpmdMode::kFull);
    out.topology = topology->describe();
  } else {
    out.mode = SpmdMode::kFull;
    if (programs.size() != 1) return Diagnostic{file, 0, 0, "internal: one chip without a network", ""};
  }
  out.chips = n;
  const SpmdMode mode = out.mode;
  if (programs.size() != 1 && (mode != SpmdMode::kFull || static_cast<std::int64_t>(programs.size()) != n)) {
    return Diagnostic{file, 0, 0,
                      fmt::format("internal: {} programs for {} chips in {} mode", programs.size(), n,
                                  spmd_mode_name(mode)),
                      ""};
  }
  if (!detail::claim_elaboration()) {
    return Diagnostic{file, 0, 0, "internal: one simulation per process (SystemC cannot re-elaborate)", ""};
  }
  for (auto& c : programs) {
    for (auto& p : c) {
      if (std::string err = detail::place_buffers(chip, p); !err.empty()) return Diagnostic{p.file, 0, 0, err, ""};
    }
  }
  ::setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);

  SimResult& result = out.sim;
  std::unique_ptr<std::ofstream> trace_file;
  std::unique_ptr<TraceWriter> trace;
  if (!options.sim.trace_path.empty()) {
    trace_file = std::make_unique<std::ofstream>(options.sim.trace_path);
    if (!*trace_file) return Diagnostic{options.sim.trace_path, 0, 0, "cannot write the trace file", ""};
    double gap = std::max(0.0, options.sim.trace_merge_gap_s);
    if (options.sim.trace_merge_gap_s < 0) {
      const std::int64_t shown_chips =
          options.sim.trace_chips.empty() ? (mode == SpmdMode::kFull ? n : 1)
                                          : static_cast<std::int64_t>(options.sim.trace_chips.size());
      const double expected = options.sim.trace_instructions_per_chip * static_cast<double>(shown_chips);
      if (expected > options.sim.trace_event_budget) {
        gap = std::numeric_limits<double>::infinity();
        result.notes.push_back(fmt::format(
            "trace: about {:.3g} slices expected, over the budget of {:.3g} events: each run of one op's slices on "
            "a track is one slice (args count them); --trace-merge-us sets the merging, --trace-chips the chips",
            expected, options.sim.trace_event_budget));
      }
    }
    trace = std::make_unique<TraceWriter>(*trace_file, gap);
    trace->set_op_names(&options.sim.trace_op_names);
  }

  std::unique_ptr<NetworkCollectiveTimer> timer;
  std::unique_ptr<CollectiveFabric> fabric;
  if (network) {
    timer = std::make_unique<NetworkCollectiveTimer>(chip, std::move(*topology),
                                                     options.algorithm.value_or(chip.system.collective_algorithm));
    fabric = std::make_unique<CollectiveFabric>(mode, *timer, chip.ici.concurrent_collectives > 1);
  }

  // Loop extrapolation names loops by their rank in the program and relies on
  // every chip running the same program: per-chip programs run their loops in
  // full. The TensorCores of a megacore chip extrapolate only the loops that
  // span sections (TensorCore::number_coordinated_loops).
  ChipConfig core_chip = chip;
  if (programs.size() > 1 && chip.simulation.loops != LoopMode::kFull) {
    core_chip.simulation.loops = LoopMode::kFull;
    result.notes.push_back("loops simulated in full: the chips run different programs (extrapolation needs SPMD)");
  }
  const std::int64_t simulated = mode == SpmdMode::kFull ? n : 1;
  if (trace) {
    std::vector<std::int64_t> absent;
    for (const std::int64_t c : options.sim.trace_chips) {
      if (c >= simulated) absent.push_back(c);
    }
    if (!absent.empty()) {
      result.notes.push_back(fmt::format("trace: chips {} are not simulated in {} mode (only chip 0 is): not in the "
                                         "trace",
                                         fmt::join(absent, ","), spmd_mode_name(mode)));
    }
  }
  const auto traced = [&](std::int64_t d) {
    const auto& shown = options.sim.trace_chips;
    return shown.empty() || std::find(shown.begin(), shown.end(), d) != shown.end();
  };
  LoopCoordinator loop_coordinator;  // every chip skips the same loop iterations
  std::vector<std::unique_ptr<Chip>> chips;
  chips.reserve(static_cast<std::size_t>(simulated));
  for (std::int64_t d = 0; d < simulated; ++d) {
    const auto& chip_programs = programs[programs.size() == 1 ? 0 : static_cast<std::size_t>(d)];
    chips.push_back(std::make_unique<Chip>(fmt::format("chip{}", d).c_str(), core_chip, *hbm_model, chip_programs,
                                           result.stats, traced(d) ? trace.get() : nullptr,
                                           network ? SpmdBinding{fabric.get(), d} : SpmdBinding{},
                                           network || ncores > 1 ? &loop_coordinator : nullptr));
  }
  setup_notes(chip, programs, out, network, result);
  if (trace && fabric) {
    std::vector<std::int64_t> linked;  // the traced chips' links
    for (std::int64_t d = 0; d < simulated; ++d) {
      if (traced(d)) linked.push_back(d);
    }
    fabric->trace_links(linked);
  }

  sc_core::sc_start();  // runs until no events remain: completion or deadlock

  // "chip 3" in a system (chip 0 too), nothing for a lone chip.
  for (std::int64_t d = 0; d < simulated; ++d) {
    const std::string who = network ? fmt::format("chip {}", d) : std::string();
    if (std::string e = chips[static_cast<std::size_t>(d)]->error(who); !e.empty()) {
      return Diagnostic{file, 0, 0, std::move(e), ""};
    }
  }
  if (fabric && fabric->tiled_copies() > 1) {
    result.notes.push_back(fmt::format(
        "the replica groups cover {} of the {} chips; the others run the program as {} data-parallel copies "
        "(groups shifted by {} devices)",
        n / fabric->tiled_copies(), n, fabric->tiled_copies(), n / fabric->tiled_copies()));
  }
  collect(chip, programs, chips, network, out);
  if (fabric) {
    for (const auto& b : fabric->blocked()) result.blocked.push_back(b);
  }
  if (network) {
    out.collectives = fabric->rows();
    out.network_runs = timer->network_runs();
    axis_use(*timer, *fabric, result.seconds, out);
  }
  if (trace) {
    if (fabric) {
      // Every chip skips the same loop iterations: chip 0's timeline maps them all.
      const TensorCore& core0 = chips.front()->core(0);
      fabric->write_link_tracks(*trace, [&core0](double t) { return core0.reported_seconds(t); });
    }
    trace->finish();
  }
  return out;
}

}  // namespace tpusim
