// One test per grammar form of the HLO text (the grammar catalogue of the HLO corpus).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "isa/hlo/attribute_values.h"
#include "isa/hlo/parser.h"
#include "isa/hlo/printer.h"

namespace tpusim::hlo {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parse_hlo_module(text, "test.hlo");
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : format_all(m.errors()));
  return m.ok() ? std::move(m.value()) : nullptr;
}

const Instruction* find(const Module& m, std::string_view name) {
  for (const Computation* c : m.computations())
    if (Instruction* i = c->find_instruction(name)) return i;
  return nullptr;
}

// Printing and re-parsing gives the same text again.
void expect_round_trip(const Module& m) {
  const std::string once = print_module(m);
  auto again = parse_hlo_module(once, "printed.hlo");
  ASSERT_TRUE(again.ok()) << once << "\n" << format_all(again.errors());
  EXPECT_EQ(print_module(*again.value()), once);
}

TEST(HloParser, ParsesModuleHeaderAttributes) {
  auto m = parse(R"(HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[524,524]{1,0:T(8,128)})->f32[524,524]{1,0:T(2,2)}}, input_output_alias={ {0}: (0, {}, may-alias), {}: (1, {}, must-alias) }, num_partitions=8, replica_count=2, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[]>}}, allow_spmd_sharding_propagation_to_output={true,true}

ENTRY main {
  ROOT p = f32[524,524] parameter(0)
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "jit_f");
  EXPECT_EQ(m->attributes().size(), 7u);
  ASSERT_NE(m->attribute(AttrId::kNumPartitions), nullptr);
  EXPECT_EQ(m->attribute(AttrId::kNumPartitions)->value, "8");
  expect_round_trip(*m);
}

TEST(HloParser, ParsesPercentAndBareNamesWithDotsAndHyphens) {
  auto m = parse(R"(HloModule m
ENTRY %main.3 {
  %Arg_0.1 = f32[] parameter(0)
  b = f32[] negate(%Arg_0.1)
  ROOT %after-all.3 = f32[] add(b, Arg_0.1)
})");
  ASSERT_TRUE(m);
  const Instruction* r = m->entry()->root();
  EXPECT_EQ(r->name(), "after-all.3");
  EXPECT_EQ(r->operand(0)->name(), "b");
  EXPECT_EQ(r->operand(1)->name(), "Arg_0.1");
  EXPECT_EQ(m->entry()->name(), "main.3");
}

TEST(HloParser, ParsesComputationSignatures) {
  auto m = parse(R"(HloModule m
%Identity1 (y: (f32[])) -> (f32[], f32[]) {
  %y = (f32[]) parameter(0)
  %g = f32[] get-tuple-element(%y), index=0
  ROOT %t = (f32[], f32[]) tuple(%g, %g)
}
update_s32 (lhs: s32[], rhs: s32[]) -> s32[] {
  lhs = s32[] parameter(0)
  rhs = s32[] parameter(1)
  ROOT add = s32[] add(lhs, rhs)
}
nosig {
  ROOT c = s32[] constant(1)
}
ENTRY main () -> s32[] {
  ROOT c = s32[] constant(2)
})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->computations().size(), 4u);
  const Computation* id = m->find_computation("Identity1");
  ASSERT_TRUE(id && id->has_signature());
  EXPECT_EQ(id->signature_params()[0].name, "y");
  EXPECT_TRUE(id->signature_params()[0].shape->is_tuple());
  EXPECT_EQ(id->signature_result()->to_string(), "(f32[], f32[])");
  EXPECT_FALSE(m->find_computation("nosig")->has_signature());
  EXPECT_EQ(m->entry()->name(), "main");
  expect_round_trip(*m);
}

