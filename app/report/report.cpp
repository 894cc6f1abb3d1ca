#include "app/report/report.h"

#include <algorithm>
#include <map>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/units.h"
#include "sim/timing/limiter.h"

namespace tpusim {
namespace {

using nlohmann::json;

struct UnitRow {
  std::string name;
  const UnitUse* use;
  std::string stat;  // its stats' prefix: chip0.coreN.<unit>
};

// Units of chip 0's cores that ran, named coreN.<unit> with several cores
// (megacore), sorted by name.
std::vector<UnitRow> unit_rows(const SimResult& r) {
  std::vector<UnitRow> rows;
  for (std::size_t c = 0; c < r.cores.size(); ++c) {
    for (const UnitUse& u : r.cores[c].units) {
      rows.push_back({r.cores.size() > 1 ? "core" + std::to_string(c) + "." + u.name : u.name, &u,
                      "chip0.core" + std::to_string(c) + "." + u.name});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const UnitRow& a, const UnitRow& b) { return a.name < b.name; });
  return rows;
}

// A figure summed over chip 0's cores that ran.
template <class Get>
double core_sum(const SimResult& r, Get get) {
  double v = 0;
  for (const CoreUse& c : r.cores) v += get(c);
  return v;
}

struct OpRow {
  std::string name;
  ProvenanceStats stats;
  bool approximated = false;
  std::int64_t occurrences = 1;  // the op and its identical copies (reuse)
};

// Provenance rows summed per entry-computation op, longest first.
std::vector<OpRow> rolled_up(const SimResult& r) {
  std::vector<OpRow> rows;
  std::map<std::string, std::size_t> index;
  for (const auto& p : r.provenance) {
    const std::string root = provenance_root(p.name);
    auto [it, fresh] = index.emplace(root, rows.size());
    if (fresh) rows.push_back(OpRow{root, {}, false});
    OpRow& row = rows[it->second];
    row.stats.attributed_s += p.stats.attributed_s;
    row.stats.busy_s += p.stats.busy_s;
    for (std::size_t k = 0; k < kResources; ++k) row.stats.busy_by[k] += p.stats.busy_by[k];
    row.stats.flops += p.stats.flops;
    row.stats.bf16_flops += p.stats.bf16_flops;
    row.stats.transcendentals += p.stats.transcendentals;
    row.stats.hbm_bytes += p.stats.hbm_bytes;
    row.stats.instructions += p.stats.instructions;
    row.approximated = row.approximated || provenance_is_approximation(p.name);
    row.occurrences = std::max(row.occurrences, p.occurrences);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpRow& a, const OpRow& b) { return a.stats.attributed_s > b.stats.attributed_s; });
  return rows;
}

// The op's limiter (sim/timing/limiter.h) over its time, and every resource's use.
struct Limiter {
  std::string name = "waiting";
  double utilization = 0;
  json use = json::object();  // every resource's use over the op's time
  std::string busiest;         // the most used resource, also when below half
};
Limiter limiter_of(const ProvenanceStats& st, const ChipConfig& c, int cores) {
  Limiter out;
  if (!(st.attributed_s > 0)) return out;
  const LimiterUse u = find_limiter(st.busy_by, st.hbm_bytes, st.attributed_s, c, cores);
  for (std::size_t k = 0; k < kResources; ++k) out.use[std::string(resource_name(static_cast<Resource>(k)))] = u.use[k];
  out.utilization = u.utilization;
  out.busiest = std::string(resource_name(u.busiest));
  out.name = std::string(u.limiter_name());
  return out;
}

}  // namespace

bool provenance_is_approximation(std::string_view provenance) { return provenance.starts_with("approx:"); }

std::string provenance_root(std::string_view p) { return std::string(isa::provenance_root(p)); }

