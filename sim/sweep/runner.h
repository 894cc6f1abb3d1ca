// The sweep runner: expands a spec into points, drops infeasible ones, and
// runs every (point, workload) as a child process of the tpusim binary
// (`tpusim run|analyze … --format json`; DESIGN.md principle 7), at most
// `jobs` at a time, each killed after the timeout. Every finished point is
// appended to the JSON Lines results file at once (sim/sweep/record.h), so
// `kill -9` loses only the points in flight and `resume` picks up the rest.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "sim/sweep/record.h"
#include "sim/sweep/spec.h"

namespace tpusim::sweep {

struct RunnerOptions {
  std::string binary;                // the tpusim executable to run points with
  int jobs = 1;                      // concurrent child processes
  std::optional<double> timeout_s;   // overrides the spec's timeout
  bool resume = false;               // skip points already in the results file
  int shard_index = 0;               // run items with index % shard_count == shard_index
  int shard_count = 1;
  std::string results_path;          // JSON Lines output
  bool tty = false;                  // progress bar (else one line per point)
  int verbosity = 0;                 // -1: summary only
};

struct SweepSummary {
  std::size_t points = 0;       // in the whole sweep
  std::size_t items = 0;        // points × workloads in this shard
  std::size_t ok = 0;
  std::size_t failed = 0;
  std::size_t timeout = 0;
  std::size_t infeasible = 0;
  std::size_t skipped = 0;      // already recorded (resume)
  std::vector<Record> failures; // failed and timed-out records
  double wall_s = 0;
};

// Runs the sweep; progress goes to `err`, nothing to stdout. Returns the
// summary, or a diagnostic when the sweep could not start (results file
// exists without resume, cannot be written, …).
Result<SweepSummary> run_sweep(const SweepSpec& spec, const RunnerOptions& opt, std::ostream& err);

// The summary as text, failures listed.
std::string format_summary(const SweepSpec& spec, const RunnerOptions& opt, const SweepSummary& s);

// Parses "K/N" (0 <= K < N). False with `error` set on malformed input.
bool parse_shard(std::string_view text, int& index, int& count, std::string& error);

}  // namespace tpusim::sweep
