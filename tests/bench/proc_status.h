// Resident memory of the benchmark's own process (Linux /proc), shared by the
// suites that measure peak memory in a forked child.
#pragma once

#include <fstream>
#include <string>

namespace tpusim::bench {

// Resident set (key "VmRSS:") or its peak ("VmHWM:") of this process, bytes;
// 0 if unknown.
inline double proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string k;
  double kb = 0;
  while (in >> k) {
    if (k == key) {
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// "clear_refs 5" resets VmHWM to the current RSS (Linux), so VmHWM read after
// a phase is that phase's peak (a forked child starts with its parent's peak).
inline void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace tpusim::bench
