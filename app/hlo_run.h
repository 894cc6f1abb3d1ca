// An HLO module compiled (isa/lower) and simulated on one chip, start to end:
// what `tpusim run model.hlo` does, packaged for commands that need several
// such runs (compare, validate step/roofline). Each run happens in a child
// process (DESIGN.md principle 7: one SystemC elaboration per process).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/config.h"
#include "common/diagnostic.h"

namespace tpusim {

struct HloRunOutcome {
  // The `tpusim run --format json` report (without "stats"), plus
  // "approximations"; empty when the run failed.
  nlohmann::json report;
  int exit_code = 0;   // 0 ok; 1 could not lower / illegal program / deadlock; 2 bad input
  std::string error;   // diagnostics text when exit_code != 0
  std::string warnings;  // HLO warnings (hlo::format_warnings), printed by the caller
};

// Parses the first module of `path`, lowers it for `chip`, verifies and
// simulates it in a forked child, and returns the report.
// `lower_chip`: compile for that chip instead (app::compile_hlo).
HloRunOutcome run_hlo_isolated(const std::string& path, const ChipConfig& chip, bool strict = false,
                               const ChipConfig* lower_chip = nullptr);

}  // namespace tpusim
