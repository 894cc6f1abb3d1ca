// `--system auto`: a slice shape for a module's device count on the chip's
// torus (common/config.h system_shape_for, torus_axes).
#include <gtest/gtest.h>

#include "common/config_loader.h"

namespace tpusim {
namespace {

using Dims = std::vector<std::int64_t>;

TEST(SystemShape, PrimeFactorsGoToTheSmallestAxis) {
  EXPECT_EQ(system_shape_for(8, 2), Dims({2, 4}));       // the 8-chip v6e slice of the LLaMA 1x8 dumps
  EXPECT_EQ(system_shape_for(128, 3), Dims({4, 4, 8}));  // the 128-chip v5p slice of the 16x8 dumps
  EXPECT_EQ(system_shape_for(8, 3), Dims({2, 2, 2}));
  EXPECT_EQ(system_shape_for(256, 2), Dims({16, 16}));
  EXPECT_EQ(system_shape_for(12, 2), Dims({3, 4}));
  EXPECT_EQ(system_shape_for(7, 3), Dims({1, 1, 7}));
  EXPECT_EQ(system_shape_for(1, 2), Dims({1, 1}));
  EXPECT_EQ(system_shape_for(64, 1), Dims({64}));
  for (const std::int64_t n : {1, 2, 6, 24, 96, 100, 4096}) {
    for (int axes = 1; axes <= 3; ++axes) {
      std::int64_t product = 1;
      for (const auto d : system_shape_for(n, axes)) product *= d;
      EXPECT_EQ(product, n) << n << " on " << axes;
    }
  }
}

TEST(SystemShape, TorusAxesArePairsOfIciLinks) {
  // v4/v5p: 6 links, a 3-D torus; v5e/v6e: 4 links, 2-D (the presets' ici.links).
  for (const auto& [chip, axes] : {std::pair{"v4", 3}, {"v5p", 3}, {"v5e", 2}, {"v6e", 2}}) {
    auto r = load_config(chip, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(torus_axes(r->chip), axes) << chip;
  }
}

}  // namespace
}  // namespace tpusim
