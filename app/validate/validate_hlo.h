// `tpusim validate step FILE.csv` and `tpusim validate roofline FILE.csv`:
// reference families over whole HLO modules, each row compiled and simulated
// in its own child process (app/hlo_run.h).
//
// step:     workload,chip,system,ref_step_time_s[,tolerance][,source]
//           An HLO file on a preset or chip YAML and a system ("1", or a
//           topology such as 8, 4x4 or 4x4x4 run by the SPMD runner), compared
//           on step time: the format for measured profiles. Exit 1 when a row's
//           relative error exceeds its tolerance (the column, else --tolerance).
// roofline: workload,chip[,max_factor][,op_slack][,source]
//           Every op's simulated time must be at least its `tpusim analyze`
//           bound less op_slack (default 5%: the next op's first DMAs overlap
//           an op's tail, and in-order retirement charges the overlap to the
//           earlier op), and the module's simulated time between its bound
//           and max_factor times it (the column, else 1 + --tolerance). The
//           bound is that of the module as lowered (isa/lower/fusion.h).
// Paths in `workload` and `chip` are taken as given when they exist, else
// relative to the CSV file's folder.
#pragma once

#include <iosfwd>
#include <string>

namespace tpusim {

// Returns 0 all rows pass, 1 a row fails, 2 bad input (file:line:column).
// `strict_hlo`: parse the workloads with --strict.
int validate_step_csv(const std::string& path, double tolerance, bool json, std::ostream& out, std::ostream& err,
                      bool strict_hlo = false);
int validate_roofline_csv(const std::string& path, double tolerance, bool json, std::ostream& out,
                          std::ostream& err, bool strict_hlo = false);

}  // namespace tpusim
