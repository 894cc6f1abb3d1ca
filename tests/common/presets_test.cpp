// Every preset's derived peaks against the published per-chip figures in
// the published chip specs (copied here; sources named per row).
#include <gtest/gtest.h>

#include "common/config_loader.h"
#include "common/params.h"

namespace tpusim {
namespace {

struct Published {
  const char* chip;
  double bf16;   // FLOP/s
  double int8;   // OP/s, 0 = not published
  double fp8;    // FLOP/s, 0 = not published
  double hbm;    // B/s
  double ici;    // B/s per chip, all links both directions
};

// bf16/int8/fp8: Cloud TPU docs [GC-v4|v5e|v5p|v6e|7x]. HBM: Cloud docs.
// ICI: links x bidirectional per-link figure from the scaling book [SB-tpus]
// (v4 6x9e10, v5e 4x9e10, v5p 6x1.8e11, v6e 4x1.8e11, TPU7x 6x1.8e11, v5p's
// figure, in the book's table since 2026-05; Cloud gives 1200 GB/s for both).
constexpr Published kPublished[] = {
    {"v4", 275e12, 275e12, 0, 1200e9, 5.4e11},
    {"v5e", 197e12, 393e12, 0, 819e9, 3.6e11},
    {"v5p", 459e12, 918e12, 459e12, 2765e9, 1.08e12},
    {"v6e", 918e12, 1836e12, 918e12, 1638e9, 7.2e11},
    {"v7", 2307e12, 0, 4614e12, 7380e9, 1.08e12},
};

class PresetPeaks : public ::testing::TestWithParam<Published> {};

TEST_P(PresetPeaks, MatchPublishedWithinOnePercent) {
  const Published& pub = GetParam();
  auto r = load_config(pub.chip);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  const DerivedFigures d = derive(r->chip);
  EXPECT_NEAR(d.peak_flops_bf16, pub.bf16, 0.01 * pub.bf16);
  if (pub.int8 > 0) {
    EXPECT_NEAR(d.peak_flops_int8, pub.int8, 0.01 * pub.int8);
  }
  if (pub.fp8 > 0) {
    EXPECT_NEAR(d.peak_flops_fp8, pub.fp8, 0.01 * pub.fp8);
  }
  EXPECT_NEAR(d.hbm_bytes_per_s, pub.hbm, 0.01 * pub.hbm);
  EXPECT_NEAR(d.ici_bytes_per_s_per_chip, pub.ici, 0.01 * pub.ici);
  EXPECT_EQ(d.chips, 1);
}

INSTANTIATE_TEST_SUITE_P(AllPresets, PresetPeaks, ::testing::ValuesIn(kPublished),
                         [](const auto& info) { return std::string(info.param.chip); });

TEST(Presets, EveryPresetIsCheckedAgainstPublishedFigures) {
  for (const auto& p : builtin_presets()) {
    bool found = false;
    for (const auto& pub : kPublished) found = found || p.name == pub.chip;
    EXPECT_TRUE(found) << "preset " << p.name << " has no published-figure row in this test";
  }
  EXPECT_EQ(builtin_presets().size(), std::size(kPublished));
}

TEST(Presets, V5eCriticalIntensityIsTheScalingBooks240) {
  // [SB-roofline]: 1.97e14 / 8.2e11 ~ 240 FLOP/B; ours 196.6e12 / 819e9 = 240.05.
  auto r = load_config("v5e");
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(derive(r->chip).critical_intensity_flops_per_byte, 240, 240 * 0.01);
}

TEST(Presets, Bf16VectorAluFromTheSixthGenerationOn) {
  // [MOSAIC] canonicalize_mosaic.cc, bf16_ops_min_supported_versions: bf16
  // add/sub/mul/max/min need TPU generation 6 (v6e, Trillium) or later.
  for (const auto& [name, has] : {std::pair{"v4", false}, std::pair{"v5e", false}, std::pair{"v5p", false},
                                  std::pair{"v6e", true}, std::pair{"v7", true}}) {
    auto r = load_config(name);
    ASSERT_TRUE(r.ok()) << format_all(r.errors());
    EXPECT_EQ(r->chip.core.vpu.bf16_alu, has) << name;
  }
}

TEST(Presets, EveryValueIsSetByThePresetNotByADefaultForHardwareKeys) {
  // Hardware figures must come from the preset file (with a source comment),
  // never silently from a default.
  for (const auto& preset : builtin_presets()) {
    auto r = load_config(preset.name);
    ASSERT_TRUE(r.ok()) << format_all(r.errors());
    for (const auto& p : all_params()) {
      if (!p.required()) continue;
      auto it = r->origins.find(p.key);
      ASSERT_NE(it, r->origins.end()) << preset.name << " " << p.key;
      EXPECT_EQ(it->second.kind, OriginKind::kPreset) << preset.name << " " << p.key;
    }
  }
}

TEST(Presets, EveryNumericLineCitesASourceOrSaysAssumption) {
  // Each line that sets a number carries a comment (a [source] tag,
  // "assumption", "derived", …) on the line or in the comment block just above.
  for (const auto& preset : builtin_presets()) {
    std::string_view text = preset.yaml;
    int line_no = 0;
    bool previous_is_comment = false;
    while (!text.empty()) {
      const size_t nl = text.find('\n');
      const std::string_view line = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      ++line_no;
      const size_t first = line.find_first_not_of(' ');
      const bool is_comment = first != std::string_view::npos && line[first] == '#';
      const size_t colon = line.find(':');
      if (!is_comment && colon != std::string_view::npos) {
        std::string_view value = line.substr(colon + 1);
        const size_t hash = value.find('#');
        const size_t v = value.find_first_not_of(' ');
        const bool numeric = v != std::string_view::npos && (std::isdigit(static_cast<unsigned char>(value[v])) != 0);
        EXPECT_TRUE(!numeric || hash != std::string_view::npos || previous_is_comment)
            << preset.path << ":" << line_no << " sets a number without a source comment: " << line;
      }
      previous_is_comment = is_comment;
    }
  }
}

}  // namespace
}  // namespace tpusim