namespace {

// The ops without an HLO module: one row per provenance, bounded by the chip's peaks.
json provenance_ops_json(const ReportInput& in, int cores) {
  const ChipConfig& c = *in.chip;
  const SimResult& r = *in.result;
  const double t = r.seconds;
  const double peak = r.stats.value("chip0.mxu.peak_flops_per_s");
  json ops = json::array();
  for (const auto& p : r.provenance) {
    const double compute_s = peak > 0 ? p.stats.bf16_flops / peak : 0;  // each dtype at its own MXU rate
    const double memory_s = c.hbm.bandwidth > 0 ? p.stats.hbm_bytes / c.hbm.bandwidth : 0;
    const Limiter lim = limiter_of(p.stats, c, cores);
    ops.push_back({{"name", p.name},
                   {"limiter", lim.name},
                   {"limiter_utilization", lim.utilization},
                   {"busiest_resource", lim.busiest},
                   {"resource_utilization", lim.use},
                   {"time_s", p.stats.attributed_s},
                   {"percent", t > 0 ? 100 * p.stats.attributed_s / t : 0.0},
                   {"busy_s", p.stats.busy_s},
                   {"instructions", p.stats.instructions},
                   {"flops", p.stats.flops},
                   {"transcendentals", p.stats.transcendentals},
                   {"hbm_bytes", p.stats.hbm_bytes},
                   {"bound_time_s", std::max(compute_s, memory_s)},
                   // A collective's bound is its network time (not known here);
                   // bound_time_s is its HBM traffic's floor.
                   {"bound", p.stats.collective()                ? "communication"
                             : compute_s == 0 && memory_s == 0 ? "none"
                             : compute_s >= memory_s          ? "compute"
                                                              : "memory"}});
  }
  return ops;
}

// The HLO module's ops (rolled up to the entry computation) against their roofline rows.
json roofline_ops_json(const ReportInput& in, int cores) {
  const ChipConfig& c = *in.chip;
  const SimResult& r = *in.result;
  const double t = r.seconds;
  const double peak = r.stats.value("chip0.mxu.peak_flops_per_s");
  std::map<std::string, const hlo::RooflineRow*> bound_of;
  for (const auto& row : in.roofline->ops) bound_of.emplace(row.name, &row);
  json ops = json::array();
  for (const auto& op : rolled_up(r)) {
    const double s_op = op.stats.attributed_s;
    const auto it = bound_of.find(op.name);
    const hlo::RooflineRow* b = it == bound_of.end() ? nullptr : it->second;
    // The roofline row is one op's; a reused op's time covers its copies.
    const double bound_s = b != nullptr ? b->bound_time_s * static_cast<double>(op.occurrences) : 0.0;
    const Limiter lim = limiter_of(op.stats, c, cores);
    ops.push_back({{"name", op.name},
                   {"opcode", b != nullptr ? b->opcode : ""},
                   {"op_name", b != nullptr ? b->op_name : ""},
                   {"category", b != nullptr ? b->profile_category : "other"},
                   {"line", b != nullptr ? b->line : 0},
                   {"limiter", lim.name},
                   {"limiter_utilization", lim.utilization},
                   {"busiest_resource", lim.busiest},
                   {"resource_utilization", lim.use},
                   {"occurrences", op.occurrences},
                   {"time_s", s_op},
                   {"percent", t > 0 ? 100 * s_op / t : 0.0},
                   {"busy_s", op.stats.busy_s},
                   {"instructions", op.stats.instructions},
                   {"flops", op.stats.flops},
                   {"transcendentals", op.stats.transcendentals},
                   {"hbm_bytes", op.stats.hbm_bytes},
                   {"flop_utilization", s_op > 0 && peak > 0 ? op.stats.flops / (s_op * peak) : 0.0},
                   {"hbm_bandwidth_utilization",
                    s_op > 0 && c.hbm.bandwidth > 0 ? op.stats.hbm_bytes / (s_op * c.hbm.bandwidth) : 0.0},
                   {"bound_time_s", bound_s},
                   {"bound", b != nullptr ? std::string(hlo::bound_name(b->bound)) : "none"},
                   // (No ratio against a bound below one cycle: a scalar
                   // collective's nanoseconds would give 1e10.)
                   {"time_over_bound", bound_s * c.clock >= 1 ? s_op / bound_s : 0.0},
                   {"approximated", op.approximated}});
  }
  return ops;
}

// Multi-chip figures: mode, per-chip times, ICI axes, collectives.
void spmd_json(const SpmdResult& m, const ChipConfig& chip, json& j) {
  j["mode"] = spmd_mode_name(m.mode);
  j["chips"] = m.chips;
  j["system"] = m.topology;
  json per_chip = json::array();
  double compute_max = 0, exposed_max = 0, comm_max = 0;
  for (const ChipTime& ct : m.chip_times) {
    per_chip.push_back({{"device", ct.device},
                        {"time_s", ct.seconds},
                        {"compute_s", ct.compute_s},
                        {"communication_s", ct.communication_s},
                        {"exposed_communication_s", ct.exposed_s}});
    compute_max = std::max(compute_max, ct.compute_s);
    exposed_max = std::max(exposed_max, ct.exposed_s);
    comm_max = std::max(comm_max, ct.communication_s);
  }
  j["per_chip"] = {{"simulated_chips", m.chip_times.size()},
                   {"max_compute_s", compute_max},
                   {"max_communication_s", comm_max},
                   {"max_exposed_communication_s", exposed_max},
                   {"chips", per_chip}};
  json axes = json::array();
  for (const AxisUse& a : m.axes) {
    axes.push_back({{"axis", a.axis}, {"links", a.links}, {"busy_s", a.busy_s}, {"utilization", a.utilization}});
  }
  j["ici_axes"] = axes;
  json collectives = json::array();
  for (const CollectiveRow& row : m.collectives) {
    // One execution's HBM traffic on a member chip (ici.hbm_traffic; a
    // permute's as a chip that both sends and receives).
    const auto kind = parse_hlo_collective(row.op);
    const HbmBytes hbm = kind ? collective_hbm_bytes(chip.ici.hbm_traffic,
                                                     CollectiveShare{*kind, row.bytes, row.group_size, true, true})
                              : HbmBytes{};
    collectives.push_back({{"op", row.op},
                           {"bytes", row.bytes},
                           {"group_size", row.group_size},
                           {"algorithm", row.algorithm},
                           {"time_s", row.seconds},
                           {"count", row.count},
                           {"total_s", row.seconds * static_cast<double>(row.count)},
                           {"bound", row.bound},
                           {"hbm_read_bytes", hbm.read},
                           {"hbm_write_bytes", hbm.write}});
  }
  j["collectives"] = collectives;
}

// Loop extrapolation (simulation.loops) and reuse (simulation.reuse): what
// was not simulated instruction by instruction.
void shortcuts_json(const ChipConfig& c, const SimResult& r, json& j) {
  j["loop_mode"] = std::string(enum_name(c.simulation.loops));
  json loops = json::array();
  for (const LoopExtrapolation& l : r.loops) {
    loops.push_back({{"loop", l.label},
                     {"where", l.where},
                     {"instances", l.instances},
                     {"total_iterations", l.total_iterations},
                     {"simulated_iterations", l.simulated_iterations},
                     {"iteration_s", l.iteration_s},
                     {"extrapolated_s", l.extrapolated_s}});
  }
  j["loops"] = loops;
  json reused = json::array();
  for (const SectionReuse& rr : r.reused) {
    reused.push_back({{"op", rr.label}, {"instances", rr.instances}, {"instance_s", rr.instance_s},
                      {"added_s", rr.added_s}});
  }
  j["reuse"] = c.simulation.reuse;
  j["reused"] = reused;
}

// One group of op rows (a category, a limiter, an op_name prefix), and its
// sub-groups (op_name levels).
struct Group {
  std::string name, path;
  std::int64_t ops = 0;
  double time_s = 0, flops = 0, hbm_bytes = 0, bound_s = 0;
  std::map<std::string, double> limiter_s;
  std::map<std::string, Group> children;
  void add(const json& op) {
    ops += 1;
    time_s += op["time_s"].get<double>();
    flops += op["flops"].get<double>();
    hbm_bytes += op["hbm_bytes"].get<double>();
    bound_s += op.value("bound_time_s", 0.0);
    limiter_s[op["limiter"].get<std::string>()] += op["time_s"].get<double>();
  }
  void merge(const Group& g) {
    ops += g.ops;
    time_s += g.time_s;
    flops += g.flops;
    hbm_bytes += g.hbm_bytes;
    bound_s += g.bound_s;
    for (const auto& [l, t] : g.limiter_s) limiter_s[l] += t;
  }
};

// The groups of one level, longest first (ties in name order).
std::vector<const Group*> longest_first(const std::map<std::string, Group>& level) {
  std::vector<const Group*> order;
  for (const auto& [name, g] : level) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) { return a->time_s > b->time_s; });
  return order;
}

