// `tpusim scale model.hlo --systems 2x2,4x4,8x8`: the same SPMD program on
// several system sizes (docs/spmd.md, "Scaling studies").
#pragma once

#include <iosfwd>
#include <string>

#include "app/cli/cli.h"

namespace tpusim::cli {

struct ScaleOptions {
  std::string systems;  // "2x2,4x4,8x8"
  std::string mode;     // "" | full | symmetric
  std::optional<bool> wrap;  // --wrap / --no-wrap: every axis / no axis of every shape wraps
  bool strong = false;  // efficiency as strong scaling (one global problem)
};

int cmd_scale(const CommonOptions& opt, const std::string& input, const ScaleOptions& s, std::ostream& out,
              std::ostream& err);

}  // namespace tpusim::cli
