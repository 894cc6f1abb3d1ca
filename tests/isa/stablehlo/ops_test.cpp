// StableHLO ops in the form JAX prints them (pretty or generic syntax with
// the specification's attributes): each program is checked against the same
// program written by hand in HLO (equal roofline totals), plus figures
// derived by hand and the converted attributes.
#include <gtest/gtest.h>

#include "isa/hlo/analysis.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/parser.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

hlo::RooflineReport roofline(const hlo::ParsedFile& parsed) {
  EXPECT_TRUE(parsed.ok()) << format_all(parsed.errors());
  if (!parsed.ok()) return {};
  return hlo::roofline(*parsed.modules.at(0).value(), hlo::RooflineRates::example_chip());
}

void expect_same_as_hlo(const std::string& mlir, const std::string& hlo_text) {
  const auto a = roofline(parse_stablehlo(mlir, "ops.mlir"));
  const auto b = roofline(hlo::parse_hlo(hlo_text, "ops.hlo"));
  EXPECT_DOUBLE_EQ(a.total.flops, b.total.flops);
  EXPECT_DOUBLE_EQ(a.total.transcendentals, b.total.transcendentals);
  EXPECT_DOUBLE_EQ(a.total.bytes_accessed, b.total.bytes_accessed);
  EXPECT_DOUBLE_EQ(a.total.collective_bytes, b.total.collective_bytes);
}

const hlo::Instruction* find(const hlo::ParsedFile& f, hlo::Opcode op) {
  for (const hlo::Computation* c : f.modules.at(0).value()->computations()) {
    for (const hlo::Instruction* i : c->instructions()) {
      if (i->opcode() == op) return i;
    }
  }
  return nullptr;
}

TEST(StableHloOps, PadDynamicSliceGather) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>, %arg2: tensor<8x3xf32>, %arg3: tensor<5x1xi32>) -> (tensor<5x11xf32>, tensor<1x4xf32>, tensor<5x3xf32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [0, 1], interior = [0, 2] : (tensor<4x4xf32>, tensor<f32>) -> tensor<5x11xf32>
    %1 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [1, 4] : (tensor<4x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %2 = "stablehlo.gather"(%arg2, %arg3) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 3>}> : (tensor<8x3xf32>, tensor<5x1xi32>) -> tensor<5x3xf32>
    %3 = "stablehlo.pad"(%arg0, %cst) <{edge_padding_high = array<i64: 0, 1>, edge_padding_low = array<i64: 1, 0>, interior_padding = array<i64: 0, 2>}> : (tensor<4x4xf32>, tensor<f32>) -> tensor<5x11xf32>
    return %0, %1, %2 : tensor<5x11xf32>, tensor<1x4xf32>, tensor<5x3xf32>
  }
})";
  const std::string hlo = R"(HloModule m
ENTRY %main (a: f32[4,4], i: s32[], t: f32[8,3], idx: s32[5,1]) -> (f32[5,11], f32[1,4], f32[5,3]) {
  %a = f32[4,4] parameter(0)
  %i = s32[] parameter(1)
  %t = f32[8,3] parameter(2)
  %idx = s32[5,1] parameter(3)
  %z = f32[] constant(0)
  %p = f32[5,11] pad(%a, %z), padding=1_0_0x0_1_2
  %d = f32[1,4] dynamic-slice(%a, %i, %i), dynamic_slice_sizes={1,4}
  %g = f32[5,3] gather(%t, %idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}
  %p2 = f32[5,11] pad(%a, %z), padding=1_0_0x0_1_2
  ROOT %r = (f32[5,11], f32[1,4], f32[5,3]) tuple(%p, %d, %g)
}
)";
  expect_same_as_hlo(mlir, hlo);
  const auto parsed = parse_stablehlo(mlir, "ops.mlir");
  const hlo::Instruction* pad = find(parsed, hlo::Opcode::kPad);
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(pad->attribute(hlo::AttrId::kPadding)->value, "1_0_0x0_1_2");
  // pad reads its operand (4*4*4 B) and padding value (4 B), writes 5*11*4 B.
  const auto r = hlo::roofline(*parsed.modules.at(0).value(), hlo::RooflineRates::example_chip());
  bool seen = false;
  for (const auto& row : r.ops) {
    if (row.opcode != "pad" || seen) continue;
    EXPECT_DOUBLE_EQ(row.cost.bytes_accessed(), 64 + 4 + 220);
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(StableHloOps, Convolution) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<1x8x8x3xf32>, %arg1: tensor<3x3x3x16xf32>) -> (tensor<1x8x8x16xf32>, tensor<1x4x4x16xf32>) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x8x8x16xf32>
    %1 = "stablehlo.convolution"(%arg0, %arg1) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = dense<1> : tensor<2x2xi64>, window_strides = array<i64: 2, 2>}> : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x4x4x16xf32>
    return %0, %1 : tensor<1x8x8x16xf32>, tensor<1x4x4x16xf32>
  }
})";
  const std::string hlo = R"(HloModule m