// Time summed by one field of the op rows ("category", "limiter"), longest first.
json time_by(const json& ops, const char* field, double step_s) {
  std::map<std::string, Group> sums;
  for (const auto& op : ops) {
    if (!op.contains(field)) continue;
    Group& g = sums[op[field].get<std::string>()];
    g.name = op[field].get<std::string>();
    g.add(op);
  }
  json out = json::array();
  for (const Group* g : longest_first(sums)) {
    out.push_back({{"name", g->name},
                   {"ops", g->ops},
                   {"time_s", g->time_s},
                   {"percent", step_s > 0 ? 100 * g->time_s / step_s : 0.0},
                   {"flops", g->flops},
                   {"hbm_bytes", g->hbm_bytes}});
  }
  return out;
}

}  // namespace

json report_json(const ReportInput& in) {
  const ChipConfig& c = *in.chip;
  const SimResult& r = *in.result;
  const StatsRegistry& s = r.stats;
  const double t = r.seconds;
  json j;
  j["program"] = in.program;
  j["chip"] = c.name;
  j["finished"] = r.finished;
  j["step_time_s"] = t;
  j["cycles"] = r.cycles;
  const int cores = std::max(1, static_cast<int>(r.cores.size()));
  j["tensorcores"] = cores;
  // Utilizations and rates are the run's derived stats (formulas over its
  // counters: sim/system.cpp), as stats.json shows them.
  json units = json::object();
  for (const auto& [name, u, stat] : unit_rows(r)) {
    units[name] = {{"busy_cycles", u->counters.busy_cycles},
                   {"utilization", s.value(stat + ".utilization")},
                   {"instructions", u->counters.instructions},
                   {"dependency_stall_cycles", u->counters.dependency_stall_cycles}};
  }
  j["units"] = units;
  // The peak of the TensorCores the program ran on (all of a megacore chip's).
  j["mxu"] = {{"flops", s.value("chip0.mxu.flops")},
              {"peak_flops_per_s", s.value("chip0.mxu.peak_flops_per_s")},
              {"flop_utilization", s.value("chip0.mxu.flop_utilization")}};
  j["hbm"] = {{"bytes", s.value("chip0.hbm.bytes")},
              {"peak_bytes_per_s", s.value("chip0.hbm.peak_bytes_per_s")},
              {"moved_bytes", s.value("chip0.hbm.moved_bytes")},
              {"bytes_per_s", s.value("chip0.hbm.bytes_per_s")},
              {"bandwidth_utilization", s.value("chip0.hbm.bandwidth_utilization")}};
  // VMEM and stalls: summed over the cores (each has its own VMEM).
  j["vmem"] = {{"bytes", core_sum(r, [](const CoreUse& c) { return c.vmem.bytes; })},
               {"utilization", s.value("chip0.vmem.utilization")}};
  j["stalls"] = {
      {"sequencer_semaphore_cycles", core_sum(r, [](const CoreUse& c) { return c.sequencer.stall_semaphore_cycles; })},
      {"sequencer_queue_full_cycles", core_sum(r, [](const CoreUse& c) { return c.sequencer.stall_queue_full_cycles; })},
      {"sequencer_barrier_cycles", core_sum(r, [](const CoreUse& c) { return c.sequencer.stall_barrier_cycles; })},
      {"sequencer_core_barrier_cycles",
       core_sum(r, [](const CoreUse& c) { return c.sequencer.stall_core_barrier_cycles; })},
      {"sequencer_delay_cycles", core_sum(r, [](const CoreUse& c) { return c.sequencer.stall_delay_cycles; })}};
  if (in.roofline == nullptr) {
    j["ops"] = provenance_ops_json(in, cores);
  } else {
    j["ops"] = roofline_ops_json(in, cores);
    const double module_bound = in.roofline->total.bound_time_s;
    j["bound_time_s"] = module_bound;
    j["bound"] = std::string(hlo::bound_name(in.roofline->total.bound));
    j["time_over_bound"] = module_bound > 0 ? t / module_bound : 0.0;
  }
  j["by_limiter"] = time_by(j["ops"], "limiter", t);
  if (in.roofline != nullptr) j["by_category"] = time_by(j["ops"], "category", t);
  if (in.profile.group_by == GroupBy::kNested) {
    const json rows = provenance_ops_json(in, cores);
    j["groups"] = profile_groups(j, in.profile, &rows);
  } else if (in.profile.group_by != GroupBy::kNone) {
    j["groups"] = profile_groups(j, in.profile);
  }
  if (in.spmd != nullptr) {
    spmd_json(*in.spmd, *in.chip, j);
  } else {
    j["mode"] = "single-chip";
    j["chips"] = 1;
    j["collectives"] = json::array();
  }
  shortcuts_json(c, r, j);
  j["notes"] = r.notes;
  j["blocked"] = r.blocked;
  j["stats"] = s.to_json();
  return j;
}

