#include "app/cli/sweep_command.h"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <ostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "common/json_text.h"
#include "common/units.h"
#include "app/sweep/analysis.h"
#include "app/sweep/mpi/launch.h"
#include "app/sweep/runner.h"
#include "app/sweep/spec.h"

namespace fs = std::filesystem;

namespace tpusim::cli {
namespace {

// The running executable, so points run the same build as the sweep.
std::string self_binary() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tpusim") : p.string();
}

}  // namespace

namespace {

// Rank 0 of a distributed sweep (or a local run when `link` is null).
int coordinate(const SweepOptions& s, sweep::RunnerOptions ro, sweep::RankLink* link,
               std::ostream& out, std::ostream& err) {
  auto spec = sweep::load_sweep_spec(s.spec);
  if (!spec) {
    err << format_all(spec.errors());
    if (link != nullptr) sweep::release_workers(*link);
    return kUsageError;
  }
  ro.workers = link;
  auto sum = sweep::run_sweep(*spec, ro, err);
  if (!sum) {
    err << format_all(sum.errors());
    if (link != nullptr) sweep::release_workers(*link);
    return kUsageError;
  }
  out << sweep::format_summary(*spec, ro, *sum);
  return sum->failed + sum->timeout > 0 ? kFailure : kOk;
}

}  // namespace

const char* sweep_help_footer() {
  return "Every (point, workload) runs as a child process (tpusim run|analyze ... --format json) and is\n"
         "appended to the results file (JSON Lines) as it ends; see docs/sweeps.md.\n"
         "\n"
         "Examples:\n"
         "  tpusim sweep configs/sweeps/mxu_vs_hbm.yaml -j 2         # writes ./mxu_vs_hbm.jsonl\n"
         "  tpusim sweep spec.yaml --resume                          # continue after a kill or a crash\n"
         "  tpusim sweep spec.yaml --shard 3/16 --out results/       # one of 16 independent shards\n"
         "  mpirun -np 64 tpusim sweep spec.yaml --resume            # 64 ranks pull runs; rank 0 writes\n"
         "  tpusim sweep report mxu_vs_hbm.jsonl                     # best points, Pareto front, sensitivity\n"
         "  tpusim sweep export mxu_vs_hbm.jsonl -o mxu_vs_hbm.csv\n"
         "  scripts/plot_sweep.py mxu_vs_hbm.jsonl --out plots/      # heat map, Pareto, scaling (PNG, SVG)\n"
         "\n"
         "Under mpirun (of the MPI tpusim was built with; Debian: Open MPI): rank 0 reads the spec, writes\n"
         "the results and runs its share; every rank runs -j points at once (default 1 per rank), each as\n"
         "a child process.\n"
         "With one rank it is a local run. Without mpirun MPI is never initialized.\n"
         "\n"
         "Exit codes: 0 every run ok or infeasible; 1 some run failed or timed out (listed in the summary);\n"
         "2 bad spec, bad flags, or the results file exists without --resume.";
}

