// The HLO text of a 10-iteration while loop around tanh of f32[256,256]
// (i = 0 .. 9 step 1 against `i < 10`), shared by the lowering and CLI tests.
// `while_attrs` is appended to the while instruction (e.g. a backend_config
// with known_trip_count, or nothing); `entry_tail` follows it in the entry
// computation, whose root it must define when `root_is_while` is false.
#pragma once

#include <string>

namespace tpusim::testing {

inline std::string while_module(const std::string& while_attrs, bool root_is_while = true,
                                const std::string& entry_tail = "") {
  return R"(HloModule loop
body {
  p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  n = s32[] add(i, one)
  x = f32[256,256] get-tuple-element(p), index=1
  y = f32[256,256] tanh(x)
  ROOT t = (s32[], f32[256,256]) tuple(n, y)
}
cond {
  p = (s32[], f32[256,256]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  k = s32[] constant(10)
  ROOT lt = pred[] compare(i, k), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  a = f32[256,256] parameter(0)
  t = (s32[], f32[256,256]) tuple(z, a)
  )" + std::string(root_is_while ? "ROOT " : "") +
         "w = (s32[], f32[256,256]) while(t), condition=cond, body=body" + while_attrs + "\n" + entry_tail + "}\n";
}

constexpr const char* kKnownTripCount10 = R"(, backend_config={"known_trip_count":{"n":"10"}})";

}  // namespace tpusim::testing