namespace {
// "MXU 92%", or "waiting (HBM 42%)" when no resource was used half the
// op's time (its busiest one in brackets).
std::string limiter_text(const json& op) {
  const std::string name = op["limiter"].get<std::string>();
  const double use = 100 * op["limiter_utilization"].get<double>();
  if (name != "waiting") return fmt::format("{} {:.0f}%", name, use);
  return use > 0 ? fmt::format("waiting ({} {:.0f}%)", op["busiest_resource"].get<std::string>(), use) : name;
}

// "time by limiter: MXU 61.2%, HBM 20.4%, waiting 3.1%" (one line).
std::string summary_text(const char* title, const json& rows) {
  std::string o = fmt::format("{}:", title);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    o += fmt::format("{} {} {:.1f}%", i ? "," : "", rows[i]["name"].get<std::string>(), rows[i]["percent"].get<double>());
  }
  return o + "\n";
}

// The grouped op profile: categories, or op_name levels indented.
std::string groups_text(const json& groups, GroupBy by) {
  std::string o = fmt::format("\n{:<40} {:>9} {:>6} {:>5} {:>11} {:>9} {:>13} {:>8} {:>9}   limiter\n",
                              by == GroupBy::kCategory ? "category"
                              : by == GroupBy::kNested ? "op (nested computations' ops)"
                                                       : "op_name",
                              "time us", "%", "ops", "FLOP",
                              "FLOP util", "HBM bytes", "HBM util", "x bound");
  for (const auto& g : groups) {
    const auto level = g["level"].get<int>();
    const std::string name = std::string(static_cast<std::size_t>(2 * (level - 1)), ' ') + g["group"].get<std::string>();
    o += fmt::format("{:<40} {:>9.3f} {:>6.1f} {:>5} {:>11} {:>8.1f}% {:>13} {:>7.1f}% {:>9.2f}   {}\n", name,
                     g["time_s"].get<double>() * 1e6, g["percent"].get<double>(), g["ops"].get<std::int64_t>(),
                     format_si(g["flops"].get<double>(), ""), 100 * g["flop_utilization"].get<double>(),
                     format_si(g["hbm_bytes"].get<double>(), "B"), 100 * g["hbm_bandwidth_utilization"].get<double>(),
                     g["time_over_bound"].get<double>(), g["limiter"].get<std::string>());
  }
  return o;
}
}  // namespace

