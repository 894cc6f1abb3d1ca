// HLO -> StableHLO printer (isa/stablehlo/printer.h) and the round trip
// HLO -> StableHLO -> HLO. Figures are checked equal to the original HLO's;
// attributes that matter for the cost (layouts, fusion kinds, replica groups,
// channel ids, custom-call targets and configs, shardings, device counts)
// are checked by value after the trip.
#include <gtest/gtest.h>

#include <filesystem>

#include "isa/hlo/analysis.h"
#include "isa/hlo/attribute_values.h"
#include "isa/hlo/parser.h"
#include "isa/stablehlo/printer.h"
#include "isa/stablehlo/stablehlo.h"

namespace tpusim::stablehlo {
namespace {

constexpr const char* kModule = R"(HloModule m, num_partitions=2

%fused (p0: f32[8,16], p1: f32[8,16]) -> f32[8,16] {
  %p0 = f32[8,16]{0,1} parameter(0)
  %p1 = f32[8,16]{0,1} parameter(1)
  ROOT %a = f32[8,16]{0,1} add(%p0, %p1)
}

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[8,16], b: f32[16,4]) -> f32[8,4] {
  %a = f32[8,16]{0,1} parameter(0), sharding={devices=[2,1]0,1}
  %b = f32[16,4] parameter(1)
  %f = f32[8,16]{0,1} fusion(%a, %a), kind=kLoop, calls=%fused
  %d = f32[8,4] dot(%f, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(f)/dot"}
  %ar = f32[8,4] all-reduce(%d), replica_groups={{0,1}}, channel_id=3, to_apply=%sum
  ROOT %cc = f32[8,4] custom-call(%ar), custom_call_target="MyKernel", backend_config="{\"k\":1}"
}
)";

std::unique_ptr<hlo::Module> parse(const std::string& text) {
  auto m = hlo::parse_hlo_module(text, "m.hlo");
  EXPECT_TRUE(m.ok()) << format_all(m.errors());
  return m.ok() ? std::move(m).value() : nullptr;
}

// Parses the printed StableHLO back into HLO modules.
hlo::ParsedFile round_trip(const std::string& hlo_text) {
  hlo::ParsedFile original = hlo::parse_hlo(hlo_text, "in.hlo");
  EXPECT_TRUE(original.ok()) << format_all(original.errors());
  std::string mlir;
  for (const auto& m : original.modules) mlir += (mlir.empty() ? "" : "// -----\n") + print_stablehlo(*m.value());
  hlo::ParsedFile back = parse_stablehlo(mlir, "out.mlir");
  EXPECT_TRUE(back.ok()) << format_all(back.errors()) << "\n" << mlir;
  return back;
}

const hlo::Instruction* find(const hlo::Module& m, hlo::Opcode op) {
  for (const hlo::Computation* c : m.computations()) {
    for (const hlo::Instruction* i : c->instructions()) {
      if (i->opcode() == op) return i;
    }
  }
  return nullptr;
}

void expect_equal_totals(const hlo::Module& a, const hlo::Module& b, const std::string& what) {
  const auto ra = hlo::roofline(a, hlo::RooflineRates::example_chip());
  const auto rb = hlo::roofline(b, hlo::RooflineRates::example_chip());
  EXPECT_DOUBLE_EQ(ra.total.flops, rb.total.flops) << what;
  EXPECT_DOUBLE_EQ(ra.total.transcendentals, rb.total.transcendentals) << what;
  EXPECT_DOUBLE_EQ(ra.total.bytes_accessed, rb.total.bytes_accessed) << what;
  EXPECT_DOUBLE_EQ(ra.total.collective_bytes, rb.total.collective_bytes) << what;
}

TEST(StableHloPrinter, WritesSpecNamesAndXlaImporterForms) {
  const auto m = parse(kModule);
  ASSERT_NE(m, nullptr);
  const std::string text = print_stablehlo(*m);
  for (const char* want : {
           "module @m attributes {mhlo.num_partitions = 2 : i32",
           "func.func @main(%a: tensor<8x16xf32> {mhlo.sharding = \"{devices=[2,1]0,1}\", xla_shape = \"f32[8,16]{0,1}\"}",
           "\"mhlo.fusion\"(%a, %a) ({",
           "^bb0(%p0: tensor<8x16xf32>, %p1: tensor<8x16xf32>):",
           "fusion_kind = #mhlo<fusion_kind kLoop>",
           "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], "
           "lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>",
           "loc(\"jit(f)/dot\")",
           "\"stablehlo.all_reduce\"(%d) ({",
           "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>",
           "channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>",
           "{call_target_name = \"MyKernel\", backend_config = \"{\\\"k\\\":1}\"}",
           "\"func.return\"(%cc) : (tensor<8x4xf32>) -> ()",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
}

TEST(StableHloPrinter, RoundTripKeepsWhatTheCostDependsOn) {
  const auto original = parse(kModule);
  ASSERT_NE(original, nullptr);
  const auto back = round_trip(kModule);
  ASSERT_TRUE(back.ok());
  const hlo::Module& m = *back.modules.at(0).value();
  expect_equal_totals(*original, m, "hand-written module");

  const hlo::Instruction* fusion = find(m, hlo::Opcode::kFusion);
  ASSERT_NE(fusion, nullptr);
  EXPECT_EQ(hlo::word_attr(*fusion, hlo::AttrId::kKind).value_or(""), "kLoop");
  EXPECT_EQ(fusion->shape().to_string(), "f32[8,16]{0,1}");
  // The fused computation's parameters take the operands' layout.
  EXPECT_EQ(fusion->fused_computation()->parameters().at(0)->shape().to_string(), "f32[8,16]{0,1}");

  const hlo::Instruction* ar = find(m, hlo::Opcode::kAllReduce);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->attribute(hlo::AttrId::kReplicaGroups)->value, "{{0,1}}");
  EXPECT_EQ(hlo::int_attr(*ar, hlo::AttrId::kChannelId).value_or(0), 3);

  const hlo::Instruction* cc = find(m, hlo::Opcode::kCustomCall);
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cc->attribute(hlo::AttrId::kCustomCallTarget)->value, "\"MyKernel\"");
  EXPECT_EQ(cc->attribute(hlo::AttrId::kBackendConfig)->value, "\"{\\\"k\\\":1}\"");

  const hlo::Instruction* a = m.entry()->parameters().at(0);
  EXPECT_EQ(a->attribute(hlo::AttrId::kSharding)->value, "{devices=[2,1]0,1}");
  EXPECT_EQ(a->shape().to_string(), "f32[8,16]{0,1}");
  ASSERT_NE(m.attribute(hlo::AttrId::kNumPartitions), nullptr);
  EXPECT_EQ(m.attribute(hlo::AttrId::kNumPartitions)->value, "2");
}

// Ops whose HLO attributes have a StableHLO specification form: printed in
// that form (as JAX prints them), none left as an `hlo.*` string, and read
// back to the same HLO attributes and totals.
constexpr const char* kSpecModule = R"(HloModule spec, num_partitions=4

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=GE
}

