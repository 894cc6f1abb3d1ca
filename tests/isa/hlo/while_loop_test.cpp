// Trip counts of while loops (isa/hlo/while_loop.h): each expected count is
// the number of values start, start+step, ... satisfying the condition,
// counted by hand in the comment.
#include "isa/hlo/while_loop.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "isa/hlo/parser.h"

namespace tpusim::hlo {
namespace {

// A counted loop: i from `start`, `next` = the body's update of i, the
// condition's ROOT `cmp`, optional backend_config.
std::string loop_module(const std::string& start, const std::string& next, const std::string& cmp,
                        const std::string& backend = "") {
  return fmt::format(R"(HloModule m
body {{
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  d = s32[] constant(3)
  n = s32[] {}
  x = f32[8] get-tuple-element(p), index=1
  y = f32[8] tanh(x)
  ROOT t = (s32[], f32[8]) tuple(n, y)
}}
cond {{
  p = (s32[], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant(10)
  ROOT c = pred[] {}
}}
ENTRY e {{
  z = s32[] constant({})
  a = f32[8] parameter(0)
  t = (s32[], f32[8]) tuple(z, a)
  ROOT w = (s32[], f32[8]) while(t), condition=cond, body=body{}
}})",
                     next, cmp, start, backend);
}

std::optional<TripCount> trip(const std::string& text) {
  auto m = parse_hlo_module(text);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  if (!m.ok()) return std::nullopt;
  return while_trip_count(*(*m)->entry()->root());
}

TEST(WhileTripCount, InductionLessThan) {
  // i = 0, 3, 6, 9 satisfy i < 10: 4 iterations.
  const auto t = trip(loop_module("0", "add(i, d)", "compare(i, k), direction=LT"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->count, 4);
  EXPECT_NE(t->source.find("0 to 10 step 3 (LT)"), std::string::npos) << t->source;
}

TEST(WhileTripCount, InductionLessEqualAndSwappedOperands) {
  // i <= 10 from 1 step 3: 1, 4, 7, 10 -> 4; `k > i` is `i < k`: 1, 4, 7 -> 3;
  // the step's constant may be the add's first operand.
  EXPECT_EQ(trip(loop_module("1", "add(i, d)", "compare(i, k), direction=LE"))->count, 4);
  EXPECT_EQ(trip(loop_module("1", "add(d, i)", "compare(k, i), direction=GT"))->count, 3);
}

TEST(WhileTripCount, InductionCountingDown) {
  // i = 22, 19, 16, 13, 10 satisfy i >= 10: 5; i > 10: 4.
  EXPECT_EQ(trip(loop_module("22", "subtract(i, d)", "compare(i, k), direction=GE"))->count, 5);
  EXPECT_EQ(trip(loop_module("22", "subtract(i, d)", "compare(i, k), direction=GT"))->count, 4);
}

TEST(WhileTripCount, StartFailingTheConditionIsZeroIterations) {
  EXPECT_EQ(trip(loop_module("10", "add(i, d)", "compare(i, k), direction=LT"))->count, 0);
}

TEST(WhileTripCount, KnownTripCountWins) {
  const auto t = trip(loop_module("0", "add(i, d)", "compare(i, k), direction=LT",
                                  R"(, backend_config={"known_trip_count":{"n":"7"}})"));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->count, 7);
  EXPECT_EQ(t->source, "known_trip_count");
}

TEST(WhileTripCount, OtherPatternsHaveNoCount) {
  // NE has no count without a divisibility argument; a step away from the
  // limit never ends; multiply is not an induction by a constant step.
  EXPECT_FALSE(trip(loop_module("0", "add(i, d)", "compare(i, k), direction=NE")).has_value());
  EXPECT_FALSE(trip(loop_module("0", "subtract(i, d)", "compare(i, k), direction=LT")).has_value());
  EXPECT_FALSE(trip(loop_module("0", "multiply(i, d)", "compare(i, k), direction=LT")).has_value());
}

}  // namespace
}  // namespace tpusim::hlo