TEST(HloParser, ParsesTypedAndUntypedOperands) {
  auto m = parse(R"(HloModule m
ENTRY e {
  x = f32[2]{0} parameter(0)
  t = (f32[2]{0}) tuple(x)
  a = f32[2] add(f32[2]{0} %x, x)
  ROOT w = (f32[2]{0}) opt-barrier((f32[2]{0}) %t)
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(find(*m, "a")->operand(0)->name(), "x");
  EXPECT_EQ(find(*m, "w")->operand(0)->name(), "t");
  EXPECT_EQ(find(*m, "x")->users().size(), 2u);  // t and a (a uses x twice, counted once)
}

TEST(HloParser, ParsesEveryElementType) {
  for (const char* t : {"pred", "s4", "s8", "s16", "s32", "s64", "u4", "u8", "u16", "u32", "u64", "f16", "bf16", "f32",
                        "f64", "c64", "c128", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "f8e4m3b11fnuz",
                        "f8e4m3", "f8e3m4", "f8e8m0fnu", "f4e2m1fn", "s2", "u2", "s1", "u1"}) {
    auto m = parse(std::string("HloModule m\nENTRY e {\n  ROOT p = ") + t + "[3]{0} parameter(0)\n}\n");
    ASSERT_TRUE(m) << t;
    EXPECT_EQ(element_type_name(m->entry()->root()->shape().element_type()), t);
  }
  auto tok = parse("HloModule m\nENTRY e {\n  ROOT t = token[] after-all()\n}\n");
  ASSERT_TRUE(tok);
  EXPECT_TRUE(tok->entry()->root()->shape().is_token());
  // Sub-byte types pack: s4[3] = 12 bits = 2 bytes.
  EXPECT_EQ(Shape(ElementType::kS4, {3}).byte_size(), 2);
}

TEST(HloParser, ParsesDynamicDimensions) {
  auto m = parse(R"(HloModule m, entry_computation_layout={(f32[?,784]{1,0})->f32[?,784]{1,0}}
ENTRY e {
  ROOT p = s32[2,<=2,2] parameter(0)
})");
  ASSERT_TRUE(m);
  const Shape& s = m->entry()->root()->shape();
  EXPECT_FALSE(s.is_dynamic(0));
  EXPECT_TRUE(s.is_dynamic(1));
  EXPECT_EQ(s.dim(1), 2);
  EXPECT_EQ(s.to_string(), "s32[2,<=2,2]");
  expect_round_trip(*m);
}

TEST(HloParser, ParsesTpuTiledLayoutsAndMemorySpace) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[512,1024]{1,0:T(8,128)(2,1)S(1)} parameter(0)
  b = f32[<=4194304]{0:T(1024)} parameter(1)
  c = s4[128,128]{1,0:T(8,128)(2,1)E(4)} parameter(2)
  ROOT d = f32[2,2]{0,1:S(1)} parameter(3)
})");
  ASSERT_TRUE(m);
  const Layout& l = *find(*m, "a")->shape().layout();
  EXPECT_EQ(l.minor_to_major, (std::vector<std::int64_t>{1, 0}));
  ASSERT_EQ(l.tiles.size(), 2u);
  EXPECT_EQ(l.tiles[0].dims, (std::vector<std::int64_t>{8, 128}));
  EXPECT_EQ(l.tiles[1].dims, (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(l.memory_space, 1);
  EXPECT_EQ(find(*m, "a")->shape().to_string(), "f32[512,1024]{1,0:T(8,128)(2,1)S(1)}");
  EXPECT_EQ(find(*m, "c")->shape().layout()->element_size_bits, 4);
  // Rarer layout items are kept verbatim.
  auto other = parse("HloModule m\nENTRY e {\n ROOT p = f32[8,128]{1,0:D(D,C)T(8,128)L(2)#(s64)*(s32)S(2)M(8)} parameter(0)\n}\n");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->entry()->root()->shape().to_string(), "f32[8,128]{1,0:T(8,128)S(2)D(D,C)L(2)#(s64)*(s32)M(8)}");
  expect_round_trip(*other);
  EXPECT_EQ(find(*m, "d")->shape().layout()->memory_space, 1);
  expect_round_trip(*m);
}

TEST(HloParser, ParsesTupleAndBufferShapes) {
  auto m = parse(R"(HloModule m
ENTRY e {
  z = ((f32[]), (f32[],f32[])) parameter(0)
  b = b(f32[]) parameter(1)
  ROOT no_op = () tuple()
})");
  ASSERT_TRUE(m);
  const Shape& z = find(*m, "z")->shape();
  ASSERT_TRUE(z.is_tuple());
  EXPECT_EQ(z.tuple_elements()[1].tuple_elements().size(), 2u);
  EXPECT_EQ(z.to_string(), "((f32[]), (f32[], f32[]))");
  EXPECT_TRUE(find(*m, "b")->shape().is_buffer());
  EXPECT_EQ(find(*m, "b")->shape().to_string(), "b(f32[])");
  EXPECT_TRUE(m->entry()->root()->shape().tuple_elements().empty());
  expect_round_trip(*m);
}

