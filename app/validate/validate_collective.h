// `tpusim validate collective FILE.csv`: runs each row's collective on the
// simulated links and compares with the reference time in the row.
//
// CSV (one header line optional, '#' comments and blank lines ignored):
//   collective,topology,wraparound,group,msg_bytes,link_bytes_per_s_one_way,hop_latency_s,ref_time_s[,tolerance]
// - collective: HLO opcode name (all-gather, reduce-scatter, all-reduce, all-to-all)
// - topology: 8 | 4x4 | 4x4x4; wraparound: true | false (every axis)
// - group: all | the axes a group spans (x, y, z, xy, ...); every other chip
//   runs the same collective in its own group at the same time
// - msg_bytes: the message size V of the collective cost forms
//   (docs/interconnect.md)
// - tolerance (optional): this row's relative tolerance ("10%" or 0.1),
//   overriding the command-line one (latency-dominated rows use 10%).
// Packets: 4 KiB, at most 32 per message (network.h).
#pragma once

#include <iosfwd>
#include <string>

namespace tpusim::interconnect {

// Returns 0 when every row is within tolerance, 1 when some row is not, 2 when
// the file cannot be read or is malformed (diagnostics name file:line:col and
// go to `err`). `tolerance` is relative (0.05 = 5%). `json` selects the
// output format on `out` (text table otherwise).
int validate_collective_csv(const std::string& path, double tolerance, bool json, std::ostream& out,
                            std::ostream& err);

}  // namespace tpusim::interconnect
