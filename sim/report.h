// The `tpusim run` report: where the time went, read from the stats registry
// and the provenance table of a SimResult (DESIGN.md principle 6).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/config.h"
#include "sim/simulate.h"
#include "sim/spmd.h"

namespace tpusim {

struct ReportInput {
  std::string program;  // file name
  const ChipConfig* chip = nullptr;
  const SimResult* result = nullptr;
  const SpmdResult* spmd = nullptr;  // multi-chip runs: system, per-chip split, collectives
};

// {"program","chip","finished","step_time_s","cycles","units":{...},"hbm":{...},
//  "vmem":{...},"stalls":{...},"ops":[...],"notes":[...],"blocked":[...],"stats":{...},
//  "mode":"single-chip"|"full"|"symmetric","chips","system","per_chip":{...},"ici_axes":[...],
//  "collectives":[{"op","bytes","group_size","algorithm","time_s","count","total_s","bound"}]}
nlohmann::json report_json(const ReportInput& in);
std::string report_text(const ReportInput& in);

}  // namespace tpusim
