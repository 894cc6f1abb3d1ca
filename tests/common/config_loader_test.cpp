#include "common/config_loader.h"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/params.h"

namespace tpusim {
namespace {

using ::testing::HasSubstr;

// The first diagnostic of a load that must fail.
Diagnostic first_error(const Result<LoadedConfig>& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok() || r.errors().empty()) return {};
  return r.errors().front();
}

TEST(ConfigLoader, ExtendsAPresetAndOverridesWithLocations) {
  const auto r = load_config_text(
      "extends: v5e\n"
      "name: v5e-big\n"
      "core:\n"
      "  mxu:\n"
      "    rows: 256\n"
      "    cols: 256\n"
      "hbm:\n"
      "  bandwidth: 1.6 TB/s\n",
      "my_chip.yaml");
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  EXPECT_EQ(r->chip.name, "v5e-big");
  EXPECT_EQ(r->chip.core.mxu.rows, 256);
  EXPECT_DOUBLE_EQ(r->chip.hbm.bandwidth, 1.6e12);
  EXPECT_EQ(r->chip.core.mxu.count, 4);  // inherited
  // Peak doubles with 4x the MAC cells... per MXU: 1 x 4 x 256 x 256 x 2 x 1.5e9 = 786.4 TFLOP/s.
  EXPECT_DOUBLE_EQ(derive(r->chip).peak_flops_bf16, 4.0 * 256 * 256 * 2 * 1.5e9);
  const Origin& rows = r->origins.at("core.mxu.rows");
  EXPECT_EQ(rows.kind, OriginKind::kFile);
  EXPECT_EQ(rows.file, "my_chip.yaml");
  EXPECT_EQ(rows.line, 5);
  EXPECT_EQ(rows.column, 11);
  EXPECT_EQ(r->origins.at("core.mxu.count").kind, OriginKind::kPreset);
  EXPECT_EQ(r->origins.at("ici.packet_size").kind, OriginKind::kDefault);
  EXPECT_EQ(r->layers.size(), 2u);
}

TEST(ConfigLoader, UnknownKeyNamesLineColumnAndSuggests) {
  const auto d = first_error(load_config_text("extends: v5e\ncore:\n  mxu:\n    rowz: 64\n", "c.yaml"));
  EXPECT_EQ(d.file, "c.yaml");
  EXPECT_EQ(d.line, 4);
  EXPECT_EQ(d.column, 5);
  EXPECT_THAT(d.message, HasSubstr("unknown key 'core.mxu.rowz'"));
  EXPECT_THAT(d.message, HasSubstr("did you mean 'core.mxu.rows'"));
  EXPECT_THAT(d.format(), HasSubstr("c.yaml:4:5: error:"));
  EXPECT_THAT(d.format(), HasSubstr("    rowz: 64\n      ^"));
}

TEST(ConfigLoader, WrongUnitIsAnErrorAtTheValue) {
  const auto d = first_error(load_config_text("extends: v5e\nhbm:\n  bandwidth: 819 GB\n", "c.yaml"));
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.column, 14);
  EXPECT_THAT(d.message, HasSubstr("is a size, but a bandwidth is expected"));
}

TEST(ConfigLoader, BareNumberWhereUnitRequired) {
  const auto d = first_error(load_config_text("extends: v5e\nclock: 1500000000\n", "c.yaml"));
  EXPECT_EQ(d.line, 2);
  EXPECT_THAT(d.message, HasSubstr("no unit"));
}

TEST(ConfigLoader, ZeroNegativeAndNonPowerOfTwo) {
  EXPECT_THAT(first_error(load_config_text("extends: v5e\ncore:\n  mxu:\n    count: 0\n", "c.yaml")).message,
              HasSubstr("must be positive"));
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nhbm:\n  capacity: -16 GiB\n", "c.yaml")).message,
              HasSubstr("must be positive"));
  const auto d = first_error(load_config_text("extends: v5e\ncore:\n  vpu:\n    lanes: 100\n", "c.yaml"));
  EXPECT_THAT(d.message, HasSubstr("power of two"));
  EXPECT_EQ(d.line, 4);
  EXPECT_THAT(first_error(load_config_text("extends: v5e\ncore:\n  mxu:\n    rows: 12.5\n", "c.yaml")).message,
              HasSubstr("integer"));
}

