// StableHLO through the CLI: the MLP as MLIR and the same program written as
// HLO give the same analyze totals and the same simulated step time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli::testing {
namespace {

const std::string kDir = std::string(TPUSIM_SOURCE_DIR) + "/workloads/stablehlo/";

TEST(StableHloCli, AnalyzeTotalsEqualTheHloPath) {
  const auto a = tpusim({"analyze", kDir + "mlp.mlir", "--chip", "v5e", "--format", "json"});
  const auto b = tpusim({"analyze", kDir + "mlp.hlo", "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out)["total"];
  const auto jb = nlohmann::json::parse(b.out)["total"];
  EXPECT_EQ(ja, jb);
}

// One simulation per process: both runs spawn the binary.
TEST(StableHloCli, RunStepTimeEqualsTheHloPath) {
  const auto a = binary("run " + kDir + "mlp.mlir --chip v5e --format json");
  const auto b = binary("run " + kDir + "mlp.hlo --chip v5e --format json");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const double ta = nlohmann::json::parse(a.out)["step_time_s"].get<double>();
  const double tb = nlohmann::json::parse(b.out)["step_time_s"].get<double>();
  EXPECT_GT(ta, 0);
  EXPECT_DOUBLE_EQ(ta, tb);
}

// Detected by content: an MLIR file with another extension still runs as StableHLO.
TEST(StableHloCli, DetectedByContent) {
  const std::string text = [] {
    std::ifstream in(kDir + "mlp.mlir");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  const auto path = write_temp("lowered_as_text.stablehlo", text);
  const auto r = tpusim({"analyze", path, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["module"], "jit_mlp");
}

TEST(StableHloCli, ErrorNamesMlirPosition) {
  const auto path = write_temp("bad.mlir", "module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = chlo.zeta %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n");
  const auto r = tpusim({"analyze", path});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.mlir:3:10: error: unsupported operation 'chlo.zeta'"), std::string::npos) << r.err;
}

// `tpusim convert`: HLO -> StableHLO -> HLO keeps the analyze totals and the step time.
TEST(StableHloCli, ConvertRoundTripKeepsTotals) {
  const std::string mlir = ::testing::TempDir() + "mlp_converted.mlir";
  const auto c = tpusim({"convert", kDir + "mlp.hlo", "-o", mlir});
  ASSERT_EQ(c.code, 0) << c.err;
  const auto a = tpusim({"analyze", mlir, "--chip", "v5e", "--format", "json"});
  const auto b = tpusim({"analyze", kDir + "mlp.hlo", "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["total"], nlohmann::json::parse(b.out)["total"]);
  // Without -o the text goes to stdout.
  const auto s = tpusim({"convert", kDir + "mlp.hlo"});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_TRUE(s.out.starts_with("module @jit_mlp")) << s.out;
}

TEST(StableHloCli, ConvertRoundTripKeepsStepTime) {
  const std::string mlir = ::testing::TempDir() + "mlp_converted_run.mlir";
  ASSERT_EQ(binary("convert " + kDir + "mlp.hlo -o " + mlir).code, 0);
  const auto a = binary("run " + mlir + " --chip v5e --format json");
  const auto b = binary("run " + kDir + "mlp.hlo --chip v5e --format json");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(a.out)["step_time_s"].get<double>(),
                   nlohmann::json::parse(b.out)["step_time_s"].get<double>());
}

TEST(StableHloCli, ConvertErrorsAreLocated) {
  const auto path = write_temp("bad_convert.hlo", "HloModule m\n\nENTRY e {\n  ROOT a = f32[2] add(x, x)\n}\n");
  const auto r = tpusim({"convert", path});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad_convert.hlo:4:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tpusim::cli::testing