TEST(HloParser, ParsesConstantsOfEveryForm) {
  auto m = parse(R"(HloModule m
ENTRY e {
  i = s8[] constant(-3)
  f = f32[] constant(1e-12)
  t = pred[] constant(true)
  inf = f32[] constant(inf)
  ninf = bf16[] constant(-inf)
  nan = f32[] constant(nan)
  a1 = s32[3]{0} constant({1, 2, 3})
  a2 = f32[2,2] constant({ { 1.5, 2 }, { -3, 4e5 } })
  a3 = pred[1,1,2] constant({ { { 1, 0 } } })
  big = s32[15]{0} constant({...})
  empty = bf16[0]{0} constant({})
  cplx = c64[] constant((1, 0))
  ROOT tup = (s32[], f32[2]) constant((1, {2, 3}))
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(find(*m, "a2")->literal(), "{ { 1.5, 2 }, { -3, 4e5 } }");
  EXPECT_EQ(find(*m, "big")->literal(), "{...}");
  EXPECT_EQ(find(*m, "empty")->literal(), "{}");
  EXPECT_EQ(find(*m, "ninf")->literal(), "-inf");
  expect_round_trip(*m);
}

TEST(HloParser, ParsesWindowAndDimLabels) {
  auto m = parse(R"(HloModule m
ENTRY e {
  x = f32[1,9,9,4] parameter(0)
  k = f32[3,3,4,8] parameter(1)
  ROOT c = f32[1,5,5,8] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}, dim_labels=b01f_01io->b01f
})");
  ASSERT_TRUE(m);
  const Instruction& c = *m->entry()->root();
  const Window w = *window_attr(c);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].size, 3);
  EXPECT_EQ(w[1].stride, 2);
  EXPECT_EQ(w[0].pad_low, 1);
  EXPECT_EQ(w[0].pad_high, 1);
  const ConvDimLabels d = *dim_labels_attr(c);
  EXPECT_EQ(d.input_batch, 0);
  EXPECT_EQ(d.input_feature, 3);
  EXPECT_EQ(d.input_spatial, (Ints{1, 2}));
  EXPECT_EQ(d.kernel_input_feature, 2);
  EXPECT_EQ(d.kernel_output_feature, 3);
  EXPECT_EQ(d.output_feature, 3);
}

TEST(HloParser, ParsesSliceStridesAndPadding) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = s32[3,4] parameter(0)
  z = s32[] constant(0)
  s = s32[1,2] slice(a), slice={[1:2:1], [0:4:2]}
  // dim 0: 2 + 4 + 3 + (3-1)*1 = 11; dim 1: 3 + 5 + 4 + (4-1)*3 = 21.
  ROOT p = s32[11,21] pad(a, z), padding=2_4_1x3_5_3
})");
  ASSERT_TRUE(m);
  const auto r = *slice_attr(*find(*m, "s"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].stride, 2);
  const auto p = *padding_attr(*find(*m, "p"));
  EXPECT_EQ(p[1].interior, 3);
  EXPECT_EQ(p[0].high, 4);
}