std::string report_total_line(const json& report) {
  return fmt::format("total        {:.0f} cycles = {:.3f} us\n", report["cycles"].get<double>(),
                     report["step_time_s"].get<double>() * 1e6);
}

std::string report_text(const ReportInput& in) {
  const json j = report_json(in);
  const ChipConfig& c = *in.chip;
  std::string o;
  o += fmt::format("program {} on {} ({} @ {})\n", in.program, c.name,
                   fmt::format("{} MXU {}x{}", c.core.mxu.count, c.core.mxu.rows, c.core.mxu.cols),
                   format_quantity(c.clock, Dimension::kHertz));
  if (!in.result->finished) {
    o += "DEADLOCK: the simulation ran out of events before the program finished\n";
    for (const auto& b : in.result->blocked) o += "  " + b + "\n";
  }
  o += report_total_line(j);
  if (in.spmd != nullptr) {
    const SpmdResult& m = *in.spmd;
    o += fmt::format("system       {}, {} chips, {} mode ({} simulated)\n", m.topology, m.chips,
                     spmd_mode_name(m.mode), m.chip_times.size());
    if (!m.chip_times.empty()) {
      auto [lo, hi] = std::minmax_element(m.chip_times.begin(), m.chip_times.end(),
                                          [](const ChipTime& a, const ChipTime& b) { return a.seconds < b.seconds; });
      const ChipTime& w = *hi;  // the chip that sets the step time
      o += fmt::format("per chip     compute {:.3f} us, communication {:.3f} us of which exposed {:.3f} us "
                       "(chip {}, the last to finish{})\n",
                       w.compute_s * 1e6, w.communication_s * 1e6, w.exposed_s * 1e6, w.device,
                       m.chip_times.size() > 1 ? fmt::format("; chips end {:.3f}..{:.3f} us", lo->seconds * 1e6,
                                                             hi->seconds * 1e6)
                                               : std::string());
    }
    for (const AxisUse& a : m.axes) {
      o += fmt::format("ICI {:<8} {:>5} link directions, busy {:.3f} us summed, {:.2f}% average utilization\n",
                       a.axis, a.links, a.busy_s * 1e6, 100 * a.utilization);
    }
  }
  const int cores = j["tensorcores"].get<int>();
  o += fmt::format("MXU          {} FLOP, {:.1f}% of the {} bf16 peak ({})\n",
                   format_si(j["mxu"]["flops"].get<double>(), ""), 100 * j["mxu"]["flop_utilization"].get<double>(),
                   cores > 1 ? fmt::format("{} TensorCores'", cores) : std::string("core's"),
                   format_si(j["mxu"]["peak_flops_per_s"].get<double>(), "FLOP/s"));
  o += fmt::format("HBM          {} moved, {}, {:.1f}% of {}\n", format_si(j["hbm"]["bytes"].get<double>(), "B"),
                   format_si(j["hbm"]["bytes_per_s"].get<double>(), "B/s"),
                   100 * j["hbm"]["bandwidth_utilization"].get<double>(),
                   format_si(c.hbm.bandwidth, "B/s"));
  o += fmt::format("VMEM         {} moved, bandwidth {:.1f}% busy\n", format_si(j["vmem"]["bytes"].get<double>(), "B"),
                   100 * j["vmem"]["utilization"].get<double>());
  o += "\nunit         busy cycles   util   instructions   operand stalls\n";
  for (const auto& [name, u] : j["units"].items()) {
    if (u["instructions"].get<double>() == 0) continue;
    o += fmt::format("{:<12} {:>11.0f} {:>5.1f}% {:>14.0f} {:>16.0f}\n", name, u["busy_cycles"].get<double>(),
                     100 * u["utilization"].get<double>(), u["instructions"].get<double>(),
                     u["dependency_stall_cycles"].get<double>());
  }
  // Delays (kernel start-up cost, core.sequencer.kernel_overhead) are shown when a program has them.
  const double delay_cycles = j["stalls"]["sequencer_delay_cycles"].get<double>();
  o += fmt::format("\nsequencer stalls: semaphore {:.0f}, full queue {:.0f}, barrier {:.0f} cycles{}{}\n",
                   j["stalls"]["sequencer_semaphore_cycles"].get<double>(),
                   j["stalls"]["sequencer_queue_full_cycles"].get<double>(),
                   j["stalls"]["sequencer_barrier_cycles"].get<double>(),
                   cores > 1 ? fmt::format(", core.barrier {:.0f} (summed over the cores)",
                                           j["stalls"]["sequencer_core_barrier_cycles"].get<double>())
                             : std::string(),
                   delay_cycles > 0 ? fmt::format(", delay {:.0f}", delay_cycles) : std::string());
  const int top = in.profile.top;
  // "... 12 more ops: 3.2 us, 1.1%" below a table cut at --top.
  const auto rest = [&o](const json& rows, std::size_t shown, const char* what) {
    if (rows.size() <= shown) return;
    double time_s = 0, percent = 0;
    for (std::size_t i = shown; i < rows.size(); ++i) {
      time_s += rows[i]["time_s"].get<double>();
      percent += rows[i]["percent"].get<double>();
    }
    o += fmt::format("... {} more {}: {:.3f} us, {:.1f}%\n", rows.size() - shown, what, time_s * 1e6, percent);
  };
  const std::size_t shown = top > 0 ? std::min(j["ops"].size(), static_cast<std::size_t>(top)) : j["ops"].size();
  if (in.roofline == nullptr) {
    o += "\nop (provenance)                    time us      %        FLOP     HBM bytes   bound    limiter\n";
    for (std::size_t i = 0; i < shown; ++i) {
      const json& op = j["ops"][i];
      o += fmt::format("{:<32} {:>9.3f} {:>6.1f} {:>11} {:>13} {:>7}    {}\n", op["name"].get<std::string>(),
                       op["time_s"].get<double>() * 1e6, op["percent"].get<double>(),
                       format_si(op["flops"].get<double>(), ""), format_si(op["hbm_bytes"].get<double>(), "B"),
                       op["bound"].get<std::string>(), limiter_text(op));
    }
    rest(j["ops"], shown, "ops");
  } else {
    o += fmt::format("roofline     {:.3f} us bound ({}); simulated {:.3f}x the bound\n",
                     j["bound_time_s"].get<double>() * 1e6, j["bound"].get<std::string>(),
                     j["time_over_bound"].get<double>());
    if (j.contains("groups")) {
      o += groups_text(j["groups"], in.profile.group_by);
    } else {
      o += "\nHLO op (* approximated)            time us      %        FLOP  FLOP util     HBM bytes  HBM util"
           "    bound us   x bound   bound    limiter\n";
      for (std::size_t i = 0; i < shown; ++i) {
        const json& op = j["ops"][i];
        const auto occurrences = op["occurrences"].get<std::int64_t>();
        const std::string name = fmt::format("{}{}{}", op["approximated"].get<bool>() ? "*" : "",
                                             op["name"].get<std::string>(),
                                             occurrences > 1 ? fmt::format(" x{}", occurrences) : std::string());
        o += fmt::format("{:<32} {:>9.3f} {:>6.1f} {:>11} {:>9.1f}% {:>13} {:>8.1f}% {:>11.3f} {:>9.2f} {:>7}    {}\n",
                         name, op["time_s"].get<double>() * 1e6, op["percent"].get<double>(),
                         format_si(op["flops"].get<double>(), ""), 100 * op["flop_utilization"].get<double>(),
                         format_si(op["hbm_bytes"].get<double>(), "B"),
                         100 * op["hbm_bandwidth_utilization"].get<double>(), op["bound_time_s"].get<double>() * 1e6,
                         op["time_over_bound"].get<double>(), op["bound"].get<std::string>(), limiter_text(op));
      }
      rest(j["ops"], shown, "ops");
    }
    o += summary_text("time by category", j["by_category"]);
  }
  o += summary_text("time by limiter", j["by_limiter"]);
  if (in.spmd != nullptr && !in.spmd->collectives.empty()) {
    o += "\ncollective          bytes      group  algorithm                       time us   count    bound\n";
    for (const CollectiveRow& row : in.spmd->collectives) {
      o += fmt::format("{:<18} {:>10} {:>6}  {:<30} {:>9.3f} {:>7}  {}\n", row.op, format_si(row.bytes, "B"),
                       row.group_size, row.algorithm, row.seconds * 1e6, row.count, row.bound);
    }
  }
  for (const auto& n : in.result->notes) o += "note: " + n + "\n";
  return o;
}