ENTRY %main (x: f32[1,8,8,3], w: f32[3,3,3,16]) -> (f32[1,8,8,16], f32[1,4,4,16]) {
  %x = f32[1,8,8,3] parameter(0)
  %w = f32[3,3,3,16] parameter(1)
  %c = f32[1,8,8,16] convolution(%x, %w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %s = f32[1,4,4,16] convolution(%x, %w), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT %r = (f32[1,8,8,16], f32[1,4,4,16]) tuple(%c, %s)
}
)";
  expect_same_as_hlo(mlir, hlo);
  // 8*8*16 outputs and 4*4*16 outputs, each 3*3*3 multiply-adds (2 FLOPs).
  const auto r = roofline(parse_stablehlo(mlir, "ops.mlir"));
  EXPECT_DOUBLE_EQ(r.total.flops, (8 * 8 * 16 + 4 * 4 * 16) * 27 * 2);
}

TEST(StableHloOps, CollectivesKeepGroupsAndChannels) {
  const std::string reducer = R"(({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }))";
  const std::string mlir = R"(module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%arg0: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x16xf32>, tensor<8x16xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> )" +
                           reducer + R"( : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<8x16xf32>) -> tensor<8x64xf32>
    %2 = "stablehlo.reduce_scatter"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}> )" +
                           reducer + R"( : (tensor<8x16xf32>) -> tensor<2x16xf32>
    %3 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0, %1, %2, %3 : tensor<8x16xf32>, tensor<8x64xf32>, tensor<2x16xf32>, tensor<8x16xf32>
  }
})";
  const std::string hlo = R"(HloModule m, num_partitions=4
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[8,16]) -> (f32[8,16], f32[8,64], f32[2,16], f32[8,16]) {
  %x = f32[8,16] parameter(0)
  %ar = f32[8,16] all-reduce(%x), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
  %ag = f32[8,64] all-gather(%x), channel_id=2, replica_groups={{0,1,2,3}}, dimensions={1}, use_global_device_ids=true
  %rs = f32[2,16] reduce-scatter(%x), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=%sum
  %cp = f32[8,16] collective-permute(%x), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  ROOT %r = (f32[8,16], f32[8,64], f32[2,16], f32[8,16]) tuple(%ar, %ag, %rs, %cp)
}
)";
  expect_same_as_hlo(mlir, hlo);
  std::string notes;
  const auto parsed = parse_stablehlo(mlir, "ops.mlir", {}, &notes);
  ASSERT_TRUE(parsed.ok());
  // Explicit collectives: a partitioned program on its 4 devices (no single-device note).
  EXPECT_EQ(notes, "");
  const hlo::Module& m = *parsed.modules.at(0).value();
  ASSERT_NE(m.attribute(hlo::AttrId::kNumPartitions), nullptr);
  EXPECT_EQ(m.attribute(hlo::AttrId::kNumPartitions)->value, "4");
  const hlo::Instruction* ag = find(parsed, hlo::Opcode::kAllGather);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->attribute(hlo::AttrId::kReplicaGroups)->value, "{{0,1,2,3}}");
  EXPECT_EQ(hlo::int_attr(*ag, hlo::AttrId::kChannelId).value_or(0), 2);
  EXPECT_EQ(ag->attribute(hlo::AttrId::kDimensions)->value, "{1}");
}

