// Wraparound follows each generation's rule (system.wrap_rule, data in the
// presets and the Cloud TPU docs): v4/v5p wrap full-cube multiples,
// v5e/v6e wrap axes of 16; system.wraparound overrides the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config_loader.h"

namespace tpusim {
namespace {

using ::testing::HasSubstr;

std::vector<bool> wrap_of(const std::string& chip, const std::vector<std::string>& sets) {
  auto r = load_config(chip, sets);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_all(r.errors()));
  return r.ok() ? r->chip.system.wraparound : std::vector<bool>{};
}

TEST(WrapRule, V4AndV5pWrapFullCubeMultiplesOnly) {
  using V = std::vector<bool>;
  for (const char* chip : {"v4", "v5p"}) {
    EXPECT_EQ(wrap_of(chip, {"system.topology=[4,4,4]"}), V({true, true, true})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[4,4,8]"}), V({true, true, true})) << chip;
    // Sub-cube slices: no wraparound.
    EXPECT_EQ(wrap_of(chip, {"system.topology=[2,2,4]"}), V({false, false, false})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[2,4,4]"}), V({false, false, false})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[4,4,6]"}), V({false, false, false})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[8]"}), V({false})) << chip;
  }
}

TEST(WrapRule, V5eAndV6eWrapAxesOfSixteen) {
  using V = std::vector<bool>;
  for (const char* chip : {"v5e", "v6e"}) {
    EXPECT_EQ(wrap_of(chip, {"system.topology=[16,16]"}), V({true, true})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[8,16]"}), V({false, true})) << chip;
    EXPECT_EQ(wrap_of(chip, {"system.topology=[4,4]"}), V({false, false})) << chip;
  }
}

TEST(WrapRule, StatedWraparoundOverridesTheRule) {
  using V = std::vector<bool>;
  EXPECT_EQ(wrap_of("v4", {"system.topology=[4,4,4]", "system.wraparound=[]"}), V{});
  EXPECT_EQ(wrap_of("v5e", {"system.topology=[4,4]", "system.wraparound=[true,false]"}), V({true, false}));
  auto r = load_config("v5e", std::vector<std::string>{"system.topology=[8,16]"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->chip.system.wraparound_by_rule);
  EXPECT_EQ(r->origins.at("system.wraparound").describe(), "by system.wrap_rule");
  const auto notes = wraparound_notes(r->chip.system);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_THAT(notes[0], HasSubstr("axis 0 (8 chips): no wraparound (axis-length rule: an axis of 16 wraps"));
  EXPECT_THAT(notes[1], HasSubstr("axis 1 (16 chips): wraps"));
  auto stated = load_config("v5e", std::vector<std::string>{"system.topology=[16]", "system.wraparound=[false]"});
  ASSERT_TRUE(stated.ok());
  EXPECT_THAT(wraparound_notes(stated->chip.system)[0], HasSubstr("no wraparound (system.wraparound set)"));
}

TEST(WrapRule, ABadRuleNamesItsChoices) {
  auto r = load_config("v5e", std::vector<std::string>{"system.wrap_rule=cube"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(format_all(r.errors()), HasSubstr("'system.wrap_rule' must be one of none|full-cube|axis-length"));
}

TEST(DeviceFigures, SeparateTensorCoresAreOneDeviceEach) {
  auto v7 = load_config("v7");
  ASSERT_TRUE(v7.ok());
  ASSERT_EQ(v7->chip.tensorcores, 2);
  ASSERT_FALSE(v7->chip.megacore);
  EXPECT_EQ(tensorcores_per_device(v7->chip), 1);
  // One TensorCore: half the chip's MXUs and VPUs, and its chiplet's half
  // of the HBM (Pallas' tpu_info: 3.70e12 B/s per TensorCore of TPU7x).
  EXPECT_DOUBLE_EQ(derive_device(v7->chip).peak_flops_bf16, derive(v7->chip).peak_flops_bf16 / 2);
  EXPECT_DOUBLE_EQ(derive_device(v7->chip).vpu_flops_per_s, derive(v7->chip).vpu_flops_per_s / 2);
  EXPECT_DOUBLE_EQ(derive_device(v7->chip).hbm_bytes_per_s, 7380e9 / 2);
  EXPECT_DOUBLE_EQ(device_view(v7->chip).hbm.capacity, v7->chip.hbm.capacity / 2);
  EXPECT_EQ(device_view(v7->chip).hbm.channels, v7->chip.hbm.channels / 2);
  // A megacore chip is one device of both TensorCores.
  auto v5p = load_config("v5p");
  ASSERT_TRUE(v5p.ok());
  EXPECT_EQ(tensorcores_per_device(v5p->chip), 2);
  EXPECT_DOUBLE_EQ(derive_device(v5p->chip).peak_flops_bf16, derive(v5p->chip).peak_flops_bf16);
  EXPECT_DOUBLE_EQ(device_view(v5p->chip).hbm.bandwidth, v5p->chip.hbm.bandwidth);
}

}  // namespace
}  // namespace tpusim
