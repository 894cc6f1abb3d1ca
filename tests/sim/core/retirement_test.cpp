// In-order retirement and time attribution alone (sim/core/retirement.h).
// Each case's rows are derived by hand from the rules: the head's time goes
// to its op; a collective is charged only where the core waits for it.
#include <gtest/gtest.h>

#include "sim/core/retirement.h"

namespace tpusim {
namespace {

double total(const std::vector<ProvenanceStats>& rows) {
  double s = 0;
  for (const auto& r : rows) s += r.attributed_s;
  return s;
}

TEST(Retirement, SequentialOpsGetTheirOwnTimeAndOverlapGoesToTheFirst) {
  std::vector<ProvenanceStats> rows(3);
  Retirement r;
  r.retire(0, 10, false, 0, rows);  // op 0: 0..10
  r.retire(5, 12, false, 1, rows);  // op 1 overlaps: only 10..12 is new
  r.retire(12, 20, false, 2, rows);
  EXPECT_DOUBLE_EQ(rows[0].attributed_s, 10);
  EXPECT_DOUBLE_EQ(rows[1].attributed_s, 2);
  EXPECT_DOUBLE_EQ(rows[2].attributed_s, 8);
  EXPECT_DOUBLE_EQ(r.retired_until(), 20);
}

TEST(Retirement, ACollectiveIsChargedOnlyWhereTheCoreWaitsForIt) {
  std::vector<ProvenanceStats> rows(3);
  Retirement r;
  r.retire(0, 10, false, 0, rows);
  r.retire(10, 50, true, 1, rows);  // collective in flight 10..50
  r.retire(10, 30, false, 0, rows); // compute overlapping it: its own time 10..30
  r.retire(50, 60, false, 2, rows); // starts after the -done: 30..50 was a wait
  EXPECT_DOUBLE_EQ(rows[0].attributed_s, 30);
  EXPECT_DOUBLE_EQ(rows[1].attributed_s, 20);
  EXPECT_DOUBLE_EQ(rows[2].attributed_s, 10);
  EXPECT_DOUBLE_EQ(total(rows), 60);
}

TEST(Retirement, TheGapGoesToTheFirstCollectiveToCompleteAfterIt) {
  std::vector<ProvenanceStats> rows(4);
  Retirement q;
  q.retire(0, 40, true, 1, rows);   // A done at 40
  q.retire(0, 70, true, 2, rows);   // B done at 70
  q.retire(0, 10, false, 0, rows);  // compute 0..10
  q.retire(40, 45, false, 3, rows); // resumes at 40: the core waited for A (10..40), not B
  EXPECT_DOUBLE_EQ(rows[1].attributed_s, 30);
  EXPECT_DOUBLE_EQ(rows[2].attributed_s, 0);
  // The program ends when B does: the tail 45..70 is B's.
  q.finish(70, rows);
  EXPECT_DOUBLE_EQ(rows[2].attributed_s, 25);
  EXPECT_DOUBLE_EQ(total(rows), 70);
}

TEST(Retirement, ACollectiveChainWithNothingBetweenGivesEachItsOwnTime) {
  // Four collectives issued back to back (the ops between them reused, not
  // simulated) and run one after another on the links: each is charged from
  // the previous one's completion to its own, not the whole chain to the last.
  std::vector<ProvenanceStats> rows(5);
  Retirement r;
  r.retire(0, 10, false, 0, rows);
  for (std::uint32_t k = 1; k <= 4; ++k) r.retire(10, 10 + 76.0 * k, true, k, rows);
  r.finish(10 + 76.0 * 4, rows);
  for (std::uint32_t k = 1; k <= 4; ++k) EXPECT_DOUBLE_EQ(rows[k].attributed_s, 76) << k;
  EXPECT_DOUBLE_EQ(total(rows), 10 + 76.0 * 4);
}

}  // namespace
}  // namespace tpusim
