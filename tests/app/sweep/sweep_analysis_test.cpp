// Sweep results: JSON path lookup, CSV export shape, Pareto front, report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/csv.h"
#include "app/sweep/analysis.h"
#include "app/sweep/record.h"

namespace tpusim::sweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SweepRecord, FindPathResolvesDottedKeysAndStatsValues) {
  const auto j = nlohmann::json::parse(
      R"({"step_time_s": 2.5, "mxu": {"flop_utilization": 0.5},
          "stats": {"chip0.core0.cycles": {"value": 3716, "unit": "cycles"}}})");
  ASSERT_NE(find_path(j, "step_time_s"), nullptr);
  EXPECT_EQ(find_path(j, "mxu.flop_utilization")->get<double>(), 0.5);
  EXPECT_EQ(find_path(j, "stats.chip0.core0.cycles")->get<double>(), 3716);
  EXPECT_EQ(find_path(j, "mxu.nope"), nullptr);
  EXPECT_EQ(find_path(j, "stats.chip0"), nullptr);
}

TEST(SweepPareto, HandMadePoints) {
  // (time, area, power): b and c trade off; a is beaten by b everywhere;
  // d equals b (neither dominates the other); e is best in time only.
  const std::vector<std::array<double, 3>> obj{
      {2, 10, 10},  // a: dominated by b
      {1, 5, 5},    // b
      {3, 1, 1},    // c
      {1, 5, 5},    // d: tie with b
      {0.5, 20, 30} // e
  };
  EXPECT_THAT(pareto_front(obj), ElementsAre(1, 2, 3, 4));
  EXPECT_TRUE(pareto_front({}).empty());
}

Record rec(int point, const std::string& bw, double bw_value, const std::string& status, double time, double area,
           double power) {
  Record r;
  r["sweep"] = "t";
  r["point"] = point;
  r["workload"] = "w.tasm";
  r["mode"] = "run";
  r["params"] = {{"hbm.bandwidth", bw}};
  r["values"] = {{"hbm.bandwidth", bw_value}};
  r["config_hash"] = "h" + std::to_string(point);
  r["status"] = status;
  r["metrics"] = {{"step_time_s", time}, {"mxu.flop_utilization", 1 / time}};
  r["time_s"] = time;
  r["area_proxy"] = area;
  r["power_proxy"] = power;
  r["error"] = status == "ok" ? "" : "boom, \"quoted\"\nsecond line";
  r["wall_s"] = 0.1;
  return r;
}

TEST(SweepExport, CsvHasOneColumnPerParameterAndMetric) {
  const std::vector<Record> rs{rec(0, "819 GB/s", 819e9, "ok", 2, 10, 10), rec(1, "1.6 TB/s", 1.6e12, "failed", 1, 12, 11)};
  const std::string csv = export_csv(rs);
  auto t = parse_csv(csv, "x.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(t->header, ElementsAre("sweep", "point", "workload", "mode", "status", "config_hash", "hbm.bandwidth",
                                     "step_time_s", "mxu.flop_utilization", "time_s", "area_proxy", "power_proxy",
                                     "wall_s", "error"));
  ASSERT_EQ(t->records.size(), 2u);
  EXPECT_EQ(t->text(t->records[0], "hbm.bandwidth"), "819000000000.0");
  // One record per line: newlines inside a field are flattened.
  EXPECT_EQ(t->text(t->records[1], "error"), "boom, \"quoted\" / second line");
}

TEST(SweepReport, BestParetoAndSensitivity) {
  const std::vector<Record> rs{rec(0, "819 GB/s", 819e9, "ok", 2, 10, 10), rec(1, "1.6 TB/s", 1.6e12, "ok", 1, 12, 11),
                               rec(2, "3.2 TB/s", 3.2e12, "ok", 1, 14, 12), rec(3, "6.4 TB/s", 6.4e12, "timeout", 0, 0, 0)};
  const auto rep = sweep_report(rs);
  EXPECT_EQ(rep["statuses"]["ok"], 3);
  EXPECT_EQ(rep["statuses"]["timeout"], 1);
  const auto& w = rep["workloads"][0];
  // Best time: point 1 (ties with 2, first wins); best utilization: max.
  bool saw_time = false;
  for (const auto& b : w["best"]) {
    if (b["metric"] == "step_time_s") {
      EXPECT_EQ(b["point"]["point"], 1);
      saw_time = true;
    }
    if (b["metric"] == "mxu.flop_utilization") {
      EXPECT_EQ(b["goal"], "max");
    }
  }
  EXPECT_TRUE(saw_time);
  // Point 2 is slower-or-equal and bigger than 1: off the front.
  ASSERT_EQ(w["pareto"].size(), 2u);
  EXPECT_EQ(w["pareto"][0]["point"], 1);
  EXPECT_EQ(w["pareto"][1]["point"], 0);
  // Mean time 4/3; spread (2 - 1) / (4/3) = 0.75.
  ASSERT_EQ(w["sensitivity"].size(), 1u);
  EXPECT_DOUBLE_EQ(w["sensitivity"][0]["time_spread"].get<double>(), 0.75);
  EXPECT_LT(w["sensitivity"][0]["elasticity"].get<double>(), 0);
  EXPECT_THAT(format_report(rep), HasSubstr("pareto front"));
}

}  // namespace
}  // namespace tpusim::sweep
