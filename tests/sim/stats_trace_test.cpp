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
