// `tpusim validate gemm`: measured TPU GEMMs against tpusim. The prediction
// of a row is `tpusim run` of the same dot; a host-timed series adds the
// per-call overhead fitted on its calibration rows only; malformed rows are
// located input errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/cli/cli.h"
#include "app/validate/validate_gemm.h"
#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using testing::tpusim;
using testing::write_temp;

constexpr const char* kHeader = "chip,dtype,out_dtype,M,N,K,xla_flags,tensorcores,timing,measured,unit,split\n";

// `tpusim run` of the bf16 2048^3 dot on v6e (with `extra` flags): its step
// time, the device time a validate row of that dot must predict.
double dot2048_step_s(const std::string& extra) {
  const std::string hlo = write_temp("dot2048.hlo",
                                     "HloModule g\nENTRY e {\n  a = bf16[2048,2048] parameter(0)\n"
                                     "  b = bf16[2048,2048] parameter(1)\n  ROOT d = bf16[2048,2048] dot(a, b), "
                                     "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n");
  const auto run = testing::binary("run " + hlo + " --chip v6e --format json -q" + extra);
  EXPECT_EQ(run.code, 0) << run.err;
  return run.code == 0 ? nlohmann::json::parse(run.out)["step_time_s"].get<double>() : -1.0;
}

TEST(GemmOverhead, MedianGapOverTheRowsItDominates) {
  // Rows 1-3 predict at most a quarter of the measured time: their gaps
  // 100, 110 and 120 us give the median 110 us; row 4 (mostly device time) is left out.
  const std::vector<double> measured{101e-6, 112e-6, 123e-6, 1000e-6};
  const std::vector<double> predicted{1e-6, 2e-6, 3e-6, 700e-6};
  EXPECT_NEAR(call_overhead_s(measured, predicted), 110e-6, 1e-12);
  // No row dominated by the overhead: the median gap of all rows.
  EXPECT_NEAR(call_overhead_s({10e-6, 20e-6}, {8e-6, 12e-6}), 5e-6, 1e-12);
  EXPECT_EQ(call_overhead_s({}, {}), 0.0);
  EXPECT_EQ(call_overhead_s({1e-6}, {2e-6}), 0.0);  // never negative
}

TEST(GemmOverhead, ErrorStatsAreMeanAbsoluteAndSigned) {
  const ErrorStats s = error_stats({100, 200}, {110, 180});  // +10%, -10%
  EXPECT_EQ(s.rows, 2u);
  EXPECT_NEAR(s.mape, 0.10, 1e-12);
  EXPECT_NEAR(s.signed_mean, 0.0, 1e-12);
}

