// ISA vocabulary tables: names, parsing, sizes, MXU rates, latency classes.
#include "isa/types.h"

#include <gtest/gtest.h>

namespace tpusim::isa {
namespace {

TEST(IsaTypes, NamesRoundTripForEveryEntry) {
  for (const auto n : all_names(DType{})) EXPECT_EQ(name(*parse_enum<DType>(n)), n);
  for (const auto n : all_names(VpuOp{})) EXPECT_EQ(name(*parse_enum<VpuOp>(n)), n);
  for (const auto n : all_names(EupOp{})) EXPECT_EQ(name(*parse_enum<EupOp>(n)), n);
  for (const auto n : all_names(CollectiveKind{})) EXPECT_EQ(name(*parse_enum<CollectiveKind>(n)), n);
  EXPECT_FALSE(parse_enum<DType>("f64").has_value());
  EXPECT_FALSE(parse_enum<MemSpace>("dram").has_value());
}

TEST(IsaTypes, DtypeSizes) {
  EXPECT_EQ(dtype_bits(DType::kBf16), 16);
  EXPECT_EQ(dtype_bytes(DType::kF32, 10), 40);
  EXPECT_EQ(dtype_bytes(DType::kInt4, 3), 2);  // 12 bits round up to 2 bytes
}

TEST(IsaTypes, MxuRatesComeFromTheConfig) {
  const MxuRates r{1.0, 0.25, 2.0, 2.0, 4.0};
  EXPECT_EQ(mxu_rate(r, DType::kBf16), 1.0);
  EXPECT_EQ(mxu_rate(r, DType::kF32), 0.25);
  EXPECT_EQ(mxu_rate(r, DType::kInt8), 2.0);
  EXPECT_EQ(mxu_rate(r, DType::kFp8), 2.0);
  EXPECT_EQ(mxu_rate(r, DType::kFp8E5m2), 2.0);
  EXPECT_EQ(mxu_rate(r, DType::kInt4), 4.0);
  EXPECT_EQ(mxu_rate(r, DType::kInt32), 0.0);  // never an MXU input
  EXPECT_EQ(mxu_rate(r, DType::kPred), 0.0);
}

TEST(IsaTypes, LatencyClassesMapToConfig) {
  const VpuLatency lat{2, 4, 16, 3, 5};
  EXPECT_EQ(vpu_latency(lat, latency_class(VpuOp::kAdd)), 2);
  EXPECT_EQ(vpu_latency(lat, latency_class(VpuOp::kFma)), 4);
  EXPECT_EQ(vpu_latency(lat, latency_class(VpuOp::kDiv)), 16);
  EXPECT_EQ(vpu_latency(lat, latency_class(VpuOp::kConvert)), 3);
  EXPECT_EQ(vpu_latency(lat, latency_class(VpuOp::kSelect)), 5);
  EXPECT_EQ(vpu_op_inputs(VpuOp::kSelect), 3);
  EXPECT_EQ(vpu_op_inputs(VpuOp::kNeg), 1);
}

}  // namespace
}  // namespace tpusim::isa