TEST(ConfigLoader, EnumAndBoolAreChecked) {
  EXPECT_THAT(first_error(load_config_text("extends: v5e\ncore:\n  mxu:\n    dataflow: rs\n", "c.yaml")).message,
              HasSubstr("must be one of ws|os|is"));
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nmegacore: maybe\n", "c.yaml")).message,
              HasSubstr("true or false"));
}

TEST(ConfigLoader, InconsistentSystemIsAnError) {
  const auto d = first_error(load_config_text(
      "extends: v5e\nsystem:\n  topology: [4, 4]\n  wraparound: [false, false]\n  chips: 32\n", "sys.yaml"));
  EXPECT_THAT(d.message, HasSubstr("system.chips = 32 but the topology gives 16 chips"));
  EXPECT_EQ(d.line, 5);
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nsystem:\n  topology: [4, 4]\n  wraparound: [true]\n",
                                           "sys.yaml"))
                  .message,
              HasSubstr("1 entries but system.topology has 2 axes"));
  // v5e has 4 links: a 3D torus needs 6.
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nsystem:\n  topology: [4, 4, 4]\n", "sys.yaml")).message,
              HasSubstr("needs 2 ICI links per axis (6)"));
  const auto ok = load_config_text(
      "extends: v5p\nsystem:\n  topology: [4, 4, 4]\n  wraparound: [true, true, true]\n  chips: 64\n", "sys.yaml");
  ASSERT_TRUE(ok.ok()) << format_all(ok.errors());
  EXPECT_EQ(derive(ok->chip).chips, 64);
}

TEST(ConfigLoader, RequiredKeysMustBeSet) {
  const auto r = load_config_text("name: bare\nclock: 1 GHz\n", "bare.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors().front().message, HasSubstr("required key 'tensorcores'"));
}

TEST(ConfigLoader, DuplicateKeysAndMalformedYaml) {
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nclock: 1 GHz\nclock: 2 GHz\n", "d.yaml")).message,
              HasSubstr("duplicate key 'clock'"));
  const auto d = first_error(load_config_text("extends: v5e\ncore: [1, 2\n", "bad.yaml"));
  EXPECT_THAT(d.message, HasSubstr("invalid YAML"));
  EXPECT_EQ(d.file, "bad.yaml");
  EXPECT_GT(d.line, 0);
  EXPECT_THAT(first_error(load_config_text("- 1\n- 2\n", "list.yaml")).message, HasSubstr("mapping"));
  EXPECT_THAT(first_error(load_config_text("extends: v5e\ncore:\n  mxu: 4\n", "m.yaml")).message,
              HasSubstr("unknown key 'core.mxu'"));
  EXPECT_THAT(first_error(load_config_text("extends: v5e\nclock: [1 GHz]\n", "l.yaml")).message,
              HasSubstr("single frequency value, not a list"));
}

TEST(ConfigLoader, UnknownPresetAndExtendsCycle) {
  EXPECT_THAT(first_error(load_config_text("extends: v9\n", "x.yaml")).message, HasSubstr("unknown preset 'v9'"));
  const auto dir = std::filesystem::temp_directory_path() / "tpusim_cycle_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.yaml") << "extends: b.yaml\n";
  std::ofstream(dir / "b.yaml") << "extends: a.yaml\n";
  const auto r = load_config((dir / "a.yaml").string());
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors().front().message, HasSubstr("cycle"));
  std::filesystem::remove_all(dir);
}

TEST(ConfigLoader, ExtendsAFileRelativeToTheIncludingFile) {
  const auto dir = std::filesystem::temp_directory_path() / "tpusim_extends_test";
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "base.yaml") << "extends: v6e\nhbm:\n  bandwidth: 2 TB/s\n";
  std::ofstream(dir / "sub" / "top.yaml") << "extends: ../base.yaml\ncore:\n  mxu:\n    count: 4\n";
  const auto r = load_config((dir / "sub" / "top.yaml").string());
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  EXPECT_DOUBLE_EQ(r->chip.hbm.bandwidth, 2e12);
  EXPECT_EQ(r->chip.core.mxu.count, 4);
  EXPECT_EQ(r->chip.core.mxu.rows, 256);  // from v6e
  EXPECT_EQ(r->layers.size(), 3u);
  std::filesystem::remove_all(dir);
}

