#include "sim/spmd.h"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <systemc>

#include "memory/hbm.h"
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

Result<SpmdResult> simulate_spmd(const ChipConfig& chip, std::vector<isa::Program> programs,
                                 const SpmdOptions& options) {
  const std::string file = programs.empty() ? std::string("<program>") : programs.front().file;
  if (programs.empty()) return Diagnostic{file, 0, 0, "internal: simulate_spmd needs a program", ""};
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
  for (auto& p : programs) {
    if (std::string err = detail::place_buffers(chip, p); !err.empty()) return Diagnostic{p.file, 0, 0, err, ""};
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

  NetworkCollectiveTimer timer(chip, std::move(topo).value(), options.algorithm);
  CollectiveFabric fabric(mode, timer);
  const std::int64_t simulated = mode == SpmdMode::kFull ? n : 1;
  LoopCoordinator loop_coordinator;  // every chip skips the same loop iterations
  // Loop extrapolation relies on every chip running the same stream (the
  // leader's decisions name loop instances by pc); per-chip programs run in full.
  ChipConfig per_chip_programs_chip = chip;
  const bool distinct_programs = programs.size() > 1;
  if (distinct_programs && chip.simulation.loops != "full") {
    per_chip_programs_chip.simulation.loops = "full";
    result.notes.push_back("loops simulated in full: the chips run different programs (extrapolation needs SPMD)");
  }
  const ChipConfig& core_chip = distinct_programs ? per_chip_programs_chip : chip;
  std::vector<std::unique_ptr<Hbm>> hbms;
  std::vector<std::unique_ptr<TensorCore>> cores;
  hbms.reserve(static_cast<size_t>(simulated));
  cores.reserve(static_cast<size_t>(simulated));
  for (std::int64_t d = 0; d < simulated; ++d) {
    const isa::Program& p = programs[programs.size() == 1 ? 0 : static_cast<size_t>(d)];
    const std::string chip_name = fmt::format("chip{}", d);
    hbms.push_back(std::make_unique<Hbm>((chip_name + "_hbm").c_str(), chip.hbm, result.stats, chip_name + ".hbm"));
    cores.push_back(std::make_unique<TensorCore>((chip_name + "_core0").c_str(), core_chip, p, result.stats,
                                                 chip_name + ".core0", d == 0 ? trace.get() : nullptr,
                                                 SpmdBinding{&fabric, d}));
    cores.back()->hbm_socket.bind(hbms.back()->socket);
    cores.back()->set_loop_coordination(&loop_coordinator, {chip_name + ".hbm."});
  }
  if (chip.tensorcores > 1) {
    result.notes.push_back(fmt::format("the program runs on TensorCore 0 of {}; the others idle", chip.tensorcores));
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

  for (std::int64_t d = 0; d < simulated; ++d) {
    const TensorCore& core = *cores[static_cast<size_t>(d)];
    if (!core.error().empty()) {
      return Diagnostic{file, 0, 0, simulated > 1 ? fmt::format("chip {}: {}", d, core.error()) : core.error(), ""};
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
    const TensorCore& core = *cores[static_cast<size_t>(d)];
    if (!core.finished()) {
      result.finished = false;
      for (const auto& b : core.blocked()) result.blocked.push_back(fmt::format("chip {}: {}", d, b));
    }
    const double end = core.finished() ? core.end_seconds() : sc_core::sc_time_stamp().to_seconds();
    step = std::max(step, end);
    out.chip_times.push_back(ChipTime{d, end, core.compute_seconds(), core.communication_seconds(),
                                      core.exposed_communication_seconds()});
    result.stats.add(fmt::format("chip{}.seconds", d), "s", "simulated time of the program").value = end;
  }
  for (const auto& b : fabric.blocked()) result.blocked.push_back(b);
  result.seconds = step;
  result.cycles = std::round(step * chip.clock);
  const TensorCore& core0 = *cores.front();
  result.loops = core0.extrapolated_loops();
  for (auto& n : loop_notes(result.loops)) result.notes.push_back(std::move(n));
  for (std::uint32_t id = 0; id < core0.provenance().size(); ++id) {
    const ProvenanceStats& s = core0.provenance()[id];
    if (s.instructions == 0 && s.attributed_s == 0) continue;
    std::string name(programs.front().strings.get(id));
    result.provenance.push_back({name.empty() ? "(unlabelled)" : name, s});
  }
  std::sort(result.provenance.begin(), result.provenance.end(),
            [](const auto& a, const auto& b) { return a.stats.attributed_s > b.stats.attributed_s; });
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

}  // namespace tpusim
