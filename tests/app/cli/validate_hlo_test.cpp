// `tpusim validate step` and `tpusim validate roofline` on small reference
// files: passing and failing rows, and malformed files as located errors.
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/cli.h"
#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
const std::string kSrc = TPUSIM_SOURCE_DIR;

using testing::Outcome;
using testing::tpusim;

using testing::write_temp;

const std::string kMatvec = kSrc + "/tests/validation/refs/hlo/sb_matvec_b8.hlo";

// x[8,8192] @ W[8192,8192] bf16 on v5e: 134,479,872 bytes at the published
// 8.2e11 B/s = 164.0 us; the simulated time is within 15% of that.
TEST(CliValidateStep, RowWithinAndOutsideTolerance) {
  const std::string csv = write_temp("step.csv",
                                     "workload,chip,system,ref_step_time_s,tolerance\n" + kMatvec +
                                         ",v5e,1,164.0e-6,0.15\n" + kMatvec + ",v5e,1,82.0e-6,0.15\n");
  const auto r = tpusim({"validate", "step", csv, "--format", "json"});
  EXPECT_EQ(r.code, kFailure) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_TRUE(j["rows"][0]["pass"].get<bool>());
  EXPECT_NEAR(j["rows"][0]["error"].get<double>(), 0.0, 0.15);
  EXPECT_GE(j["rows"][0]["tpusim_s"].get<double>(), 134479872.0 / 819e9);  // never faster than the preset's HBM
  EXPECT_FALSE(j["rows"][1]["pass"].get<bool>());  // half the time: about +100% error
  EXPECT_NEAR(j["rows"][1]["error"].get<double>(), 2 * (1 + j["rows"][0]["error"].get<double>()) - 1, 1e-9);
  EXPECT_EQ(j["failures"].get<int>(), 1);
}

// A multi-chip row runs the module on the system like `tpusim run --system`.
TEST(CliValidateStep, MultiChipRowRunsOnTheSimulatedSystem) {
  const std::string tp8 = kSrc + "/workloads/hlo/sharded/transformer_layer_fwd.tp8.hlo";
  const std::string csv =
      write_temp("step_tp8.csv", "workload,chip,system,ref_step_time_s\n" + tp8 + ",v5p,8,1e-3\n");
  const auto r = tpusim({"validate", "step", csv, "--format", "json", "--tolerance", "100%"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto run = testing::binary("run " + tp8 + " --chip v5p --system 8 --format json -q");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_DOUBLE_EQ(j["rows"][0]["tpusim_s"].get<double>(), nlohmann::json::parse(run.out)["step_time_s"].get<double>());
}

TEST(CliValidateStep, MalformedRowsAreLocatedInputErrors) {
  const std::string csv = write_temp("bad_step.csv",
                                     "workload,chip,system,ref_step_time_s\n"
                                     "nope.hlo,v5e,1,1e-3\n" +
                                         kMatvec + ",v9,1,1e-3\n" + kMatvec + ",v5e,4xy,1e-3\n" + kMatvec +
                                         ",v5e,1,-2\n");
  const auto r = tpusim({"validate", "step", csv});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("bad_step.csv:2:1: error: workload 'nope.hlo' not found"));
  EXPECT_THAT(r.err, HasSubstr("bad_step.csv:3:"));
  EXPECT_THAT(r.err, HasSubstr("chip 'v9'"));
  EXPECT_THAT(r.err, HasSubstr("bad_step.csv:4:"));
  EXPECT_THAT(r.err, HasSubstr("system '4xy'"));
  EXPECT_THAT(r.err, HasSubstr("bad_step.csv:5:"));
  const std::string missing = write_temp("cols.csv", "workload,chip\nx,v5e\n");
  const auto m = tpusim({"validate", "step", missing});
  EXPECT_EQ(m.code, kUsageError);
  EXPECT_THAT(m.err, HasSubstr("ref_step_time_s"));
}

TEST(CliValidateRoofline, StatedFactorDecidesAndOpsNeverBeatTheirBound) {
  const std::string csv = write_temp("roof.csv", "workload,chip,max_factor\n" + kMatvec + ",v5e,1.15\n" + kMatvec +
                                                     ",v5e,1.0000001\n");
  const auto r = tpusim({"validate", "roofline", csv, "--format", "json"});
  EXPECT_EQ(r.code, kFailure) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& a = j["rows"][0];
  EXPECT_TRUE(a["pass"].get<bool>());
  EXPECT_TRUE(a["ops_below_bound"].empty());
  // The module's bound is its bytes over the v5e preset's 819 GB/s.
  EXPECT_NEAR(a["bound_time_s"].get<double>(), 134479872.0 / 819e9, 1e-9);
  EXPECT_GE(a["time_over_bound"].get<double>(), 1.0);
  EXPECT_FALSE(j["rows"][1]["pass"].get<bool>());  // a real kernel is not exactly at the bound
  const std::string bad = write_temp("roof_bad.csv", "workload,chip,max_factor\n" + kMatvec + ",v5e,0.5\n");
  const auto b = tpusim({"validate", "roofline", bad});
  EXPECT_EQ(b.code, kUsageError);
  EXPECT_THAT(b.err, HasSubstr("roof_bad.csv:2:"));
  EXPECT_THAT(b.err, HasSubstr("max_factor must be at least 1"));
}

// The shipped tests/validation/refs/roofline.csv runs in scripts/validate.sh.

}  // namespace
}  // namespace tpusim::cli
