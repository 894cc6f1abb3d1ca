// The StableHLO project's test programs in tests/isa/stablehlo/data (see its
// README for their source): every one converts and analyzes; figures of
// some are derived by hand.
#include <gtest/gtest.h>

#include <filesystem>

#include "isa/hlo/analysis.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

const std::filesystem::path kData = std::filesystem::path(TPUSIM_SOURCE_DIR) / "tests/isa/stablehlo/data";

hlo::RooflineReport analyze(const std::string& name) {
  const auto parsed = parse_model_file((kData / name).string());
  EXPECT_TRUE(parsed.ok()) << format_all(parsed.errors());
  if (!parsed.ok()) return {};
  return hlo::roofline(*parsed.modules.at(0).value(), hlo::RooflineRates::example_chip());
}

// The cost of the first row of `opcode` (in the entry or, for a called function, its call).
hlo::OpCost first(const hlo::RooflineReport& r, const std::string& opcode) {
  for (const auto& row : r.ops) {
    if (row.opcode == opcode) return row.cost;
  }
  ADD_FAILURE() << "no " << opcode << " row";
  return {};
}

TEST(StableHloTestdata, EveryFileConverts) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kData)) {
    if (e.path().extension() != ".mlir") continue;
    const auto parsed = parse_model_file(e.path().string());
    EXPECT_TRUE(parsed.ok()) << e.path().filename() << ": " << format_all(parsed.errors());
    ++files;
  }
  EXPECT_GE(files, 18);
}

TEST(StableHloTestdata, FiguresByHand) {
  // pad: reads bf16[2,3] (12 B) and the bf16 padding value (2 B), writes bf16[6,4] (48 B).
  EXPECT_DOUBLE_EQ(first(analyze("pad_bfloat16_2_3_bfloat16.mlir"), "pad").bytes_accessed(), 12 + 2 + 48);
  // 1-D convolution, lhs_dilate 2: 33 outputs x 2 features, each 3 taps x 2 input
  // features of multiply-add (2 FLOPs).
  EXPECT_DOUBLE_EQ(first(analyze("conv_general_dilated_float32_1_16_2_float32_3_2_2.mlir"), "convolution").flops,
                   33 * 2 * 3 * 2 * 2);
  // argmax: a variadic reduce over 15 elements, 14 applications of a reducer of
  // 9 ops (4 compares, 2 ors, 1 and, 2 selects), inside the called @argmax.
  EXPECT_DOUBLE_EQ(first(analyze("argmax_bfloat16_15.mlir"), "call").flops, 14 * 9);
}

}  // namespace
}  // namespace tpusim::stablehlo
