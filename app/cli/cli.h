// The `tpusim` command line: subcommands, common options, exit codes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "app/pipeline.h"

namespace tpusim::cli {

// Exit codes: documented in README.md and `tpusim --help`.
using app::ExitCode;
using app::kOk;
using app::kFailure;
using app::kUsageError;

enum class Format { kText, kJson, kCsv };

// Options every subcommand accepts.
struct CommonOptions {
  std::string chip = "v5e";
  std::vector<std::string> overrides;  // --set key=value
  std::string out_dir;                 // --out DIR ("" = none)
  Format format = Format::kText;
  int verbosity = 0;                   // -v raises, --quiet lowers
  bool strict = false;                 // --strict: HLO input checked as XLA's verifier does
  std::string lower_for;               // --lower-for CHIP: compile for that chip ("" = the simulated one)
};

// Runs the CLI; returns the process exit code. Output goes to `out`, errors to `err`.
int run(int argc, char** argv);
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
