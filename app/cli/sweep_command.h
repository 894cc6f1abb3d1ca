// `tpusim sweep SPEC`, `tpusim sweep export`, `tpusim sweep report`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace tpusim::cli {

struct SweepOptions {
  std::string spec;
  int jobs = 0;             // 0 = number of cores
  std::string timeout;      // "" = the spec's; "30 s" or 30
  bool resume = false;
  std::string shard;        // "K/N"; "" = SLURM_ARRAY_TASK_ID/COUNT or 0/1
  std::string results;      // "" = <spec stem>[.shard-K-of-N].jsonl (in --out DIR if given)
  std::vector<std::string> inputs;  // export/report: results files
  std::string output;       // export: -o FILE ("" = stdout)
};

// The text after `tpusim sweep --help`'s options: examples, MPI, exit codes.
const char* sweep_help_footer();

int cmd_sweep(const CommonOptions& opt, const SweepOptions& s, std::ostream& out, std::ostream& err);
int cmd_sweep_export(const CommonOptions& opt, const SweepOptions& s, std::ostream& out, std::ostream& err);
int cmd_sweep_report(const CommonOptions& opt, const SweepOptions& s, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
