#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/stats.h"
#include "sim/trace.h"

namespace tpusim {
namespace {

TEST(Stats, HierarchicalNamesSumAndDump) {
  StatsRegistry r;
  r.add("chip0.core0.mxu0.busy_cycles", StatUnit::kCycles, "MXU busy") += 100;
  r.add("chip0.core0.mxu1.busy_cycles", StatUnit::kCycles, "MXU busy") += 50;
  r.add("chip0.core0.vpu.busy_cycles", StatUnit::kCycles, "VPU busy") += 7;
  Stat& again = r.add("chip0.core0.mxu0.busy_cycles", StatUnit::kCycles, "ignored");
  again += 1;
  EXPECT_DOUBLE_EQ(r.value("chip0.core0.mxu0.busy_cycles"), 101);
  EXPECT_DOUBLE_EQ(r.sum("chip0.core0.mxu", ".busy_cycles"), 151);
  EXPECT_DOUBLE_EQ(r.value("missing"), 0);
  const auto j = r.to_json();
  EXPECT_EQ(j["chip0.core0.mxu1.busy_cycles"]["value"], 50);
  EXPECT_EQ(j["chip0.core0.mxu1.busy_cycles"]["unit"], "cycles");
  EXPECT_EQ(j.size(), 3u);
}

TEST(Stats, FormulasFollowTheirStatsAndDumpTheirExpression) {
  StatsRegistry r;
  Stat& busy = r.add("core.mxu.busy_cycles", StatUnit::kCycles, "busy");
  Stat& cycles = r.add("system.cycles", StatUnit::kCycles, "step");
  r.add("core.vpu.busy_cycles", StatUnit::kCycles, "busy").value = 10;
  r.add_ratio("core.mxu.utilization", StatUnit::kRatio, "busy share", "core.mxu.busy_cycles", "system.cycles");
  r.add_sum("core.busy_cycles", StatUnit::kCycles, "all busy", {"core.mxu.busy_cycles", "core.vpu.busy_cycles"});
  r.add("cores", StatUnit::kCount, "cores").value = 2;
  r.add_ratio("core.share", StatUnit::kRatio, "per core", "core.busy_cycles", "system.cycles", "cores");
  // No step yet: a ratio over zero is 0, not a NaN.
  EXPECT_DOUBLE_EQ(r.value("core.mxu.utilization"), 0);
  busy.value = 30;
  cycles.value = 120;
  EXPECT_DOUBLE_EQ(r.value("core.mxu.utilization"), 0.25);
  EXPECT_DOUBLE_EQ(r.value("core.busy_cycles"), 40);
  EXPECT_DOUBLE_EQ(r.value("core.share"), 40.0 / (120 * 2));
  busy.value = 60;  // formulas are computed when read
  EXPECT_DOUBLE_EQ(r.value("core.mxu.utilization"), 0.5);
  const auto j = r.to_json();
  EXPECT_EQ(j["core.mxu.utilization"]["formula"], "core.mxu.busy_cycles / system.cycles");
  EXPECT_EQ(j["core.share"]["formula"], "core.busy_cycles / (system.cycles * cores)");
  EXPECT_EQ(j["core.busy_cycles"]["formula"], "core.mxu.busy_cycles + core.vpu.busy_cycles");
  EXPECT_DOUBLE_EQ(j["core.mxu.utilization"]["value"].get<double>(), 0.5);
  EXPECT_EQ(j["core.mxu.utilization"]["unit"], "ratio");
  // Formulas are not counters: sums over counters and the counter table leave them out.
  EXPECT_DOUBLE_EQ(r.sum("core.", "busy_cycles"), 70);
  EXPECT_EQ(r.all().size(), 4u);
  EXPECT_EQ(r.formulas().size(), 3u);
}

TEST(Trace, WritesValidChromeTraceWithTracksAndMergesByProvenance) {
  std::ostringstream out;
  {
    TraceWriter w(out, 0.0);
    const int mxu = w.track("chip0", "core0.mxu0");
    const int dma = w.track("chip0", "core0.dma0");
    // Three back-to-back slices of one op merge into one; a different op splits.
    w.slice(mxu, "fusion.1", 0, 1e-6);
    w.slice(mxu, "fusion.1", 1e-6, 2e-6);
    w.slice(mxu, "fusion.1", 2e-6, 3e-6);
    w.slice(mxu, "dot.\"2\"", 3e-6, 4e-6);  // a name that needs JSON escaping
    w.slice(dma, "fusion.1", 0, 5e-6);
    w.finish();
    EXPECT_EQ(w.events_written(), 3u);
  }
  const auto j = nlohmann::json::parse(out.str());
  int complete = 0, thread_names = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      if (e["name"] == "fusion.1" && e["tid"] == 0) {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3.0);  // microseconds
        EXPECT_EQ(e["args"]["instructions"], 3);
      }
    }
    if (e["ph"] == "M" && e["name"] == "thread_name") ++thread_names;
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(thread_names, 2);
}

}  // namespace
}  // namespace tpusim