// Two host rows (cal, val) and a device row of bf16 dots on v6e.
TEST(CliValidateGemm, PredictionsAreTheRunsPlusTheCalibratedOverhead) {
  const std::string csv = write_temp("gemm.csv", std::string(kHeader) +
                                                     "v6e,bf16,bf16,128,512,512,none,1,host,150,us,cal\n"
                                                     "v6e,bf16,bf16,256,512,512,none,1,host,160,us,val\n"
                                                     "v6e,bf16,bf16,2048,2048,2048,none,1,device,200,us,val\n");
  const auto r = tpusim({"validate", "gemm", csv, "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 3u);
  const auto& cal = j["rows"][0];
  const auto& val = j["rows"][1];
  const auto& dev = j["rows"][2];
  // The one cal row sets the host series' overhead: measured - its prediction.
  EXPECT_NEAR(cal["overhead_s"].get<double>(), 150e-6 - cal["device_s"].get<double>(), 1e-12);
  EXPECT_DOUBLE_EQ(val["overhead_s"].get<double>(), cal["overhead_s"].get<double>());
  EXPECT_NEAR(val["predicted_s"].get<double>(), val["device_s"].get<double>() + val["overhead_s"].get<double>(),
              1e-15);
  EXPECT_EQ(dev["overhead_s"].get<double>(), 0.0);
  // The device prediction is the dot's own run.
  EXPECT_DOUBLE_EQ(dev["device_s"].get<double>(), dot2048_step_s(""));
  // At least the dot's FLOPs at the v6e bf16 peak (918 TFLOP/s).
  EXPECT_GE(dev["device_s"].get<double>(), 2.0 * 2048 * 2048 * 2048 / 918e12);
  // Series: the host one has a cal and a val row; the val error is its row's.
  ASSERT_EQ(j["series"].size(), 2u);
  for (const auto& s : j["series"]) {
    if (s["timing"] != "host") continue;
    EXPECT_EQ(s["cal"]["rows"], 1);
    EXPECT_EQ(s["val"]["rows"], 1);
    EXPECT_NEAR(s["val"]["signed_mean"].get<double>(), val["error"].get<double>(), 1e-12);
  }
  // A tolerance turns the report into a check.
  const auto strict = tpusim({"validate", "gemm", csv, "--tolerance", "0.01%"});
  EXPECT_EQ(strict.code, kFailure) << strict.out;
  EXPECT_THAT(strict.out, HasSubstr("over the 0% val MAPE tolerance"));
}

TEST(GemmFlags, ScopedVmemLimitIsTheLastFlagInKiB) {
  EXPECT_FALSE(scoped_vmem_limit_bytes("none").has_value());
  EXPECT_FALSE(scoped_vmem_limit_bytes("--xla_tpu_enable_async_collective_fusion=true").has_value());
  EXPECT_EQ(scoped_vmem_limit_bytes("--xla_tpu_scoped_vmem_limit_kib=65536"), 65536.0 * 1024);
  EXPECT_EQ(scoped_vmem_limit_bytes("--a=1 --xla_tpu_scoped_vmem_limit_kib=1024 --xla_tpu_scoped_vmem_limit_kib=2048 --b"),
            2048.0 * 1024);
  EXPECT_THROW((void)scoped_vmem_limit_bytes("--xla_tpu_scoped_vmem_limit_kib="), std::invalid_argument);
  EXPECT_THROW((void)scoped_vmem_limit_bytes("--xla_tpu_scoped_vmem_limit_kib=0"), std::invalid_argument);
  EXPECT_THROW((void)scoped_vmem_limit_bytes("--xla_tpu_scoped_vmem_limit_kib=64MiB"), std::invalid_argument);
}

TEST(CliValidateGemm, AScopedVmemLimitFlagBoundsTheRowsKernel) {
  // The same 2048^3 dot without a flag and with a 1 MiB kernel limit: the flagged row is the run with
  // core.vmem.scoped_limit = 1 MiB, whose narrower tiles re-read the operands (slower than the default).
  const std::string csv =
      write_temp("gemm_vmem.csv", std::string(kHeader) +
                                      "v6e,bf16,bf16,2048,2048,2048,none,1,device,200,us,cal\n"
                                      "v6e,bf16,bf16,2048,2048,2048,--xla_tpu_scoped_vmem_limit_kib=1024,1,device,200,us,val\n");
  const auto r = tpusim({"validate", "gemm", csv, "--format", "json"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double unlimited = j["rows"][0]["device_s"].get<double>(), limited = j["rows"][1]["device_s"].get<double>();
  EXPECT_DOUBLE_EQ(limited, dot2048_step_s(" --set core.vmem.scoped_limit=1MiB"));
  EXPECT_GT(limited, unlimited);
  // A malformed limit is a located input error.
  const std::string bad = write_temp("gemm_vmem_bad.csv", std::string(kHeader) +
                                                              "v6e,bf16,bf16,128,512,512,--xla_tpu_scoped_vmem_limit_kib=big,1,host,150,us,cal\n");
  const auto e = tpusim({"validate", "gemm", bad});
  EXPECT_EQ(e.code, kUsageError);
  EXPECT_THAT(e.err, HasSubstr("gemm_vmem_bad.csv:2:27: error: --xla_tpu_scoped_vmem_limit_kib=big"));
}

TEST(CliValidateGemm, MalformedRowsAreLocatedInputErrors) {
  const std::string csv = write_temp("bad_gemm.csv", std::string(kHeader) +
                                                         "v6e,bf16,bf16,0,512,512,none,1,host,150,us,cal\n"
                                                         "v6e,bf17,bf16,128,512,512,none,1,host,150,us,cal\n"
                                                         "v9,bf16,bf16,128,512,512,none,1,host,150,us,cal\n"
                                                         "v6e,bf16,bf16,128,512,512,none,1,wall,150,us,both\n");
  const auto r = tpusim({"validate", "gemm", csv});
  EXPECT_EQ(r.code, kUsageError);
  EXPECT_THAT(r.err, HasSubstr("bad_gemm.csv:2:15: error: M must be a positive integer"));
  EXPECT_THAT(r.err, HasSubstr("bad_gemm.csv:3:5: error: dtype 'bf17'"));
  EXPECT_THAT(r.err, HasSubstr("bad_gemm.csv:4:1: error: chip 'v9'"));
  EXPECT_THAT(r.err, HasSubstr("bad_gemm.csv:5:"));
  EXPECT_THAT(r.err, HasSubstr("timing must be host or device"));
  EXPECT_THAT(r.err, HasSubstr("split must be cal or val"));
}

}  // namespace
}  // namespace tpusim::cli
