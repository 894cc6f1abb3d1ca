// One registry of hierarchical statistics (DESIGN.md principle 6, gem5-style
// names such as "chip0.core0.mxu1.busy_cycles"). Modules hold references to
// their stats and bump them; reports, sweeps and tests read only to_json().
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tpusim {

// What a stat counts: its unit as a type, printed by name in the JSON dump.
#define TPUSIM_STAT_UNITS(X)    \
  X(kCycles, "cycles")          \
  X(kCount, "count")            \
  X(kBytes, "bytes")            \
  X(kFlops, "flops")            \
  X(kSeconds, "s")              \
  X(kBytesPerSecond, "bytes/s") \
  X(kFlopsPerSecond, "flops/s") \
  X(kRatio, "ratio")
enum class StatUnit {
#define TPUSIM_X(id, name) id,
  TPUSIM_STAT_UNITS(TPUSIM_X)
#undef TPUSIM_X
};
[[nodiscard]] std::string_view stat_unit_name(StatUnit u);

struct Stat {
  double value = 0;
  StatUnit unit = StatUnit::kCount;
  std::string desc;
  Stat& operator+=(double v) {
    value += v;
    return *this;
  }
};

// Stat groups (gem5's stats::Group): a module declares its stats in one
// table, TABLE(X) with X(member, StatUnit id, description); the group's
// struct holds a Stat per member, named <prefix>.<member> in the registry,
// and a Values struct of plain numbers that reports read directly.
#define TPUSIM_STAT_MEMBER(name, unit, desc) Stat* name = nullptr;
#define TPUSIM_STAT_VALUE(name, unit, desc) double name = 0;
#define TPUSIM_STAT_ADD(name, unit, desc) name = &stats.add(prefix + "." #name, StatUnit::unit, desc);
#define TPUSIM_STAT_READ(name, unit, desc) v.name = name->value;
#define TPUSIM_STAT_GROUP(Group, TABLE)                                         \
  struct Group {                                                                \
    TABLE(TPUSIM_STAT_MEMBER)                                                   \
    struct Values {                                                             \
      TABLE(TPUSIM_STAT_VALUE)                                                  \
    };                                                                          \
    void add(StatsRegistry& stats, const std::string& prefix) { TABLE(TPUSIM_STAT_ADD) } \
    [[nodiscard]] Values values() const {                                       \
      Values v;                                                                 \
      TABLE(TPUSIM_STAT_READ)                                                   \
      return v;                                                                 \
    }                                                                           \
  }

class StatsRegistry;

// A derived stat (gem5's stats::Formula): computed from other stats each
// time it is read, so it always agrees with them; `expression` says how, in
// stat names (stats.json prints it). Loop extrapolation and section reuse
// scale counters only: a formula follows them.
struct Formula {
  StatUnit unit = StatUnit::kRatio;
  std::string desc;
  std::string expression;
  std::function<double(const StatsRegistry&)> eval;
};

class StatsRegistry {
 public:
  // Declares (or returns the existing) stat `name`. References stay valid for
  // the registry's lifetime.
  Stat& add(std::string_view name, StatUnit unit, std::string_view desc);
  [[nodiscard]] const Stat* find(std::string_view name) const;
  // A stat's value, or a formula's (computed now); 0 if neither exists.
  [[nodiscard]] double value(std::string_view name) const;
  // Declares (or replaces) the formula `name`.
  void add_formula(std::string_view name, StatUnit unit, std::string_view desc, std::string expression,
                   std::function<double(const StatsRegistry&)> eval);
  // The formula numerator / (denominator x scale), 0 when the divisor is 0;
  // `scale` names a stat too, or is empty.
  void add_ratio(std::string_view name, StatUnit unit, std::string_view desc, const std::string& numerator,
                 const std::string& denominator, const std::string& scale = "");
  // The formula a + b + ... over `terms`.
  void add_sum(std::string_view name, StatUnit unit, std::string_view desc, const std::vector<std::string>& terms);
  [[nodiscard]] const std::map<std::string, Formula, std::less<>>& formulas() const { return formulas_; }
  // Sum of every stat whose name matches prefix + "*" + suffix, e.g.
  // sum("chip0.core0.mxu", ".busy_cycles") over all MXUs.
  [[nodiscard]] double sum(std::string_view prefix, std::string_view suffix) const;
  [[nodiscard]] const std::map<std::string, Stat, std::less<>>& all() const { return stats_; }
  // {"name": {"value": v, "unit": u, "desc": d}, ...}, names sorted;
  // formulas also give "formula": their expression.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  std::map<std::string, Stat, std::less<>> stats_;
  std::map<std::string, Formula, std::less<>> formulas_;
};

}  // namespace tpusim