%lt (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(%a, %b), direction=LT
}

ENTRY %main (a: f32[4,4], idx: s32[5,1], img: f32[1,8,8,3], k: f32[3,3,3,16], i: s32[]) -> (f32[5,11], f32[1,4], f32[4,4], f32[1,8,8,16], f32[4,4], f32[4,4], f32[4,16], f32[4,4], f32[1,4], f32[4,4], f32[4,4], f32[4,4]) {
  %a = f32[4,4] parameter(0)
  %idx = s32[5,1] parameter(1)
  %img = f32[1,8,8,3] parameter(2)
  %k = f32[3,3,3,16] parameter(3)
  %i = s32[] parameter(4)
  %z = f32[] constant(0)
  %p = f32[5,11] pad(%a, %z), padding=1_0_0x0_1_2
  %ds = f32[1,4] dynamic-slice(%a, %i, %i), dynamic_slice_sizes={1,4}
  %g = f32[5,4] gather(%a, %idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true
  %sc = f32[4,4] scatter(%a, %idx, %g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=%add
  %cv = f32[1,8,8,16] convolution(%img, %k), window={size=3x3 pad=1_1x1_1 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f
  %rw = f32[2,2] reduce-window(%a, %z), window={size=2x2 stride=2x2}, to_apply=%add
  %ss = f32[4,4] select-and-scatter(%a, %rw, %z), window={size=2x2 stride=2x2}, select=%ge, scatter=%add
  %so = f32[4,4] sort(%a), dimensions={1}, is_stable=true, to_apply=%lt
  %ag = f32[4,16] all-gather(%a), channel_id=1, replica_groups=[1,4]<=[4], dimensions={1}, use_global_device_ids=true
  %ata = f32[4,4] all-to-all(%a), channel_id=2, replica_groups={{0,1},{2,3}}, dimensions={0}
  %rs = f32[1,4] reduce-scatter(%a), channel_id=3, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=%add
  %cp = f32[4,4] collective-permute(%a), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %rp = f32[4,4] reduce-precision(%a), exponent_bits=5, mantissa_bits=10
  %ar = f32[4,4] all-reduce(%rp), replica_groups={{0,2,3},{1}}, to_apply=%add
  ROOT %t = (f32[5,11], f32[1,4], f32[4,4], f32[1,8,8,16], f32[4,4], f32[4,4], f32[4,16], f32[4,4], f32[1,4], f32[4,4], f32[4,4], f32[4,4]) tuple(%p, %ds, %sc, %cv, %ss, %so, %ag, %ata, %rs, %cp, %ar, %rp)
}
)";

TEST(StableHloPrinter, WritesSpecificationAttributes) {
  const auto m = parse(kSpecModule);
  ASSERT_NE(m, nullptr);
  const std::string text = print_stablehlo(*m);
  for (const char* want : {
           "edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 0, 1>, interior_padding = array<i64: 0, 2>",
           "slice_sizes = array<i64: 1, 4>",
           "dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], "
           "index_vector_dim = 1>",
           "indices_are_sorted = true",
           "scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
           "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>",
           "unique_indices = true",
           "window_strides = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, rhs_dilation = array<i64: 1, 1>, "
           "padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, window_reversal = array<i1: true, false>",
           "dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>",
           "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, base_dilations = array<i64: 1, 1>, "
           "window_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>",
           "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>, padding = dense<[[0, 0], [0, 0]]> : "
           "tensor<2x2xi64>",
           "dimension = 1 : i64, is_stable = true",
           "replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>",  // the iota form [1,4]<=[4], expanded
           "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>",
           "all_gather_dim = 1 : i64",
           "use_global_device_ids",
           "split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 2 : i64",
           "scatter_dimension = 0 : i64",
           "source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>",
           "exponent_bits = 5 : i32, mantissa_bits = 10 : i32",
           "replica_groups = dense<[[0, 2, 3], [1, -1, -1]]> : tensor<2x3xi64>",  // uneven groups padded with -1
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  for (const char* gone : {"hlo.padding", "hlo.dynamic_slice_sizes", "hlo.offset_dims", "hlo.update_window_dims",
                           "hlo.window", "hlo.dim_labels", "hlo.dimensions", "hlo.is_stable", "hlo.replica_groups",
                           "hlo.channel_id", "hlo.source_target_pairs", "hlo.use_global_device_ids", "hlo.exponent_bits",
                           "hlo.slice_sizes", "hlo.indices_are_sorted", "hlo.unique_indices", "hlo.index_vector_dim"}) {
    EXPECT_EQ(text.find(gone), std::string::npos) << gone << "\n" << text;
  }

  const auto back = round_trip(kSpecModule);
  ASSERT_TRUE(back.ok());
  const hlo::Module& r = *back.modules.at(0).value();
  expect_equal_totals(*m, r, "specification attributes");
  const auto attr = [&](hlo::Opcode op, hlo::AttrId id) -> std::string {
    const hlo::Instruction* i = find(r, op);
    const hlo::Attribute* a = i == nullptr ? nullptr : i->attribute(id);
    return a == nullptr ? "<none>" : std::string(a->value);
  };
  EXPECT_EQ(attr(hlo::Opcode::kPad, hlo::AttrId::kPadding), "1_0_0x0_1_2");
  EXPECT_EQ(attr(hlo::Opcode::kDynamicSlice, hlo::AttrId::kDynamicSliceSizes), "{1,4}");
  EXPECT_EQ(attr(hlo::Opcode::kGather, hlo::AttrId::kSliceSizes), "{1,4}");
  EXPECT_EQ(attr(hlo::Opcode::kGather, hlo::AttrId::kIndicesAreSorted), "true");
  EXPECT_EQ(attr(hlo::Opcode::kScatter, hlo::AttrId::kUpdateWindowDims), "{1}");
  EXPECT_EQ(attr(hlo::Opcode::kScatter, hlo::AttrId::kUniqueIndices), "true");
  EXPECT_EQ(attr(hlo::Opcode::kConvolution, hlo::AttrId::kDimLabels), "b01f_01io->b01f");
  const auto conv_window = hlo::window_attr(*find(r, hlo::Opcode::kConvolution));
  ASSERT_TRUE(conv_window.has_value());
  ASSERT_EQ(conv_window->size(), 2U);
  EXPECT_EQ((*conv_window)[0].size, 3);
  EXPECT_EQ((*conv_window)[0].pad_low, 1);
  EXPECT_TRUE((*conv_window)[0].reversal);
  EXPECT_FALSE((*conv_window)[1].reversal);
  const auto rw_window = hlo::window_attr(*find(r, hlo::Opcode::kReduceWindow));
  ASSERT_TRUE(rw_window.has_value());
  EXPECT_EQ((*rw_window)[1].stride, 2);
  EXPECT_EQ(attr(hlo::Opcode::kSort, hlo::AttrId::kDimensions), "{1}");
  EXPECT_EQ(attr(hlo::Opcode::kAllGather, hlo::AttrId::kReplicaGroups), "{{0,1,2,3}}");
  EXPECT_EQ(attr(hlo::Opcode::kAllGather, hlo::AttrId::kChannelId), "1");
  EXPECT_EQ(attr(hlo::Opcode::kAllGather, hlo::AttrId::kDimensions), "{1}");
  EXPECT_EQ(attr(hlo::Opcode::kAllGather, hlo::AttrId::kUseGlobalDeviceIds), "true");
  EXPECT_EQ(attr(hlo::Opcode::kAllToAll, hlo::AttrId::kDimensions), "{0}");
  EXPECT_EQ(attr(hlo::Opcode::kReduceScatter, hlo::AttrId::kDimensions), "{0}");
  EXPECT_EQ(attr(hlo::Opcode::kCollectivePermute, hlo::AttrId::kSourceTargetPairs), "{{0,1},{1,2},{2,3},{3,0}}");
  EXPECT_EQ(attr(hlo::Opcode::kAllReduce, hlo::AttrId::kReplicaGroups), "{{0,2,3},{1}}");
  EXPECT_EQ(attr(hlo::Opcode::kReducePrecision, hlo::AttrId::kMantissaBits), "10");
}

// Files written by an earlier `tpusim convert`, with these attributes as
// `hlo.*` strings, still read.
TEST(StableHloPrinter, ReadsEarlierHloAttributeForms) {
  const std::string mlir = R"(module @old attributes {hlo.num_partitions = "2"} {
  func.func @main(%a: tensor<1x8x8x3xf32>, %k: tensor<3x3x3x16xf32>, %x: tensor<4x4xf32>) -> (tensor<1x8x8x16xf32>, tensor<5x11xf32>, tensor<4x4xf32>) {
    %c = "stablehlo.convolution"(%a, %k) {hlo.window = "{size=3x3 pad=1_1x1_1}", hlo.dim_labels = "b01f_01io->b01f"} : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x8x8x16xf32>
    %z = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %p = "stablehlo.pad"(%x, %z) {hlo.padding = "1_0_0x0_1_2"} : (tensor<4x4xf32>, tensor<f32>) -> tensor<5x11xf32>
    %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%u: tensor<f32>, %v: tensor<f32>):
      %s = "stablehlo.add"(%u, %v) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {hlo.replica_groups = "{{0,1}}", hlo.channel_id = "7"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    "func.return"(%c, %p, %r) : (tensor<1x8x8x16xf32>, tensor<5x11xf32>, tensor<4x4xf32>) -> ()
  }
})";
  const auto parsed = parse_stablehlo(mlir, "old.mlir");
  ASSERT_TRUE(parsed.ok()) << format_all(parsed.errors());
  const hlo::Module& m = *parsed.modules.at(0).value();
  EXPECT_EQ(find(m, hlo::Opcode::kConvolution)->attribute(hlo::AttrId::kDimLabels)->value, "b01f_01io->b01f");
  EXPECT_EQ(find(m, hlo::Opcode::kConvolution)->attribute(hlo::AttrId::kWindow)->value, "{size=3x3 pad=1_1x1_1}");
  EXPECT_EQ(find(m, hlo::Opcode::kPad)->attribute(hlo::AttrId::kPadding)->value, "1_0_0x0_1_2");
  EXPECT_EQ(find(m, hlo::Opcode::kAllReduce)->attribute(hlo::AttrId::kReplicaGroups)->value, "{{0,1}}");
  EXPECT_EQ(hlo::int_attr(*find(m, hlo::Opcode::kAllReduce), hlo::AttrId::kChannelId).value_or(0), 7);
}

// Operand precisions, a custom call's API version and the RNG algorithm in
// the specification's form, and back.
TEST(StableHloPrinter, WritesPrecisionApiVersionAndRngAlgorithm) {
  constexpr const char* text = R"(HloModule p

ENTRY %main (a: f32[8,16], b: f32[16,4], s: u64[2]) -> (f32[8,4], f32[8,4], (u64[2], u32[8])) {
  %a = f32[8,16] parameter(0)
  %b = f32[16,4] parameter(1)
  %s = u64[2] parameter(2)
  %d = f32[8,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,default}
  %cc = f32[8,4] custom-call(%d), custom_call_target="my_ffi", api_version=API_VERSION_TYPED_FFI
  %r = (u64[2], u32[8]) rng-bit-generator(%s), algorithm=rng_philox
  ROOT %t = (f32[8,4], f32[8,4], (u64[2], u32[8])) tuple(%d, %cc, %r)
}
)";
  const auto m = parse(text);
  ASSERT_NE(m, nullptr);
  const std::string mlir = print_stablehlo(*m);
  for (const char* want : {"precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision DEFAULT>]",
                           "api_version = 4 : i32", "rng_algorithm = #stablehlo<rng_algorithm PHILOX>"}) {
    EXPECT_NE(mlir.find(want), std::string::npos) << want << "\n" << mlir;
  }
  for (const char* gone : {"hlo.operand_precision", "hlo.api_version", "hlo.algorithm"}) {
    EXPECT_EQ(mlir.find(gone), std::string::npos) << gone << "\n" << mlir;
  }
  const auto back = round_trip(text);
  ASSERT_TRUE(back.ok());
  const hlo::Module& r = *back.modules.at(0).value();
  expect_equal_totals(*m, r, "precision, api version, rng algorithm");
  EXPECT_EQ(find(r, hlo::Opcode::kDot)->attribute("operand_precision")->value, "{highest,default}");
  EXPECT_EQ(find(r, hlo::Opcode::kCustomCall)->attribute(hlo::AttrId::kApiVersion)->value, "API_VERSION_TYPED_FFI");
  EXPECT_EQ(find(r, hlo::Opcode::kRngBitGenerator)->attribute(hlo::AttrId::kAlgorithm)->value, "rng_philox");
}

// A while with its trip count in the backend config, a pred conditional and a call.
TEST(StableHloPrinter, RoundTripsControlFlow) {
  constexpr const char* text = R"(HloModule loops

%cond (t: (s32[], f32[4])) -> pred[] {
  %t = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %n = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %v = f32[4] get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %v1 = f32[4] multiply(%v, %v)
  ROOT %r = (s32[], f32[4]) tuple(%i1, %v1)
}

%yes (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%x)
}

%no (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

%twice (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %s = f32[4] add(%x, %x)
}

ENTRY %main (p: pred[], v: f32[4]) -> f32[4] {
  %p = pred[] parameter(0)
  %v = f32[4] parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]) tuple(%zero, %v)
  %w = (s32[], f32[4]) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"10"}}
  %out = f32[4] get-tuple-element(%w), index=1
  %c = f32[4] conditional(%p, %out, %out), true_computation=%yes, false_computation=%no
  ROOT %k = f32[4] call(%c), to_apply=%twice
}
)";
  const auto original = parse(text);
  ASSERT_NE(original, nullptr);
  const std::string mlir = print_stablehlo(*original);
  EXPECT_NE(mlir.find("\"stablehlo.while\"(%init) ({"), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("\"stablehlo.if\"(%p, %out, %out) ({"), std::string::npos) << mlir;
  EXPECT_NE(mlir.find("func.call @twice(%c)"), std::string::npos) << mlir;
  const auto back = round_trip(text);
  ASSERT_TRUE(back.ok());
  const hlo::Module& m = *back.modules.at(0).value();
  expect_equal_totals(*original, m, "control flow");
  // 10 trips of multiply on f32[4] (40 FLOPs) and add on s32[] (10), 11 compares;
  // the conditional costs the maximum of its branches per figure, as XLA's cost
  // analysis does (negate: 4 FLOPs, exponential: 4 transcendentals); the call's add (4).
  const auto r = hlo::roofline(m, hlo::RooflineRates::example_chip());
  EXPECT_DOUBLE_EQ(r.total.flops, 40 + 10 + 11 + 4 + 4);
  EXPECT_DOUBLE_EQ(r.total.transcendentals, 4);
  const hlo::Instruction* w = find(m, hlo::Opcode::kWhile);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->attribute(hlo::AttrId::kBackendConfig)->value, "{\"known_trip_count\":{\"n\":\"10\"}}");
}

