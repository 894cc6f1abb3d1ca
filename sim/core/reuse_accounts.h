// Reused sections (isa::Program::reuse, docs/lowering.md "Reuse") as one
// core accounts for them, in plain C++: which section each instruction
// belongs to, what the section's instructions added to the counters and,
// by retirement windows, to the core's time unions and the fabric's
// counters; at the end, each section's extra instances are added.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/stats.h"
#include "isa/program.h"
#include "sim/core/fabric_counters.h"
#include "sim/core/loop_tracker.h"
#include "sim/core/retirement.h"

namespace tpusim {

// One reused section: the op the program holds once stands for `instances`
// identical ops; the simulator ran one and added the rest's time and
// counters at the end.
struct SectionReuse {
  std::string label;           // the op lowered (provenance root)
  std::int64_t instances = 1;  // including the one simulated
  double instance_s = 0;       // attributed time of the simulated instance
  double added_s = 0;          // (instances - 1) x instance_s
};

// What the core and the fabric read at one moment: the busy-time unions
// (sim/interval_union.h) and, on the core that accounts for the fabric, its
// counters.
struct CoreReadings {
  double compute_s = 0, comm_s = 0, exposed_s = 0;
  std::optional<FabricCounters> fabric;
};

class ReuseAccounts {
 public:
  ReuseAccounts() = default;
  explicit ReuseAccounts(const isa::Program& program);

  // The program has reused sections.
  [[nodiscard]] bool active() const { return !section_of_.empty(); }
  // The section of a provenance id (program.reuse index), or -1.
  [[nodiscard]] int section(std::uint32_t provenance) const {
    return section_of_.empty() ? -1 : section_of_[provenance];
  }
  // The counters sections account for: the stats named "<own>.…" or
  // starting with one of `prefixes` (e.g. the chip's HBM). Call once, when
  // every stat exists.
  void bind(StatsRegistry& stats, const std::string& own, const std::vector<std::string>& prefixes);

  // *stat += v, and to `section`'s sums (section -1: to none).
  void count(Stat* stat, double v, int section);
  // The bound counters' change from snapshot() to add_since() goes to `section`.
  void snapshot();
  void add_since(int section);
  // A skipped loop of `section` added gains[i] to stats[i].
  void add_gains(int section, const std::vector<Stat*>& stats, const std::vector<double>& gains);
  // The retirement frontier enters `section` (-1: none) with the core
  // reading `now`: the open window's change goes to its section.
  void enter(int section, const CoreReadings& now);
  [[nodiscard]] int window() const { return window_.section; }

  // The end (after enter(-1, …)): every section's provenance rows,
  // counters, time unions and fabric counters grow by its extra instances;
  // the added time goes to `skipped` (its offset and unions), fabric changes
  // to `add_repeats(at open, at close, times)`. Returns the sections in
  // program order.
  using AddRepeats = std::function<void(const FabricCounters&, const FabricCounters&, std::int64_t)>;
  std::vector<SectionReuse> apply(std::vector<ProvenanceStats>& prov, SkippedTime& skipped,
                                  const AddRepeats& add_repeats);

 private:
  struct Sums {
    std::vector<double> stats;  // over stats_
    double compute_s = 0, comm_s = 0, exposed_s = 0;
    std::vector<std::pair<FabricCounters, FabricCounters>> fabric;  // (at open, at close)
  };
  struct Window {
    int section = -1;
    CoreReadings opened;
  };
  const isa::Program* program_ = nullptr;
  std::vector<int> section_of_;  // provenance id -> section, or -1 (empty: no sections)
  std::vector<Stat*> stats_;
  std::unordered_map<const Stat*, std::size_t> index_;  // into stats_
  std::vector<Sums> sums_;
  std::vector<double> before_;
  Window window_;
};

}  // namespace tpusim
