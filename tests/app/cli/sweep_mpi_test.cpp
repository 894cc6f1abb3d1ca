// `mpirun -np N tpusim sweep`: the distributed sweep on localhost gives the
// same records as a local run (identity, params, metrics, status; not wall
// time), every rank runs points, rank 0 alone writes, and resume works.
// Skips, saying why, when mpirun is not installed.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `command` (a shell line) in `dir`, bounded by a 60 s timeout so a
// hung rank fails the test instead of the CI run.
Outcome shell(const fs::path& dir, const std::string& command) {
  const std::string cmd = "cd '" + dir.string() + "' && timeout -k 5 60 " + command + " >out.txt 2>err.txt";
  Outcome o;
  const int st = std::system(cmd.c_str());
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.out = slurp(dir / "out.txt");
  o.err = slurp(dir / "err.txt");
  return o;
}

std::string mpirun_path() {
  const std::string configured = TPUSIM_MPIEXEC;
  if (!configured.empty() && access(configured.c_str(), X_OK) == 0) return configured;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string d;
  while (std::getline(dirs, d, ':')) {
    const fs::path p = fs::path(d) / "mpirun";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// mpirun with what CI needs: more ranks than cores, and root in CI (Open
// MPI refuses root without --allow-run-as-root or OMPI_ALLOW_RUN_AS_ROOT=1
// plus OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1).
// AddressSanitizer builds: GCC defines __SANITIZE_ADDRESS__, clang answers
// __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define TPUSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPUSIM_TEST_ASAN 1
#endif
#endif
std::string mpirun(const std::string& exe, int ranks, const std::string& args) {
  std::string cmd;
#if defined(TPUSIM_TEST_ASAN)
  // Open MPI keeps allocations alive at exit; LeakSanitizer would fail every rank.
  cmd += "env ASAN_OPTIONS=detect_leaks=0 ";
#endif
  cmd += "'" + exe + "' -np " + std::to_string(ranks) + " --oversubscribe";
  if (geteuid() == 0) cmd += " --allow-run-as-root";
  return cmd + " '" + TPUSIM_BINARY + "' " + args;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tpusim_mpi_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<nlohmann::json> records(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// Everything but wall time, keyed by (point, workload).
std::map<std::string, std::string> by_run(const std::vector<nlohmann::json>& rs) {
  std::map<std::string, std::string> m;
  for (auto r : rs) {
    const std::string key = r["point"].dump() + " " + r["workload"].get<std::string>();
    r.erase("wall_s");
    EXPECT_EQ(m.count(key), 0u) << "run recorded twice: " << key;
    m[key] = r.dump();
  }
  return m;
}

// 6 points x 2 workloads: ok runs, failed runs (64-row MXU cannot hold the
// programs' 128x128 tiles) and infeasible points, so every status path
// crosses ranks.
std::string spec() {
  const std::string src = TPUSIM_SOURCE_DIR;
  return "name: mpi\nbase: v5e\nworkloads: ['" + src + "/workloads/asm/matmul.tasm', '" + src +
         "/workloads/asm/matmul_bias_gelu.tasm']\n"
         "grid:\n  hbm.bandwidth: [819 GB/s, 1.6 TB/s, 3.2 TB/s]\n  core.mxu.rows: [64, 128]\n"
         "constraints:\n  - hbm.bandwidth <= 2 TB/s\n";
}

TEST(SweepMpi, TwoRanksGiveTheRecordsOfALocalRun) {
  const std::string exe = mpirun_path();
  if (exe.empty()) GTEST_SKIP() << "mpirun not found (Debian: openmpi-bin, installed by scripts/setup.sh)";
  const auto d = fresh_dir("two");
  std::ofstream(d / "s.yaml") << spec();
  const std::string bin = std::string("'") + TPUSIM_BINARY + "'";

  const auto local = shell(d, bin + " sweep s.yaml -j 2 --results local.jsonl");
  ASSERT_EQ(local.code, 1) << local.err;  // the 64-row points fail
  const auto want = records(d / "local.jsonl");
  ASSERT_EQ(want.size(), 12u);

  const auto dist = shell(d, mpirun(exe, 2, "sweep s.yaml --results mpi.jsonl"));
  if (!TPUSIM_HAVE_MPI) {
    // Built without MPI: every rank would run the whole sweep; it must refuse.
    EXPECT_EQ(dist.code, 2);
    EXPECT_THAT(dist.err, HasSubstr("built without MPI"));
    EXPECT_FALSE(fs::exists(d / "mpi.jsonl"));
    fs::remove_all(d);
    return;
  }
  ASSERT_EQ(dist.code, 1) << dist.out << dist.err;  // same failures, same exit status
  EXPECT_THAT(dist.out, HasSubstr("4 ok, 4 failed, 0 timeout, 4 infeasible"));
  EXPECT_THAT(dist.out, HasSubstr("ranks: 2"));
  const auto got = records(d / "mpi.jsonl");
  EXPECT_EQ(got.size(), want.size());
  EXPECT_EQ(by_run(got), by_run(want));
  // Both ranks ran points (rank 0 also runs its share).
  EXPECT_THAT(dist.err, HasSubstr(", rank 0)"));
  EXPECT_THAT(dist.err, HasSubstr(", rank 1)"));

  // Resume under MPI: everything recorded, nothing runs, nothing appended.
  const auto again = shell(d, mpirun(exe, 2, "sweep s.yaml --results mpi.jsonl --resume"));
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("12 already recorded"));
  EXPECT_EQ(records(d / "mpi.jsonl").size(), 12u);

  // One rank is a local run.
  const auto one = shell(d, mpirun(exe, 1, "sweep s.yaml -j 2 --results one.jsonl"));
  EXPECT_EQ(one.code, 1) << one.err;
  EXPECT_THAT(one.out, ::testing::Not(HasSubstr("ranks:")));
  EXPECT_EQ(by_run(records(d / "one.jsonl")), by_run(want));

  // A bad spec: rank 0 reports it once, the job exits 2, no rank hangs.
  std::ofstream(d / "bad.yaml") << "base: v5e\nworkloads: []\ngrid:\n  core.mxu.rowz: [1]\n";
  const auto bad = shell(d, mpirun(exe, 2, "sweep bad.yaml"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.yaml:"));
  fs::remove_all(d);
}

}  // namespace
