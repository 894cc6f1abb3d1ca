// Structured HloSharding and per-device shapes.
#include <gtest/gtest.h>

#include "isa/hlo/parser.h"
#include "isa/hlo/sharding.h"

namespace tpusim::hlo {
namespace {

HloSharding parse_sharding(std::string_view text) {
  Lexer lex(text);
  HloSharding s;
  ValueError err;
  EXPECT_TRUE(read_sharding(lex, s, err)) << text << ": " << err.message;
  EXPECT_EQ(lex.peek().kind, Tok::kEof) << text;
  return s;
}

Shape shape(std::string_view text) {
  Lexer lex(text);
  Shape s;
  ValueError err;
  EXPECT_TRUE(read_shape(lex, s, err)) << err.message;
  return s;
}

TEST(HloSharding, ParsesReplicatedMaximalManual) {
  EXPECT_EQ(parse_sharding("{replicated}").kind, HloSharding::Kind::kReplicated);
  EXPECT_EQ(parse_sharding("{manual}").kind, HloSharding::Kind::kManual);
  const HloSharding m = parse_sharding("{maximal device=3}");
  EXPECT_EQ(m.kind, HloSharding::Kind::kMaximal);
  EXPECT_EQ(m.device, 3);
}

TEST(HloSharding, ParsesTileAssignmentList) {
  const HloSharding s = parse_sharding("{devices=[1,2]0,1}");
  EXPECT_EQ(s.kind, HloSharding::Kind::kTiled);
  EXPECT_EQ(s.tile_dims, (Ints{1, 2}));
  EXPECT_EQ(s.devices, (Ints{0, 1}));
  EXPECT_EQ(s.num_tiles(), 2);
  EXPECT_EQ(s.to_string(), "{devices=[1,2]0,1}");
}

TEST(HloSharding, ParsesIotaTileAssignmentWithTransposeAndReplication) {
  const HloSharding s = parse_sharding("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
  EXPECT_TRUE(s.iota);
  EXPECT_TRUE(s.last_tile_dim_replicate);
  // iota(8) as [2,4] = {{0,1,2,3},{4,5,6,7}}, transposed: {{0,4},{1,5},{2,6},{3,7}}.
  EXPECT_EQ(s.devices, (Ints{0, 4, 1, 5, 2, 6, 3, 7}));
  // The last dimension replicates: data is split 1*4 = 4 ways.
  EXPECT_EQ(s.num_tiles(), 4);
  EXPECT_EQ(s.to_string(), "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}");
}

TEST(HloSharding, ParsesTupleAndLastTileDims) {
  const HloSharding t = parse_sharding("{{maximal device=0}, {replicated}, {devices=[2,1]<=[2]}}");
  ASSERT_EQ(t.kind, HloSharding::Kind::kTuple);
  ASSERT_EQ(t.tuple.size(), 3u);
  EXPECT_EQ(t.tuple[2].devices, (Ints{0, 1}));
  const HloSharding e = parse_sharding("{}");
  EXPECT_EQ(e.kind, HloSharding::Kind::kTuple);
  const HloSharding l = parse_sharding("{devices=[2,1,2]0,1,2,3 last_tile_dims={manual}}");
  EXPECT_EQ(l.last_tile_dims, (std::vector<std::string>{"manual"}));
  EXPECT_EQ(l.num_tiles(), 2);
}

TEST(HloSharding, PerDeviceShapeDividesShardedDimensions) {
  // [128256,128] split [1,64] (times 2 replicas): 128/64 = 2 columns each.
  auto s = per_device_shape(shape("f32[128256,128]{1,0}"),
                            parse_sharding("{devices=[1,64,2]<=[2,64]T(1,0) last_tile_dim_replicate}"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().to_string(), "f32[128256,2]{1,0}");
  // Uneven splits round up: ceil(10 / 4) = 3.
  auto u = per_device_shape(shape("f32[10,6]"), parse_sharding("{devices=[4,2]<=[8]}"));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u.value().to_string(), "f32[3,3]");
  auto r = per_device_shape(shape("f32[10,6]"), parse_sharding("{replicated}"));
  EXPECT_EQ(r.value().to_string(), "f32[10,6]");
}

TEST(HloSharding, PerDeviceShapeOfTuples) {
  auto s = per_device_shape(shape("(f32[8], s32[4,4])"),
                            parse_sharding("{{devices=[2]0,1}, {devices=[1,2]0,1}}"));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().to_string(), "(f32[4], s32[4,2])");
}

TEST(HloSharding, RankMismatchIsAnError) {
  auto s = per_device_shape(shape("f32[8]"), parse_sharding("{devices=[2,2]0,1,2,3}"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.errors()[0].message.find("tiles 2 dimensions but shape f32[8] has rank 1"), std::string::npos);
}

TEST(HloSharding, ShardingOfAnInstruction) {
  auto m = parse_hlo_module("HloModule m\nENTRY e {\n ROOT p = bf16[1,8192]{1,0} parameter(0), "
                            "sharding={devices=[8,1]<=[8]}\n}\n");
  ASSERT_TRUE(m.ok());
  const Instruction& p = *m.value()->entry()->root();
  auto s = sharding_of(p);
  ASSERT_TRUE(s.ok());
  auto local = per_device_shape(p.shape(), s.value());
  ASSERT_TRUE(local.ok());
  // ceil(1/8) = 1 row per device (the dimension is smaller than the split).
  EXPECT_EQ(local.value().to_string(), "bf16[1,8192]{1,0}");
  EXPECT_EQ(per_device_shape(p).value().to_string(), "bf16[1,8192]{1,0}");
}

TEST(HloSharding, MismatchedInstructionShardingIsLocated) {
  auto m = parse_hlo_module("HloModule m\nENTRY e {\n ROOT p = f32[8] parameter(0), sharding={devices=[2,2]<=[4]}\n}\n",
                            "s.hlo");
  ASSERT_TRUE(m.ok());
  auto local = per_device_shape(*m.value()->entry()->root());
  ASSERT_FALSE(local.ok());
  EXPECT_EQ(local.errors()[0].format().rfind("s.hlo:3:41: error: sharding {devices=[2,2]<=[4]} tiles 2", 0), 0u)
      << local.errors()[0].format();
}

}  // namespace
}  // namespace tpusim::hlo
