// `tpusim compare a.hlo b.hlo --chip v5e`: both modules compiled and simulated
// on the same chip (each in its own child process, DESIGN.md principle 7), the
// step-time difference, and the per-op rows that explain it.
#pragma once

#include <iosfwd>
#include <string>

#include <string>
#include <vector>

#include "app/cli/cli.h"

namespace tpusim::cli {

// Side a and b: two modules on one chip, one module on two chips, or two
// modules on two chips (inputs and chips: 1 or 2 each, not both 1).
int cmd_compare(const CommonOptions& opt, const std::vector<std::string>& inputs,
                const std::vector<std::string>& chips, std::ostream& out, std::ostream& err);

}  // namespace tpusim::cli
