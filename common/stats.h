// One registry of hierarchical statistics (DESIGN.md principle 6, gem5-style
// names such as "chip0.core0.mxu1.busy_cycles"). Modules hold references to
// their stats and bump them; reports, sweeps and tests read only to_json().
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tpusim {

// What a stat counts: its unit as a type, printed by name in the JSON dump.
#define TPUSIM_STAT_UNITS(X) \
  X(kCycles, "cycles")       \
  X(kCount, "count")         \
  X(kBytes, "bytes")         \
  X(kFlops, "flops")         \
  X(kSeconds, "s")           \
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

class StatsRegistry {
 public:
  // Declares (or returns the existing) stat `name`. References stay valid for
  // the registry's lifetime.
  Stat& add(std::string_view name, StatUnit unit, std::string_view desc);
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
