// The report names each op's limiter: the resource its instructions kept
// busiest over the op's time (app/report/report.cpp); `run` and `compare`
// give their op rows as CSV too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/csv.h"
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
  EXPECT_EQ(op["resource_utilization"].size(), 10u);
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

const char* kLayer = "/workloads/hlo/decode_step.hlo";

// `run --format csv` prints the op rows (also with -q, they are the
// result), columns as documented in app/report/report.h, one row per op of
// the JSON report, their times summing to the step.
TEST(CliReportCsv, RunPrintsTheOpRowsAsCsv) {
  const std::string hlo = std::string(TPUSIM_SOURCE_DIR) + kLayer;
  const auto csv = binary("run " + hlo + " --chip v5e --format csv -q");
  ASSERT_EQ(csv.code, 0) << csv.err;
  const auto table = parse_csv(csv.out, "run.csv");
  ASSERT_TRUE(table.ok()) << format_all(table.errors());
  EXPECT_EQ(table->header,
            (std::vector<std::string>{"name", "opcode", "occurrences", "time_s", "percent", "flops", "transcendentals",
                                      "flop_utilization", "hbm_bytes", "hbm_bandwidth_utilization", "bound_time_s",
                                      "time_over_bound", "bound", "limiter", "limiter_utilization", "instructions",
                                      "approximated", "category", "op_name", "line"}));
  const auto js = binary("run " + hlo + " --chip v5e --format json -q");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  ASSERT_EQ(table->records.size(), j["ops"].size());
  double sum = 0;
  for (std::size_t i = 0; i < table->records.size(); ++i) {
    EXPECT_EQ(table->text(table->records[i], "name"), j["ops"][i]["name"].get<std::string>());
    EXPECT_EQ(table->text(table->records[i], "limiter"), j["ops"][i]["limiter"].get<std::string>());
    EXPECT_EQ(table->text(table->records[i], "category"), j["ops"][i]["category"].get<std::string>());
    sum += *table->number(table->records[i], "time_s");
  }
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-6 * j["step_time_s"].get<double>());
}

TEST(CliReportCsv, ComparePrintsItsRowsAsCsv) {
  const std::string hlo = std::string(TPUSIM_SOURCE_DIR) + kLayer;
  const auto r = binary("compare " + hlo + " " + hlo + " --chip v5e --format csv -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto table = parse_csv(r.out, "compare.csv");
  ASSERT_TRUE(table.ok()) << format_all(table.errors());
  EXPECT_EQ(table->header, (std::vector<std::string>{"name", "in", "a_time_s", "b_time_s", "delta_s",
                                                     "share_of_difference", "a_bound", "b_bound", "a_limiter",
                                                     "b_limiter", "matched_by"}));
  ASSERT_FALSE(table->records.empty());
  for (const auto& rec : table->records) {
    EXPECT_EQ(table->text(rec, "in"), "both");  // one module against itself
    EXPECT_EQ(table->text(rec, "matched_by"), "name");
    EXPECT_EQ(*table->number(rec, "delta_s"), 0.0);
  }
}

}  // namespace
}  // namespace tpusim::cli