TEST(StableHloOps, ReduceWindowSortScatterSelectAndScatter) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<4x6xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<2x1xi32>, %arg3: tensor<2x3xf32>, %arg4: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<4x6xf32>, tensor<8x3xf32>, tensor<4x6xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 3>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<2x2xf32>
    %1 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %2 = "stablehlo.scatter"(%arg1, %arg2, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>) -> tensor<8x3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %3 = "stablehlo.select_and_scatter"(%arg0, %arg4, %z) <{padding = dense<0> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 3>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %0, %1, %2, %3 : tensor<2x2xf32>, tensor<4x6xf32>, tensor<8x3xf32>, tensor<4x6xf32>
  }
})";
  const std::string hlo = R"(HloModule m
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}
%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}
%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main (x: f32[4,6], t: f32[8,3], i: s32[2,1], u: f32[2,3], src: f32[2,2]) -> (f32[2,2], f32[4,6], f32[8,3], f32[4,6]) {
  %x = f32[4,6] parameter(0)
  %t = f32[8,3] parameter(1)
  %i = s32[2,1] parameter(2)
  %u = f32[2,3] parameter(3)
  %src = f32[2,2] parameter(4)
  %ninf = f32[] constant(-inf)
  %rw = f32[2,2] reduce-window(%x, %ninf), window={size=2x3 stride=2x3}, to_apply=%max
  %so = f32[4,6] sort(%x), dimensions={1}, is_stable=true, to_apply=%lt
  %sc = f32[8,3] scatter(%t, %i, %u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%sum
  %z = f32[] constant(0)
  %ss = f32[4,6] select-and-scatter(%x, %src, %z), window={size=2x3 stride=2x3}, select=%ge, scatter=%sum
  ROOT %r = (f32[2,2], f32[4,6], f32[8,3], f32[4,6]) tuple(%rw, %so, %sc, %ss)
}
)";
  expect_same_as_hlo(mlir, hlo);
  // reduce-window: 4 outputs, each a max over 2*3 elements (5 comparisons): 20 FLOPs.
  const auto parsed = parse_stablehlo(mlir, "ops.mlir");
  const hlo::Instruction* rw = find(parsed, hlo::Opcode::kReduceWindow);
  ASSERT_NE(rw, nullptr);
  EXPECT_EQ(rw->attribute(hlo::AttrId::kWindow)->value, "{size=2x3 stride=2x3 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1}");
}

// lax.cond's form: branches without block arguments that use the function's
// values; they become each branch's operand, as XLA's conversion does.
TEST(StableHloOps, CaseWithImplicitCaptures) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "stablehlo.case"(%arg0) ({
      %1 = stablehlo.exponential %arg1 : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }, {
      %1 = stablehlo.multiply %arg1, %arg2 : tensor<4xf32>
      stablehlo.return %1 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";
  const std::string hlo = R"(HloModule m
%b0 (t: (f32[4])) -> f32[4] {
  %t = (f32[4]) parameter(0)
  %x = f32[4] get-tuple-element(%t), index=0
  ROOT %e = f32[4] exponential(%x)
}
%b1 (t: (f32[4], f32[4])) -> f32[4] {
  %t = (f32[4], f32[4]) parameter(0)
  %x = f32[4] get-tuple-element(%t), index=0
  %y = f32[4] get-tuple-element(%t), index=1
  ROOT %m = f32[4] multiply(%x, %y)
}
ENTRY %main (i: s32[], a: f32[4], b: f32[4]) -> f32[4] {
  %i = s32[] parameter(0)
  %a = f32[4] parameter(1)
  %b = f32[4] parameter(2)
  %t0 = (f32[4]) tuple(%a)
  %t1 = (f32[4], f32[4]) tuple(%a, %b)
  ROOT %c = f32[4] conditional(%i, %t0, %t1), branch_computations={%b0, %b1}
}
)";
  expect_same_as_hlo(mlir, hlo);
  const auto parsed = parse_stablehlo(mlir, "ops.mlir");
  const hlo::Instruction* c = find(parsed, hlo::Opcode::kConditional);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->operand_count(), 3u);  // the index and one tuple of captured values per branch
}

// A while whose condition and body use values of the function: the
// captured array rides along as an extra loop value (as XLA's conversion
// passes captures); the captured constant limit is re-created in the
// condition, so the trip count stays visible.
TEST(StableHloOps, WhileWithImplicitCaptures) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %n = stablehlo.constant dense<10> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<4xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %n,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      %2 = stablehlo.multiply %iterArg_0, %arg1 : tensor<4xf32>
      stablehlo.return %1, %2 : tensor<i32>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
})";
  const std::string hlo = R"(HloModule m
