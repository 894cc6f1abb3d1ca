// A design-space sweep spec (configs/sweeps/*.yaml), parsed and validated.
// Keys: name, base, workloads, mode, grid, zip, random, constraints, metrics,
// timeout, area_power (docs/sweeps.md). Every error is a Diagnostic at
// file:line:column; unknown keys get a did-you-mean.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "app/sweep/expr.h"
#include "app/sweep/proxy.h"

namespace tpusim::sweep {

enum class Mode { kRun, kAnalyze };
std::string_view mode_name(Mode m);

struct Workload {
  std::string path;      // as written in the spec (what records show)
  std::string resolved;  // relative to the spec file's folder
  Mode mode = Mode::kRun;
};

// One axis of the grid: a single key (grid:) or keys that vary together (zip:).
// values[k][i] is the YAML text of key k at position i, as passed to --set.
struct Axis {
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  [[nodiscard]] std::size_t size() const { return values.empty() ? 0 : values.front().size(); }
};

struct RandomRange {
  std::string key;
  double lo = 0;  // base units
  double hi = 0;
};

struct RandomSpec {
  std::int64_t samples = 0;
  std::uint64_t seed = 0;
  std::vector<RandomRange> ranges;
};

struct Constraint {
  Expr expr;
  Diagnostic where;  // file:line:col of the expression, for messages
};

struct SweepSpec {
  std::string file;  // the spec path
  std::string name;  // `name:` or the file stem
  std::string base;  // preset name or resolved chip YAML path
  std::vector<Workload> workloads;
  std::vector<Axis> axes;
  std::optional<RandomSpec> random;
  std::vector<Constraint> constraints;
  std::vector<std::string> metrics;  // report JSON paths; empty = defaults per mode
  double timeout_s = 600;            // per point; 0 = none
  std::string lower_for;             // lower_for: compile every point for this chip ("" = each point's own)
  ProxyModel proxy;
};

// Default metric paths for a mode.
std::vector<std::string> default_metrics(Mode m);

Result<SweepSpec> load_sweep_spec(const std::string& path);
Result<SweepSpec> load_sweep_spec_text(std::string_view yaml, std::string_view file_name);

}  // namespace tpusim::sweep