TEST(HloParser, ParsesReplicaGroupsListsAndIotaForms) {
  auto m = parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=add
  b = f32[8] all-reduce(p), replica_groups={}, to_apply=add
  c = f32[8] all-reduce(p), replica_groups=[2,4]<=[8], to_apply=add, channel_id=1, use_global_device_ids=true
  ROOT d = f32[8] all-reduce(p), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=add
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(replica_groups_attr(*find(*m, "a"))->groups, (std::vector<Ints>{{0, 1}, {2, 3}}));
  EXPECT_TRUE(replica_groups_attr(*find(*m, "b"))->groups.empty());
  // iota(8) cut into 2 groups of 4.
  EXPECT_EQ(replica_groups_attr(*find(*m, "c"))->groups, (std::vector<Ints>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // iota(8) as [4,2] = {{0,1},{2,3},{4,5},{6,7}}, transposed to [2,4] =
  // {{0,2,4,6},{1,3,5,7}}.
  EXPECT_EQ(replica_groups_attr(*find(*m, "d"))->groups, (std::vector<Ints>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  expect_round_trip(*m);
}

TEST(HloParser, ParsesMetadataBackendConfigAndFrontendAttributes) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(0), metadata={op_type="Log" op_name="cond/Log" source_file="f.py" source_line=12 stack_frame_id=1}
  b = f32[] negate(a), backend_config={"fusion_config": {kind: "__ynn_fusion"}, "x": [1, 2.5, true]}
  c = f32[] negate(b), backend_config="{\"lower\":true}", frontend_attributes={inlineable="false",_xla="1"}
  ROOT d = f32[] custom-call(c), custom_call_target="foo", api_version=API_VERSION_TYPED_FFI, backend_config=""
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(find(*m, "a")->attribute(AttrId::kMetadata)->value.substr(0, 15), "{op_type=\"Log\" ");
  EXPECT_EQ(*word_attr(*find(*m, "d"), AttrId::kCustomCallTarget), "foo");
  EXPECT_EQ(find(*m, "c")->attribute("frontend_attributes")->value, "{inlineable=\"false\",_xla=\"1\"}");
  expect_round_trip(*m);
}

TEST(HloParser, KeepsUnknownAttributesRaw) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(0), parameter_replication={false}, origin={{"a"}}
  ROOT b = f32[] exponential(a), result_accuracy={tolerance={atol=0,rtol=0,ulps=10}}, some_new_flag=[2,4]<=[8], level=3
})");
  ASSERT_TRUE(m);
  const Instruction& b = *m->entry()->root();
  ASSERT_EQ(b.attributes().size(), 3u);
  EXPECT_EQ(b.attributes()[1].id, AttrId::kUnknown);
  EXPECT_EQ(b.attributes()[1].value, "[2,4]<=[8]");
  EXPECT_EQ(b.attribute("level")->value, "3");
  expect_round_trip(*m);
}

TEST(HloParser, KeepsUnknownOpcodesAndFlagsThem) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  ROOT b = f32[4] frobnicate(a), mode=fast
})");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->unknown_opcodes().size(), 1u);
  EXPECT_EQ(m->unknown_opcodes()[0]->opcode_text(), "frobnicate");
  EXPECT_TRUE(m->entry()->root()->is_unknown_opcode());
  expect_round_trip(*m);
}

TEST(HloParser, ParsesAsyncPairsAndWrappedComputations) {
  auto m = parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
reduce_scatter {
  p = f32[8] parameter(0)
  ROOT rs = f32[4] reduce-scatter(p), replica_groups={{0,1}}, dimensions={0}, to_apply=add
}
ENTRY e {
  input = f32[10,20] parameter(0)
  v = f32[8] parameter(1)
  ags = (f32[10,20], f32[10,80]) all-gather-start(input), replica_groups={{0,1,2,3}}, dimensions={1}
  ag = f32[10,80] all-gather-done(ags)
  ars = f32[8] all-reduce-start(v), replica_groups={{0,1}}, to_apply=add
  ard = f32[8] all-reduce-done(ars)
  cps = (f32[8], f32[8]) collective-permute-start(v), source_target_pairs={{0,1},{1,0}}
  cpd = f32[8] collective-permute-done(cps)
  cs = (f32[8], f32[8], u32[]) copy-start(v), cross_program_prefetch_index=0
  cd = f32[8] copy-done(cs)
  st = ((f32[8]), f32[4]) async-start(v), calls=reduce_scatter
  up = ((f32[8]), f32[4]) async-update(st)
  ROOT dn = f32[4] async-done(up), calls=reduce_scatter
})");
  ASSERT_TRUE(m);
  const Instruction* st = find(*m, "st");
  ASSERT_EQ(st->called_computations().size(), 1u);
  EXPECT_EQ(st->called_computations()[0]->name(), "reduce_scatter");
  EXPECT_EQ(find(*m, "ag")->operand(0), find(*m, "ags"));
  EXPECT_EQ(opcode_category(find(*m, "ag")->opcode()), OpCategory::kAsyncDone);
  expect_round_trip(*m);
}