%cond (t: (s32[], f32[4], f32[4])) -> pred[] {
  %t = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (t: (s32[], f32[4], f32[4])) -> (s32[], f32[4], f32[4]) {
  %t = (s32[], f32[4], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %v = f32[4] get-tuple-element(%t), index=1
  %w = f32[4] get-tuple-element(%t), index=2
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %v1 = f32[4] multiply(%v, %w)
  ROOT %r = (s32[], f32[4], f32[4]) tuple(%i1, %v1, %w)
}
ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4], f32[4]) tuple(%zero, %a, %b)
  %w = (s32[], f32[4], f32[4]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4] get-tuple-element(%w), index=1
}
)";
  expect_same_as_hlo(mlir, hlo);
  // 10 trips (0..10 step 1) of add (1) and multiply (4), 11 compares.
  EXPECT_DOUBLE_EQ(roofline(parse_stablehlo(mlir, "while.mlir")).total.flops, 10 * (1 + 4) + 11);
}

// chlo ops with an HLO op (erf, tan, top_k) and chlo.broadcast_* (each
// operand broadcast to the result, size-1 dimensions reshaped away first).
TEST(StableHloOps, ChloOps) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<8x1xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x3xf32>, tensor<8x3xi32>, tensor<8x16xf32>, tensor<8x16xi1>) {
    %0 = chlo.erf %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %1 = chlo.tan %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %2:2 = chlo.top_k(%arg0, k = 3) : tensor<8x16xf32> -> (tensor<8x3xf32>, tensor<8x3xi32>)
    %3 = chlo.broadcast_add %arg1, %arg2 : (tensor<16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32>
    %4 = chlo.broadcast_compare %arg0, %arg1 {comparison_direction = #chlo<comparison_direction GT>} : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xi1>
    return %0, %1, %2#0, %2#1, %3, %4 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x3xf32>, tensor<8x3xi32>, tensor<8x16xf32>, tensor<8x16xi1>
  }
})";
  const std::string hlo = R"(HloModule m
ENTRY %main (x: f32[8,16], v: f32[16], c: f32[8,1]) -> (f32[8,16], f32[8,16], f32[8,3], s32[8,3], f32[8,16], pred[8,16]) {
  %x = f32[8,16] parameter(0)
  %v = f32[16] parameter(1)
  %c = f32[8,1] parameter(2)
  %e = f32[8,16] erf(%x)
  %t = f32[8,16] tan(%x)
  %k = (f32[8,3], s32[8,3]) topk(%x), k=3, largest=true
  %k0 = f32[8,3] get-tuple-element(%k), index=0
  %k1 = s32[8,3] get-tuple-element(%k), index=1
  %b1 = f32[8,16] broadcast(%v), dimensions={1}
  %r = f32[8] reshape(%c)
  %b2 = f32[8,16] broadcast(%r), dimensions={0}
  %a = f32[8,16] add(%b1, %b2)
  %b3 = f32[8,16] broadcast(%v), dimensions={1}
  %g = pred[8,16] compare(%x, %b3), direction=GT
  ROOT %out = (f32[8,16], f32[8,16], f32[8,3], s32[8,3], f32[8,16], pred[8,16]) tuple(%e, %t, %k0, %k1, %a, %g)
}
)";
  expect_same_as_hlo(mlir, hlo);
}

// The errors of reading `mlir` as `file` ("" when it reads: the caller's
// expectations then fail naming the missing text).
std::string errors_of(const std::string& mlir, const char* file) {
  const auto r = parse_stablehlo(mlir, file);
  EXPECT_FALSE(r.ok()) << mlir;
  return r.ok() ? "" : format_all(r.errors());
}

TEST(StableHloOps, MalformedReplicaGroupsAreAnErrorNotAHang) {
  // A '-' with no digits (found by the fuzzer: the group reader looped on
  // it) and an id beyond int64: each an error naming the attribute.
  for (const std::string groups : {"[[0, -, 2, 3]]", "[[0, 1, 2, 99999999999999999999]]"}) {
    const std::string mlir = R"(module @m attributes {mhlo.num_partitions = 4 : i32} {
  func.func @main(%arg0: tensor<8x16xf32>) -> tensor<8x64xf32> {
    %0 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<)" +
                             groups + R"(> : tensor<1x4xi64>, use_global_device_ids}> : (tensor<8x16xf32>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
})";
    const std::string e = errors_of(mlir, "groups.mlir");
    EXPECT_NE(e.find("groups.mlir:3:"), std::string::npos) << e;
    EXPECT_NE(e.find("needs a dense<[[...]]> value"), std::string::npos) << e;
  }
}

