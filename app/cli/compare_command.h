// `tpusim compare a.hlo b.hlo --chip v5e`: both modules compiled and simulated
// on the same chip (each in its own child process, DESIGN.md principle 7), the
// step-time difference, and the per-op rows that explain it.
#pragma once

#include <iosfwd>
#include <string>

#include "app/cli/cli.h"

namespace tpusim::cli {

int cmd_compare(const CommonOptions& opt, const std::string& a, const std::string& b, std::ostream& out,
                std::ostream& err);

}  // namespace tpusim::cli