TEST(HloParser, ParsesControlFlowWithCalledComputations) {
  auto m = parse(R"(HloModule m
cond {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[]) tuple(j)
}
b1 {
  ROOT c = f32[] constant(1), control-predecessors={}
}
b2 {
  a = f32[] constant(2)
  ROOT c = f32[] constant(3), control-predecessors={a}
}
ENTRY e {
  z = s32[] constant(0)
  t = (s32[]) tuple(z)
  w = (s32[]) while(t), condition=cond, body=body
  k = s32[] constant(1)
  ROOT c = f32[] conditional(k), branch_computations={b1, %b2}
})");
  ASSERT_TRUE(m);
  const Instruction* w = find(*m, "w");
  EXPECT_EQ(w->called(AttrId::kBody)->name(), "body");
  EXPECT_EQ(w->called(AttrId::kCondition)->name(), "cond");
  EXPECT_EQ(m->entry()->root()->called_computations().size(), 2u);
  expect_round_trip(*m);
}

TEST(HloParser, SplitsModulesOnSeparatorAndSkipsComments) {
  ParsedFile f = parse_hlo(R"(// RUN: hlo-opt %s | FileCheck %s
// CHECK: HloModule a
HloModule a /* block
comment */
ENTRY e {
  // a comment line
  ROOT p = f32[] parameter(0) // trailing
}
// -----
// ---------------------- (a ruler, not a separator)
HloModule b
ENTRY e {
  ROOT t = (f32[], /*index=1*/f32[]) parameter(0)
}

// -----
// only comments in this section
)",
                           "multi.hlo");
  ASSERT_TRUE(f.ok()) << format_all(f.errors());
  ASSERT_EQ(f.modules.size(), 2u);
  EXPECT_EQ(f.modules[0].value()->name(), "a");
  EXPECT_EQ(f.modules[1].value()->name(), "b");
}

TEST(HloParser, AcceptsByteOrderMarkAndCrlf) {
  auto m = parse("\xEF\xBB\xBFHloModule m\r\nENTRY e {\r\n  ROOT p = f32[] parameter(0)\r\n}\r\n// -----\r\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "m");
}

TEST(HloParser, ParsesStackFrameSections) {
  auto m = parse(R"(HloModule m, entry_computation_layout={()->s32[]}

FileNames
1 "a.py"
FunctionNames
1 "f"
FileLocations
1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=11 end_column=20}
StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY e {
  ROOT c = s32[] constant(1), metadata={stack_frame_id=1}
})");
  ASSERT_TRUE(m);
  EXPECT_NE(m->stack_frames().find("FileLocations\n1 {file_name_id=1"), std::string_view::npos);
  expect_round_trip(*m);
}

TEST(HloParser, ParsesNestedInstructionOperands) {
  auto m = parse(R"(HloModule m
ENTRY e {
  r = f32[8,7] reshape(f32[1,8,1,7] parameter(0))
  ROOT l = f32[8,7] logistic(r)
})");
  ASSERT_TRUE(m);
  const Instruction* r = find(*m, "r");
  ASSERT_EQ(r->operand_count(), 1u);
  EXPECT_EQ(r->operand(0)->opcode(), Opcode::kParameter);
  EXPECT_EQ(r->operand(0)->shape().to_string(), "f32[1,8,1,7]");
  expect_round_trip(*m);
}

