// The sweep runner: expands a spec into points, drops infeasible ones, and
// runs every (point, workload) as a child process of the tpusim binary
// (`tpusim run|analyze … --format json`; DESIGN.md principle 7), at most
// `jobs` at a time, each killed after the timeout. Every finished point is
// appended to the JSON Lines results file at once (app/sweep/record.h), so
// `kill -9` loses only the points in flight and `resume` picks up the rest.
//
// Distributed (mpirun): rank 0 runs `run_sweep` with `workers` set; it hands
// runs to the other ranks as they ask (app/sweep/rank_link.h), runs its own
// share too, and writes every record. The other ranks run
// `run_sweep_worker`, which needs no spec: each run arrives complete
// (arguments, metrics to keep, timeout, proxy coefficients, the record's
// identity fields), so a worker on another node only needs the binary and
// the workload files at the same paths.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "app/sweep/rank_link.h"
#include "app/sweep/record.h"
#include "app/sweep/spec.h"

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
  RankLink* workers = nullptr;       // rank 0 of a distributed sweep: the other ranks
};

struct SweepSummary {
  std::size_t points = 0;       // in the whole sweep
  std::size_t items = 0;        // points × workloads in this shard
  std::size_t ok = 0;
  std::size_t failed = 0;
  std::size_t timeout = 0;
  std::size_t infeasible = 0;
  std::size_t skipped = 0;      // already recorded (resume)
  std::size_t corrupt = 0;      // unreadable lines found in the results file on resume
  std::vector<Record> failures; // failed and timed-out records
  double wall_s = 0;
};

// Runs the sweep; progress goes to `err`, nothing to stdout. Returns the
// summary, or a diagnostic when the sweep could not start (results file
// exists without resume, cannot be written, …).
Result<SweepSummary> run_sweep(const SweepSpec& spec, const RunnerOptions& opt, std::ostream& err);

// A worker rank: asks rank 0 for runs, runs up to `opt.jobs` at once as
// child processes of `opt.binary`, sends every record back, and returns when
// rank 0 has no more runs and its own are all sent. A diagnostic means the
// protocol broke (a malformed message); the caller should abort the job.
Result<std::size_t> run_sweep_worker(const RunnerOptions& opt, RankLink& link);

// Rank 0 when it cannot run the sweep (bad spec, results file exists, …):
// answers every worker's request with kStop and waits for all their kDone,
// so no rank hangs. Records still arriving are dropped.
void release_workers(RankLink& link);

// The summary as text, failures listed.
std::string format_summary(const SweepSpec& spec, const RunnerOptions& opt, const SweepSummary& s);

// Parses "K/N" (0 <= K < N). False with `error` set on malformed input.
bool parse_shard(std::string_view text, int& index, int& count, std::string& error);

}  // namespace tpusim::sweep
