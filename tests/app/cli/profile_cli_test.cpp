// The op profile (`run --group-by`, `--top`, `--depth`): groups add up to
// what they group (a level sums to its parent, the top level to the ops'
// time, which sums to the step), --top keeps each level's sum with a
// "(N more)" row, and bad flags are usage errors.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/app/cli/cli_harness.h"

namespace tpusim::cli {
namespace {

using testing::binary;
using testing::write_temp;

// Two "layers" of a framework's op_name tree, three ops each (two dots and an add).
constexpr const char* kLayers = R"(HloModule layers
ENTRY e {
  x = bf16[512,512] parameter(0)
  w0 = bf16[512,512] parameter(1)
  w1 = bf16[512,512] parameter(2)
  d0 = bf16[512,512] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/layer_0/mlp/dot_general"}
  e0 = bf16[512,512] dot(d0, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/layer_0/out/dot_general"}
  a0 = bf16[512,512] add(e0, x), metadata={op_name="jit(f)/layer_0/residual/add"}
  d1 = bf16[512,512] dot(a0, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/layer_1/mlp/dot_general"}
  e1 = bf16[512,512] dot(d1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/layer_1/out/dot_general"}
  ROOT a1 = bf16[512,512] add(e1, a0), metadata={op_name="jit(f)/layer_1/residual/add"}
}
)";

double sum_time(const nlohmann::json& rows) {
  double s = 0;
  for (const auto& r : rows) s += r["time_s"].get<double>();
  return s;
}

TEST(CliProfile, CategoriesSumToTheStepAndMatchTheOps) {
  const auto r = binary("run " + write_temp("profile_layers.hlo", kLayers) +
                        " --chip v5e --group-by category --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double step = j["step_time_s"].get<double>();
  EXPECT_NEAR(sum_time(j["ops"]), step, 1e-9 * step + 1e-15);
  EXPECT_NEAR(sum_time(j["groups"]), step, 1e-9 * step + 1e-15);
  // Each category's row is the sum of its ops' rows.
  for (const auto& g : j["groups"]) {
    double t = 0;
    std::int64_t n = 0;
    for (const auto& op : j["ops"]) {
      if (op["category"] == g["group"]) {
        t += op["time_s"].get<double>();
        ++n;
      }
    }
    EXPECT_NEAR(g["time_s"].get<double>(), t, 1e-12) << g["group"];
    EXPECT_EQ(g["ops"].get<std::int64_t>(), n);
  }
  EXPECT_EQ(j["groups"].size(), 2u);  // the dots, and the dots fused with their adds
  EXPECT_EQ(j["by_category"].size(), 2u);
  // Every op row names its source line: d0 is line 6 of the module.
  for (const auto& op : j["ops"]) {
    if (op["name"] == "d0") {
      EXPECT_EQ(op["line"], 6);
    }
  }
}

TEST(CliProfile, OpNameLevelsSumToTheirParentAndTopKeepsTheSum) {
  // tpusim fuses each second dot with its add (an output fusion named by the
  // add's op_name): four ops, in layer_0 and layer_1 > mlp and residual.
  const auto r = binary("run " + write_temp("profile_tree.hlo", kLayers) +
                        " --chip v5e --group-by op_name --depth 3 --top 1 --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& g = j["groups"];
  // jit(f) > [one layer > (one child, "(1 more)")], "(1 more)" layer.
  ASSERT_EQ(g.size(), 5u) << g.dump(1);
  EXPECT_EQ(g[0]["path"], "jit(f)");
  EXPECT_EQ(g[0]["ops"], 4);
  EXPECT_NEAR(g[0]["time_s"].get<double>(), j["step_time_s"].get<double>(), 1e-9);
  const std::vector<int> levels{1, 2, 3, 3, 2};
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i]["level"], levels[i]) << i;
  EXPECT_EQ(g[3]["group"], "(1 more)");
  EXPECT_EQ(g[4]["group"], "(1 more)");
  EXPECT_EQ(g[4]["path"], "jit(f)/(1 more)");
  // Each level sums to its parent, the rest row included.
  EXPECT_NEAR(g[1]["time_s"].get<double>() + g[4]["time_s"].get<double>(), g[0]["time_s"].get<double>(), 1e-12);
  EXPECT_NEAR(g[2]["time_s"].get<double>() + g[3]["time_s"].get<double>(), g[1]["time_s"].get<double>(), 1e-12);
  // The CSV has the documented columns.
  const auto csv = binary("run " + write_temp("profile_tree_csv.hlo", kLayers) +
                          " --chip v5e --group-by op_name --depth 1 --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_THAT(csv.out, ::testing::StartsWith("group,path,level,ops,time_s,percent,flops,flop_utilization,hbm_bytes,"
                                             "hbm_bandwidth_utilization,bound_time_s,time_over_bound,limiter\n"
                                             "jit(f),jit(f),1,4,"));
}

// A loop of 4 iterations whose body multiplies by w (a 512^3 dot) and
// takes the exponential.
constexpr const char* kLoop = R"(HloModule loop
body {
  p = (s32[], bf16[512,512], bf16[512,512]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = bf16[512,512] get-tuple-element(p), index=1
  w = bf16[512,512] get-tuple-element(p), index=2
  d = bf16[512,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = bf16[512,512] exponential(d)
  one = s32[] constant(1)
  n = s32[] add(i, one)
  ROOT t = (s32[], bf16[512,512], bf16[512,512]) tuple(n, e, w)
}
cond {
  p = (s32[], bf16[512,512], bf16[512,512]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant(4)
  ROOT c = pred[] compare(i, k), direction=LT
}
ENTRY main {
  x = bf16[512,512] parameter(0)
  w = bf16[512,512] parameter(1)
  z = s32[] constant(0)
  t = (s32[], bf16[512,512], bf16[512,512]) tuple(z, x, w)
  l = (s32[], bf16[512,512], bf16[512,512]) while(t), condition=cond, body=body,
      backend_config={"known_trip_count":{"n":"4"}}
  ROOT r = bf16[512,512] get-tuple-element(l), index=1
}
)";

TEST(CliProfile, NestedShowsTheLoopBodysOpsUnderTheLoop) {
  const auto r =
      binary("run " + write_temp("profile_loop.hlo", kLoop) + " --chip v5e --group-by nested --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& g = j["groups"];
  const double step = j["step_time_s"].get<double>();
  double top = 0;
  for (const auto& row : g) top += row["level"] == 1 ? row["time_s"].get<double>() : 0.0;
  EXPECT_NEAR(top, step, 1e-9 * step);
  // The loop's row, then its body's ops one level down: they do its work (4
  // dots of 2 x 512^3 FLOPs, and the element-wise ops) and add up to its time
  // (the loop's own repeat and end instructions are all it adds).
  std::size_t at = 0;
  while (at < g.size() && g[at]["group"] != "l") ++at;
  ASSERT_LT(at, g.size()) << g.dump(1);
  EXPECT_EQ(g[at]["level"], 1);
  EXPECT_GE(g[at]["flops"].get<double>(), 4 * 2.0 * 512 * 512 * 512);
  double body_s = 0, body_flops = 0;
  std::size_t children = 0;
  for (std::size_t i = at + 1; i < g.size() && g[i]["level"] == 2; ++i, ++children) {
    EXPECT_THAT(g[i]["path"].get<std::string>(), ::testing::StartsWith("l/"));
    body_s += g[i]["time_s"].get<double>();
    body_flops += g[i]["flops"].get<double>();
  }
  EXPECT_GE(children, 1u);
  EXPECT_DOUBLE_EQ(body_flops, g[at]["flops"].get<double>());
  EXPECT_LE(body_s, g[at]["time_s"].get<double>() * (1 + 1e-12));
  EXPECT_GE(body_s, 0.95 * g[at]["time_s"].get<double>());
  // The text names the grouping.
  const auto text = binary("run " + write_temp("profile_loop_text.hlo", kLoop) + " --chip v5e --group-by nested");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, ::testing::HasSubstr("op (nested computations' ops)"));
  EXPECT_THAT(text.out, ::testing::HasSubstr("\n  "));
}

TEST(CliProfile, NestedBoundCountsEachDtypeAtItsMxuRate) {
  // An fp8 dot on TPU7x, whose MXUs run fp8 at twice the bf16 rate (the preset's core.mxu.rate.fp8 = 2):
  // its compute bound is its FLOPs over twice the bf16 peak, in the nested grouping as in the op table
  // (it was counted at the bf16 peak there, which put the dot at 0.6x its bound).
  const std::string hlo = R"(HloModule fp8
ENTRY main {
  a = f8e4m3fn[4096,8192]{1,0} parameter(0)
  b = f8e4m3fn[8192,4096]{1,0} parameter(1)
  ROOT d = bf16[4096,4096]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  const auto r = binary("run " + write_temp("profile_fp8.hlo", hlo) + " --chip v7 --group-by nested --format json -q");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["groups"].size(), 1u) << j["groups"].dump(1);
  const auto& g = j["groups"][0];
  const double flops = 2.0 * 4096 * 8192 * 4096;
  EXPECT_DOUBLE_EQ(g["flops"].get<double>(), flops);
  const double compute_s = flops / (2 * j["mxu"]["peak_flops_per_s"].get<double>());
  const double memory_s = g["hbm_bytes"].get<double>() / j["hbm"]["peak_bytes_per_s"].get<double>();
  EXPECT_NEAR(g["bound_time_s"].get<double>(), std::max(compute_s, memory_s), 1e-9 * compute_s);
  EXPECT_GE(g["time_over_bound"].get<double>(), 1.0);
  EXPECT_NEAR(g["bound_time_s"].get<double>(), j["ops"][0]["bound_time_s"].get<double>(), 1e-9 * compute_s);
}

TEST(CliProfile, TextShowsTheSummariesAndCutsAtTop) {
  const auto r = binary("run " + write_temp("profile_text.hlo", kLayers) + " --chip v5e --top 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("... 2 more ops: "));
  EXPECT_THAT(r.out, ::testing::HasSubstr("time by category: matmul "));
  EXPECT_THAT(r.out, ::testing::HasSubstr("time by limiter: "));
}

TEST(CliProfile, BadFlagsAreUsageErrors) {
  const std::string f = write_temp("profile_bad.hlo", kLayers);
  for (const auto& [flag, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"--group-by layer", "--group-by: error: expected category, op_name, nested or none, got 'layer'"},
           {"--depth 0", "--depth: error: expected a number of grouping levels >= 1, got 0"},
           {"--top -1", "--top: error: expected a count >= 0 (0 = all), got -1"}}) {
    const auto r = binary("run " + f + " --chip v5e " + flag);
    EXPECT_EQ(r.code, 2) << flag;
    EXPECT_THAT(r.err, ::testing::HasSubstr(message)) << flag;
  }
}

}  // namespace
}  // namespace tpusim::cli
