// The report names each op's limiter: the resource its instructions kept
// busiest over the op's time (app/report/report.cpp, docs/report.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using testing::binary;
using testing::write_temp;

nlohmann::json first_op(const std::string& name, const std::string& text) {
  const auto r = binary("run " + write_temp(name, text) + " --chip v5e --format json -q");
  EXPECT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  return j["ops"].at(0);
}

// A bf16 4096^3 product: 137 GFLOP, 96 MiB of operands and result; at
// v5e's 197 TFLOP/s and 819 GB/s it needs 0.70 ms of MXU and 0.12 ms of
// HBM: the MXUs set its time.
TEST(CliLimiter, ALargeProductIsLimitedByTheMxu) {
  const auto op = first_op("limiter_dot.hlo", R"(HloModule d
ENTRY e {
  a = bf16[4096,4096] parameter(0)
  b = bf16[4096,4096] parameter(1)
  ROOT d = bf16[4096,4096] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  EXPECT_EQ(op["limiter"], "MXU");
  EXPECT_GT(op["limiter_utilization"].get<double>(), 0.9);
  EXPECT_LE(op["limiter_utilization"].get<double>(), 1.0 + 1e-9);
  // Every resource's use is reported; HBM's below the MXU's (the tiles
  // re-read operands, so above the 96 MiB minimum's 17%).
  EXPECT_EQ(op["resource_utilization"].size(), 9u);
  EXPECT_GT(op["resource_utilization"]["HBM"].get<double>(), 0.17);
  EXPECT_LT(op["resource_utilization"]["HBM"].get<double>(), op["limiter_utilization"].get<double>());
}

// An f32 add over 64 MiB arrays: 192 MiB through HBM and one ALU op per
// element: HBM sets its time.
TEST(CliLimiter, AnElementwiseAddIsLimitedByHbm) {
  const auto op = first_op("limiter_add.hlo", R"(HloModule s
ENTRY e {
  a = f32[4096,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT c = f32[4096,4096] add(a, b)
})");
  EXPECT_EQ(op["limiter"], "HBM");
  EXPECT_GT(op["limiter_utilization"].get<double>(), 0.9);
  EXPECT_LT(op["resource_utilization"]["VPU ALU"].get<double>(), 0.5);
}

// The text report prints the limiter and its use as the last column.
TEST(CliLimiter, TheTextReportHasALimiterColumn) {
  const auto r = binary("run " + write_temp("limiter_text.hlo", R"(HloModule s
ENTRY e {
  a = f32[4096,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT c = f32[4096,4096] add(a, b)
})") + " --chip v5e");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("bound    limiter\n"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\nc .* memory    HBM [0-9]+%\n"));
}

}  // namespace
}  // namespace tpusim::cli
