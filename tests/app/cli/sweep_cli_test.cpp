// `tpusim sweep` end to end with the real binary: a small sweep, resume
// after kill -9, shards, timeouts, export and report, spec errors.
#include <chrono>
#include <csignal>
#include <algorithm>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "common/csv.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs the built tpusim with `args`; stdout and stderr captured via files.
Outcome tpusim(const fs::path& dir, const std::vector<std::string>& args) {
  std::string cmd = std::string("cd '") + dir.string() + "' && '" + TPUSIM_BINARY + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >out.txt 2>err.txt";
  Outcome o;
  const int st = std::system(cmd.c_str());
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  auto slurp = [&](const char* f) {
    std::ifstream in(dir / f);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  o.out = slurp("out.txt");
  o.err = slurp("err.txt");
  return o;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tpusim_sweep_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string matmul() { return std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/matmul.tasm"; }

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::vector<nlohmann::json> records(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// What must not depend on scheduling: identity, status and metrics.
std::multiset<std::string> essence(const std::vector<nlohmann::json>& rs) {
  std::multiset<std::string> s;
  for (const auto& r : rs) {
    s.insert(r["config_hash"].dump() + r["workload"].dump() + r["status"].dump() + r["metrics"].dump() +
             r["params"].dump());
  }
  return s;
}

// 4 points: 2 bandwidths x 2 MXU counts.
std::string small_spec() {
  return "name: small\nbase: v5e\nworkloads: ['" + matmul() +
         "']\ngrid:\n  hbm.bandwidth: [819 GB/s, 1.6 TB/s]\n  core.mxu.count: [1, 4]\n";
}

TEST(SweepCli, SmallSweepRecordsEveryPoint) {
  const auto d = fresh_dir("small");
  write(d / "s.yaml", small_spec());
  const auto o = tpusim(d, {"sweep", "s.yaml", "-j", "2"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("4 ok, 0 failed"));
  const auto rs = records(d / "s.jsonl");
  ASSERT_EQ(rs.size(), 4u);
  std::set<std::string> hashes;
  for (const auto& r : rs) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_GT(r["metrics"]["step_time_s"].get<double>(), 0);
    EXPECT_GT(r["area_proxy"].get<double>(), 0);
    EXPECT_GT(r["power_proxy"].get<double>(), 0);
    hashes.insert(r["config_hash"].get<std::string>());
  }
  EXPECT_EQ(hashes.size(), 4u);
  // Running again without --resume refuses to append.
  EXPECT_EQ(tpusim(d, {"sweep", "s.yaml"}).code, 2);
  // --resume with everything recorded runs nothing.
  const auto again = tpusim(d, {"sweep", "s.yaml", "--resume"});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("4 already recorded"));
  EXPECT_EQ(records(d / "s.jsonl").size(), 4u);

  // Export: header + 4 rows, parameter and metric columns.
  ASSERT_EQ(tpusim(d, {"sweep", "export", "s.jsonl", "-o", "s.csv"}).code, 0);
  auto t = tpusim::read_csv_file((d / "s.csv").string());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->records.size(), 4u);
  for (const char* c : {"hbm.bandwidth", "core.mxu.count", "step_time_s", "area_proxy", "power_proxy", "status"}) {
    EXPECT_GE(t->column(c), 0) << c;
  }
  const auto rep = tpusim(d, {"sweep", "report", "s.jsonl"});
  EXPECT_EQ(rep.code, 0);
  EXPECT_THAT(rep.out, HasSubstr("pareto front"));
  EXPECT_THAT(rep.out, HasSubstr("hbm.bandwidth"));
  fs::remove_all(d);
}

TEST(SweepCli, KilledSweepResumesToTheSameRecords) {
  const auto d = fresh_dir("kill");
  // 24 points, one at a time, so the kill lands mid-sweep.
  write(d / "s.yaml", "name: k\nbase: v5e\nworkloads: ['" + matmul() +
                          "']\ngrid:\n  hbm.bandwidth: [600 GB/s, 819 GB/s, 1 TB/s, 1.6 TB/s, 2 TB/s, 3.2 TB/s]\n"
                          "  core.mxu.count: [1, 2, 3, 4]\n");
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml", "-j", "2", "--results", "full.jsonl"}).code, 0);
  const auto full = records(d / "full.jsonl");
  ASSERT_EQ(full.size(), 24u);

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(d.c_str()) != 0) _exit(99);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(TPUSIM_BINARY, TPUSIM_BINARY, "sweep", "s.yaml", "-j", "1", "--results", "part.jsonl",
          static_cast<char*>(nullptr));
    _exit(98);
  }
  // Kill -9 once a few records are in.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(d / "part.jsonl");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (std::count(text.begin(), text.end(), '\n') >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st)) << "the sweep finished before the kill; make it longer";
  const auto partial = records(d / "part.jsonl");
  EXPECT_LT(partial.size(), 24u);
  // A write cut short leaves a partial line: simulate it too.
  { std::ofstream(d / "part.jsonl", std::ios::app) << "{\"sweep\":\"k\",\"poi"; }

  const auto res = tpusim(d, {"sweep", "s.yaml", "-j", "2", "--results", "part.jsonl", "--resume"});
  ASSERT_EQ(res.code, 0) << res.err;
  const auto resumed = records(d / "part.jsonl");
  EXPECT_EQ(resumed.size(), 24u);
  EXPECT_EQ(essence(resumed), essence(full));
  fs::remove_all(d);
}

