// Subcommands that take an input file: run, check, analyze, validate.
#pragma once

#include <iosfwd>
#include <string>

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
int cmd_check(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_analyze(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_validate(const CommonOptions& opt, const std::string& kind, const std::string& file,
                 const std::string& tolerance, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