std::string rows_csv(const json& rows, const std::vector<std::string>& columns) {
  const auto field = [](const json& v) -> std::string {
    if (v.is_string()) {
      const auto text = v.get<std::string>();
      if (text.find_first_of(",\"\n") == std::string::npos) return text;
      std::string q = "\"";
      for (const char ch : text) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      return q + "\"";
    }
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
    if (v.is_number()) return fmt::format("{:.9g}", v.get<double>());
    return "";  // null: not in that row
  };
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + columns[i];
  out += "\n";
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i) out += ",";
      if (row.contains(columns[i])) out += field(row[columns[i]]);
    }
    out += "\n";
  }
  return out;
}

std::string report_csv(const json& report) {
  return rows_csv(report["ops"], {"name", "opcode", "occurrences", "time_s", "percent", "flops", "transcendentals",
                                  "flop_utilization", "hbm_bytes", "hbm_bandwidth_utilization", "bound_time_s",
                                  "time_over_bound", "bound", "limiter", "limiter_utilization", "instructions",
                                  "approximated", "category", "op_name", "line"});
}

bool parse_group_by(std::string_view text, GroupBy& out) {
  if (text == "none") {
    out = GroupBy::kNone;
  } else if (text == "category") {
    out = GroupBy::kCategory;
  } else if (text == "op_name") {
    out = GroupBy::kOpName;
  } else if (text == "nested") {
    out = GroupBy::kNested;
  } else {
    return false;
  }
  return true;
}

