// The CLI as a user sees it: exit codes, help, config commands.
#include "sim/cli/cli.h"

#include <cstdio>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>

#include "sim/cli/config_command.h"

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

TEST(Cli, VersionAndHelpExitZero) {
  EXPECT_EQ(tpusim({"--version"}).code, kOk);
  EXPECT_THAT(tpusim({"--version"}).out, HasSubstr("tpusim 0."));
  const auto help = tpusim({"--help"});
  EXPECT_EQ(help.code, kOk);
  for (const char* sub : {"run", "analyze", "lower", "check", "sweep", "config", "validate", "compare", "scale"}) {
    EXPECT_THAT(help.out, HasSubstr(sub));
  }
  EXPECT_THAT(help.out, HasSubstr("Exit codes"));
  const auto sub_help = tpusim({"config", "show", "--help"});
  EXPECT_EQ(sub_help.code, kOk);
  EXPECT_THAT(sub_help.out, HasSubstr("--chip"));
  EXPECT_THAT(sub_help.out, HasSubstr("--set"));
  EXPECT_THAT(sub_help.out, HasSubstr("--format"));
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(tpusim({}).code, kUsageError);
  EXPECT_EQ(tpusim({"frobnicate"}).code, kUsageError);
  EXPECT_EQ(tpusim({"config", "show", "--format", "xml"}).code, kUsageError);
  EXPECT_EQ(tpusim({"config", "show", "--no-such-flag"}).code, kUsageError);
  const auto bad_chip = tpusim({"config", "show", "--chip", "v5f"});
  EXPECT_EQ(bad_chip.code, kUsageError);
  EXPECT_THAT(bad_chip.err, HasSubstr("did you mean 'v5e'"));
  const auto bad_set = tpusim({"config", "show", "--set", "hbm.bandwidth=819"});
  EXPECT_EQ(bad_set.code, kUsageError);
  EXPECT_THAT(bad_set.err, HasSubstr("no unit"));
}

TEST(Cli, ConfigShowJsonCarriesDerivedPeaks) {
  const auto r = tpusim({"config", "show", "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // 1 TC x 4 MXU x 128 x 128 x 2 FLOP x 1.5 GHz = 196.608 TFLOP/s; HBM 819 GB/s.
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["bf16"].get<double>(), 196.608e12);
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["int8"].get<double>(), 393.216e12);
  EXPECT_DOUBLE_EQ(j["derived"]["peak_flops_per_s"]["fp8"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["derived"]["hbm_bytes_per_s"].get<double>(), 819e9);
  EXPECT_DOUBLE_EQ(j["derived"]["ici_bytes_per_s_per_chip"].get<double>(), 4 * 45e9 * 2);
  EXPECT_NEAR(j["derived"]["critical_intensity_flops_per_byte"].get<double>(), 196.608e12 / 819e9, 1e-9);
  EXPECT_EQ(j["config"]["core"]["mxu"]["rows"].get<int>(), 128);
  EXPECT_THAT(j["origin"]["core.mxu.rows"].get<std::string>(), HasSubstr("preset configs/chips/v5e.yaml:"));
}

TEST(Cli, ConfigShowSaysWhereOverridesCameFrom) {
  const auto r = tpusim({"config", "show", "--chip", "v5p", "--set", "core.mxu.count=8"});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--set 'core.mxu.count=8'"));
  // 2 TC x 8 MXU x 128 x 128 x 2 x 1.75 GHz = 917.5 TFLOP/s.
  EXPECT_THAT(r.out, HasSubstr("917.5 TFLOP/s"));
}

TEST(Cli, ConfigShowWritesToOutDir) {
  const std::string dir = ::testing::TempDir() + "tpusim_cli_out";
  const auto r = tpusim({"config", "show", "--chip", "v6e", "--out", dir, "--quiet"});
  ASSERT_EQ(r.code, kOk) << r.err;
  std::ifstream f(dir + "/config.json");
  ASSERT_TRUE(f.good());
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["chip"], "v6e");
}

TEST(Cli, ConfigDescribeListsEveryKey) {
  const auto r = tpusim({"config", "describe", "--format", "json"});
  ASSERT_EQ(r.code, kOk);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.size(), 50u);
  EXPECT_EQ(j[0]["key"], "name");
}

TEST(Cli, UnbuiltSubcommandsSaySoAndExitTwo) {
  // Each later issue replaces one of these; until then none pretends.
  const auto r = tpusim({"sweep", "spec.yaml"});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("not implemented in this build yet"));
}

TEST(Cli, DocsConfigMdIsUpToDate) {
  std::ifstream f(std::string(TPUSIM_SOURCE_DIR) + "/docs/config.md");
  ASSERT_TRUE(f.good()) << "docs/config.md missing: run `tpusim config docs > docs/config.md`";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), config_reference_markdown())
      << "docs/config.md is stale: run `tpusim config docs > docs/config.md`";
}

TEST(Cli, BinaryExitCodes) {
  // The real executable, as scripts call it.
  const std::string bin = TPUSIM_BINARY;
  auto status = [&](const std::string& args) {
    const int s = std::system((bin + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  EXPECT_EQ(status("--version"), 0);
  EXPECT_EQ(status("config show --chip v7"), 0);
  EXPECT_EQ(status("config show --chip nope"), 2);
  EXPECT_EQ(status("--bogus"), 2);
}

}  // namespace
}  // namespace tpusim::cli
