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

// The op profile's grouping (`run --group-by`, `--top`, `--depth`).
enum class GroupBy { kNone, kCategory, kOpName, kNested };
struct ProfileOptions {
  GroupBy group_by = GroupBy::kNone;
  int top = 0;    // rows shown per level; 0 = all
  int depth = 3;  // op_name / nested grouping: path levels shown (module > layer > op; while > body op)
};
// "category" | "op_name" | "nested" | "none"; false when the text is none of them.
bool parse_group_by(std::string_view text, GroupBy& out);

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
  ProfileOptions profile;
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
// "resource_utilization" (each resource's use over the op's time), and with
// a roofline "category" (hlo::profile_category), "op_name" and "line" (of
// the op in the HLO file). Summaries: "by_limiter" and, with a roofline,
// "by_category": [{"name","ops","time_s","percent","flops","hbm_bytes"}],
// longest first. With profile.group_by: "groups" (profile_groups()).
nlohmann::json report_json(const ReportInput& in);
std::string report_text(const ReportInput& in);
// The text report's first result line, "total  <cycles> cycles = <us> us" (what
// `run -q` prints), from report_json.
std::string report_total_line(const nlohmann::json& report);
// The per-op rows as CSV (`run --format csv`), one header line, columns in
// this order: name,opcode,occurrences,time_s,percent,flops,transcendentals,
// flop_utilization,hbm_bytes,hbm_bandwidth_utilization,bound_time_s,
// time_over_bound,bound,limiter,limiter_utilization,instructions,approximated,
// category,op_name,line (a column the rows lack is empty: without a
// roofline, opcode, the utilizations, category, op_name and line).
std::string report_csv(const nlohmann::json& report);
// The op profile grouped (docs/profile.md): one row per category, or per
// op_name path prefix down to `depth` levels (a row per level, parents
// before their children, each level longest first), at most `top` rows per
// level. Row fields: "group" (the category or the path's last component),
// "path" (the whole prefix; the category itself), "level" (1 = top),
// "ops", "time_s", "percent", "flops", "flop_utilization", "hbm_bytes",
// "hbm_bandwidth_utilization", "bound_time_s", "time_over_bound",
// "limiter" (the limiter of most of the group's time). Nested grouping
// groups `provenance_rows` (the simulation's rows, one per op of every
// computation, "while.1/fusion.3") by their path instead of the report's ops;
// their bound is the chip's peaks (each MXU FLOP at its dtype's core.mxu.rate).
nlohmann::json profile_groups(const nlohmann::json& report, const ProfileOptions& options,
                              const nlohmann::json* provenance_rows = nullptr);
// The groups as CSV (`run --group-by ... --format csv`): group,path,level,
// ops,time_s,percent,flops,flop_utilization,hbm_bytes,
// hbm_bandwidth_utilization,bound_time_s,time_over_bound,limiter.
std::string groups_csv(const nlohmann::json& groups);
// JSON objects as CSV rows: a header of `columns`, then per row each
// column's value (strings quoted when they hold a comma, quote or newline;
// numbers to 9 significant digits; missing or null fields empty).
std::string rows_csv(const nlohmann::json& rows, const std::vector<std::string>& columns);

}  // namespace tpusim
