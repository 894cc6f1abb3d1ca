// Subcommands that take an input file: run, check, analyze, validate.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <optional>

#include "common/config.h"
#include "isa/hlo/analysis.h"
#include "isa/lower/lower.h"
#include "app/cli/cli.h"
#include "sim/spmd.h"  // system_to_yaml_list, wrap_all_list

namespace tpusim::cli {

struct RunOptions {
  std::string trace_path;  // --trace FILE
  std::string trace_chips;  // --trace-chips 0,5-7 ("" = every simulated chip)
  double trace_merge_us = -1;  // < 0: automatic (SimOptions::trace_merge_gap_s)
  double trace_budget = kTraceEventBudget;  // --trace-budget EVENTS
  std::string system;  // --system 4x4x4: sets system.topology ("" = the config's)
  std::string mode;    // --mode full|symmetric ("" = auto: full up to 256 chips)
  // --wrap: every axis of --system wraps around (a torus); --no-wrap: none;
  // neither: system.wraparound, else the chip's system.wrap_rule.
  std::optional<bool> wrap;
  // The op profile (docs/profile.md): --group-by category|op_name|none,
  // --top N rows per level (0 = all), --depth D grouping levels (op_name or nested).
  std::string group_by = "none";
  int top = 0;
  int depth = 3;
};


int cmd_run(const CommonOptions& opt, const std::string& input, const RunOptions& run, std::ostream& out,
            std::ostream& err);
// core: which TensorCore's program of a megacore chip to write (0-based).
int cmd_lower(const CommonOptions& opt, const std::string& input, const std::string& output, int core,
              std::ostream& out, std::ostream& err);
// HLO -> StableHLO text (isa/stablehlo/printer.h), to `output` or `out`.
int cmd_convert(const CommonOptions& opt, const std::string& input, const std::string& output, std::ostream& out,
                std::ostream& err);
int cmd_check(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_analyze(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_validate(const CommonOptions& opt, const std::string& kind, const std::string& file,
                 const std::string& tolerance, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
