// The limiter rule (sim/timing/limiter.h) on hand-built busy times: use is
// busy time over (op time x units of the resource), HBM is bytes over the
// sustained bandwidth, and below 50% use of everything the op waited.
#include "sim/timing/limiter.h"

#include <gtest/gtest.h>

namespace tpusim {
namespace {

ChipConfig test_chip() {
  ChipConfig c;
  c.core.mxu.count = 4;
  c.core.xlu.count = 2;
  c.hbm.bandwidth = 1e12;
  c.hbm.efficiency = 0.8;  // 8e11 B/s sustained
  return c;
}

std::size_t at(Resource r) { return static_cast<std::size_t>(r); }

TEST(Limiter, MxuUseCountsEveryMxu) {
  std::array<double, kResources> busy{};
  busy[at(Resource::kMxuCompute)] = 3.2e-6;  // 4 MXUs x 1 us x 80%
  busy[at(Resource::kVpuAlu)] = 0.6e-6;      // one VPU x 1 us x 60%
  const LimiterUse u = find_limiter(busy, 0, 1e-6, test_chip(), 1);
  EXPECT_DOUBLE_EQ(u.use[at(Resource::kMxuCompute)], 0.8);
  EXPECT_DOUBLE_EQ(u.use[at(Resource::kVpuAlu)], 0.6);
  ASSERT_TRUE(u.limiter().has_value());
  EXPECT_EQ(*u.limiter(), Resource::kMxuCompute);
  EXPECT_EQ(u.limiter_name(), "MXU");
}

TEST(Limiter, HbmUseIsBytesOverTheSustainedBandwidth) {
  std::array<double, kResources> busy{};
  busy[at(Resource::kMxuCompute)] = 2e-6;  // 50%
  // 720 KB in 1 us at 8e11 B/s: 90%.
  const LimiterUse u = find_limiter(busy, 7.2e5, 1e-6, test_chip(), 1);
  EXPECT_DOUBLE_EQ(u.use[at(Resource::kHbm)], 0.9);
  EXPECT_EQ(u.limiter_name(), "HBM");
}

TEST(Limiter, BelowHalfUseTheOpWaitedAndCoresShareTheWork) {
  std::array<double, kResources> busy{};
  busy[at(Resource::kXlu)] = 1.6e-6;  // 2 XLUs x 2 cores x 1 us x 40%
  const LimiterUse two = find_limiter(busy, 0, 1e-6, test_chip(), 2);
  EXPECT_DOUBLE_EQ(two.use[at(Resource::kXlu)], 0.4);
  EXPECT_FALSE(two.limiter().has_value());
  EXPECT_EQ(two.limiter_name(), "waiting");
  EXPECT_EQ(two.busiest, Resource::kXlu);  // still named as the busiest
  // On one core the same busy time is 80% of its two XLUs.
  EXPECT_EQ(find_limiter(busy, 0, 1e-6, test_chip(), 1).limiter_name(), "XLU");
  // No time: nothing limited it.
  EXPECT_EQ(find_limiter(busy, 0, 0, test_chip(), 1).limiter_name(), "waiting");
}

}  // namespace
}  // namespace tpusim
