// `tpusim run --system … [--mode …]`: multi-chip runs as a user sees them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/cli/cli.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome tpusim(std::vector<std::string> args) {
  args.insert(args.begin(), "tpusim");
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

const std::string kTp8 = std::string(TPUSIM_SOURCE_DIR) + "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo";

TEST(CliSpmd, ShardedLayerOnEightChipsReportsModeChipsAndCollectives) {
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "8", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "full");  // automatic up to 256 chips
  EXPECT_EQ(j["chips"], 8);
  EXPECT_EQ(j["system"], "8 mesh");
  ASSERT_EQ(j["collectives"].size(), 1u);
  const auto& c = j["collectives"][0];
  EXPECT_EQ(c["op"], "all-reduce");
  EXPECT_EQ(c["group_size"], 8);
  EXPECT_EQ(c["count"], 2);
  EXPECT_EQ(c["bound"], "bandwidth");
  EXPECT_DOUBLE_EQ(c["bytes"].get<double>(), 2.0 * 2048 * 4096);  // bf16[1,2048,4096]
  // A line of 8 (no wraparound stated), v5p w = 9e10 B/s: 2·7/8·V/w = 326.2 us,
  // plus 2 phases × 7 hops of 1 us.
  const double expect = 2 * 7.0 / 8.0 * 16777216.0 / 9e10 + 14e-6;
  EXPECT_NEAR(c["time_s"].get<double>(), expect, 0.05 * expect);
  // The two all-reduces wait in sequence: at least their time is exposed.
  EXPECT_GE(j["per_chip"]["max_exposed_communication_s"].get<double>(), 0.9 * 2 * expect);
  EXPECT_GT(j["step_time_s"].get<double>(), 2 * expect);
  ASSERT_EQ(j["ici_axes"].size(), 1u);
  EXPECT_EQ(j["ici_axes"][0]["links"], 14);
  EXPECT_GT(j["ici_axes"][0]["utilization"].get<double>(), 0);
}

TEST(CliSpmd, TextReportHasSystemLineAxisUseAndCollectiveTable) {
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "8", "--mode", "symmetric",
                         "--set", "system.wraparound=[true]"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("system       8 torus, 8 chips, symmetric mode (1 simulated)"));
  EXPECT_THAT(r.out, HasSubstr("ICI x"));
  EXPECT_THAT(r.out, HasSubstr("collective          bytes"));
  EXPECT_THAT(r.out, HasSubstr("per-axis-ring(x:ring)"));
}

TEST(CliSpmd, SingleChipRunsSayModeAndChips) {
  const auto r = tpusim({"run", std::string(TPUSIM_SOURCE_DIR) + "/workloads/asm/matmul.tasm", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "single-chip");
  EXPECT_EQ(j["chips"], 1);
  EXPECT_TRUE(j["collectives"].is_array());
}

TEST(CliSpmd, BadSystemAndModeFlagsAreUsageErrorsNamingTheFlag) {
  auto bad = tpusim({"run", kTp8, "--system", "4x"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system: error: expected chips per axis like 8, 4x4 or 4x4x4"));
  bad = tpusim({"run", kTp8, "--system", "2x2x2x2", "--chip", "v5p"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system"));
  // v5e has 4 ICI links: a 3D torus needs 6.
  bad = tpusim({"run", kTp8, "--system", "4x4x4", "--chip", "v5e"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--system 4x4x4: error: a topology with 3 axes"));
  EXPECT_THAT(bad.err, HasSubstr("ici.links = 4"));
  bad = tpusim({"run", kTp8, "--system", "8", "--mode", "fast"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--mode: error: expected full or symmetric, got 'fast'"));
}

TEST(CliSpmd, GroupsLargerThanTheSystemFailNamingTheInstruction) {
  const auto r = tpusim({"run", kTp8, "--chip", "v5p", "--system", "4"});
  EXPECT_EQ(r.code, kFailure);
  EXPECT_THAT(r.err, HasSubstr("all-reduce.1"));
  EXPECT_THAT(r.err, HasSubstr("the replica groups name device 7 but the system has 4 chips"));
}

}  // namespace
}  // namespace tpusim::cli
