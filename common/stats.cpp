#include "common/stats.h"

#include <nlohmann/json.hpp>

namespace tpusim {

std::string_view stat_unit_name(StatUnit u) {
  switch (u) {
#define TPUSIM_X(id, name) \
  case StatUnit::id: return name;
    TPUSIM_STAT_UNITS(TPUSIM_X)
#undef TPUSIM_X
  }
  return "?";
}

Stat& StatsRegistry::add(std::string_view name, StatUnit unit, std::string_view desc) {
  auto it = stats_.find(name);
  if (it != stats_.end()) return it->second;
  Stat s;
  s.unit = unit;
  s.desc = desc;
  return stats_.emplace(std::string(name), std::move(s)).first->second;
}

const Stat* StatsRegistry::find(std::string_view name) const {
  auto it = stats_.find(name);
  return it == stats_.end() ? nullptr : &it->second;
}

double StatsRegistry::value(std::string_view name) const {
  const Stat* s = find(name);
  return s == nullptr ? 0.0 : s->value;
}

double StatsRegistry::sum(std::string_view prefix, std::string_view suffix) const {
  double total = 0;
  for (auto it = stats_.lower_bound(prefix); it != stats_.end() && it->first.starts_with(prefix); ++it) {
    if (it->first.ends_with(suffix) && it->first.size() >= prefix.size() + suffix.size()) total += it->second.value;
  }
  return total;
}

nlohmann::json StatsRegistry::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, s] : stats_) {
    j[name] = {{"value", s.value}, {"unit", stat_unit_name(s.unit)}, {"desc", s.desc}};
  }
  return j;
}

}  // namespace tpusim