TEST(ConfigLoader, SetOverridesAreTypedAndValidated) {
  const std::vector<std::string> ok{"core.mxu.count=8", "hbm.bandwidth=1.6 TB/s", "system.topology=[4,4]",
                                    "system.wraparound=[false,true]", "core.mxu.dataflow=os"};
  const auto r = load_config("v5e", ok);
  ASSERT_TRUE(r.ok()) << format_all(r.errors());
  EXPECT_EQ(r->chip.core.mxu.count, 8);
  EXPECT_DOUBLE_EQ(r->chip.hbm.bandwidth, 1.6e12);
  EXPECT_EQ(r->chip.system.topology, (std::vector<std::int64_t>{4, 4}));
  EXPECT_EQ(r->chip.system.wraparound, (std::vector<bool>{false, true}));
  EXPECT_EQ(r->origins.at("core.mxu.count").kind, OriginKind::kFlag);
  EXPECT_EQ(r->origins.at("core.mxu.count").describe(), "--set 'core.mxu.count=8'");
  // 8 MXUs: 1 x 8 x 128 x 128 x 2 x 1.5e9 = 393.2 TFLOP/s.
  EXPECT_DOUBLE_EQ(derive(r->chip).peak_flops_bf16, 8.0 * 128 * 128 * 2 * 1.5e9);

  for (const auto& [arg, expect] : std::vector<std::pair<std::string, std::string>>{
           {"core.mxu.cont=8", "did you mean 'core.mxu.count'"},
           {"core.mxu.count", "expected key=value"},
           {"core.mxu.count=eight", "expected a integer"},
           {"hbm.bandwidth=819", "no unit"},
           {"clock=", "missing value"},
           {"system.topology=4", "takes a list"}}) {
    const std::vector<std::string> bad{arg};
    const auto rb = load_config("v5e", bad);
    ASSERT_FALSE(rb.ok()) << arg;
    EXPECT_THAT(rb.errors().front().format(), HasSubstr(expect)) << arg;
    EXPECT_THAT(rb.errors().front().format(), HasSubstr("--set '" + arg + "'")) << arg;
  }
}

TEST(ConfigLoader, UnknownChipSuggestsAPreset) {
  const auto r = load_config("v5f");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.errors().front().message, HasSubstr("did you mean 'v5e'"));
  EXPECT_FALSE(load_config("/nonexistent/chip.yaml").ok());
}

