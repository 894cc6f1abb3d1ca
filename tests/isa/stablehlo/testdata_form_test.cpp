// The form of the StableHLO repository's stablehlo/testdata programs (JAX
// exports): multi-result calls (`%0:2 = call`, `%0#1`), hex-blob constants,
// a custom_call checker. Written for tpusim in that form.
#include <gtest/gtest.h>

#include "isa/hlo/analysis.h"
#include "isa/hlo/devices.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

constexpr const char* kTestcase = R"(// a testdata-style program
module @jit_testcase {
  func.func public @main() -> tensor<i1> {
    %0:2 = call @inputs() : () -> (tensor<2x3xf32>, tensor<2x3xf32>)
    %1 = call @expected() : () -> tensor<2x3xf32>
    %2 = stablehlo.add %0#0, %0#1 : tensor<2x3xf32>
    %3 = stablehlo.custom_call @check.eq(%2, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<i1>
    return %3 : tensor<i1>
  }
  func.func private @inputs() -> (tensor<2x3xf32>, tensor<2x3xf32>) {
    %0 = stablehlo.constant dense<"0x0000803F000000400000404000008040 0000A0400000C040"> : tensor<2x3xf32>
    %1 = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
    return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
  }
  func.func private @expected() -> tensor<2x3xf32> {
    %0 = stablehlo.constant dense<2.0> : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
)";

TEST(StableHloTestdataForm, MultiResultCallsAndBlobs) {
  const auto parsed = parse_stablehlo(kTestcase, "testcase.mlir");
  ASSERT_TRUE(parsed.ok()) << format_all(parsed.errors());
  const auto r = hlo::roofline(*parsed.modules[0].value(), hlo::RooflineRates::example_chip());
  EXPECT_DOUBLE_EQ(r.total.flops, 6);  // the add of two 2x3 tensors; calls and constants are free
}

TEST(StableHloTestdataForm, BadResultIndexIsLocated) {
  std::string text = kTestcase;
  text.replace(text.find("%0#1"), 4, "%0#7");
  const auto parsed = parse_stablehlo(text, "testcase.mlir");
  ASSERT_FALSE(parsed.ok());
  const Diagnostic d = parsed.errors().at(0);  // errors() returns a copy
  EXPECT_EQ(d.line, 6);
  EXPECT_NE(d.message.find("no result #7"), std::string::npos) << d.file << ":" << d.line << ":" << d.column << ": " << d.message;
}

}  // namespace
}  // namespace tpusim::stablehlo

namespace tpusim::stablehlo {
namespace {

// Shardings or device counts without collectives: one device, said in a note.
TEST(StableHloDevices, ShardedWithoutCollectivesIsOneDevice) {
  constexpr const char* text = R"(module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}) -> (tensor<8x8xf32> {jax.result_info = ""}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
)";
  std::string notes;
  const auto parsed = parse_stablehlo(text, "sharded.mlir", {}, &notes);
  ASSERT_TRUE(parsed.ok()) << format_all(parsed.errors());
  EXPECT_NE(notes.find("sharded.mlir: note: the module declares mhlo.num_partitions = 4"), std::string::npos) << notes;
  EXPECT_NE(notes.find("single-device program"), std::string::npos) << notes;
  EXPECT_EQ(hlo::module_devices(*parsed.modules[0].value()).count, 1);
}

}  // namespace
}  // namespace tpusim::stablehlo
