// Sweep runner speed: overhead per point beyond the simulation
// itself (target <= 20 ms), and a 1,000-point sweep of a small workload on
// 2 workers (target <= 5 minutes), locally and with mpirun -np 2. Each case
// runs the real tpusim binary as a user would (manual time = wall clock).
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path bench_dir(const char* name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("tpusim_bench_{}_{}", name, getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string matmul() { return std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/matmul.tasm"; }

// Wall seconds of a shell command; negative if it failed.
double timed(const std::string& cmd) {
  const auto t0 = Clock::now();
  const int st = std::system(cmd.c_str());
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? s : -1;
}

// `n` distinct HBM bandwidths (100 GB/s apart) on matmul.tasm.
std::string bandwidth_spec(int n) {
  std::string bws;
  for (int i = 0; i < n; ++i) bws += fmt::format("{}{} GB/s", i ? ", " : "", 500 + 100 * i);
  return fmt::format("name: bench\nbase: v5e\nworkloads: ['{}']\ngrid:\n  hbm.bandwidth: [{}]\n", matmul(), bws);
}

// Per point: (sweep of N points with -j 1) - (N direct `tpusim run` of the
// same configs, also one at a time, each a fresh process) over N. The
// difference is what the runner adds: fork/exec bookkeeping, loading and
// hashing the config, parsing the JSON report, writing the record.
void BM_SweepRunnerOverheadPerPoint(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const fs::path d = bench_dir("overhead");
  std::ofstream(d / "s.yaml") << bandwidth_spec(n);
  const std::string bin = TPUSIM_BINARY;
  for (auto _ : state) {
    fs::remove(d / "s.jsonl");
    const double sweep = timed(fmt::format("cd '{}' && '{}' sweep s.yaml -j 1 -q >/dev/null 2>&1", d.string(), bin));
    std::string direct_cmd = fmt::format("cd '{}'", d.string());
    for (int i = 0; i < n; ++i) {
      direct_cmd += fmt::format(" && '{}' run '{}' --chip v5e --set 'hbm.bandwidth={} GB/s' --format json -q >/dev/null",
                                bin, matmul(), 500 + 100 * i);
    }
    const double direct = timed(direct_cmd);
    if (sweep < 0 || direct < 0) {
      state.SkipWithError("tpusim failed");
      break;
    }
    state.SetIterationTime(sweep);
    state.counters["sweep_ms_per_point"] = sweep / n * 1e3;
    state.counters["direct_run_ms_per_point"] = direct / n * 1e3;
    state.counters["overhead_ms_per_point"] = (sweep - direct) / n * 1e3;
  }
  fs::remove_all(d);
}
BENCHMARK(BM_SweepRunnerOverheadPerPoint)->Arg(100)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

// 1,000 points (25 HBM bandwidths x 4 MXU counts x 10 VMEM bytes/cycle) of
// matmul.tasm on 2 workers.
std::string thousand_spec() {
  std::string bws;
  for (int i = 0; i < 25; ++i) bws += fmt::format("{}{} GB/s", i ? ", " : "", 600 + 100 * i);
  return fmt::format(
      "name: bench1000\nbase: v5e\nworkloads: ['{}']\ngrid:\n  hbm.bandwidth: [{}]\n  core.mxu.count: [1, 2, 3, 4]\n"
      "  core.vmem.bytes_per_cycle: [256, 512, 1024, 1536, 2048, 3072, 4096, 8192, 16384, 32768]\n",
      matmul(), bws);
}

void run_thousand(benchmark::State& state, bool mpi) {
  const fs::path d = bench_dir(mpi ? "thousand_mpi" : "thousand");
  std::ofstream(d / "s.yaml") << thousand_spec();
  std::string launcher;
  if (mpi) {
    const std::string mpirun = TPUSIM_MPIEXEC;
    if (mpirun.empty() || !TPUSIM_HAVE_MPI) {
      state.SkipWithError("no MPI in this build");
      return;
    }
    launcher = fmt::format("'{}' -np 2 --oversubscribe {} ", mpirun, geteuid() == 0 ? "--allow-run-as-root" : "");
  }
  for (auto _ : state) {
    fs::remove(d / "s.jsonl");
    const double s = timed(fmt::format("cd '{}' && {}'{}' sweep s.yaml {} -q >/dev/null 2>&1", d.string(), launcher,
                                       TPUSIM_BINARY, mpi ? "" : "-j 2"));
    std::ifstream in(d / "s.jsonl");
    std::size_t lines = 0;
    for (std::string l; std::getline(in, l);) lines += l.empty() ? 0 : 1;
    if (s < 0 || lines != 1000) {
      state.SkipWithError("sweep failed or incomplete");
      break;
    }
    state.SetIterationTime(s);
    state.counters["seconds"] = s;
    state.counters["ms_per_point"] = s * 1e3 / 1000.0;
  }
  fs::remove_all(d);
}
void BM_Sweep1000PointsTwoWorkers(benchmark::State& state) { run_thousand(state, false); }
void BM_Sweep1000PointsMpiTwoRanks(benchmark::State& state) { run_thousand(state, true); }
BENCHMARK(BM_Sweep1000PointsTwoWorkers)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_Sweep1000PointsMpiTwoRanks)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
