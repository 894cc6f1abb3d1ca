// Defaults that follow the hardware: wraparound by the generation's rule
// (--wrap/--no-wrap/system.wraparound override it), and per-device peaks on
// a chip whose TensorCores are separate devices.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
using testing::binary;
using testing::tpusim;
using testing::write_temp;

// AllGather of V = bf16[1024,1024] = 2 MiB over groups of 4 chips (one x line
// of a v4 4x4x4 slice each), v4 links w = 4.5e10 B/s one way, 1 us per hop
// (the collective cost forms): with wraparound (bidirectional ring)
// 3/4·V/(2w) + ⌈3/2⌉ hops = 17.48 + 2 = 19.48 us; as a line 3/4·V/w + 3 hops
// = 34.95 + 3 = 37.95 us.
constexpr double kV = 2.0 * 1024 * 1024;
constexpr double kTorus = 0.75 * kV / (2 * 4.5e10) + 2e-6;
constexpr double kLine = 0.75 * kV / 4.5e10 + 3e-6;

std::string all_gather_tasm() {
  return write_temp("ag4.tasm",
                    ".buffer a hbm bf16 [256, 1024]\n.buffer b hbm bf16 [1024, 1024]\n.semaphore s\n"
                    "collective.all_gather dst=b src=a groups=[[0,1,2,3]] sem=s\nsem.wait sem=s\n");
}

double collective_time(const std::string& args) {
  const auto r = binary(args + " --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return 0;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["collectives"].size(), 1u);
  return j["collectives"][0]["time_s"].get<double>();
}

TEST(CliDefaults, V4FullCubeIsATorusByDefault) {
  const std::string run = "run " + all_gather_tasm() + " --chip v4 --system 4x4x4 --mode symmetric";
  EXPECT_NEAR(collective_time(run), kTorus, 0.03 * kTorus);
  EXPECT_NEAR(collective_time(run + " --no-wrap"), kLine, 0.03 * kLine);
  EXPECT_NEAR(collective_time(run + " --set system.wraparound=[false,false,false]"), kLine, 0.03 * kLine);
  // A sub-cube slice has no wraparound.
  const std::string sub = "run " + all_gather_tasm() + " --chip v4 --system 4x2x2 --mode symmetric";
  EXPECT_NEAR(collective_time(sub), kLine, 0.03 * kLine);
  EXPECT_NEAR(collective_time(sub + " --wrap"), kTorus, 0.03 * kTorus);
}

TEST(CliDefaults, RunReportSaysPerAxisWhatWrapsAndWhy) {
  const auto r = binary("run " + all_gather_tasm() + " --chip v5e --system 16x16 --mode symmetric");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("16x16 torus"));
  EXPECT_THAT(r.out, HasSubstr("wraparound: axis 0 (16 chips): wraps (axis-length rule: an axis of 16 wraps"));
  const auto mesh = binary("run " + all_gather_tasm() + " --chip v5e --system 4x8 --mode symmetric");
  ASSERT_EQ(mesh.code, 0) << mesh.err;
  EXPECT_THAT(mesh.out, HasSubstr("4x8 mesh"));
  EXPECT_THAT(mesh.out, HasSubstr("wraparound: axis 1 (8 chips): no wraparound (axis-length rule"));
}

TEST(CliDefaults, ConfigShowPrintsTheWrapDecisionAndPerDevicePeaks) {
  const auto v5p = tpusim({"config", "show", "--chip", "v5p", "--set", "system.topology=[4,4,8]"});
  ASSERT_EQ(v5p.code, 0) << v5p.err;
  EXPECT_THAT(v5p.out, HasSubstr("axis 2 (8 chips): wraps (full-cube rule: every axis a multiple of 4)"));
  EXPECT_THAT(v5p.out, ::testing::Not(HasSubstr("per device")));  // megacore: the chip is the device
  const auto v7 = tpusim({"config", "show", "--chip", "v7"});
  ASSERT_EQ(v7.code, 0) << v7.err;
  EXPECT_THAT(v7.out, HasSubstr("derived (per chip)"));
  EXPECT_THAT(v7.out, HasSubstr("per device (1 of the chip's 2 TensorCores"));
}

// bf16 [4096,4096] x [4096,4096] = 2·4096^3 = 1.374e11 FLOP. v7: 2307 TFLOP/s
// per chip [GC-7x] over 2 TensorCores that are separate devices, so one
// device's peak is 1153.5 TFLOP/s: bound 119.2 us (the chip's would be 59.6).
TEST(CliDefaults, V7BoundsUseOneTensorCore) {
  const std::string path = write_temp("dot4k.hlo", "HloModule m\nENTRY e {\n  a = bf16[4096,4096] parameter(0)\n"
                                                   "  b = bf16[4096,4096] parameter(1)\n"
                                                   "  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, "
                                                   "rhs_contracting_dims={0}\n}\n");
  const auto r = tpusim({"analyze", path, "--chip", "v7", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double expect = 2.0 * 4096 * 4096 * 4096 / (2307e12 / 2);
  EXPECT_NEAR(j["total"]["bound_time_s"].get<double>(), expect, 0.005 * expect);
  EXPECT_EQ(j["total"]["bound"], "compute");
}

TEST(CliDefaults, V7RunIsNeverFasterThanItsPerDeviceBound) {
  // bf16 [2048,2048]^2: 1.718e10 FLOP / 1153.5e12 = 14.9 us on one TensorCore.
  const std::string path = write_temp("dot2k.hlo", "HloModule m\nENTRY e {\n  a = bf16[2048,2048] parameter(0)\n"
                                                   "  b = bf16[2048,2048] parameter(1)\n"
                                                   "  ROOT d = bf16[2048,2048] dot(a, b), lhs_contracting_dims={1}, "
                                                   "rhs_contracting_dims={0}\n}\n");
  const auto r = binary("run " + path + " --chip v7 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double expect = 2.0 * 2048 * 2048 * 2048 / (2307e12 / 2);
  EXPECT_NEAR(j["bound_time_s"].get<double>(), expect, 0.005 * expect);
  EXPECT_GE(j["time_over_bound"].get<double>(), 0.99);
}

TEST(CliDefaults, V7DeviceStreamsAtItsChipletsHbm) {
  // f32[8192,8192] negated: 256 MiB read + 256 MiB written through one
  // TensorCore's HBM, 7380 GB/s / 2 = 3690 GB/s nominal: a 145.5 us bound (on
  // the whole chip's HBM it would be 72.7 us); the report's HBM peak is the
  // device's. The v7 preset's hbm.efficiency = 0.87 (fitted on measured copies)
  // makes a long stream run at 3690 x 0.87 = 3210.3 GB/s: 167.2 us.
  const std::string path = write_temp("neg.hlo", "HloModule m\nENTRY e {\n  a = f32[8192,8192] parameter(0)\n"
                                                  "  ROOT n = f32[8192,8192] negate(a)\n}\n");
  const auto r = binary("run " + path + " --chip v7 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double bytes = 2.0 * 8192 * 8192 * 4;
  const double stream = 3690e9 * 0.87;
  EXPECT_GE(j["step_time_s"].get<double>(), bytes / stream);
  EXPECT_LE(j["step_time_s"].get<double>(), 1.05 * bytes / stream);
  EXPECT_NEAR(j["bound_time_s"].get<double>(), bytes / 3690e9, 1e-3 * bytes / 3690e9);
}

}  // namespace
}  // namespace tpusim::cli
