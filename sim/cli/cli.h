// The `tpusim` command line: subcommands, common options, exit codes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace tpusim::cli {

// Documented in README.md and `tpusim --help`.
enum ExitCode : int {
  kOk = 0,            // success
  kFailure = 1,       // simulation or validation failure (a check did not pass)
  kUsageError = 2,    // bad command line or bad input file (HLO, asm, YAML)
};

enum class Format { kText, kJson, kCsv };

// Options every subcommand accepts.
struct CommonOptions {
  std::string chip = "v5e";
  std::vector<std::string> overrides;  // --set key=value
  std::string out_dir;                 // --out DIR ("" = none)
  Format format = Format::kText;
  int verbosity = 0;                   // -v raises, --quiet lowers
  bool strict = false;                 // --strict: HLO input checked as XLA's verifier does
};

// Runs the CLI; returns the process exit code. Output goes to `out`, errors to `err`.
int run(int argc, char** argv);
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
