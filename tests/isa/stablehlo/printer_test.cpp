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
           "hlo.replica_groups = \"{{0,1}}\"",
           "hlo.channel_id = \"3\"",
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