TEST(SweepCli, ShardsPartitionTheSweep) {
  const auto d = fresh_dir("shard");
  write(d / "s.yaml", small_spec());
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml", "--results", "full.jsonl"}).code, 0);
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml", "--shard", "0/3"}).code, 0);
  setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml"}).code, 0);
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml", "--shard", "2/3"}).code, 0);
  std::vector<nlohmann::json> all;
  for (int k = 0; k < 3; ++k) {
    auto part = records(d / ("s.shard-" + std::to_string(k) + "-of-3.jsonl"));
    EXPECT_FALSE(part.empty());
    all.insert(all.end(), part.begin(), part.end());
  }
  EXPECT_EQ(essence(all), essence(records(d / "full.jsonl")));
  EXPECT_EQ(tpusim(d, {"sweep", "s.yaml", "--shard", "3/3"}).code, 2);
  fs::remove_all(d);
}

TEST(SweepCli, FailuresAndTimeoutsAreRecordedAndTheSweepContinues) {
  const auto d = fresh_dir("fail");
  // 64 rows cannot hold the program's 128x128 weight tiles: those points fail.
  write(d / "s.yaml", "base: v5e\nworkloads: ['" + matmul() +
                          "']\ngrid:\n  core.mxu.rows: [64, 128]\nconstraints:\n  - core.mxu.rows >= 64\n");
  const auto o = tpusim(d, {"sweep", "s.yaml"});
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.out, HasSubstr("1 ok, 1 failed"));
  EXPECT_THAT(o.out, HasSubstr("failures:"));
  EXPECT_THAT(o.out, HasSubstr("larger than the 64 x 128 MXU"));
  const auto rs = records(d / "s.jsonl");
  ASSERT_EQ(rs.size(), 2u);

  const auto t = tpusim(d, {"sweep", "s.yaml", "--timeout", "0.000001", "--results", "t.jsonl"});
  EXPECT_EQ(t.code, 1);
  for (const auto& r : records(d / "t.jsonl")) EXPECT_EQ(r["status"], "timeout");
  fs::remove_all(d);
}

