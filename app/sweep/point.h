// Sweep points: expansion of a spec into points (grid × zip axes, crossed
// with random samples), the effective config of a point, its hash, and the
// names constraints may read.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.h"
#include "app/sweep/expr.h"
#include "app/sweep/spec.h"

namespace tpusim::sweep {

struct Point {
  std::size_t index = 0;  // position in expansion order
  std::vector<std::pair<std::string, std::string>> params;  // key -> YAML text for --set
  [[nodiscard]] std::vector<std::string> overrides() const;  // "key=value"
};

// Every point, in a fixed order: the first axis varies slowest; random
// samples (if any) are crossed with the grid.
std::vector<Point> expand_points(const SweepSpec& spec);

// Number of points without building them.
std::size_t count_points(const SweepSpec& spec);

// FNV-1a 64 of the canonical text of every parameter of the effective
// config (exact values, base units), as 16 hex digits. Two overrides that
// produce the same config hash the same.
std::string config_hash(const ChipConfig& c);
std::string canonical_config_text(const ChipConfig& c);

// Names a constraint may read: every config key, `derived.<figure>`, `proxy.area`.
std::vector<std::string> constraint_names();
NameLookup config_lookup(const ChipConfig& c, const ProxyModel& proxy);

// The value of a config key as a JSON-friendly scalar: a number in base
// units for numeric/bool kinds, text otherwise.
struct ParamValue {
  bool numeric = false;
  double number = 0;
  std::string text;
};
ParamValue param_value(const ChipConfig& c, std::string_view key);

// Evaluates all constraints; returns "" if feasible, else which one failed
// (or why it could not be evaluated).
std::string check_constraints(const SweepSpec& spec, const ChipConfig& c);

}  // namespace tpusim::sweep
