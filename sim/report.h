// The `tpusim run` report: where the time went, read from the stats registry
// and the provenance table of a SimResult (DESIGN.md principle 6).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/config.h"
#include "sim/simulate.h"

namespace tpusim {

struct ReportInput {
  std::string program;  // file name
  const ChipConfig* chip = nullptr;
  const SimResult* result = nullptr;
};

// {"program","chip","finished","step_time_s","cycles","units":{...},"hbm":{...},
//  "vmem":{...},"stalls":{...},"ops":[...],"notes":[...],"blocked":[...],"stats":{...}}
nlohmann::json report_json(const ReportInput& in);
std::string report_text(const ReportInput& in);

}  // namespace tpusim
