// The op profile (`run --group-by`, `--top`, `--depth`): groups add up to
// what they group (a level sums to its parent, the top level to the ops'
// time, which sums to the step), --top keeps each level's sum with a
// "(N more)" row, and bad flags are usage errors.
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
       std::vector<std::pair<std::string, std::string>>{{"--group-by layer", "--group-by: error: expected category, op_name or none, got 'layer'"},
                                                        {"--depth 0", "--depth: error: expected op_name levels >= 1, got 0"},
                                                        {"--top -1", "--top: error: expected a count >= 0 (0 = all), got -1"}}) {
    const auto r = binary("run " + f + " --chip v5e " + flag);
    EXPECT_EQ(r.code, 2) << flag;
    EXPECT_THAT(r.err, ::testing::HasSubstr(message)) << flag;
  }
}

}  // namespace
}  // namespace tpusim::cli
