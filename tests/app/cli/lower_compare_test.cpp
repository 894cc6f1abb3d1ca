// `tpusim lower`, `tpusim run model.hlo` (the per-op roofline roll-up) and
// `tpusim compare`, as a user runs them. Tests that simulate run the binary
// (one simulation per process), or simulate once in this test's own process.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <sys/wait.h>

#include "isa/assembler.h"
#include "tests/isa/lower/while_module.h"
#include "isa/hlo/parser.h"
#include "isa/lower/lower.h"
#include "isa/verifier.h"
#include "app/cli/cli.h"
#include "tests/app/cli/cli_harness.h"
#include "app/cli/config_command.h"

namespace tpusim::cli {
namespace {

using ::testing::HasSubstr;
const std::string kSrc = TPUSIM_SOURCE_DIR;

using testing::Outcome;
using testing::tpusim;

using testing::binary;

using testing::write_temp;

// A 10-iteration while loop around tanh of 256x256 f32 (as in the lowering
// tests), plus an add outside the loop.
const std::string kWhileModule = tpusim::testing::while_module(
    tpusim::testing::kKnownTripCount10, /*root_is_while=*/false,
    "  r = f32[256,256] get-tuple-element(w), index=1\n  ROOT s = f32[256,256] add(r, a)\n");

TEST(CliLower, WritesAProgramThatAssemblesAndVerifies) {
  const std::string out = ::testing::TempDir() + "decode_step.tasm";
  const std::string hlo = kSrc + "/workloads/hlo/decode_step.hlo";
  const auto r = tpusim({"lower", hlo, "--chip", "v5e", "-o", out});
  ASSERT_EQ(r.code, kOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("verify: ok"));
  std::ifstream f(out);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  EXPECT_THAT(text, HasSubstr("# tpusim lower "));
  EXPECT_THAT(text, HasSubstr(".provenance \"dot.13\""));
  // The file is the compiler's program: it assembles to as many instructions
  // as lowering the module directly gives, and passes the verifier.
  auto prog = isa::assemble(text, out);
  ASSERT_TRUE(prog.ok()) << format_all(prog.errors());
  auto parsed = hlo::parse_hlo_file(hlo);
  ASSERT_TRUE(parsed.modules[0].ok());
  LoadedConfig cfg;
  std::ostringstream err;
  ASSERT_TRUE(load_chip(CommonOptions{}, cfg, err)) << err.str();
  auto direct = lower::lower_module(**parsed.modules[0], cfg.chip);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(prog->code.size(), direct->program.code.size());
  EXPECT_TRUE(isa::verify(*prog, cfg.chip, text).ok());
}

TEST(CliLower, JsonSummaryAndInputErrors) {
  const auto r = tpusim({"lower", kSrc + "/workloads/hlo/transformer_layer_fwd.after_optimizations.hlo", "--format",
                         "json", "-o", ::testing::TempDir() + "t.tasm"});
  ASSERT_EQ(r.code, kOk) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["instructions"].get<int>(), 1000);
  EXPECT_TRUE(j["verify"]["ok"].get<bool>());
  // dot.16 and dot.17 need relayout copies (their operands are not in MXU order).
  EXPECT_EQ(j["approximated"].get<int>(), static_cast<int>(j["approximations"].size()));
  // Nine dots: each has a tiling, or is a copy of one that has (reuse).
  std::size_t copies = 0;
  for (const auto& r : j["reused"]) copies += r["instances"].size();
  EXPECT_GE(j["dot_tilings"].size() + copies, 9u);

