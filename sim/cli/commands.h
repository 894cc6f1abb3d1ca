// Subcommands that take an input file: run, check, analyze, validate.
#pragma once

#include <iosfwd>
#include <string>

#include <optional>

#include "common/config.h"
#include "isa/hlo/analysis.h"
#include "isa/lower/lower.h"
#include "sim/cli/cli.h"

namespace tpusim::cli {

struct RunOptions {
  std::string trace_path;  // --trace FILE
  double trace_merge_us = 0;
  std::string system;  // --system 4x4x4: sets system.topology ("" = the config's)
  std::string mode;    // --mode full|symmetric ("" = auto: full up to 256 chips)
  bool wrap = false;   // --wrap: every axis of --system wraps around (a torus)
};

// "4x4x4" -> "[4,4,4]" (the YAML list for system.topology); "" when the text
// is not 1 to 3 positive extents joined by 'x'.
std::string system_to_yaml_list(const std::string& text);
// "[true,true]" for a "[4,4]" list (every axis wraps).
std::string wrap_all_list(const std::string& yaml_list);

int cmd_run(const CommonOptions& opt, const std::string& input, const RunOptions& run, std::ostream& out,
            std::ostream& err);
int cmd_lower(const CommonOptions& opt, const std::string& input, const std::string& output, std::ostream& out,
              std::ostream& err);
int cmd_check(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_analyze(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_validate(const CommonOptions& opt, const std::string& kind, const std::string& file,
                 const std::string& tolerance, std::ostream& out, std::ostream& err);

// Parses the first module of an HLO file and lowers it for `chip`. On failure
// prints the diagnostics, sets `code` (2: bad HLO, 1: cannot lower) and
// returns nothing; with print_notes, lists the approximations on `err`.
std::optional<lower::Lowered> compile_hlo(const std::string& input, const ChipConfig& chip, int& code,
                                          std::ostream& err, bool print_notes = true,
                                          hlo::RooflineReport* roofline = nullptr);

}  // namespace tpusim::cli