TEST(StableHloOps, AnIntegerBeyondInt64InAnAttributeIsAnErrorNotZero) {
  // Read as 0 before: a transpose permutation (a bare number, caught by the
  // lexer) and a convolution's padding (inside dense<...>).
  const std::vector<std::string> ops = {
      "%0 = stablehlo.transpose %arg0, dims = [1, 99999999999999999999] : (tensor<8x16xf32>) -> tensor<16x8xf32>",
      "%0 = \"stablehlo.convolution\"(%arg1, %arg2) <{batch_group_count = 1 : i64, dimension_numbers = "
      "#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, padding = "
      "dense<[[0, 0], [0, -99999999999999999999]]> : tensor<2x2xi64>}> : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> "
      "tensor<1x6x6x16xf32>"};
  for (const std::string& op : ops) {
    const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<1x8x8x3xf32>, %arg2: tensor<3x3x3x16xf32>) -> tensor<8x16xf32> {
    )" + op + R"(
    return %arg0 : tensor<8x16xf32>
  }
})";
    const std::string e = errors_of(mlir, "range.mlir");
    EXPECT_NE(e.find("range.mlir:3:"), std::string::npos) << e;
    EXPECT_NE(e.find("99999999999999999999' is out of range (int64)"), std::string::npos) << e;
  }
  // A result index beyond int64 named result #0 before.
  const std::string use = R"(module @m {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0:2 = "stablehlo.optimization_barrier"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %0#18446744073709551617 : tensor<4xf32>
  }
})";
  const std::string e = errors_of(use, "use.mlir");
  EXPECT_NE(e.find("use.mlir:4:12: error: '%0' has no result #18446744073709551617"), std::string::npos) << e;
}

// A reduce, sort or scatter region using a value of the function (an
// implicit capture): XLA's conversion to HLO rejects it ("requires all
// operands to be defined in the parent region for export"); so does the
// reader, at the use, naming the value and the op.
TEST(StableHloOps, CapturesInReducerRegionsAreErrorsAtTheUse) {
  const std::string reduce = R"(module @m {
  func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<f32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %1 = stablehlo.add %a, %b : tensor<f32>
      %2 = stablehlo.multiply %1, %arg1 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }
    return %0 : tensor<4xf32>
  }
})";
  const auto r = parse_stablehlo(reduce, "cap.mlir");
  ASSERT_FALSE(r.ok());
  const std::string e = format_all(r.errors());
  EXPECT_NE(e.find("cap.mlir:7:35"), std::string::npos) << e;
  EXPECT_NE(e.find("'%arg1' is defined outside this 'stablehlo.reduce' region"), std::string::npos) << e;

  // A comparator region (generic syntax) capturing a constant: rejected too.
  const std::string sort = R"(module @m {
  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %c = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64, is_stable = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %c : tensor<f32>
      %2 = stablehlo.compare  LT, %1, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    }) : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
})";
  const auto s = parse_stablehlo(sort, "cap.mlir");
  ASSERT_FALSE(s.ok());
  const std::string se = format_all(s.errors());
  EXPECT_NE(se.find("cap.mlir:6:30"), std::string::npos) << se;
  EXPECT_NE(se.find("'%c' is defined outside this 'stablehlo.sort' region"), std::string::npos) << se;
}

// composite: a call of its decomposition.
TEST(StableHloOps, CompositeCallsItsDecomposition) {
  const std::string mlir = R"(module @m {
  func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.composite "my.square" %arg0 {composite_attributes = {scale = 1 : i64}, decomposition = @my.square.impl, version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @my.square.impl(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";
  const auto r = roofline(parse_stablehlo(mlir, "composite.mlir"));
  EXPECT_DOUBLE_EQ(r.total.flops, 4);  // the decomposition's multiply on 4 elements
}

}  // namespace
}  // namespace tpusim::stablehlo