TEST(SweepCli, InfeasiblePointsAreRecordedNotRun) {
  const auto d = fresh_dir("infeasible");
  write(d / "s.yaml", small_spec() + "constraints:\n  - core.mxu.count * core.mxu.rows * core.mxu.cols <= 16384\n");
  const auto o = tpusim(d, {"sweep", "s.yaml"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("2 ok, 0 failed, 0 timeout, 2 infeasible"));
  fs::remove_all(d);
}

TEST(SweepCli, SpecErrorsExitTwoWithLocation) {
  const auto d = fresh_dir("bad");
  write(d / "s.yaml", "base: v5e\nworkloads: ['" + matmul() + "']\ngrid:\n  core.mxu.rowz: [1]\n");
  const auto o = tpusim(d, {"sweep", "s.yaml"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("s.yaml:4:3:"));
  EXPECT_THAT(o.err, HasSubstr("did you mean 'core.mxu.rows'"));
  EXPECT_FALSE(fs::exists(d / "s.jsonl"));
  EXPECT_EQ(tpusim(d, {"sweep", "missing.yaml"}).code, 2);
  EXPECT_EQ(tpusim(d, {"sweep", "report", "missing.jsonl"}).code, 2);
  fs::remove_all(d);
}

TEST(SweepCli, ShippedTinySweepRuns) {
  const auto d = fresh_dir("tiny");
  const auto o = tpusim(d, {"sweep", std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/tiny.yaml", "-j", "2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(records(d / "tiny.jsonl").size(), 4u);
  fs::remove_all(d);
}


TEST(SweepCli, OutCreatesTheDirectory) {
  const auto d = fresh_dir("outdir");
  write(d / "s.yaml", small_spec());
  const auto o = tpusim(d, {"sweep", "s.yaml", "-j", "2", "--out", "new/sub"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(records(d / "new" / "sub" / "s.jsonl").size(), 4u);
  fs::remove_all(d);
}

TEST(SweepCli, TwoSweepsIntoOneFileWriteEachRecordOnce) {
  const auto d = fresh_dir("twice");
  write(d / "s.yaml", small_spec());
  // Both at once: one holds the results file, the other refuses (or, if it
  // starts after the first has finished, finds the file there); every record
  // lands exactly once.
  const std::string cmd = std::string("cd '") + d.string() + "' && ('" + TPUSIM_BINARY +
                          "' sweep s.yaml -j 1 --resume >a.txt 2>a.err & '" + TPUSIM_BINARY +
                          "' sweep s.yaml -j 1 --resume >b.txt 2>b.err & wait)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const auto rs = records(d / "s.jsonl");
  EXPECT_EQ(rs.size(), 4u);
  std::set<std::string> keys;
  for (const auto& r : rs) keys.insert(r["config_hash"].get<std::string>());
  EXPECT_EQ(keys.size(), 4u);
  fs::remove_all(d);
}

TEST(SweepCli, SecondSweepIntoAFileInUseIsRefused) {
  const auto d = fresh_dir("locked");
  write(d / "s.yaml", small_spec());
  // Hold the lock as a running sweep would.
  const int fd = open((d / "s.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  const auto o = tpusim(d, {"sweep", "s.yaml", "--resume"});
  EXPECT_EQ(o.code, 2);
  EXPECT_THAT(o.err, HasSubstr("another sweep is writing this results file"));
  close(fd);
  EXPECT_TRUE(records(d / "s.jsonl").empty());
  fs::remove_all(d);
}

TEST(SweepCli, CorruptLineIsReportedByResumeReportAndExport) {
  const auto d = fresh_dir("corrupt");
  write(d / "s.yaml", small_spec());
  ASSERT_EQ(tpusim(d, {"sweep", "s.yaml", "-j", "2"}).code, 0);
  // Damage the second record in the middle of the file.
  std::vector<std::string> lines;
  {
    std::ifstream in(d / "s.jsonl");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_EQ(lines.size(), 4u);
  lines[1] = lines[1].substr(0, lines[1].size() / 2) + "#garbage";
  {
    std::ofstream out(d / "s.jsonl");
    for (const auto& l : lines) out << l << "\n";
  }
  const auto res = tpusim(d, {"sweep", "s.yaml", "--resume"});
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.err, HasSubstr("s.jsonl:2:1: error: corrupt line"));
  EXPECT_THAT(res.out, HasSubstr("1 ok, 0 failed, 0 timeout, 0 infeasible, 3 already recorded"));
  EXPECT_THAT(res.out, HasSubstr("1 corrupt line in the results file"));
  const auto rep = tpusim(d, {"sweep", "report", "s.jsonl"});
  EXPECT_EQ(rep.code, 1);
  EXPECT_THAT(rep.out, HasSubstr("1 corrupt line in the results"));
  EXPECT_THAT(rep.err, HasSubstr("s.jsonl:2:1"));
  const auto ex = tpusim(d, {"sweep", "export", "s.jsonl", "-o", "s.csv"});
  EXPECT_EQ(ex.code, 1);
  EXPECT_THAT(ex.err, HasSubstr("1 corrupt line in the results"));
  fs::remove_all(d);
}

TEST(SweepCli, TopologySweepRunsEachSizeOnItsOwnWorkload) {
  const auto d = fresh_dir("scale");
  // An all-reduce over every chip, one module per size ({chips}).
  for (int n : {2, 4}) {
    std::string groups;
    for (int i = 0; i < n; ++i) groups += (i ? "," : "") + std::to_string(i);
    write(d / ("ar." + std::to_string(n) + ".tasm"),
          ".buffer a hbm bf16 [1024, 8192]\n.buffer b hbm bf16 [1024, 8192]\n.semaphore s\n"
          "collective.all_reduce dst=b src=a groups=[[" + groups + "]] sem=s\nsem.wait sem=s\n");
  }
  write(d / "s.yaml", "name: scale\nbase: v5e\nworkloads: ['ar.{chips}.tasm']\ngrid:\n"
                      "  system.topology: [[2], [4]]\nmetrics: [step_time_s, chips]\n");
  const auto o = tpusim(d, {"sweep", "s.yaml", "-j", "2"});
  ASSERT_EQ(o.code, 0) << o.err;
  const auto rs = records(d / "s.jsonl");
  ASSERT_EQ(rs.size(), 2u);
  // V = 16 MiB on a v5e line (no wraparound below 16), w = 4.5e10 B/s:
  // 2·(N-1)/N·V/w + 2·(N-1) hops of 1 us.
  for (const auto& r : rs) {
    ASSERT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["mode"], "run");
    const double n = r["metrics"]["chips"].get<double>();
    const double expect = 2 * (n - 1) / n * 16777216.0 / 4.5e10 + 2 * (n - 1) * 1e-6;
    EXPECT_NEAR(r["metrics"]["step_time_s"].get<double>(), expect, 0.05 * expect) << n;
  }
  fs::remove_all(d);
}

}  // namespace
