// Shape checks: a stated shape that disagrees with the operands is an error
// under --strict (a warning otherwise), located at the instruction, saying
// what the operands imply. These tests parse strictly unless they say not.
#include <gtest/gtest.h>

#include "isa/hlo/parser.h"
#include "isa/hlo/while_loop.h"

namespace tpusim::hlo {
namespace {

std::string check(const std::string& body, const std::string& extra = "") {
  ParsedFile f = parse_hlo("HloModule m\n" + extra + "ENTRY e {\n" + body + "}\n", "v.hlo", {.strict = true});
  if (f.ok()) return "";
  return f.errors().front().format();
}

void expect_ok(const std::string& body, const std::string& extra = "") { EXPECT_EQ(check(body, extra), ""); }
void expect_bad(const std::string& body, const std::string& message, const std::string& extra = "") {
  const std::string e = check(body, extra);
  EXPECT_NE(e.find(message), std::string::npos) << "got: " << e;
  EXPECT_EQ(e.rfind("v.hlo:", 0), 0u) << e;
}

TEST(HloVerifier, Elementwise) {
  expect_ok(" a = f32[2,3] parameter(0)\n ROOT b = f32[2,3] add(a, a)\n");
  expect_bad(" a = f32[2,3] parameter(0)\n ROOT b = f32[3,2] add(a, a)\n",
             "states f32[3,2] but its operands imply f32[2,3]");
  expect_bad(" a = f32[2,3] parameter(0)\n b = f32[3] parameter(1)\n ROOT c = f32[2,3] multiply(a, b)\n",
             "must have equal dimensions");
  expect_bad(" a = f32[2] parameter(0)\n ROOT c = f32[2] compare(a, a), direction=LT\n", "operands imply pred[2]");
  expect_bad(" a = f32[2] parameter(0)\n ROOT c = f32[2] negate(a, a)\n", "negate takes 1 operand(s)");
}

TEST(HloVerifier, BroadcastReshapeTranspose) {
  expect_ok(" a = f32[3] parameter(0)\n ROOT b = f32[2,3] broadcast(a), dimensions={1}\n");
  expect_bad(" a = f32[3] parameter(0)\n ROOT b = f32[2,3] broadcast(a), dimensions={0}\n",
             "broadcast maps operand dimension 0 (size 3) to output dimension 0 (size 2)");
  expect_bad(" a = f32[6] parameter(0)\n ROOT b = f32[4,2] reshape(a)\n", "reshape changes the element count");
  expect_ok(" a = f32[2,3,4] parameter(0)\n ROOT b = f32[4,2,3] transpose(a), dimensions={2,0,1}\n");
  expect_bad(" a = f32[2,3,4] parameter(0)\n ROOT b = f32[2,3,4] transpose(a), dimensions={2,0,1}\n",
             "operands imply f32[4,2,3]");
}

TEST(HloVerifier, DotWithBatchAndContractingDims) {
  expect_ok(" a = f32[8,32,16] parameter(0)\n b = f32[8,16,64] parameter(1)\n"
            " ROOT d = f32[8,32,64] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, "
            "rhs_contracting_dims={1}\n");
  expect_bad(" a = f32[32,16] parameter(0)\n b = f32[15,64] parameter(1)\n"
             " ROOT d = f32[32,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
             "dot contracting dimensions differ: lhs dim 1 is 16, rhs dim 0 is 15");
  expect_bad(" a = f32[32,16] parameter(0)\n b = f32[16,64] parameter(1)\n"
             " ROOT d = f32[64,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
             "operands imply f32[32,64]");
  // A preferred element type differs from the inputs': only dims compared.
  expect_ok(" a = bf16[32,16] parameter(0)\n b = bf16[16,64] parameter(1)\n"
            " ROOT d = f32[32,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n");
}

TEST(HloVerifier, ConvolutionWithDimLabels) {
  // Output spatial: (9 + 1 + 1 - 3) / 2 + 1 = 5.
  expect_ok(" x = f32[1,9,9,4] parameter(0)\n k = f32[3,3,4,8] parameter(1)\n"
            " ROOT c = f32[1,5,5,8] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
            "dim_labels=b01f_01io->b01f\n");
  expect_bad(" x = f32[1,9,9,4] parameter(0)\n k = f32[3,3,4,8] parameter(1)\n"
             " ROOT c = f32[1,9,9,8] convolution(x, k), window={size=3x3 stride=2x2 pad=1_1x1_1}, "
             "dim_labels=b01f_01io->b01f\n",
             "operands imply f32[1,5,5,8]");
  expect_bad(" x = f32[1,9,9,4] parameter(0)\n k = f32[3,3,2,8] parameter(1)\n"
             " ROOT c = f32[1,9,9,8] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n",
             "input features (4) must equal kernel input features (2) x feature_group_count (1)");
}

TEST(HloVerifier, ReduceSliceConcatPadDynamicSlice) {
  const std::string add = "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n";
  expect_ok(" a = f32[4,5] parameter(0)\n z = f32[] constant(0)\n ROOT r = f32[4] reduce(a, z), dimensions={1}, "
            "to_apply=add\n",
            add);
  expect_bad(" a = f32[4,5] parameter(0)\n z = f32[] constant(0)\n ROOT r = f32[5] reduce(a, z), dimensions={1}, "
             "to_apply=add\n",
             "operands imply f32[4]", add);
  expect_bad(" a = f32[10] parameter(0)\n ROOT s = f32[4] slice(a), slice={[0:10:2]}\n", "operands imply f32[5]");
  expect_bad(" a = f32[10] parameter(0)\n ROOT s = f32[4] slice(a), slice={[0:11]}\n", "slice range [0:11:1] is invalid");
  expect_bad(" a = f32[2,3] parameter(0)\n b = f32[2,4] parameter(1)\n ROOT c = f32[2,8] concatenate(a, b), "
             "dimensions={1}\n",
             "operands imply f32[2,7]");
  expect_bad(" a = f32[4] parameter(0)\n z = f32[] constant(0)\n ROOT p = f32[8] pad(a, z), padding=1_2\n",
             "operands imply f32[7]");
  expect_bad(" a = f32[4] parameter(0)\n i = s32[] parameter(1)\n ROOT d = f32[5] dynamic-slice(a, i), "
             "dynamic_slice_sizes={5}\n",
             "dynamic slice size 5 exceeds dimension 0 of size 4");
  expect_bad(" a = f32[4] parameter(0)\n u = f32[5] parameter(1)\n i = s32[] parameter(2)\n"
             " ROOT d = f32[4] dynamic-update-slice(a, u, i)\n",
             "is larger than the operand");
}

TEST(HloVerifier, CollectivesAndGather) {
  const std::string add = "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n";
  expect_ok(" a = f32[8] parameter(0)\n ROOT g = f32[32] all-gather(a), replica_groups={{0,1,2,3}}, dimensions={0}\n");
  expect_bad(" a = f32[8] parameter(0)\n ROOT g = f32[16] all-gather(a), replica_groups=[2,4]<=[8], dimensions={0}\n",
             "operands imply f32[32]");
  expect_bad(" a = f32[8] parameter(0)\n ROOT r = f32[4] reduce-scatter(a), replica_groups={{0,1,2}}, "
             "dimensions={0}, to_apply=add\n",
             "not divisible by the group size 3", add);
  expect_ok(" a = f32[5,7] parameter(0)\n i = s32[3,1] parameter(1)\n ROOT g = f32[3,7] gather(a, i), "
            "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,7}\n");
  expect_bad(" a = f32[5,7] parameter(0)\n i = s32[3,1] parameter(1)\n ROOT g = f32[3,6] gather(a, i), "
             "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,7}\n",
             "operands imply f32[3,7]");
}

TEST(HloVerifier, Scatter) {
  const std::string add = "add {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y)\n}\n";
  const std::string head = " a = f32[5,7] parameter(0)\n i = s32[3,1] parameter(1)\n";
  const std::string dims = ", update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                           "index_vector_dim=1, to_apply=add\n";
  expect_ok(head + " u = f32[3,7] parameter(2)\n ROOT s = f32[5,7] scatter(a, i, u)" + dims, add);
  expect_bad(head + " u = f32[3,7,1] parameter(2)\n ROOT s = f32[5,7] scatter(a, i, u)" + dims,
             "scatter update f32[3,7,1] should have rank 2", add);
  expect_bad(head + " u = f32[3,7] parameter(2)\n ROOT s = f32[5,6] scatter(a, i, u)" + dims,
             "operands imply f32[5,7]", add);
}

TEST(HloVerifier, TuplesAndSignatures) {
  expect_bad(" a = f32[2] parameter(0)\n t = (f32[2]) tuple(a)\n ROOT g = f32[3] get-tuple-element(t), index=0\n",
             "operands imply f32[2]");
  expect_bad(" a = f32[2] parameter(0)\n t = (f32[2]) tuple(a)\n ROOT g = f32[2] get-tuple-element(t), index=1\n",
             "get-tuple-element index 1 out of range");
  const std::string text = "HloModule m\nENTRY e (p: f32[3]) -> f32[2] {\n ROOT p = f32[2] parameter(0)\n}\n";
  ParsedFile f = parse_hlo(text, "v.hlo", {.strict = true});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.errors()[0].message.find("signature declares f32[3]"), std::string::npos);
}

TEST(HloVerifier, ConstantsHoldOneValuePerElement) {
  expect_ok(" a = f32[2,3] constant({ { 1, 2, 3 }, { 4, 5, 6 } })\n b = s32[15] constant({...})\n"
            " splat = f32[3,3] constant(1)\n"
            " ROOT c = f32[] constant(-inf)\n");
  expect_bad(" ROOT a = f32[2,3] constant({ { 1, 2, 3 }, { 4, 5 } })\n",
             "constant '%a' has 5 values but its shape f32[2,3] has 6 elements");
}

TEST(HloVerifier, ChecksCanBeTurnedOff) {
  ParsedFile f = parse_hlo("HloModule m\nENTRY e {\n a = f32[2] parameter(0)\n ROOT b = f32[5] negate(a)\n}\n",
                           "v.hlo", ParseOptions{.verify_shapes = false});
  EXPECT_TRUE(f.ok());
}

// ---- what XLA's verifier rejects (modules written for these tests) ---------

TEST(HloVerifier, RejectsSortDimensionsOutOfRange) {
  const std::string cmp = "lt {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
                          " ROOT c = pred[] compare(a, b), direction=LT\n}\n";
  expect_ok(" x = f32[4] parameter(0)\n ROOT s = f32[4] sort(x), dimensions={0}, to_apply=lt\n", cmp);
  expect_bad(" x = f32[4] parameter(0)\n ROOT s = f32[4] sort(x), dimensions={-1}, to_apply=lt\n",
             "sort dimension -1 out of range for f32[4]", cmp);
}

TEST(HloVerifier, RejectsNonPredSelectPredicates) {
  expect_ok(" p = pred[4] parameter(0)\n a = f32[4] parameter(1)\n ROOT s = f32[4] select(p, a, a)\n");
  expect_bad(" p = f32[4] parameter(0)\n a = f32[4] parameter(1)\n ROOT s = f32[4] select(p, a, a)\n",
             "select's predicate must be pred, but operand 0 is f32[4]");
}

TEST(HloVerifier, RejectsMalformedShapes) {
  // token has no dimensions.
  expect_bad(" ROOT t = token[10] after-all()\n", "v.hlo:3:11: error: token has no dimensions");
  // minor_to_major must be a permutation of the dimensions.
  expect_ok(" ROOT a = f32[2,3]{0,1} parameter(0)\n");
  expect_bad(" ROOT a = f32[2,3]{1,-1} parameter(0)\n", "v.hlo:3:19: error: layout {1,-1} is not a permutation");
  expect_bad(" ROOT a = f32[2,3]{1,1} parameter(0)\n", "layout {1,1} is not a permutation");
  expect_bad(" ROOT a = f32[2,3]{0} parameter(0)\n", "layout {0} is not a permutation");
  // 2^32 cubed elements overflow int64 (the 9.223 EFLOP add).
  expect_bad(" a = f32[4294967296,4294967296,4294967296] parameter(0)\n"
             " ROOT b = f32[4294967296,4294967296,4294967296] add(a, a)\n",
             "v.hlo:3:6: error: shape too large: its element count overflows int64");
  // 2^62 elements fit in int64, 2^64 bytes of f32 do not; the same count of
  // s4 (2^61 bytes) does.
  expect_bad(" ROOT a = f32[2147483648,2147483648] parameter(0)\n", "its size in bytes overflows int64");
  expect_ok(" ROOT a = s4[2147483648,2147483648] parameter(0)\n");
}

TEST(HloVerifier, RejectsBadKnownTripCounts) {
  const std::string loop = "cond {\n p = s32[] parameter(0)\n ROOT c = pred[] constant(false)\n}\n"
                           "body {\n p = s32[] parameter(0)\n ROOT n = s32[] negate(p)\n}\n";
  const auto with = [](const std::string& n) {
    return " p = s32[] parameter(0)\n ROOT w = s32[] while(p), condition=cond, body=body, "
           "backend_config={\"known_trip_count\":{\"n\":" + n + "}}\n";
  };
  expect_ok(with("\"5\""), loop);
  expect_ok(with("7"), loop);
  expect_bad(with("\"-1\""), "known_trip_count -1 is not a whole number between 0 and 2^63-1", loop);
  expect_bad(with("\"1e12\""), "known_trip_count 1e12 is not a whole number", loop);
  expect_bad(with("1e12"), "is not a whole number", loop);
  expect_bad(with("\"99999999999999999999\""), "known_trip_count 99999999999999999999 is not", loop);
  ParsedFile f = parse_hlo("HloModule m\n" + loop + "ENTRY e {\n" + with("\"5\"") + "}\n", "v.hlo");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(known_trip_count(*f.modules[0].value()->entry()->root()), 5);
}

}  // namespace
}  // namespace tpusim::hlo
