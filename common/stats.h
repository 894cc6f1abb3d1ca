// One registry of hierarchical statistics (DESIGN.md principle 6, gem5-style
// names such as "chip0.core0.mxu1.busy_cycles"). Modules hold references to
// their stats and bump them; reports, sweeps and tests read only to_json().
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tpusim {

struct Stat {
  double value = 0;
  std::string unit;  // "cycles", "bytes", "flops", "instructions", "s", "ratio"
  std::string desc;
  Stat& operator+=(double v) {
    value += v;
    return *this;
  }
};

class StatsRegistry {
 public:
  // Declares (or returns the existing) stat `name`. References stay valid for
  // the registry's lifetime.
  Stat& add(std::string_view name, std::string_view unit, std::string_view desc);
  [[nodiscard]] const Stat* find(std::string_view name) const;
  [[nodiscard]] double value(std::string_view name) const;  // 0 if absent
  // Sum of every stat whose name matches prefix + "*" + suffix, e.g.
  // sum("chip0.core0.mxu", ".busy_cycles") over all MXUs.
  [[nodiscard]] double sum(std::string_view prefix, std::string_view suffix) const;
  [[nodiscard]] const std::map<std::string, Stat, std::less<>>& all() const { return stats_; }
  // {"name": {"value": v, "unit": u, "desc": d}, ...}, names sorted.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  std::map<std::string, Stat, std::less<>> stats_;
};

}  // namespace tpusim
