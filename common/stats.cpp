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
  if (const Stat* s = find(name)) return s->value;
  const auto f = formulas_.find(name);
  return f == formulas_.end() ? 0.0 : f->second.eval(*this);
}

void StatsRegistry::add_formula(std::string_view name, StatUnit unit, std::string_view desc, std::string expression,
                                std::function<double(const StatsRegistry&)> eval) {
  formulas_.insert_or_assign(std::string(name), Formula{unit, std::string(desc), std::move(expression), std::move(eval)});
}

void StatsRegistry::add_ratio(std::string_view name, StatUnit unit, std::string_view desc, const std::string& numerator,
                              const std::string& denominator, const std::string& scale) {
  std::string expression = numerator + " / " + (scale.empty() ? denominator : "(" + denominator + " * " + scale + ")");
  add_formula(name, unit, desc, std::move(expression), [numerator, denominator, scale](const StatsRegistry& r) {
    const double d = r.value(denominator) * (scale.empty() ? 1.0 : r.value(scale));
    return d > 0 ? r.value(numerator) / d : 0.0;
  });
}

double StatsRegistry::sum(std::string_view prefix, std::string_view suffix) const {
  double total = 0;
  for (auto it = stats_.lower_bound(prefix); it != stats_.end() && it->first.starts_with(prefix); ++it) {
    if (it->first.ends_with(suffix) && it->first.size() >= prefix.size() + suffix.size()) total += it->second.value;
  }
  return total;
}

void StatsRegistry::add_sum(std::string_view name, StatUnit unit, std::string_view desc,
                            const std::vector<std::string>& terms) {
  std::string expression;
  for (const auto& t : terms) expression += (expression.empty() ? "" : " + ") + t;
  add_formula(name, unit, desc, expression.empty() ? "0" : expression, [terms](const StatsRegistry& r) {
    double v = 0;
    for (const auto& t : terms) v += r.value(t);
    return v;
  });
}

nlohmann::json StatsRegistry::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, s] : stats_) {
    j[name] = {{"value", s.value}, {"unit", stat_unit_name(s.unit)}, {"desc", s.desc}};
  }
  for (const auto& [name, f] : formulas_) {
    j[name] = {{"value", f.eval(*this)}, {"unit", stat_unit_name(f.unit)}, {"desc", f.desc}, {"formula", f.expression}};
  }
  return j;
}

}  // namespace tpusim
