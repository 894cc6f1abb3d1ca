#include "sim/spmd.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <systemc>

#include "memory/hbm.h"
#include "sim/core_sync.h"
#include "sim/tensor_core.h"
#include "sim/trace.h"

namespace tpusim {

std::string system_to_yaml_list(const std::string& text) {
  std::string list = "[";
  std::size_t pos = 0;
  int axes = 0;
  while (true) {
    const std::size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoll(part) < 1) {
      return {};
    }
    list += (axes++ ? "," : "") + part;
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  if (axes > 3) return {};
  return list + "]";
}

std::string wrap_all_list(const std::string& yaml_list) {
  std::string out = "[true";
  for (char c : yaml_list) {
    if (c == ',') out += ",true";
  }
  return out + "]";
}

namespace {

// programs[chip][core]: one chip entry (every chip runs it) or one per chip;
// one core entry (core 0 only) or one per TensorCore.
Result<SpmdResult> run_spmd(const ChipConfig& chip, std::vector<std::vector<isa::Program>> programs,
                            const SpmdOptions& options) {
  const std::string file =
      programs.empty() || programs.front().empty() ? std::string("<program>") : programs.front().front().file;
  if (programs.empty() || programs.front().empty()) {
    return Diagnostic{file, 0, 0, "internal: simulate_spmd needs a program", ""};
  }
  const std::size_t ncores = programs.front().size();
  for (const auto& c : programs) {
    if (c.size() != ncores || (ncores > 1 && static_cast<int>(ncores) != chip.tensorcores)) {
      return Diagnostic{file, 0, 0,
                        fmt::format("internal: {} programs per chip for {} TensorCores", c.size(), chip.tensorcores),
                        ""};
    }
  }
  auto topo = interconnect::Topology::from_config(chip.system);
  if (!topo.ok()) return topo.errors();
  const std::int64_t n = topo->num_devices();
  const SpmdMode mode = options.mode.value_or(n > chip.system.full_mode_max_chips ? SpmdMode::kSymmetric : SpmdMode::kFull);
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

  SpmdResult out;
  out.mode = mode;
  out.chips = n;
  out.topology = topo->describe();
  SimResult& result = out.sim;
  std::unique_ptr<std::ofstream> trace_file;
  std::unique_ptr<TraceWriter> trace;
  if (!options.sim.trace_path.empty()) {
    trace_file = std::make_unique<std::ofstream>(options.sim.trace_path);
    if (!*trace_file) return Diagnostic{options.sim.trace_path, 0, 0, "cannot write the trace file", ""};
    trace = std::make_unique<TraceWriter>(*trace_file, options.sim.trace_merge_gap_s);
  }

  const auto configured = interconnect::parse_algorithm(chip.system.collective_algorithm);
  if (!configured) {
    return Diagnostic{file, 0, 0,
                      fmt::format("internal: system.collective_algorithm '{}' is not an algorithm",
                                  chip.system.collective_algorithm),
                      ""};
  }
  NetworkCollectiveTimer timer(chip, std::move(topo).value(), options.algorithm.value_or(*configured));
  CollectiveFabric fabric(mode, timer, chip.ici.concurrent_collectives > 1);
  const std::int64_t simulated = mode == SpmdMode::kFull ? n : 1;
  LoopCoordinator loop_coordinator;  // every chip skips the same loop iterations
  // Loop extrapolation relies on every chip running the same stream (the
  // leader's decisions name loop instances by pc); per-chip programs run in full.
  // A megacore chip's TensorCores run different programs too.
  ChipConfig per_chip_programs_chip = chip;
  const bool distinct_programs = programs.size() > 1 || ncores > 1;
  if (distinct_programs && chip.simulation.loops != "full") {
    per_chip_programs_chip.simulation.loops = "full";
    result.notes.push_back(ncores > 1 ? "loops simulated in full: the TensorCores of a megacore chip run different "
                                        "programs (extrapolation needs one stream)"
                                      : "loops simulated in full: the chips run different programs (extrapolation "
                                        "needs SPMD)");
  }
  const ChipConfig& core_chip = distinct_programs ? per_chip_programs_chip : chip;
  std::vector<std::unique_ptr<Hbm>> hbms;
  std::vector<std::unique_ptr<CoreSync>> syncs;
  // cores[d * ncores + c]: TensorCore c of chip d.
  std::vector<std::unique_ptr<TensorCore>> cores;
  hbms.reserve(static_cast<size_t>(simulated));
  cores.reserve(static_cast<size_t>(simulated) * ncores);
  for (std::int64_t d = 0; d < simulated; ++d) {
    const auto& chip_programs = programs[programs.size() == 1 ? 0 : static_cast<size_t>(d)];
    const std::string chip_name = fmt::format("chip{}", d);
    hbms.push_back(std::make_unique<Hbm>((chip_name + "_hbm").c_str(), chip.hbm, result.stats, chip_name + ".hbm"));
    // A megacore chip's cores on one scheduler.
    syncs.push_back(ncores > 1 ? std::make_unique<CoreSync>(static_cast<int>(ncores), chip.simulation.run_ahead) : nullptr);
    for (std::size_t c = 0; c < ncores; ++c) {
      const std::string core_name = fmt::format("{}.core{}", chip_name, c);
      // Core 0 is the chip's device on the fabric; the lowering gives the
      // other cores no collectives.
      cores.push_back(std::make_unique<TensorCore>(fmt::format("{}_core{}", chip_name, c).c_str(), core_chip,
                                                   chip_programs[c], result.stats, core_name,
                                                   d == 0 ? trace.get() : nullptr,
                                                   c == 0 ? SpmdBinding{&fabric, d} : SpmdBinding{},
                                                   ncores > 1 ? syncs.back().get() : nullptr));
      cores.back()->hbm_socket.bind(hbms.back()->socket);
      if (ncores == 1) cores.back()->set_loop_coordination(&loop_coordinator, {chip_name + ".hbm."});
    }
  }
  if (chip.tensorcores > static_cast<int>(ncores)) {
    result.notes.push_back(fmt::format("the program runs on TensorCore 0 of {}; the others idle", chip.tensorcores));
  } else if (ncores > 1) {
    result.notes.push_back(fmt::format("megacore: {} TensorCores per chip run their share of every section and "
                                       "meet at core.barrier; they share the chip's HBM",
                                       ncores));
  }
  result.notes.push_back(
      mode == SpmdMode::kFull
          ? fmt::format("full mode: {} chips simulated; each collective completes at its group's last issue + the "
                        "network time of all its groups on the {}",
                        n, out.topology)
          : fmt::format("symmetric mode: chip 0 simulated; each collective timed on the {} with all {} chips "
                        "issuing it at once",
                        out.topology, n));

  sc_core::sc_start();  // runs until no events remain: completion or deadlock

  for (std::size_t i = 0; i < cores.size(); ++i) {
    const TensorCore& core = *cores[i];
    if (!core.error().empty()) {
      const std::string who = ncores > 1 ? fmt::format("chip {} core {}: ", i / ncores, i % ncores)
                              : simulated > 1 ? fmt::format("chip {}: ", i)
                                              : std::string();
      return Diagnostic{file, 0, 0, who + core.error(), ""};
    }
  }
  if (fabric.tiled_copies() > 1) {
    result.notes.push_back(fmt::format(
        "the replica groups cover {} of the {} chips; the others run the program as {} data-parallel copies "
        "(groups shifted by {} devices)",
        n / fabric.tiled_copies(), n, fabric.tiled_copies(), n / fabric.tiled_copies()));
  }
  result.finished = true;
  double step = 0;
  for (std::int64_t d = 0; d < simulated; ++d) {
    double end = 0;
    for (std::size_t c = 0; c < ncores; ++c) {
      const TensorCore& core = *cores[static_cast<size_t>(d) * ncores + c];
      if (!core.finished()) {
        result.finished = false;
        for (const auto& b : core.blocked()) {
          result.blocked.push_back(ncores > 1 ? fmt::format("chip {} core {}: {}", d, c, b)
                                              : fmt::format("chip {}: {}", d, b));
        }
      }
      end = std::max(end, core.finished() ? core.end_seconds() : sc_core::sc_time_stamp().to_seconds());
    }
    step = std::max(step, end);
    // Core 0 issues the chip's collectives: its timeline splits compute and communication.
    const TensorCore& core0 = *cores[static_cast<size_t>(d) * ncores];
    out.chip_times.push_back(ChipTime{d, end, core0.compute_seconds(), core0.communication_seconds(),
                                      core0.exposed_communication_seconds()});
    result.stats.add(fmt::format("chip{}.seconds", d), "s", "simulated time of the program").value = end;
  }
  for (const auto& b : fabric.blocked()) result.blocked.push_back(b);
  result.seconds = step;
  result.cycles = std::round(step * chip.clock);
  result.loops = cores.front()->extrapolated_loops();
  for (auto& n : loop_notes(result.loops)) result.notes.push_back(std::move(n));
  {
    std::vector<const TensorCore*> views;
    std::vector<const isa::Program*> progs;
    for (std::size_t c = 0; c < ncores; ++c) {
      views.push_back(cores[c].get());
      progs.push_back(&programs.front()[c]);
    }
    result.provenance = detail::merge_provenance(views, progs);
  }
  out.collectives = fabric.rows();
  out.network_runs = timer.network_runs();
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
  // The same figures in the stats registry (stats.json), under system.*.
  result.stats.add("system.chips", "count", "chips in the system").value = static_cast<double>(n);
  result.stats.add("system.network_runs", "count", "distinct collectives simulated on the network").value =
      static_cast<double>(out.network_runs);
  for (const AxisUse& a : out.axes) {
    result.stats.add("system.ici." + a.axis + ".busy_s", "s", "link busy time summed over the axis' links").value =
        a.busy_s;
    result.stats.add("system.ici." + a.axis + ".utilization", "ratio", "busy / links / step time").value =
        a.utilization;
  }
  if (trace) trace->finish();
  return out;
}

}  // namespace

Result<SpmdResult> simulate_spmd(const ChipConfig& chip, std::vector<isa::Program> programs,
                                 const SpmdOptions& options) {
  std::vector<std::vector<isa::Program>> per_chip;
  per_chip.reserve(programs.size());
  for (auto& p : programs) {
    per_chip.emplace_back();
    per_chip.back().push_back(std::move(p));
  }
  return run_spmd(chip, std::move(per_chip), options);
}

Result<SpmdResult> simulate_spmd_cores(const ChipConfig& chip, std::vector<isa::Program> core_programs,
                                       const SpmdOptions& options) {
  std::vector<std::vector<isa::Program>> one;
  one.push_back(std::move(core_programs));
  return run_spmd(chip, std::move(one), options);
}

Result<SystemRun> simulate_system(const ChipConfig& chip, std::vector<isa::Program> core_programs, bool multi_chip,
                                  const SpmdOptions& options) {
  SystemRun run;
  if (multi_chip) {
    auto r = simulate_spmd_cores(chip, std::move(core_programs), options);
    if (!r.ok()) return r.errors();
    run.spmd = std::move(r).value();
    run.sim = std::move(run.spmd->sim);
    return run;
  }
  auto r = simulate_cores(chip, std::move(core_programs), options.sim);
  if (!r.ok()) return r.errors();
  run.sim = std::move(r).value();
  return run;
}

}  // namespace tpusim