int cmd_sweep(const CommonOptions& opt, const SweepOptions& s, std::ostream& out, std::ostream& err) {
  // Under mpirun with several ranks every rank gets here with the same
  // arguments; only rank 0 reads the spec and prints.
  const sweep::MpiLaunch launch = sweep::detect_mpi_launch();
  const bool distributed = launch.launched && launch.size != 1;
  std::ostringstream silenced;
  std::ostream& rank_err = distributed && launch.rank != 0 ? silenced : err;
  if (distributed && !sweep::mpi_launcher_built()) {
    // Every rank would run the whole sweep and append to one file: refuse.
    if (launch.rank == 0) {
      err << fmt::format(
          "tpusim sweep: started by an MPI launcher ({}={}) but this tpusim was built without MPI "
          "(configure with libopenmpi-dev installed, CMake option TPUSIM_MPI=ON); run it without mpirun, or "
          "split the sweep with --shard K/N\n",
          launch.launcher, launch.size);
    }
    return kUsageError;
  }
  sweep::RunnerOptions ro;
  ro.binary = self_binary();
  // One run per rank by default under mpirun (one rank per slot), else one per core.
  ro.jobs = s.jobs > 0 ? s.jobs
                       : distributed ? 1 : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  ro.resume = s.resume;
  ro.verbosity = opt.verbosity;
  ro.tty = isatty(STDERR_FILENO) != 0;
  if (!s.timeout.empty()) {
    double t = 0;
    std::string e;
    if (!parse_number(s.timeout, t) && !parse_quantity(s.timeout, Dimension::kSeconds, t, e)) {
      rank_err << fmt::format("tpusim sweep: --timeout takes a duration such as 30 s or 30, got '{}'\n", s.timeout);
      return kUsageError;
    }
    ro.timeout_s = t;
  }
  std::string shard = s.shard;
  if (shard.empty()) {
    // A Slurm job array splits the sweep: task i of N runs shard i/N.
    const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
    const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
    if (id != nullptr && count != nullptr) {
      const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
      shard = fmt::format("{}/{}", std::atoi(id) - (min != nullptr ? std::atoi(min) : 0), count);
    }
  }
  if (!shard.empty()) {
    std::string e;
    if (!sweep::parse_shard(shard, ro.shard_index, ro.shard_count, e)) {
      rank_err << "tpusim sweep: " << e << "\n";
      return kUsageError;
    }
  }
  ro.results_path = s.results;
  if (ro.results_path.empty()) {
    std::string name = fs::path(s.spec).stem().string();
    if (ro.shard_count > 1) name += fmt::format(".shard-{}-of-{}", ro.shard_index, ro.shard_count);
    ro.results_path = (fs::path(opt.out_dir.empty() ? "." : opt.out_dir) / (name + ".jsonl")).string();
  }
  if (!distributed) return coordinate(s, ro, nullptr, out, err);

  std::string e;
  auto link = sweep::open_mpi_link(e);
  if (!link) {
    rank_err << "tpusim sweep: " << e << "\n";
    return kUsageError;
  }
  if (link->size() == 1) return coordinate(s, ro, nullptr, out, err);
  if (link->rank() == 0) return coordinate(s, ro, link.get(), out, err);
  auto ran = sweep::run_sweep_worker(ro, *link);
  if (!ran) {
    err << format_all(ran.errors());
    link->abort(kUsageError);
  }
  return kOk;
}

namespace {
// `corrupt`: lines that are not records and not an unfinished last line.
bool read_inputs(const SweepOptions& s, std::vector<sweep::Record>& records, std::size_t& corrupt, std::ostream& err) {
  auto rr = sweep::read_records(s.inputs);
  if (!rr) {
    err << format_all(rr.errors());
    return false;
  }
  for (const auto& d : rr->skipped) err << d.format() << "\n";
  records = std::move(rr->records);
  corrupt = rr->corrupt;
  return true;
}

std::string corrupt_text(std::size_t corrupt) {
  return fmt::format("{} corrupt line{} in the results (skipped; listed on stderr): the results are incomplete\n",
                     corrupt, corrupt == 1 ? "" : "s");
}
}  // namespace

int cmd_sweep_export(const CommonOptions& /*opt*/, const SweepOptions& s, std::ostream& out, std::ostream& err) {
  std::vector<sweep::Record> records;
  std::size_t corrupt = 0;
  if (!read_inputs(s, records, corrupt, err)) return kUsageError;
  const std::string csv = sweep::export_csv(records);
  if (s.output.empty() || s.output == "-") {
    out << csv;
    if (corrupt > 0) err << "tpusim sweep export: " << corrupt_text(corrupt);
    return corrupt > 0 ? kFailure : kOk;
  }
  std::ofstream f(s.output, std::ios::binary);
  if (!(f << csv)) {
    err << fmt::format("{}: cannot write\n", s.output);
    return kUsageError;
  }
  if (records.empty()) err << "tpusim sweep export: no records\n";
  if (corrupt > 0) err << "tpusim sweep export: " << corrupt_text(corrupt);
  return corrupt > 0 ? kFailure : kOk;
}

int cmd_sweep_report(const CommonOptions& opt, const SweepOptions& s, std::ostream& out, std::ostream& err) {
  std::vector<sweep::Record> records;
  std::size_t corrupt = 0;
  if (!read_inputs(s, records, corrupt, err)) return kUsageError;
  auto rep = sweep::sweep_report(records);
  if (opt.format == Format::kJson) {
    rep["corrupt_lines"] = corrupt;
    out << json_text(rep, 2) << "\n";
  } else {
    out << sweep::format_report(rep);
    if (corrupt > 0) out << corrupt_text(corrupt);
  }
  return corrupt > 0 ? kFailure : kOk;
}

}  // namespace tpusim::cli