TEST(Params, EveryEnumChoiceParsesIntoItsEnumAndPrintsBack) {
  // The loader parses enum keys once; each choice params.def lists must name
  // a value of the field's enum (a slipped name in either table fails here).
  for (const auto& p : all_params()) {
    if (p.kind != ParamKind::kEnum) continue;
    std::string choices(p.choices);
    std::size_t start = 0;
    while (start <= choices.size()) {
      const std::size_t bar = choices.find('|', start);
      const std::string choice = choices.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
      auto cfg = load_config("v5e", std::vector<std::string>{std::string(p.key) + "=" + choice});
      ASSERT_TRUE(cfg.ok()) << p.key << "=" << choice << ": " << format_all(cfg.errors());
      EXPECT_EQ(param_value_text(p, cfg->chip), choice) << p.key;
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    auto bad = load_config("v5e", std::vector<std::string>{std::string(p.key) + "=no-such-choice"});
    EXPECT_FALSE(bad.ok()) << p.key;
  }
  ChipConfig c;
  EXPECT_FALSE(parse_enum("direct-ish", c.system.collective_algorithm));
  EXPECT_EQ(enum_name(Dataflow::kOs), "os");
}

TEST(Params, TableKindsMatchFieldTypes) {
  // Guards the X-macro table against a slipped entry: each kind's C++ type.
  ChipConfig c;
  for (const auto& p : all_params()) {
    const ParamRef ref = p.field(c);
    switch (p.kind) {
      case ParamKind::kString: EXPECT_TRUE(std::holds_alternative<std::string*>(ref)) << p.key; break;
      case ParamKind::kEnum:
        // An enum, or a name checked against the choices (hbm.model names a registered model).
        EXPECT_TRUE(std::holds_alternative<EnumRef>(ref) ||
                    (std::holds_alternative<std::string*>(ref) && p.key == "hbm.model"))
            << p.key;
        break;
      case ParamKind::kBool: EXPECT_TRUE(std::holds_alternative<bool*>(ref)) << p.key; break;
      case ParamKind::kCount: EXPECT_TRUE(std::holds_alternative<std::int64_t*>(ref)) << p.key; break;
      case ParamKind::kOptCount:
        EXPECT_TRUE(std::holds_alternative<std::optional<std::int64_t>*>(ref)) << p.key;
        break;
      case ParamKind::kRatio:
      case ParamKind::kSize:
      case ParamKind::kBandwidth:
      case ParamKind::kFrequency:
      case ParamKind::kTime: EXPECT_TRUE(std::holds_alternative<double*>(ref)) << p.key; break;
      case ParamKind::kCountList:
        EXPECT_TRUE(std::holds_alternative<std::vector<std::int64_t>*>(ref)) << p.key;
        break;
      case ParamKind::kBoolList: EXPECT_TRUE(std::holds_alternative<std::vector<bool>*>(ref)) << p.key; break;
    }
    EXPECT_FALSE(p.doc.empty()) << p.key;
    EXPECT_EQ(find_param(p.key), &p) << "duplicate key " << p.key;
    if (p.kind == ParamKind::kEnum) {
      EXPECT_FALSE(p.choices.empty()) << p.key;
    }
  }
}

TEST(Params, EveryDefaultParsesAndLiesInRange) {
  // A config made only of required keys from v5e plus defaults must load.
  ASSERT_TRUE(load_config("v5e").ok());
  for (const auto& p : all_params()) {
    if (p.required()) continue;
    const std::vector<std::string> set{std::string(p.key) + "=" + std::string(p.default_yaml)};
    const auto r = load_config("v5e", set);
    EXPECT_TRUE(r.ok()) << p.key << ": " << (r.ok() ? "" : format_all(r.errors()));
  }
}

TEST(FittedKeys, KeysWhoseCommentStartsWithFittedByTheirDottedPath) {
  const std::string_view yaml =
      "name: x\n"
      "core:\n"
      "  sequencer:\n"
      "    # fitted on something (a comment line, not a key)\n"
      "    kernel_overhead: 1.25 us      # fitted (above)\n"
      "    dispatch_latency: 1           # assumption\n"
      "hbm:\n"
      "  efficiency: 0.87\n"
      "dcn:\n"
      "  latency: 440 us   # fitted on the cal rows: the step's growth\n"
      "                    # fitted continues the comment, not a key\n"
      "  bandwidth_per_chip: 100 Gbps # [source] fitted later is not at the start\n";
  const std::vector<FittedKey> got = fitted_keys(yaml);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].key, "core.sequencer.kernel_overhead");
  EXPECT_EQ(got[0].value, "1.25 us");
  EXPECT_EQ(got[1].key, "dcn.latency");
  EXPECT_EQ(got[1].value, "440 us");
}

TEST(FittedKeys, EveryFittedPresetValueIsTheLoadedValue) {
  // What docs/config.md lists is what the preset loads: each fitted key's text, set on the preset
  // again, leaves the configuration as loaded.
  std::size_t total = 0;
  for (const PresetText& preset : builtin_presets()) {
    const auto base = load_config(preset.name);
    ASSERT_TRUE(base.ok()) << preset.name;
    for (const FittedKey& f : fitted_keys(preset.yaml)) {
      ++total;
      EXPECT_EQ(base->origins.at(f.key).kind, OriginKind::kPreset) << preset.name << " " << f.key;
      const std::vector<std::string> set{f.key + "=" + f.value};
      const auto again = load_config(preset.name, set);
      ASSERT_TRUE(again.ok()) << preset.name << " " << f.key;
      const ParamDecl* decl = find_param(f.key);
      ASSERT_NE(decl, nullptr) << f.key;
      EXPECT_EQ(param_value_text(*decl, again->chip), param_value_text(*decl, base->chip)) << preset.name << " " << f.key;
    }
  }
  EXPECT_GE(total, 6u);  // v5e and v6e dcn.latency, v7's four
}

}  // namespace
}  // namespace tpusim
