// The devices an SPMD module runs on (isa/hlo/devices.h) and the HBM its
// parameters hold; each expected value is read off the module text.
#include "isa/hlo/devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "isa/hlo/parser.h"

namespace tpusim::hlo {
namespace {

using ::testing::HasSubstr;

ModuleDevices devices_of(const std::string& text) {
  auto m = parse_hlo_module(text);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  return m.ok() ? module_devices(**m) : ModuleDevices{};
}

TEST(ModuleDevices, HeaderCountsWin) {
  const auto d = devices_of(R"(HloModule m, num_partitions=8, replica_count=2
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups={{0,1}}, to_apply=add
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
})");
  EXPECT_EQ(d.count, 16);
  EXPECT_EQ(d.source, "num_partitions=8 x replica_count=2");
}

TEST(ModuleDevices, WithoutAHeaderTheReplicaGroupsCount) {
  // As the LLaMA 405B 16x8 dump: iota groups over 128 devices, no num_partitions.
  const auto d = devices_of(R"(HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p), replica_groups=[2,64]<=[128], to_apply=add
})");
  EXPECT_EQ(d.count, 128);
  EXPECT_THAT(d.source, HasSubstr("devices 0..127"));
  const auto pairs = devices_of(R"(HloModule m
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] collective-permute(p), source_target_pairs={{0,5},{5,0}}
})");
  EXPECT_EQ(pairs.count, 6);
}

TEST(ModuleDevices, NoCollectivesIsOneDevice) {
  const auto d = devices_of("HloModule m\nENTRY e {\n  ROOT p = f32[8] parameter(0)\n}\n");
  EXPECT_EQ(d.count, 1);
}

TEST(ParameterBytes, SumsTheEntryParameters) {
  auto m = parse_hlo_module(R"(HloModule m
ENTRY e {
  w = bf16[1024,4096] parameter(0)
  s = (f32[16], s8[3]) parameter(1)
  ROOT r = bf16[1024,4096] negate(w)
})");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(parameter_bytes(**m), 1024 * 4096 * 2 + 16 * 4 + 3);
}

}  // namespace
}  // namespace tpusim::hlo