// A sample of the HLO corpus spanning op kinds: async pairs and collectives,
// tiled layouts and memory spaces, scatter/sort/custom-call, while with
// dynamic-update-slice, convolution, fusions, SPMD shardings. Every module
// keeps its roofline totals; scripts/roundtrip_corpus.py runs all of them.
TEST(StableHloPrinter, RoundTripsCorpusSample) {
  const std::filesystem::path dir = std::filesystem::path(TPUSIM_SHARED_DIR) / "refs" / "hlo-corpus" / "files";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "HLO corpus not found under " << dir << "; skipping";
  int checked = 0;
  for (const char* name : {
           "openxla_xla__xla__hlo__translate__hlo_to_mhlo__tests__import_async.hlo",
           "openxla_xla__xla__hlo__translate__hlo_to_mhlo__tests__layouts_and_names.hlo",
           "openxla_xla__xla__hlo__translate__hlo_to_mhlo__tests__memory_space.hlo",
           "openxla_xla__xla__translate__mhlo_to_lhlo_with_xla__tests__hlo_text_to_lhlo_no_opt.hlotxt.hlo",
           "openxla_xla__xla__backends__cpu__benchmarks__hlo__bench_scan_N2000_M3.hlo",
           "openxla_xla__xla__hlo__translate__hlo_to_mhlo__tests__operand_convert_for_convolution.hlo",
           "openxla_xla__xla__backends__gpu__tests__memory_bandwidth_fusion.hlo",
           "openxla_xla__xla__tools__hlo_opt__tests__gpu_hlo_collective_cse.hlo",
           "openxla_xla__xla__tools__tests__data__spmd.hlo",
           "openxla_xla__xla__service__mlir_gpu__tests__select_and_scatter.hlo",
       }) {
    const auto path = dir / name;
    if (!std::filesystem::exists(path)) continue;
    const hlo::ParsedFile original = hlo::parse_hlo_file(path.string());
    ASSERT_TRUE(original.ok()) << name;
    std::string hlo_text = original.source->text;
    const hlo::ParsedFile back = round_trip(hlo_text);
    ASSERT_TRUE(back.ok()) << name;
    ASSERT_EQ(back.modules.size(), original.modules.size()) << name;
    for (std::size_t i = 0; i < back.modules.size(); ++i) {
      expect_equal_totals(*original.modules[i].value(), *back.modules[i].value(), name);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace tpusim::stablehlo
