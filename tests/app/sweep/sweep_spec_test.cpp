// Sweep specs: errors with locations, expansion counts, constraints, hashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <set>

#include "common/config_loader.h"
#include "app/sweep/expr.h"
#include "app/sweep/point.h"
#include "app/sweep/spec.h"

namespace tpusim::sweep {
namespace {

using ::testing::HasSubstr;

// Specs are parsed as if they lived in configs/sweeps/, so workloads resolve.
const std::string kFile = std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/test.yaml";

Result<SweepSpec> spec(const std::string& body) {
  return load_sweep_spec_text("base: v5e\nworkloads: [../../workloads/asm/matmul.tasm]\n" + body, kFile);
}

std::string errors(const Result<SweepSpec>& r) {
  std::string s;
  if (!r) {
    for (const auto& d : r.errors()) s += d.format() + "\n";
  }
  return s;
}

TEST(SweepSpec, UnknownTopLevelKeyIsLocatedWithSuggestion) {
  auto r = spec("gird:\n  core.mxu.rows: [128]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].line, 3);
  EXPECT_EQ(r.errors()[0].column, 1);
  EXPECT_THAT(r.errors()[0].message, HasSubstr("did you mean 'grid'"));
}

// lower_for: every point runs the program compiled for one chip (`run
// --lower-for`): `base`, a preset, or a chip YAML; a chip that does not
// load is an error at the value.
TEST(SweepSpec, LowerForNamesTheChipEveryPointIsCompiledFor) {
  auto base = spec("lower_for: base\ngrid:\n  hbm.bandwidth: [819 GB/s, 1638 GB/s]\n");
  ASSERT_TRUE(base.ok()) << errors(base);
  EXPECT_EQ(base->lower_for, "v5e");
  auto preset = spec("lower_for: v6e\n");
  ASSERT_TRUE(preset.ok()) << errors(preset);
  EXPECT_EQ(preset->lower_for, "v6e");
  EXPECT_EQ(spec("")->lower_for, "");
  auto bad = spec("lower_for: v9\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].line, 3);
  EXPECT_EQ(bad.errors()[0].column, 12);
  EXPECT_THAT(bad.errors()[0].message, HasSubstr("lower_for 'v9' does not load"));
}

TEST(SweepSpec, UnknownConfigKeyInGridSuggestsTheParam) {
  auto r = spec("grid:\n  core.mxu.rowz: [128, 256]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].line, 4);
  EXPECT_EQ(r.errors()[0].column, 3);
  EXPECT_THAT(r.errors()[0].message, HasSubstr("'core.mxu.rows'"));
}

TEST(SweepSpec, BadValueIsReportedAtTheValue) {
  // 819 without a unit: the loader's message, at line 4 column 33.
  auto r = spec("grid:\n  hbm.bandwidth: [1.6 TB/s, 819]\n");
  ASSERT_FALSE(r.ok()) << "accepted";
  EXPECT_EQ(r.errors()[0].line, 4);
  EXPECT_EQ(r.errors()[0].column, 29);
  EXPECT_THAT(r.errors()[0].format(), HasSubstr("test.yaml:4:29"));
}

TEST(SweepSpec, ZipListsMustBeEquallyLong) {
  auto r = spec("zip:\n  - {core.mxu.rows: [128, 256], core.mxu.cols: [128]}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(errors(r), HasSubstr("equally long"));
  EXPECT_EQ(r.errors()[0].line, 4);
}

TEST(SweepSpec, KeySweptTwiceIsAnError) {
  auto r = spec("grid:\n  core.mxu.rows: [128]\nzip:\n  - {core.mxu.rows: [128]}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(errors(r), HasSubstr("swept twice"));
}

TEST(SweepSpec, MissingWorkloadAndBadModeAreErrors) {
  auto r = load_sweep_spec_text("base: v5e\nworkloads: [nope.tasm]\nmode: simulate\n", kFile);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(errors(r), HasSubstr("'nope.tasm' not found"));
  EXPECT_THAT(errors(r), HasSubstr("'mode' must be run or analyze"));
  auto b = load_sweep_spec_text("base: v5f\nworkloads: [../../workloads/asm/matmul.tasm]\n", kFile);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(errors(b), HasSubstr("did you mean 'v5e'"));
  EXPECT_EQ(b.errors()[0].line, 1);
}

TEST(SweepSpec, ConstraintErrorsPointIntoTheExpression) {
  auto r = spec("constraints:\n  - core.vmem.capacity <= 256 MiBs\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(errors(r), HasSubstr("unknown unit 'MiBs'"));
  EXPECT_EQ(r.errors()[0].line, 4);
  EXPECT_EQ(r.errors()[0].column, 5 + 26);  // the expression at column 5, the unit at offset 26
  auto n = spec("constraints:\n  - core.vmem.capacty <= 256 MiB\n");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(errors(n), HasSubstr("did you mean 'core.vmem.capacity'"));
  auto q = spec("constraints:\n  - 'core.mxu.rows * = 4'\n");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.errors()[0].column, 6 + 16);  // after the quote at column 5
}

TEST(SweepSpec, RandomNeedsSamplesAndNumericRanges) {
  auto r = spec("random: {seed: 1, ranges: {core.mxu.dataflow: [1, 2]}}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(errors(r), HasSubstr("needs 'samples: N'"));
  EXPECT_THAT(errors(r), HasSubstr("cannot be sampled"));
  auto u = spec("random: {samples: 3, ranges: {core.vmem.capacity: [16 MiB, 1 GHz]}}\n");
  ASSERT_FALSE(u.ok());
}

TEST(SweepSpec, GridAndZipExpandToTheirProduct) {
  auto r = spec(
      "grid:\n  hbm.bandwidth: [819 GB/s, 1.6 TB/s, 3.2 TB/s]\n  core.mxu.count: [1, 2]\n"
      "zip:\n  - {core.mxu.rows: [128, 256], core.mxu.cols: [128, 256]}\n");
  ASSERT_TRUE(r.ok()) << errors(r);
  EXPECT_EQ(count_points(*r), 3u * 2u * 2u);
  const auto pts = expand_points(*r);
  ASSERT_EQ(pts.size(), 12u);
  // First axis slowest; zip keys move together.
  EXPECT_EQ(pts[0].params[0].second, "819 GB/s");
  EXPECT_EQ(pts[11].params[0].second, "3.2 TB/s");
  for (const auto& p : pts) {
    ASSERT_EQ(p.params.size(), 4u);
    EXPECT_EQ(p.params[2].second, p.params[3].second);
  }
  std::set<std::vector<std::string>> distinct;
  for (const auto& p : pts) distinct.insert(p.overrides());
  EXPECT_EQ(distinct.size(), 12u);
}

TEST(SweepSpec, ListValuesPassAsFlowYaml) {
  auto r = spec("grid:\n  system.topology: [[1], [2, 2]]\n");
  ASSERT_TRUE(r.ok()) << errors(r);
  const auto pts = expand_points(*r);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].params[0].second, "[2, 2]");
}

TEST(SweepSpec, RandomSamplesAreReproducibleAndInRange) {
  const std::string body =
      "grid:\n  core.mxu.count: [1, 2]\n"
      "random:\n  samples: 20\n  seed: 7\n  ranges:\n    hbm.bandwidth: [500 GB/s, 2 TB/s]\n"
      "    core.dma.chunk: [1 KiB, 64 KiB]\n    core.mxu.rows: [64, 256]\n";
  auto a = spec(body);
  auto b = spec(body);
  ASSERT_TRUE(a.ok()) << errors(a);
  const auto pa = expand_points(*a);
  const auto pb = expand_points(*b);
  ASSERT_EQ(pa.size(), 40u);
  for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].params, pb[i].params);
  for (const auto& p : pa) {
    auto cfg = load_config("v5e", p.overrides());
    ASSERT_TRUE(cfg.ok()) << p.overrides()[1];
    EXPECT_GE(cfg->chip.hbm.bandwidth, 500e9);
    EXPECT_LE(cfg->chip.hbm.bandwidth, 2e12);
    const double chunk = cfg->chip.core.dma.chunk;  // pow2 key: snapped
    EXPECT_TRUE(chunk == 1024 || chunk == 2048 || chunk == 4096 || chunk == 8192 || chunk == 16384 ||
                chunk == 32768 || chunk == 65536)
        << chunk;
    EXPECT_GE(cfg->chip.core.mxu.rows, 64);
    EXPECT_LE(cfg->chip.core.mxu.rows, 256);
  }
}

double eval(const std::string& text, const ChipConfig& c) {
  auto e = parse_expr(text);
  EXPECT_TRUE(e.ok()) << text;
  if (!e) return -1;
  ProxyModel proxy;
  std::string err;
  auto v = eval_expr(*e, config_lookup(c, proxy), err);
  EXPECT_TRUE(v.has_value()) << err;
  return v && std::holds_alternative<double>(*v) ? std::get<double>(*v) : -1;
}

TEST(SweepConstraints, NumbersWithUnitsAndConfigKeys) {
  auto cfg = load_config("v5e");
  ASSERT_TRUE(cfg.ok());
  const ChipConfig& c = cfg->chip;
  EXPECT_EQ(eval("256 MiB", c), 268435456.0);
  EXPECT_EQ(eval("1.6 TB/s", c), 1.6e12);
  EXPECT_EQ(eval("2 GHz / 4", c), 5e8);
  EXPECT_EQ(eval("5 ns * 2", c), 1e-8);
  EXPECT_EQ(eval("1 + 2 * 3 - -1", c), 8.0);
  EXPECT_EQ(eval("(1 + 2) * 3", c), 9.0);
  EXPECT_EQ(eval("core.mxu.rows * core.mxu.cols", c), static_cast<double>(c.core.mxu.rows * c.core.mxu.cols));
  EXPECT_EQ(eval("core.vmem.capacity <= 256 MiB", c), c.core.vmem.capacity <= 268435456.0 ? 1.0 : 0.0);
  EXPECT_EQ(eval("hbm.bandwidth > 1 TB/s or core.mxu.count >= 4", c), 1.0);
  EXPECT_EQ(eval("hbm.bandwidth > 1 TB/s and core.mxu.count >= 4", c), c.hbm.bandwidth > 1e12 ? 1.0 : 0.0);
  EXPECT_EQ(eval("not (1 < 2) || 3 == 3", c), 1.0);
  EXPECT_EQ(eval("core.mxu.dataflow == 'ws'", c), 1.0);
  EXPECT_EQ(eval("derived.hbm_bytes_per_s == hbm.bandwidth", c), 1.0);
  EXPECT_GT(eval("proxy.area", c), 0.0);
}

TEST(SweepConstraints, MalformedExpressionsAreLocated) {
  auto e = parse_expr("core.mxu.rows <= ", "f.yaml", 3, 5);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.errors()[0].line, 3);
  EXPECT_EQ(e.errors()[0].column, 5 + 17);
  EXPECT_FALSE(parse_expr("(1 + 2").ok());
  EXPECT_FALSE(parse_expr("1 = 2").ok());
  EXPECT_FALSE(parse_expr("4 furlongs").ok());
  std::string err;
  auto d = parse_expr("1 / (2 - 2)");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(eval_expr(*d, [](std::string_view) { return std::nullopt; }, err).has_value());
  EXPECT_THAT(err, HasSubstr("division by zero"));
}

TEST(SweepConstraints, InfeasiblePointsAreNamed) {
  auto r = spec("grid:\n  core.mxu.count: [1, 8]\nconstraints:\n  - core.mxu.count * core.mxu.rows <= 512\n");
  ASSERT_TRUE(r.ok()) << errors(r);
  const auto pts = expand_points(*r);
  auto one = load_config(r->base, pts[0].overrides());
  auto eight = load_config(r->base, pts[1].overrides());
  ASSERT_TRUE(one.ok() && eight.ok());
  EXPECT_EQ(check_constraints(*r, one->chip), "");
  EXPECT_THAT(check_constraints(*r, eight->chip), HasSubstr("violates constraint"));
}

TEST(SweepHash, StableAndDistinct) {
  auto a = load_config("v5e", std::vector<std::string>{"hbm.bandwidth=1.6 TB/s"});
  auto b = load_config("v5e", std::vector<std::string>{"hbm.bandwidth=1600 GB/s"});  // same value, other text
  auto c = load_config("v5e", std::vector<std::string>{"hbm.bandwidth=1.6000001 TB/s"});
  auto base = load_config("v5e");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && base.ok());
  EXPECT_EQ(config_hash(a->chip), config_hash(b->chip));
  EXPECT_NE(config_hash(a->chip), config_hash(c->chip));
  EXPECT_NE(config_hash(a->chip), config_hash(base->chip));
  EXPECT_EQ(config_hash(base->chip), config_hash(load_config("v5e")->chip));
  EXPECT_EQ(config_hash(base->chip).size(), 16u);
  EXPECT_NE(config_hash(base->chip), config_hash(load_config("v5p")->chip));
}

TEST(SweepSpec, ShippedExamplesLoad) {
  for (const char* f : {"tiny.yaml", "mxu_vs_hbm.yaml", "vmem_vs_time.yaml", "chip_scaling.yaml"}) {
    auto r = load_sweep_spec(std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/" + f);
    EXPECT_TRUE(r.ok()) << f << ": " << errors(r);
  }
}


TEST(SweepSpec, HloWorkloadsSimulateUnlessAnalyzeIsAsked) {
  const std::string body = "base: v5e\nworkloads: [../../workloads/hlo/layernorm_softmax.hlo]\n";
  auto run = load_sweep_spec_text(body + "grid:\n  core.mxu.count: [1]\n", kFile);
  ASSERT_TRUE(run.ok()) << errors(run);
  EXPECT_EQ(run->workloads[0].mode, Mode::kRun);
  auto analyze = load_sweep_spec_text(body + "mode: analyze\ngrid:\n  core.mxu.count: [1]\n", kFile);
  ASSERT_TRUE(analyze.ok()) << errors(analyze);
  EXPECT_EQ(analyze->workloads[0].mode, Mode::kAnalyze);
}

TEST(SweepSpec, PerSizeWorkloadIsNotLookedForAtLoad) {
  auto r = load_sweep_spec_text("base: v5e\nworkloads: ['../../workloads/hlo/sharded/missing.{chips}.hlo']\n"
                                "grid:\n  system.topology: [[8]]\n",
                                kFile);
  EXPECT_TRUE(r.ok()) << errors(r);
}

}  // namespace
}  // namespace tpusim::sweep
