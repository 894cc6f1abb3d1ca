// HLO modules built by tests (shared by the structure and cost tests).
#pragma once

#include <string>

namespace tpusim::hlo {

// A call chain: the entry calls c0, ck calls c{k+1}, c{n-1} negates its
// f32[8] parameter. Line 1 is the header; computation ck spans lines
// 2+4k..5+4k with its call on line 4+4k; the entry starts on line 2+4n and
// calls c0 on line 4+4n, column 8.
inline std::string call_chain_module(int n) {
  std::string t = "HloModule chain\n";
  for (int k = 0; k < n; ++k) {
    t += "c" + std::to_string(k) + " {\n  p = f32[8] parameter(0)\n";
    t += k + 1 < n ? "  ROOT r = f32[8] call(p), to_apply=c" + std::to_string(k + 1) + "\n}\n"
                   : "  ROOT r = f32[8] negate(p)\n}\n";
  }
  t += "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] call(p), to_apply=c0\n}\n";
  return t;
}

}  // namespace tpusim::hlo
