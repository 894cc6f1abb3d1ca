// Structural checks every later walk relies on: no recursion through
// call/while/conditional/reduce, no cyclic dataflow, bounded call depth. Each
// module here is written for the test; lines and columns are counted by hand
// from the text (the first line is line 1).
#include <gtest/gtest.h>

#include <string>

#include "isa/hlo/parser.h"
#include "isa/hlo/structure.h"
#include "test_modules.h"

namespace tpusim::hlo {
namespace {

std::string first_error(const std::string& text) {
  ParsedFile f = parse_hlo(text, "s.hlo");
  if (f.ok()) return "";
  return f.errors().front().format();
}

void expect_error(const std::string& text, const std::string& location, const std::string& message) {
  const std::string e = first_error(text);
  EXPECT_EQ(e.rfind("s.hlo:" + location + ": error: ", 0), 0u) << e;
  EXPECT_NE(e.find(message), std::string::npos) << e;
}

TEST(HloStructure, RejectsACallOfTheEntryComputation) {
  // The reproducer: the entry calls itself.
  expect_error("HloModule m\nENTRY main {\n  p0 = f32[8] parameter(0)\n  ROOT r = f32[8] call(p0), to_apply=main\n}\n",
               "4:8", "calls the entry computation '%main'");
  // reduce whose to_apply is the entry computation.
  expect_error("HloModule m\nENTRY main {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
               "  v = f32[8] broadcast(x), dimensions={}\n"
               "  ROOT r = f32[] reduce(v, y), dimensions={0}, to_apply=main\n}\n",
               "6:8", "the entry computation cannot be called");
}

TEST(HloStructure, RejectsRecursionThroughCallWhileAndConditional) {
  // f calls itself.
  expect_error("HloModule m\nf {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=f\n}\n"
               "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=f\n}\n",
               "4:8", "recursive call: '%r' in '%f' calls '%f'");
  // f -> g -> f: the search starts at f (first computation) and closes the
  // cycle in g.
  expect_error("HloModule m\nf {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=g\n}\n"
               "g {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=f\n}\n"
               "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=f\n}\n",
               "8:8", "'%g' calls '%f'");
  // A while body that contains its own while.
  expect_error("HloModule m\ncond {\n  p = s32[] parameter(0)\n  ROOT c = pred[] constant(false)\n}\n"
               "body {\n  p = s32[] parameter(0)\n  ROOT w = s32[] while(p), condition=cond, body=body\n}\n"
               "ENTRY e {\n  p = s32[] parameter(0)\n  ROOT w = s32[] while(p), condition=cond, body=body\n}\n",
               "8:8", "'%body' calls '%body'");
  // A conditional that names its own computation as a branch.
  expect_error("HloModule m\nbranch {\n  p = f32[] parameter(0)\n  k = pred[] constant(true)\n"
               "  ROOT c = f32[] conditional(k, p, p), true_computation=branch, false_computation=branch\n}\n"
               "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=branch\n}\n",
               "5:8", "'%branch' calls '%branch'");
}

TEST(HloStructure, RejectsCyclicDataflow) {
  expect_error("HloModule m\nENTRY e {\n  p0 = f32[8] parameter(0)\n  ROOT a = f32[8] add(a, p0)\n}\n", "4:8",
               "cyclic dataflow: '%a' depends on itself");
  // a -> b -> a through two instructions.
  // The search enters a, then b, whose operand a is still open.
  expect_error("HloModule m\nENTRY e {\n  p0 = f32[8] parameter(0)\n  a = f32[8] add(b, p0)\n"
               "  ROOT b = f32[8] negate(a)\n}\n",
               "5:8", "'%b' depends on itself (through operand '%a')");
}

TEST(HloStructure, BoundsTheCallDepthWithALocatedError) {
  // kMaxCallDepth computations in a chain (the entry counts) parse.
  EXPECT_EQ(first_error(call_chain_module(kMaxCallDepth - 1)), "");
  // One more is one too many. Heights count from the bottom: c{n-1} is 1,
  // ck is n-k, the entry n+1. With n = 256 the entry (line 2+4n = 1026) is
  // the first over the limit; its call is on line 1028.
  expect_error(call_chain_module(kMaxCallDepth), "1028:8", "call chain too deep: '%r' starts a chain of more than 256");
  // The 3,500-deep chain: an error, not a stack overflow. The first
  // computation over the limit is ck with 3500-k = 257, k = 3243; its call
  // is on line 4+4k = 12976.
  expect_error(call_chain_module(3500), "12976:8", "call chain too deep");
  // Deep dataflow is fine: a 100,000-long chain of negates (no recursion).
  std::string t = "HloModule m\nENTRY e {\n  x0 = f32[8] parameter(0)\n";
  for (int i = 1; i < 100000; ++i)
    t += "  x" + std::to_string(i) + " = f32[8] negate(x" + std::to_string(i - 1) + ")\n";
  t += "}\n";
  EXPECT_EQ(first_error(t), "");
}

}  // namespace
}  // namespace tpusim::hlo