namespace tpusim::cli {
namespace {

// Host offload: MoveToHost and MoveToDevice move their bytes over the host
// link (host.bandwidth each way, host.latency per transfer): 32 MiB at
// v5e's 15.5 GB/s is 2.165 ms each, and the link is the ops' limiter.
TEST(CliHostOffload, MovesTakeTheHostLinksTime) {
  const auto r = binary("run " + write_temp("host_move.hlo", R"(HloModule h
ENTRY e {
  a = bf16[4096,4096] parameter(0)
  h = bf16[4096,4096] custom-call(a), custom_call_target="MoveToHost"
  ROOT d = bf16[4096,4096] custom-call(h), custom_call_target="MoveToDevice"
})") + " --chip v5e --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double bytes = 4096.0 * 4096 * 2, expected = 1e-6 + bytes / 15.5e9;  // preset: 15.5 GB/s, 1 us
  ASSERT_EQ(j["ops"].size(), 2u);
  for (const auto& op : j["ops"]) {
    EXPECT_NEAR(op["time_s"].get<double>(), expected, 0.01 * expected) << op["name"];
    EXPECT_EQ(op["limiter"], "host link") << op["name"];
  }
}

// XLA's host offloader drops a MoveToDevice whose operand was computed on
// the device (only values on a path from host memory move): no transfer.
TEST(CliHostOffload, AMoveToDeviceOfADeviceValueIsFree) {
  const auto r = binary("run " + write_temp("host_free.hlo", R"(HloModule h
ENTRY e {
  a = bf16[4096,4096] parameter(0)
  b = bf16[4096,4096] add(a, a)
  ROOT d = bf16[4096,4096] custom-call(b), custom_call_target="MoveToDevice"
})") + " --chip v5e --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& op : j["ops"]) EXPECT_NE(op["limiter"], "host link") << op["name"];
  // The add alone: 96 MiB through HBM at 819 GB/s is 123 us; a transfer of
  // 32 MiB over the 15.5 GB/s link would add 2.2 ms.
  EXPECT_LT(j["step_time_s"].get<double>(), 0.5e-3);
}

// Host transfers are asynchronous, as XLA's host offloader schedules them:
// a MoveToHost overlaps the ops after it (waited at the end of its
// computation), a MoveToDevice the ops before its first reader. An 8192^3
// bf16 dot (5.6 ms of MXU time on v5e) hides a 32 MiB transfer (2.2 ms at
// 15.5 GB/s): the step is the dot's alone, not the sum.
TEST(CliHostOffload, TransfersOverlapIndependentCompute) {
  const std::string dot = R"(
  w = bf16[8192,8192] parameter(1)
  d = bf16[8192,8192] dot(w, w), lhs_contracting_dims={1}, rhs_contracting_dims={0})";
  const auto step = [](const std::string& name, const std::string& text) {
    const auto r = binary("run " + write_temp(name, text) + " --chip v5e --format json -q");
    EXPECT_EQ(r.code, 0) << r.err;
    return nlohmann::json::parse(r.out)["step_time_s"].get<double>();
  };
  const double alone = step("dot_alone.hlo", "HloModule a\nENTRY e {\n  a = bf16[4096,4096] parameter(0)" + dot +
                                                 "\n  ROOT t = (bf16[4096,4096], bf16[8192,8192]) tuple(a, d)\n}\n");
  const double to_host = step("dot_to_host.hlo", "HloModule h\nENTRY e {\n  a = bf16[4096,4096] parameter(0)\n"
                                                   "  h = bf16[4096,4096] custom-call(a), custom_call_target=\"MoveToHost\"" +
                                                   dot + "\n  ROOT t = (bf16[4096,4096], bf16[8192,8192]) tuple(h, d)\n}\n");
  const double to_device =
      step("dot_to_device.hlo", "HloModule g\nENTRY e {\n  a = bf16[4096,4096] parameter(0)\n"
                                "  m = bf16[4096,4096] custom-call(a), custom_call_target=\"MoveToDevice\"" +
                                    dot + "\n  s = bf16[4096,4096] slice(d), slice={[0:4096], [0:4096]}\n"
                                          "  ROOT r = bf16[4096,4096] add(m, s)\n}\n");
  const double transfer = 1e-6 + 4096.0 * 4096 * 2 / 15.5e9;  // preset: 15.5 GB/s, 1 us
  ASSERT_GT(alone, 2 * transfer);                              // the dot is long enough to hide it
  EXPECT_LT(to_host, alone + 0.05 * transfer);
  // The slice and add after the dot read 32 MiB each way through HBM (well under the transfer).
  EXPECT_LT(to_device, alone + 0.25 * transfer);
  EXPECT_GT(to_device, alone);
}

}  // namespace
}  // namespace tpusim::cli