TEST(HloParser, InfersOmittedShapes) {
  auto m = parse(R"(HloModule m
ENTRY e {
  t = (f32[128,32], token[]) parameter(0)
  ROOT gte = get-tuple-element(t), index=0
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->entry()->root()->shape().to_string(), "f32[128,32]");
  expect_round_trip(*m);
}

TEST(HloParser, AcceptsComputationAttributesAfterTheBody) {
  auto m = parse(R"(HloModule m
ENTRY %main.4 (Arg_0.1: f32[3,4]) -> f32[3,4] {
  %Arg_0.1 = f32[3,4] parameter(0)
  ROOT n = f32[3,4] negate(Arg_0.1)
}, execution_thread="test_thread"
)");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->entry()->attributes().size(), 1u);
  EXPECT_EQ(m->entry()->attributes()[0].value, "\"test_thread\"");
  expect_round_trip(*m);
}

TEST(HloParser, LinksOperandsUsersAndRoot) {
  auto m = parse(R"(HloModule m
ENTRY e {
  a = f32[] parameter(0)
  b = f32[] negate(a)
  c = f32[] add(a, b)
})");
  ASSERT_TRUE(m);
  const Instruction* a = find(*m, "a");
  ASSERT_EQ(a->users().size(), 2u);
  EXPECT_EQ(a->users()[0]->name(), "b");
  EXPECT_EQ(a->users()[1]->name(), "c");
  // Without ROOT, the last instruction is the root; without ENTRY, the last
  // computation is the entry (XLA's rules).
  EXPECT_EQ(m->entry()->root()->name(), "c");
  EXPECT_TRUE(m->entry()->is_entry());
  EXPECT_EQ(m->entry()->parameters().size(), 1u);
}

TEST(HloParser, OpcodeTableIsConsistent) {
  // Every opcode's name maps back to it: the table has no duplicate names.
  for (int i = 0; i < opcode_count(); ++i) {
    const auto op = static_cast<Opcode>(i);
    EXPECT_EQ(opcode_from_name(opcode_name(op)), op) << opcode_name(op);
  }
  EXPECT_EQ(opcode_arity(Opcode::kAdd), 2);
  EXPECT_EQ(opcode_category(Opcode::kAllGather), OpCategory::kCollective);
  EXPECT_TRUE(opcode_is_transcendental(Opcode::kTanh));
  EXPECT_FALSE(opcode_from_name("not-an-op"));
}

// ---- forms XLA's parser accepts (modules written for these tests) ----------

TEST(HloParser, AcceptsBareComputationsAsOneModule) {
  // No HloModule line: text starting with ENTRY is one module.
  auto m = parse("ENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->computations().size(), 1u);
  EXPECT_EQ(m->entry()->name(), "e");
  // Text starting with `name {`: without ENTRY the last computation is the entry.
  auto n = parse("add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
                 "main {\n  v = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                 "  ROOT r = f32[] reduce(v, z), dimensions={0}, to_apply=add\n}\n");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->entry()->name(), "main");
  // Also as sections of a `// -----` file, next to a module with a header.
  ParsedFile f = parse_hlo("ENTRY a {\n  ROOT p = f32[] parameter(0)\n}\n// -----\nHloModule b\n"
                           "ENTRY b {\n  ROOT p = f32[] parameter(0)\n}\n// -----\n"
                           "c {\n  ROOT p = s32[] parameter(0)\n}\n",
                           "three.hlo");
  ASSERT_TRUE(f.ok()) << format_all(f.errors());
  ASSERT_EQ(f.modules.size(), 3u);
  EXPECT_EQ(f.modules[1].value()->name(), "b");
  EXPECT_EQ(f.modules[2].value()->entry()->name(), "c");
}

TEST(HloParser, AcceptsAColonAfterTheModuleName) {
  auto m = parse("HloModule convolution.167:\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "convolution.167");
}

TEST(HloParser, AcceptsWindowFieldsInAnyOrder) {
  // f32[4] padded 1 low and 2 high is 7 long; a size-1 window at stride 1 gives 7.
  auto m = parse("HloModule w\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
                 "  ROOT s = f32[] add(x, y)\n}\nENTRY e {\n  v = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
                 "  ROOT r = f32[7] reduce-window(v, z), window={pad=1_2 stride=1 size=1}, to_apply=add\n}\n");
  ASSERT_TRUE(m);
  const auto w = window_attr(*find(*m, "r"));
  ASSERT_TRUE(w);
  ASSERT_EQ(w->size(), 1u);
  EXPECT_EQ((*w)[0].size, 1);
  EXPECT_EQ((*w)[0].stride, 1);
  EXPECT_EQ((*w)[0].pad_low, 1);
  EXPECT_EQ((*w)[0].pad_high, 2);
}

TEST(HloParser, AcceptsDegenerateBroadcasts) {
  // A size-1 operand dimension may map to an output dimension of any size,
  // even under --strict (XLA's shape inference allows it).
  const std::string text =
      "HloModule b\nENTRY e {\n  x = f32[1] parameter(0)\n  ROOT y = f32[3] broadcast(x), dimensions={0}\n}\n";
  EXPECT_TRUE(parse_hlo(text, "b.hlo", {.strict = true}).ok());
  // Size 2 onto 3 is still wrong.
  ParsedFile bad = parse_hlo(
      "HloModule b\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT y = f32[3] broadcast(x), dimensions={0}\n}\n",
      "b.hlo");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().line, 4);
}

TEST(HloParser, AcceptsFewerSignatureParametersThanParameterInstructions) {
  // XLA takes the parameter instructions; tpusim warns, and --strict rejects.
  const std::string text = "HloModule s\nENTRY main () -> f32[2] {\n  a = f32[2] parameter(0)\n"
                           "  b = f32[2] parameter(1)\n  ROOT c = f32[2] add(a, b)\n}\n";
  ParsedFile lax = parse_hlo(text, "s.hlo");
  ASSERT_TRUE(lax.ok()) << format_all(lax.errors());
  EXPECT_EQ(lax.modules[0].value()->entry()->parameters().size(), 2u);
  ASSERT_EQ(lax.warnings().size(), 1u);
  EXPECT_NE(lax.warnings()[0].message.find("declares 0 parameters in its signature but has 2"), std::string::npos);
  ParsedFile strict = parse_hlo(text, "s.hlo", {.strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.errors().front().line, 2);
}

TEST(HloParser, KeepsAStatedShapeThatDiffersFromTheInferredOneWithAWarning) {
  // add of two f32[2,3] is f32[2,3]; the text states f32[3,2].
  const std::string text =
      "HloModule k\nENTRY e {\n  a = f32[2,3] parameter(0)\n  ROOT b = f32[3,2] add(a, a)\n}\n";
  ParsedFile lax = parse_hlo(text, "k.hlo");
  ASSERT_TRUE(lax.ok()) << format_all(lax.errors());
  EXPECT_EQ(lax.modules[0].value()->entry()->root()->shape().to_string(false), "f32[3,2]");
  const std::string w = format_warnings(lax.warnings());
  EXPECT_EQ(w.rfind("k.hlo:4:8: warning: shape mismatch for '%b'", 0), 0u) << w;
  EXPECT_NE(w.find("an error under --strict"), std::string::npos) << w;
  ParsedFile strict = parse_hlo(text, "k.hlo", {.strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.errors().front().format().rfind("k.hlo:4:8: error: shape mismatch", 0), 0u);
  EXPECT_TRUE(strict.warnings().empty());
}

TEST(HloParser, KeepsMetadataFrontendAttributesAndBackendConfigAsValues) {
  auto m = parse(R"(HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[]>}, fingerprint="a\"b"}
ENTRY e {
  p = f32[8] parameter(0), metadata={op_type="Add" op_name="jit(f)/add" source_file="/tmp/f.py" source_line=12 stack_frame_id=3}
  q = f32[8] negate(p), backend_config="{\"a\":1}"
  r = f32[8] negate(q), backend_config="opaque"
  ROOT n = f32[8] negate(r), frontend_attributes={_xla_compute_type="host",priority="1"}, backend_config={"flag_configs":[],"n":{"k":"4"}}
})");
  ASSERT_TRUE(m);
  const auto md = metadata_attr(*find(*m, "p"));
  ASSERT_TRUE(md);
  EXPECT_EQ(md->op_type, "Add");
  EXPECT_EQ(md->op_name, "jit(f)/add");
  EXPECT_EQ(md->source_file, "/tmp/f.py");
  EXPECT_EQ(md->source_line, 12);
  ASSERT_EQ(md->fields.size(), 5u);
  EXPECT_EQ(md->fields[4], (KeyValue{"stack_frame_id", "3"}));
  EXPECT_FALSE(metadata_attr(*find(*m, "q")));

  const auto fa = frontend_attributes(*find(*m, "n"));
  ASSERT_TRUE(fa);
  EXPECT_EQ(*fa, (std::vector<KeyValue>{{"_xla_compute_type", "host"}, {"priority", "1"}}));
  const auto mfa = frontend_attributes(*m);
  ASSERT_TRUE(mfa);
  ASSERT_EQ(mfa->size(), 2u);
  EXPECT_EQ((*mfa)[0].key, "xla.sdy.meshes");
  EXPECT_EQ((*mfa)[0].value, "{mesh = #sdy.mesh<[]>}");
  EXPECT_EQ((*mfa)[1], (KeyValue{"fingerprint", "a\"b"}));

  const auto bc = backend_config_json(*find(*m, "n"));
  ASSERT_TRUE(bc);
  EXPECT_EQ((*bc)["n"]["k"], "4");
  EXPECT_TRUE((*bc)["flag_configs"].is_array());
  const auto quoted = backend_config_json(*find(*m, "q"));  // a string that holds JSON
  ASSERT_TRUE(quoted);
  EXPECT_EQ((*quoted)["a"], 1);
  EXPECT_FALSE(backend_config_json(*find(*m, "r")));  // an opaque string
}

}  // namespace
}  // namespace tpusim::hlo
