// The progress line of long runs (common/progress.h), on a fake clock.
#include "common/progress.h"

#include <gtest/gtest.h>
#include <sstream>

namespace tpusim {
namespace {

TEST(Progress, SilentUntilTheDelayThenThrottledAndCleared) {
  double t = 0;
  std::ostringstream out;
  Progress p;
  EXPECT_FALSE(p.due());  // not enabled: never
  p.enable(&out, 2.0, 0.5, [&] { return t; });
  t = 1.9;
  p.update("lowering", "1 of 10 ops");
  EXPECT_EQ(out.str(), "");  // a run shorter than the delay shows nothing
  t = 2.0;
  EXPECT_TRUE(p.due());
  p.update("lowering", "5 of 10 ops");
  EXPECT_EQ(out.str(), "\rtpusim: lowering: 5 of 10 ops");
  t = 2.2;
  EXPECT_FALSE(p.due());  // at most every 0.5 s
  p.update("lowering", "6 of 10 ops");
  EXPECT_EQ(out.str(), "\rtpusim: lowering: 5 of 10 ops");
  t = 2.7;
  p.update("sim", "1 ms");  // 17 characters over 29: padded with 12 spaces
  const std::string second = "\rtpusim: sim: 1 ms" + std::string(12, ' ');
  EXPECT_EQ(out.str(), "\rtpusim: lowering: 5 of 10 ops" + second);
  p.finish();
  const std::string all = out.str();
  EXPECT_EQ(all.substr(all.size() - 19), "\r" + std::string(17, ' ') + "\r");  // the 17 on screen blanked
}

}  // namespace
}  // namespace tpusim
