// The `tpusim run` report: where the time went, read from the stats registry
// and the provenance table of a SimResult (DESIGN.md principle 6).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/config.h"
#include "isa/hlo/analysis.h"
#include "sim/simulate.h"
#include "sim/spmd.h"

namespace tpusim {

struct ReportInput {
  std::string program;  // file name
  const ChipConfig* chip = nullptr;
  const SimResult* result = nullptr;
  // For a program compiled from HLO: the `tpusim analyze` roofline of the same
  // module on the same chip. The per-op rows then roll up to the entry
  // computation's instructions (provenance "op" or "op/nested", with an
  // "approx:<opcode> " prefix for approximated lowerings) and carry each op's
  // roofline bound and the ratio of simulated time to it.
  const hlo::RooflineReport* roofline = nullptr;
  const SpmdResult* spmd = nullptr;  // multi-chip runs: system, per-chip split, collectives
};

// The entry-computation op a provenance string belongs to:
// "approx:dot while.2/dot.7" -> "while.2"; "fusion.7/dot.2" -> "fusion.7".
std::string provenance_root(std::string_view provenance);
[[nodiscard]] bool provenance_is_approximation(std::string_view provenance);

// {"program","chip","finished","step_time_s","cycles","units":{...},"hbm":{...},
//  "vmem":{...},"stalls":{...},"ops":[...],"notes":[...],"blocked":[...],"stats":{...},
//  "mode":"single-chip"|"full"|"symmetric","chips","system","per_chip":{...},"ici_axes":[...],
//  "collectives":[{"op","bytes","group_size","algorithm","time_s","count","total_s","bound"}],
//  "loop_mode":"full"|"extrapolate","loops":[{"loop","where","instances","total_iterations",
//  "simulated_iterations","iteration_s","extrapolated_s"}],"reuse":bool,
//  "reused":[{"op","instances","instance_s","added_s"}]}
// plus, with a roofline: "bound_time_s" (the module's roofline bound),
// "time_over_bound" and per op "bound_time_s", "bound", "time_over_bound",
// "flop_utilization", "hbm_bandwidth_utilization", "approximated", "occurrences"
// (a reused op and its identical copies: time, FLOPs, bound cover all); per
// op always "limiter", "limiter_utilization", "busiest_resource" and
// "resource_utilization" (each resource's use over the op's time).
nlohmann::json report_json(const ReportInput& in);
std::string report_text(const ReportInput& in);
// The per-op rows as CSV (`run --format csv`), one header line, columns in
// this order: name,opcode,occurrences,time_s,percent,flops,transcendentals,
// flop_utilization,hbm_bytes,hbm_bandwidth_utilization,bound_time_s,
// time_over_bound,bound,limiter,limiter_utilization,instructions,approximated
// (a column the rows lack is empty: without a roofline, opcode and the
// utilizations).
std::string report_csv(const nlohmann::json& report);
// JSON objects as CSV rows: a header of `columns`, then per row each
// column's value (strings quoted when they hold a comma, quote or newline;
// numbers to 9 significant digits; missing or null fields empty).
std::string rows_csv(const nlohmann::json& rows, const std::vector<std::string>& columns);

}  // namespace tpusim
