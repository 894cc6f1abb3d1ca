// The distributed sweep's protocol (app/sweep/rank_link.h) without MPI: rank
// 0 (run_sweep) and worker ranks (run_sweep_worker) in threads of this
// process, joined by an in-memory RankLink. Covers what mpirun on localhost
// cannot provoke: a rank that ends with a run outstanding, a malformed
// record, and release_workers after an error. Points still run as child
// processes of the real tpusim binary.
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "app/sweep/runner.h"
#include "app/sweep/spec.h"

namespace tpusim::sweep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Hub {
  std::mutex m;
  std::vector<std::deque<RankMessage>> inbox;
  explicit Hub(int n) : inbox(static_cast<std::size_t>(n)) {}
};

class MemLink final : public RankLink {
 public:
  MemLink(Hub& hub, int rank) : hub_(hub), rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return static_cast<int>(hub_.inbox.size()); }
  void send(int to, RankTag tag, std::string payload) override {
    std::lock_guard<std::mutex> l(hub_.m);
    hub_.inbox[static_cast<std::size_t>(to)].push_back(RankMessage{rank_, tag, std::move(payload)});
  }
  std::optional<RankMessage> try_receive() override {
    std::lock_guard<std::mutex> l(hub_.m);
    auto& q = hub_.inbox[static_cast<std::size_t>(rank_)];
    if (q.empty()) return std::nullopt;
    RankMessage m = std::move(q.front());
    q.pop_front();
    return m;
  }
  void flush() override {}
  [[noreturn]] void abort(int /*exit_code*/) override { std::abort(); }

  // Blocks (bounded) for the next message; nullopt after 20 s.
  std::optional<RankMessage> wait() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto m = try_receive()) return m;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::nullopt;
  }

 private:
  Hub& hub_;
  int rank_;
};

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tpusim_ranks_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

SweepSpec small_spec() {
  const std::string src = TPUSIM_SOURCE_DIR;
  auto s = load_sweep_spec_text("name: ranks\nbase: v5e\nworkloads: ['" + src + "/workloads/asm/matmul.tasm', '" + src +
                                    "/workloads/asm/matmul_bias_gelu.tasm']\n"
                                    "grid:\n  hbm.bandwidth: [819 GB/s, 1.6 TB/s]\n  core.mxu.count: [1, 4]\n",
                                "ranks.yaml");
  EXPECT_TRUE(s.ok());
  return *s;
}

RunnerOptions options(const fs::path& results) {
  RunnerOptions o;
  o.binary = TPUSIM_BINARY;
  o.jobs = 1;
  o.results_path = results.string();
  o.verbosity = -1;
  return o;
}

// (point, workload) -> record without wall time.
std::map<std::string, std::string> by_run(const fs::path& p) {
  std::map<std::string, std::string> m;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto r = nlohmann::ordered_json::parse(line);
    r.erase("wall_s");
    m[r["point"].dump() + " " + r["workload"].get<std::string>()] = r.dump();
  }
  return m;
}

TEST(SweepRanks, ThreeRanksGiveTheRecordsOfALocalRun) {
  const auto d = fresh_dir("three");
  const SweepSpec spec = small_spec();
  std::ostringstream err;
  auto local = run_sweep(spec, options(d / "local.jsonl"), err);
  ASSERT_TRUE(local.ok());
  ASSERT_EQ(local->ok, 8u);

  Hub hub(3);
  MemLink l0(hub, 0);
  MemLink l1(hub, 1);
  MemLink l2(hub, 2);
  std::atomic<std::size_t> ran1{0};
  std::atomic<std::size_t> ran2{0};
  std::thread w1([&] { ran1 = run_sweep_worker(options(d / "unused"), l1).value(); });
  std::thread w2([&] { ran2 = run_sweep_worker(options(d / "unused"), l2).value(); });
  RunnerOptions o = options(d / "dist.jsonl");
  o.workers = &l0;
  auto dist = run_sweep(spec, o, err);
  w1.join();
  w2.join();
  ASSERT_TRUE(dist.ok());
  EXPECT_EQ(dist->ok, 8u);
  EXPECT_EQ(by_run(d / "dist.jsonl"), by_run(d / "local.jsonl"));
  EXPECT_FALSE(fs::exists(d / "unused"));  // workers never write
  EXPECT_GE(ran1 + ran2, 1u);
  EXPECT_LE(ran1 + ran2, 8u);
  fs::remove_all(d);
}

TEST(SweepRanks, ARankThatEndsWithARunOutstandingIsRecordedNotDropped) {
  const auto d = fresh_dir("lost");
  Hub hub(2);
  MemLink l0(hub, 0);
  MemLink l1(hub, 1);
  // Rank 1 takes one run, then says it is done without returning it, then
  // asks again (which must be ignored: nothing it takes could come back).
  std::thread w([&] {
    l1.send(0, RankTag::kRequest, "");
    auto m = l1.wait();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->tag, RankTag::kAssign);
    l1.send(0, RankTag::kDone, "");
    l1.send(0, RankTag::kRequest, "");
  });
  RunnerOptions o = options(d / "r.jsonl");
  o.workers = &l0;
  std::ostringstream err;
  auto sum = run_sweep(small_spec(), o, err);
  w.join();
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->ok, 7u);
  EXPECT_EQ(sum->failed, 1u);
  ASSERT_EQ(sum->failures.size(), 1u);
  EXPECT_THAT(sum->failures[0]["error"].get<std::string>(), HasSubstr("rank 1 finished without returning this run"));
  EXPECT_EQ(by_run(d / "r.jsonl").size(), 8u);
  fs::remove_all(d);
}

TEST(SweepRanks, AMalformedRecordStopsRankZeroAndReleaseFreesTheWorkers) {
  const auto d = fresh_dir("bad");
  Hub hub(2);
  MemLink l0(hub, 0);
  MemLink l1(hub, 1);
  std::thread w([&] {
    l1.send(0, RankTag::kRequest, "");
    auto m = l1.wait();
    ASSERT_TRUE(m.has_value());
    l1.send(0, RankTag::kResult, "{not json");
    // After the error rank 0 answers every request with kStop.
    l1.send(0, RankTag::kRequest, "");
    for (auto r = l1.wait(); r.has_value(); r = l1.wait()) {
      if (r->tag == RankTag::kStop) break;
    }
    l1.send(0, RankTag::kDone, "");
  });
  RunnerOptions o = options(d / "r.jsonl");
  o.workers = &l0;
  std::ostringstream err;
  auto sum = run_sweep(small_spec(), o, err);
  ASSERT_FALSE(sum.ok());
  EXPECT_THAT(sum.errors()[0].message, HasSubstr("rank 1 sent a malformed record"));
  release_workers(l0);  // returns once rank 1 said kDone
  w.join();
  fs::remove_all(d);
}

}  // namespace
}  // namespace tpusim::sweep
