// Loop extrapolation's bookkeeping alone (sim/core/loop_tracker.h), driven
// with made-up samples and counter snapshots. Every expected figure follows
// from the rules: a skipped iteration adds what the last simulated one
// added; attributed time is scaled so the rows add up to the skipped time;
// times after a skip are shifted by the offset at that skip.
#include <gtest/gtest.h>

#include "sim/core/loop_tracker.h"

namespace tpusim {
namespace {

LoopPolicy extrapolating(std::int64_t warmup) {
  LoopPolicy p;
  p.mode = LoopMode::kExtrapolate;
  p.warmup = warmup;
  p.tolerance = 1e-3;
  return p;
}

// A boundary of a loop whose iterations take `iteration_s`, the n-th one.
BoundarySample boundary(int n, double iteration_s, std::uint64_t state = 7) {
  BoundarySample s;
  s.issue_s = n * iteration_s;
  s.retired_s = n * iteration_s + 1e-9;  // a constant lag: retires as fast as it issues
  s.busy_cycles = 100.0 * n;
  s.state = state;
  return s;
}

TEST(LoopTracker, SamplesOnlyAfterTheWarmupAndDecidesOnTheLastThree) {
  LoopTracker t(extrapolating(2));
  LoopFrame& l = t.enter(5, 10, true, 4, {0, 0});
  LoopSnapshot* fill = nullptr;
  // Boundary 1 is warm-up; boundary 2 (two iterations done) is the first sample.
  for (int n = 1; n <= 3; ++n) {
    ++l.done;
    --l.remaining;
    EXPECT_EQ(t.sample(l, boundary(n, 2e-6), fill), n >= 2) << n;
  }
  // Two samples: no decision yet.
  EXPECT_EQ(l.samples.size(), 2u);
  EXPECT_FALSE(LoopTracker::decidable(l));
  ++l.done;
  --l.remaining;
  ASSERT_TRUE(t.sample(l, boundary(4, 2e-6), fill));
  EXPECT_EQ(fill, &l.cur);
  ASSERT_TRUE(LoopTracker::decidable(l));
  const auto steady = t.steady_iteration(l);
  ASSERT_TRUE(steady.has_value());
  EXPECT_NEAR(*steady, 2e-6, 1e-15);
  // A fourth sample drops the first; a changed state is not steady.
  ++l.done;
  --l.remaining;
  ASSERT_TRUE(t.sample(l, boundary(5, 2e-6, 8), fill));
  EXPECT_EQ(l.samples.size(), 3u);
  EXPECT_FALSE(t.steady_iteration(l).has_value());
  // No iteration left: nothing to decide.
  l.remaining = 0;
  EXPECT_FALSE(LoopTracker::decidable(l));
}

TEST(LoopTracker, SkippedIterationsAddTheLastIterationsIncreaseToEveryFigure) {
  LoopTracker t(extrapolating(0));
  LoopFrame& l = t.enter(1, 100, true, 0, {0, 0});
  l.done = 3;
  l.remaining = 97;
  // Counters at the last two boundaries: the last iteration added 5 and 6.
  l.prev.stats = {10, 20};
  l.cur.stats = {15, 26};
  l.prev.compute_s = 1.0;
  l.cur.compute_s = 1.5;
  l.prev.comm_s = 0.25;
  l.cur.comm_s = 0.5;
  // The body's two provenance rows (ids 2 and 3): the last iteration
  // attributed 3 and 1 (4 in all) while it took 2 (time runs faster than it
  // is attributed when the next iteration overlaps).
  l.prev.prov.resize(2);
  l.cur.prov.resize(2);
  l.cur.prov[0].attributed_s = 3;
  l.cur.prov[1].attributed_s = 1;
  l.cur.prov[0].flops = 1000;
  l.cur.prov[1].instructions = 4;
  LoopTracker::Body body;
  body.prov = {2, 3};
  body.repeat_prov = 1;
  body.label = "while.7";
  body.where = "p.tasm:1:1";
  std::vector<ProvenanceStats> prov(4);
  prov[2].attributed_s = 9;  // earlier iterations' share stays
  const std::vector<double> gains = t.skip_rest(l, 2.0, 50.0, body, prov);

  ASSERT_EQ(gains.size(), 2u);
  EXPECT_DOUBLE_EQ(gains[0], 97 * 5);
  EXPECT_DOUBLE_EQ(gains[1], 97 * 6);
  // 97 x 2 s skipped, split 3:1 over the rows.
  EXPECT_DOUBLE_EQ(prov[2].attributed_s, 9 + 97 * 2.0 * 3 / 4);
  EXPECT_DOUBLE_EQ(prov[3].attributed_s, 97 * 2.0 * 1 / 4);
  EXPECT_DOUBLE_EQ(prov[2].flops, 97 * 1000.0);
  EXPECT_EQ(prov[3].instructions, 97u * 4);
  EXPECT_DOUBLE_EQ(prov[1].attributed_s, 0);  // the body attributed time: the loop's own row gets none
  EXPECT_DOUBLE_EQ(t.skipped().offset_s, 194);
  EXPECT_DOUBLE_EQ(t.skipped().compute_s, 97 * 0.5);
  EXPECT_DOUBLE_EQ(t.skipped().comm_s, 97 * 0.25);
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.rows()[0].label, "while.7");
  EXPECT_EQ(t.rows()[0].total_iterations, 100);
  EXPECT_EQ(t.rows()[0].simulated_iterations, 3);
  EXPECT_DOUBLE_EQ(t.rows()[0].extrapolated_s, 194);
}

TEST(LoopTracker, ABodyThatAttributedNothingLeavesTheTimeOnTheLoopsRow) {
  LoopTracker t(extrapolating(0));
  LoopFrame& l = t.enter(1, 10, true, 0, {0, 0});
  l.done = 4;
  l.remaining = 6;
  l.prev.prov.resize(1);
  l.cur.prov.resize(1);
  LoopTracker::Body body;
  body.prov = {1};
  body.repeat_prov = 0;
  body.where = "p.tasm:3:1";
  std::vector<ProvenanceStats> prov(2);
  t.skip_rest(l, 0.5, 0, body, prov);
  EXPECT_DOUBLE_EQ(prov[0].attributed_s, 3.0);
  EXPECT_DOUBLE_EQ(prov[1].attributed_s, 0.0);
  EXPECT_EQ(t.rows()[0].label, "repeat");  // no provenance: named by the instruction
}

TEST(LoopTracker, InstancesOfOneLoopShareARowAndShiftLaterTimes) {
  LoopTracker t(extrapolating(0));
  LoopTracker::Body body;
  body.prov = {0};
  body.where = "p.tasm:2:1";
  std::vector<ProvenanceStats> prov(1);
  for (int instance = 0; instance < 2; ++instance) {
    LoopFrame& l = t.enter(1, 8, true, 0, {0, static_cast<std::uint64_t>(instance)});
    l.done = 3;
    l.remaining = 5;
    l.prev.prov.resize(1);
    l.cur.prov.resize(1);
    l.cur.prov[0].attributed_s = 1;
    t.skip_rest(l, 1.0, instance == 0 ? 10.0 : 20.0, body, prov);
    t.leave();
  }
  ASSERT_EQ(t.rows().size(), 1u);
  EXPECT_EQ(t.rows()[0].instances, 2);
  EXPECT_EQ(t.rows()[0].total_iterations, 16);
  EXPECT_EQ(t.rows()[0].simulated_iterations, 6);
  EXPECT_DOUBLE_EQ(t.rows()[0].extrapolated_s, 10);
  // Skips at real times 10 and 20 added 5 s each.
  const SkippedTime& s = t.skipped();
  EXPECT_DOUBLE_EQ(s.reported(9), 9);
  EXPECT_DOUBLE_EQ(s.reported(10), 15);
  EXPECT_DOUBLE_EQ(s.reported(19), 24);
  EXPECT_DOUBLE_EQ(s.reported(25), 35);
  EXPECT_TRUE(t.empty());
}

TEST(LoopTracker, NestedLoopsKeepTheirOwnFrames) {
  LoopTracker t(extrapolating(2));
  t.enter(1, 4, false, 0, {});
  LoopFrame& inner = t.enter(3, 9, true, 2, {1, 0});
  EXPECT_EQ(inner.begin, 3u);
  EXPECT_EQ(inner.total, 9);
  EXPECT_TRUE(inner.sampled);
  t.leave();
  EXPECT_EQ(t.top().begin, 1u);
  EXPECT_FALSE(t.top().sampled);
  EXPECT_EQ(t.top().remaining, 4);
}

}  // namespace
}  // namespace tpusim
