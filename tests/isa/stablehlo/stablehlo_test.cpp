// StableHLO front end: MLIR text -> HLO text -> isa/hlo. Numbers are derived
// by hand (FLOPs of each op) or checked equal to the same program written as HLO.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "isa/hlo/analysis.h"
#include "isa/stablehlo/mlir.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kMlp = std::string(TPUSIM_SOURCE_DIR) + "/workloads/stablehlo/mlp.mlir";

// The same program written by hand in HLO.
const std::string kMlpHlo = std::string(TPUSIM_SOURCE_DIR) + "/workloads/stablehlo/mlp.hlo";

hlo::RooflineReport roofline_of(const hlo::ParsedFile& parsed) {
  EXPECT_TRUE(parsed.ok()) << format_all(parsed.errors());
  if (!parsed.ok()) return {};
  return hlo::roofline(*parsed.modules.at(0).value(), hlo::RooflineRates::example_chip());
}

TEST(StableHlo, MlpFlopsByHand) {
  const auto parsed = parse_model_file(kMlp);
  ASSERT_TRUE(parsed.ok()) << format_all(parsed.errors());
  const auto r = roofline_of(parsed);
  // dot 2*8*16*32 = 8192; maximum 8*32 = 256; dot 2*8*32*4 = 2048;
  // reduce (32 - 8) * 1 = 24; subtract 32; exponential is 32 transcendentals.
  EXPECT_DOUBLE_EQ(r.total.flops, 8192 + 256 + 2048 + 24 + 32);
  EXPECT_DOUBLE_EQ(r.total.transcendentals, 32);
}

TEST(StableHlo, MlpEqualsHandWrittenHlo) {
  const auto a = roofline_of(parse_model_file(kMlp));
  const auto b = roofline_of(hlo::parse_hlo_file(kMlpHlo));
  EXPECT_DOUBLE_EQ(a.total.flops, b.total.flops);
  EXPECT_DOUBLE_EQ(a.total.bytes_accessed, b.total.bytes_accessed);
  EXPECT_DOUBLE_EQ(a.total.transcendentals, b.total.transcendentals);
}

TEST(StableHlo, LocationsBecomeOpNames) {
  const auto r = roofline_of(parse_model_file(kMlp));
  bool found = false;
  for (const auto& row : r.ops) found = found || row.op_name == "jit(mlp)/jit(main)/dot_general";
  EXPECT_TRUE(found);
}

TEST(StableHlo, DetectsMlirByContent) {
  EXPECT_TRUE(looks_like_mlir("// c\nmodule @m {\n}"));
  EXPECT_TRUE(looks_like_mlir("func.func @main() {\n}"));
  EXPECT_TRUE(looks_like_mlir("#loc = loc(unknown)\nmodule {}"));
  EXPECT_FALSE(looks_like_mlir("HloModule m\nENTRY e { ROOT c = f32[] constant(1) }"));
  EXPECT_FALSE(looks_like_mlir(read(kMlpHlo)));
}

TEST(StableHlo, GenericSyntaxAndWhile) {
  constexpr const char* text = R"(module {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<4xf32>
     cond {
      %c_1 = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      %2 = "stablehlo.multiply"(%iterArg_0, %iterArg_0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      stablehlo.return %1, %2 : tensor<i32>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
}
)";
  const auto parsed = parse_stablehlo(text, "loop.mlir");
  ASSERT_TRUE(parsed.ok()) << format_all(parsed.errors());
  const auto r = roofline_of(parsed);
  // 10 trips (induction 0..10 step 1): body = add 1 + multiply 4; condition compare 1, 11 times.
  EXPECT_DOUBLE_EQ(r.total.flops, 10 * (1 + 4) + 11 * 1);
}

Diagnostic first_error(const std::string& text) {
  const auto parsed = parse_stablehlo(text, "bad.mlir");
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? Diagnostic{} : parsed.errors().at(0);
}

TEST(StableHlo, ErrorsNameLineAndColumn) {
  auto d = first_error("module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %a, %b : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n");
  EXPECT_EQ(d.file, "bad.mlir");
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.column, 28);
  EXPECT_NE(d.message.find("undefined value '%b'"), std::string::npos) << d.message;

  d = first_error("module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.fft %a : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n");
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.column, 10);
  EXPECT_NE(d.message.find("fft needs 'fft_type"), std::string::npos) << d.message;

  d = first_error("module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    return %a : tensor<2xf32>\n");
  EXPECT_EQ(d.file, "bad.mlir");
  EXPECT_GT(d.line, 0);

  d = first_error("module {\n  func.func @main(%a: tensor<2x?xf32>) -> tensor<2xf32> {\n    return %a : tensor<2xf32>\n  }\n}\n");
  EXPECT_EQ(d.line, 2);
  EXPECT_NE(d.message.find("dynamic dimension"), std::string::npos) << d.message;
}

// Shape errors found by the HLO verifier point back at the MLIR op.
TEST(StableHlo, HloErrorsMapBackToMlir) {
  const auto d = first_error("module {\n  func.func @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %a, %b : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n");
  EXPECT_EQ(d.file, "bad.mlir");
  EXPECT_EQ(d.line, 3) << d.format();
}

// Every prefix of a real file is either valid or a located error: never a crash or hang.
TEST(StableHlo, EveryPrefixFailsCleanly) {
  const std::string text = read(kMlp);
  ASSERT_FALSE(text.empty());
  for (std::size_t n = 0; n < text.size(); n += 7) {
    const auto parsed = parse_stablehlo(text.substr(0, n), "p.mlir");
    if (parsed.ok()) continue;
    for (const auto& d : parsed.errors()) EXPECT_FALSE(d.message.empty());
  }
}

}  // namespace
}  // namespace tpusim::stablehlo