namespace {

// "a/b/c" -> {"a", "b", "c"} (empty components dropped).
std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty()) parts.push_back(part);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

// "jit(f)/layers_3/attention/dot_general" -> its components; an op without
// one is grouped under "(no op_name)" by its HLO name.
std::vector<std::string> op_name_path(const json& op) {
  const std::string name = op.value("op_name", std::string());
  if (name.empty()) return {"(no op_name)", op["name"].get<std::string>()};
  return split_path(name);
}

// A provenance row's op and the ops of the computations nested in it
// ("while.1/fusion.3" -> {"while.1", "fusion.3"}), without the prefix an
// approximated op's provenance carries ("approx:gather ").
std::vector<std::string> nested_path(const json& row) {
  std::string name = row["name"].get<std::string>();
  if (provenance_is_approximation(name)) {
    const std::size_t space = name.find(' ');
    name = space == std::string::npos ? name : name.substr(space + 1);
  }
  return split_path(name);
}

void emit_groups(const std::map<std::string, Group>& level, int depth, const ProfileOptions& o, double step_s,
                 double peak, double hbm_bw, json& out) {
  std::vector<const Group*> order = longest_first(level);
  // Past --top, the rest of the level as one row "(N more)", so each level still sums to its parent.
  Group rest;
  if (o.top > 0 && order.size() > static_cast<std::size_t>(o.top)) {
    const auto keep = static_cast<std::size_t>(o.top);
    rest.name = fmt::format("({} more)", order.size() - keep);
    rest.path = order[keep]->path.substr(0, order[keep]->path.size() - order[keep]->name.size()) + rest.name;
    for (std::size_t i = keep; i < order.size(); ++i) rest.merge(*order[i]);
    order.resize(keep);
    order.push_back(&rest);
  }
  for (const Group* g : order) {
    const auto lim = std::max_element(g->limiter_s.begin(), g->limiter_s.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    const double t = g->time_s;
    out.push_back({{"group", g->name},
                   {"path", g->path},
                   {"level", depth},
                   {"ops", g->ops},
                   {"time_s", t},
                   {"percent", step_s > 0 ? 100 * t / step_s : 0.0},
                   {"flops", g->flops},
                   {"flop_utilization", t > 0 && peak > 0 ? g->flops / (t * peak) : 0.0},
                   {"hbm_bytes", g->hbm_bytes},
                   {"hbm_bandwidth_utilization", t > 0 && hbm_bw > 0 ? g->hbm_bytes / (t * hbm_bw) : 0.0},
                   {"bound_time_s", g->bound_s},
                   {"time_over_bound", g->bound_s > 0 ? t / g->bound_s : 0.0},
                   {"limiter", lim == g->limiter_s.end() ? std::string("waiting") : lim->first}});
    if (!g->children.empty()) emit_groups(g->children, depth + 1, o, step_s, peak, hbm_bw, out);
  }
}

}  // namespace