  const auto missing = tpusim({"lower", "/nonexistent/model.hlo"});
  EXPECT_EQ(missing.code, kUsageError);
  const std::string bad = write_temp("bad.hlo", "HloModule m\nENTRY e {\n  ROOT x = f32[2] add(\n}\n");
  const auto syntax = tpusim({"lower", bad});
  EXPECT_EQ(syntax.code, kUsageError);
  EXPECT_THAT(syntax.err, HasSubstr("bad.hlo:4:1"));
}

TEST(CliRunHlo, OpsRollUpToEntryInstructionsWithTheirRooflineBound) {
  const std::string hlo = write_temp("loop.hlo", kWhileModule);
  const auto r = binary("run " + hlo + " --chip v5e --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::set<std::string> names;
  double sum = 0;
  for (const auto& op : j["ops"]) {
    names.insert(op["name"].get<std::string>());
    sum += op["time_s"].get<double>();
    const double b = op["bound_time_s"].get<double>();
    if (b > 0) {
      EXPECT_NEAR(op["time_over_bound"].get<double>(), op["time_s"].get<double>() / b, 1e-9);
    }
  }
  // The loop body's tanh rolls up to the while; nothing else is reported.
  EXPECT_EQ(names, (std::set<std::string>{"w", "s"}));
  EXPECT_NEAR(sum, j["step_time_s"].get<double>(), 1e-9 * j["step_time_s"].get<double>());
  // The loop reads and writes 256 KiB ten times: at least 10 x 512 KiB / 819 GB/s.
  for (const auto& op : j["ops"]) {
    if (op["name"] == "w") {
      EXPECT_GE(op["time_s"].get<double>(), 10 * 524288.0 / 819e9);
    }
  }
  // The module bound is what `tpusim analyze` says for the same module, as
  // lowered: the loop body's scalar counter add fuses its constant (4 bytes
  // fewer a trip; the tanh is a group of one), nothing else changes.
  const auto a = tpusim({"analyze", hlo, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(a.code, kOk) << a.err;
  const auto aj = nlohmann::json::parse(a.out);
  EXPECT_NEAR(j["bound_time_s"].get<double>(), aj["total"]["bound_time_s"].get<double>() - 10 * 4 / 819e9, 1e-15);
  EXPECT_GE(j["step_time_s"].get<double>(), j["bound_time_s"].get<double>());
}

TEST(CliRunHlo, LoweredFileRunsToTheSameStepTime) {
  const std::string tasm = ::testing::TempDir() + "layernorm_softmax.tasm";
  const std::string hlo = kSrc + "/workloads/hlo/layernorm_softmax.hlo";
  ASSERT_EQ(binary("lower " + hlo + " -o " + tasm + " -q").code, 0);
  const auto a = binary("run " + hlo + " --format json");
  const auto b = binary("run " + tasm + " --format json");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(a.out)["step_time_s"].get<double>(),
                   nlohmann::json::parse(b.out)["step_time_s"].get<double>());
}

TEST(CliCompare, DifferenceEqualsTheTwoRunsAndRowsExplainIt) {
  const std::string before = kSrc + "/workloads/hlo/transformer_layer_fwd.before_optimizations.hlo";
  const std::string after = kSrc + "/workloads/hlo/transformer_layer_fwd.after_optimizations.hlo";
  const auto c = tpusim({"compare", before, after, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(c.code, kOk) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  const auto ra = binary("run " + before + " --chip v5e --format json");
  const auto rb = binary("run " + after + " --chip v5e --format json");
  ASSERT_EQ(ra.code, 0);
  ASSERT_EQ(rb.code, 0);
  const double ta = nlohmann::json::parse(ra.out)["step_time_s"].get<double>();
  const double tb = nlohmann::json::parse(rb.out)["step_time_s"].get<double>();
  EXPECT_DOUBLE_EQ(j["a"]["step_time_s"].get<double>(), ta);
  EXPECT_DOUBLE_EQ(j["b"]["step_time_s"].get<double>(), tb);
  EXPECT_DOUBLE_EQ(j["delta_s"].get<double>(), tb - ta);
  EXPECT_LT(tb, ta);  // the optimized module fuses elementwise chains: less HBM traffic
  // Every op of either side is a row, and the rows' deltas add up to the difference.
  double sum = 0, shares = 0;
  for (const auto& r : j["ops"]) {
    sum += r["delta_s"].get<double>();
    shares += r["share_of_difference"].get<double>();
  }
  EXPECT_NEAR(sum, tb - ta, 1e-9 * ta);
  EXPECT_NEAR(shares, 1.0, 1e-6);
  EXPECT_EQ(j["ops"].size(), j["a"]["ops"].get<std::size_t>() + j["b"]["ops"].get<std::size_t>() -
                                 [&] {
                                   std::size_t both = 0;
                                   for (const auto& r : j["ops"]) both += r["in"] == "both";
                                   return both;
                                 }());
  // Rows come largest change first.
  for (std::size_t i = 1; i < j["ops"].size(); ++i) {
    EXPECT_GE(std::abs(j["ops"][i - 1]["delta_s"].get<double>()), std::abs(j["ops"][i]["delta_s"].get<double>()));
  }
}

TEST(CliCompare, ComparingAModuleWithItselfIsZeroAndBadInputIsAnError) {
  const std::string hlo = write_temp("loop2.hlo", kWhileModule);
  const auto c = tpusim({"compare", hlo, hlo, "--format", "json"});
  ASSERT_EQ(c.code, kOk) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["delta_s"].get<double>(), 0.0);
  for (const auto& r : j["ops"]) EXPECT_EQ(r["delta_s"].get<double>(), 0.0);
  const std::string bad = write_temp("bad2.hlo", "HloModule m\nENTRY e {\n  ROOT x = f32[2] bogus-op-(\n}\n");
  const auto e = tpusim({"compare", hlo, bad});
  EXPECT_EQ(e.code, kUsageError);
  EXPECT_THAT(e.err, HasSubstr("bad2.hlo:4:1"));
}

// XLA renames what it fuses: the unfused add `a.2` (which tpusim's fusion
// policy fuses with the multiply it reads, as XLA does) is the fusion
// `fusion.7` of the optimized module. Both carry the framework's op_name
// (metadata), so compare pairs them in one row instead of an a-only and a
// b-only row whose shares sum past 100%. (Both lower to the same kernel, so
// the row's delta, like the step's, is the difference of equal times.)
TEST(CliCompare, OpsXlaRenamedMatchByTheirOpName) {
  const std::string a = write_temp("unfused.hlo", R"(HloModule a
ENTRY e {
  p = f32[512,512] parameter(0)
  q = f32[512,512] parameter(1)
  m.1 = f32[512,512] multiply(p, q), metadata={op_type="mul" op_name="jit(f)/mul"}
  ROOT a.2 = f32[512,512] add(m.1, q), metadata={op_type="add" op_name="jit(f)/add"}
}
)");
  const std::string b = write_temp("fused.hlo", R"(HloModule b
fused {
  p0 = f32[512,512] parameter(0)
  p1 = f32[512,512] parameter(1)
  m = f32[512,512] multiply(p0, p1)
  ROOT s = f32[512,512] add(m, p1)
}
ENTRY e {
  p = f32[512,512] parameter(0)
  q = f32[512,512] parameter(1)
  ROOT fusion.7 = f32[512,512] fusion(p, q), kind=kLoop, calls=fused, metadata={op_type="add" op_name="jit(f)/add"}
}
)");
  const auto c = tpusim({"compare", a, b, "--chip", "v5e", "--format", "json"});
  ASSERT_EQ(c.code, kOk) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  std::map<std::string, nlohmann::json> rows;
  double sum = 0;
  for (const auto& r : j["ops"]) {
    rows[r["name"].get<std::string>()] = r;
    sum += r["delta_s"].get<double>();
  }
  ASSERT_TRUE(rows.contains("jit(f)/add")) << j["ops"].dump(1);
  const auto& add = rows["jit(f)/add"];
  EXPECT_EQ(add["matched_by"], "op_name");
  EXPECT_EQ(add["in"], "both");
  EXPECT_EQ(add["a_ops"], (nlohmann::json{"a.2"}));
  EXPECT_EQ(add["b_ops"], (nlohmann::json{"fusion.7"}));
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_NEAR(sum, j["delta_s"].get<double>(), 1e-12);
  // The row's sides are the ops' own times in each run.
  const auto ra = binary("run " + a + " --chip v5e --format json -q");
  ASSERT_EQ(ra.code, 0) << ra.err;
  const auto runa = nlohmann::json::parse(ra.out);  // (a range-for over a temporary's member would dangle)
  for (const auto& op : runa["ops"]) {
    if (op["name"] != "a.2") continue;
    EXPECT_DOUBLE_EQ(add["a_time_s"].get<double>(), op["time_s"].get<double>());
    EXPECT_EQ(op["op_name"], "jit(f)/add");
  }
  const auto t = tpusim({"compare", a, b, "--chip", "v5e"});
  ASSERT_EQ(t.code, kOk) << t.err;
  EXPECT_THAT(t.out, HasSubstr("jit(f)/add [1:1]"));
}

// One module on two chips: side a on the first --chip, side b on the
// second; each side is that chip's `run`, the rows pair the same ops.
TEST(CliCompare, OneModuleOnTwoChips) {
  const std::string hlo = kSrc + "/workloads/hlo/decode_step.hlo";
  const auto c = tpusim({"compare", hlo, "--chip", "v5e", "--chip", "v6e", "--format", "json"});
  ASSERT_EQ(c.code, kOk) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["chips"], (nlohmann::json{"v5e", "v6e"}));
  const auto ra = binary("run " + hlo + " --chip v5e --format json -q");
  const auto rb = binary("run " + hlo + " --chip v6e --format json -q");
  ASSERT_EQ(ra.code, 0);
  ASSERT_EQ(rb.code, 0);
  EXPECT_DOUBLE_EQ(j["a"]["step_time_s"].get<double>(), nlohmann::json::parse(ra.out)["step_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["b"]["step_time_s"].get<double>(), nlohmann::json::parse(rb.out)["step_time_s"].get<double>());
  for (const auto& r : j["ops"]) EXPECT_EQ(r["in"], "both") << r["name"];
  // Text names each side's chip.
  const auto t = tpusim({"compare", hlo, "--chip", "v5e", "--chip", "v6e"});
  ASSERT_EQ(t.code, kOk) << t.err;
  EXPECT_THAT(t.out, HasSubstr("decode_step.hlo on v5e: step"));
  EXPECT_THAT(t.out, HasSubstr("decode_step.hlo on v6e: step"));
  // One module needs two chips.
  const auto e = tpusim({"compare", hlo, "--chip", "v5e"});
  EXPECT_EQ(e.code, kUsageError);
  EXPECT_THAT(e.err, HasSubstr("one module and two chips"));
}

// --lower-for: the program compiled for the base chip, simulated on the
// varied one. It is exactly the base chip's `lower` output run there.
TEST(CliLowerFor, RunsTheBaseChipsProgramOnTheVariedChip) {
  const std::string hlo = kSrc + "/workloads/hlo/decode_step.hlo";
  const std::string tasm = ::testing::TempDir() + "decode_lower_for.tasm";
  ASSERT_EQ(tpusim({"lower", hlo, "--chip", "v5e", "-o", tasm}).code, kOk);
  const auto a = binary("run " + tasm + " --chip v5e --set 'hbm.bandwidth=1638 GB/s' --format json -q");
  const auto b = binary("run " + hlo + " --chip v5e --set 'hbm.bandwidth=1638 GB/s' --lower-for v5e --format json -q");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(a.out)["step_time_s"].get<double>(),
                   nlohmann::json::parse(b.out)["step_time_s"].get<double>());
  // A megacore chip's two-core program cannot run on a one-core device.
  const auto mc = tpusim({"run", hlo, "--chip", "v5e", "--lower-for", "v5p"});
  EXPECT_EQ(mc.code, kUsageError);
  EXPECT_THAT(mc.err, HasSubstr("--lower-for v5p compiles for 2 TensorCore(s) per device"));
  const auto bad = tpusim({"run", hlo, "--lower-for", "v9"});
  EXPECT_EQ(bad.code, kUsageError);
  EXPECT_THAT(bad.err, HasSubstr("--lower-for"));
}

}  // namespace
}  // namespace tpusim::cli
