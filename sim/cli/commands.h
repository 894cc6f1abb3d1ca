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
};

int cmd_run(const CommonOptions& opt, const std::string& input, const RunOptions& run, std::ostream& out,
            std::ostream& err);
int cmd_check(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_analyze(const CommonOptions& opt, const std::string& input, std::ostream& out, std::ostream& err);
int cmd_validate(const CommonOptions& opt, const std::string& kind, const std::string& file,
                 const std::string& tolerance, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