json profile_groups(const json& report, const ProfileOptions& options, const json* provenance_rows) {
  std::map<std::string, Group> top;
  const bool nested = options.group_by == GroupBy::kNested;
  const json& rows = nested && provenance_rows != nullptr ? *provenance_rows : report["ops"];
  for (const auto& op : rows) {
    if (options.group_by == GroupBy::kCategory) {
      const std::string c = op.value("category", std::string("other"));
      Group& g = top[c];
      g.name = g.path = c;
      g.add(op);
      continue;
    }
    if (options.group_by != GroupBy::kOpName && !nested) continue;
    const std::vector<std::string> parts = nested ? nested_path(op) : op_name_path(op);
    std::map<std::string, Group>* level = &top;
    std::string path;
    const int depth = options.depth > 0 ? options.depth : static_cast<int>(parts.size());
    for (std::size_t i = 0; i < parts.size() && static_cast<int>(i) < depth; ++i) {
      path += (i ? "/" : "") + parts[i];
      Group& g = (*level)[parts[i]];
      g.name = parts[i];
      g.path = path;
      g.add(op);
      level = &g.children;
    }
  }
  json out = json::array();
  emit_groups(top, 1, options, report["step_time_s"].get<double>(), report["mxu"]["peak_flops_per_s"].get<double>(),
              report["hbm"]["peak_bytes_per_s"].get<double>(), out);
  return out;
}

std::string groups_csv(const json& groups) {
  return rows_csv(groups, {"group", "path", "level", "ops", "time_s", "percent", "flops", "flop_utilization",
                           "hbm_bytes", "hbm_bandwidth_utilization", "bound_time_s", "time_over_bound", "limiter"});
}

}  // namespace tpusim
