// Steady-state loop extrapolation as an observer of the sequencer (see
// sim/loop_extrapolation.h for the method). The TensorCore tells the
// tracker where it is (a `repeat` entered, an iteration ended, the loop
// left) and what its counters read at each sampled boundary; the tracker
// keeps the loop stack and the samples, says when the rest of a loop may be
// skipped, and does the arithmetic of skipping: what the skipped iterations
// add to every counter and provenance row, the time offset of everything
// after, and the report's rows. Plain C++, no SystemC; the coordination of
// several cores (LoopCoordinator) and the reading of the core's counters
// stay in the TensorCore.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "sim/core/fabric_counters.h"
#include "sim/core/retirement.h"

namespace tpusim {

struct LoopPolicy {
  LoopMode mode = LoopMode::kFull;
  std::int64_t warmup = 2;   // iterations simulated before detection starts
  double tolerance = 1e-3;   // relative agreement of consecutive iteration times
  static LoopPolicy from(const SimulationConfig& c);
  // A loop of `trip` iterations is sampled (worth trying to extrapolate) when at
  // least one iteration would remain after the earliest possible detection.
  [[nodiscard]] bool samples(std::int64_t trip) const { return mode == LoopMode::kExtrapolate && trip >= warmup + 3; }
};

// A core's state when its sequencer reaches a loop's `end`, in extrapolated time.
struct BoundarySample {
  double issue_s = 0;        // the sequencer's time
  double retired_s = 0;      // the in-order retirement frontier
  double busy_cycles = 0;    // all units' busy cycles so far
  std::uint64_t state = 0;   // hash of queue occupancies, the instructions in flight (their pcs, in
                             // order), semaphores, MXU weights loaded
};

// Pure: iterations (a, b] and (b, c] took the same time within `tolerance`
// (relative, plus 1 ps, the SystemC resolution) at issue and at retirement,
// retired as fast as they issued, kept the units equally busy, and left the
// core in the same discrete state (b.state == c.state).
bool steady_state(const BoundarySample& a, const BoundarySample& b, const BoundarySample& c, double tolerance);

// One extrapolated loop (aggregated over its dynamic instances), for the report.
struct LoopExtrapolation {
  std::string label;   // the loop's provenance (the HLO while), or "repeat"
  std::string where;   // file:line:column of the `repeat`
  std::int64_t instances = 0;             // dynamic instances extrapolated
  std::int64_t total_iterations = 0;      // summed over those instances
  std::int64_t simulated_iterations = 0;  // summed over those instances
  double iteration_s = 0;                 // steady iteration time (the last instance's)
  double extrapolated_s = 0;              // time added for the skipped iterations
};

// A dynamic loop instance shared by the cores of one simulation: the
// `repeat`'s rank among the core's sampled loops and how many times the core
// entered it before.
using LoopKey = std::pair<std::uint32_t, std::uint64_t>;

// Time the core did not simulate (skipped loop iterations, reused sections)
// and what it would have added to the core's busy-time unions.
struct SkippedTime {
  double offset_s = 0;  // added to every time after the last skip
  double compute_s = 0, comm_s = 0, exposed_s = 0;
  // (real time of a skip, offset_s from then on), in time order.
  std::vector<std::pair<double, double>> shifts;
  // A time of the core's timeline as reported: + the offset of every skip at or before it.
  [[nodiscard]] double reported(double t_s) const;
};

// What the core's counters read at a sampled boundary.
struct LoopSnapshot {
  std::vector<double> stats;           // the counters extrapolation scales, in the core's order
  std::vector<ProvenanceStats> prov;   // the loop body's provenance rows (LoopTracker::Body::prov order)
  double compute_s = 0, comm_s = 0, exposed_s = 0;  // the busy-time unions
  FabricCounters fabric;               // the fabric's counters (loops with collectives, leading core)
};

// One loop on the stack.
struct LoopFrame {
  std::uint32_t begin = 0;     // first pc of the body
  std::int64_t remaining = 0;  // iterations not yet finished
  // Sampled loops only.
  bool sampled = false;
  std::uint32_t repeat_pc = 0;
  std::int64_t total = 0;
  std::int64_t done = 0;  // iterations completed
  LoopKey key{};
  std::vector<BoundarySample> samples;  // the last three
  LoopSnapshot prev, cur;               // counters at the last two sampled boundaries
};

class LoopTracker {
 public:
  // A sampled loop's body: what its iterations touch.
  struct Body {
    std::vector<std::uint32_t> prov;  // provenance ids of the body, sorted, distinct
    std::uint32_t repeat_prov = 0;    // the `repeat`'s own provenance
    bool collectives = false;
    std::string label;                // the report row's label and file:line:column
    std::string where;
  };

  explicit LoopTracker(LoopPolicy policy = {}) : policy_(policy) {}
  [[nodiscard]] const LoopPolicy& policy() const { return policy_; }

  // A `repeat` of `count` > 0 iterations whose body starts at `begin`;
  // `sampled`: the loop may be extrapolated (key names it to the other cores).
  LoopFrame& enter(std::uint32_t begin, std::int64_t count, bool sampled, std::uint32_t repeat_pc, LoopKey key);
  [[nodiscard]] bool empty() const { return stack_.empty(); }
  [[nodiscard]] LoopFrame& top() { return stack_.back(); }
  void leave() { stack_.pop_back(); }

  // A sampled boundary of `l` (its entry, or the end of an iteration): before
  // the warm-up is over, nothing to record (false). Otherwise the sample joins
  // the last three and `fill` is the snapshot slot the core writes its
  // counters into now (true).
  bool sample(LoopFrame& l, const BoundarySample& s, LoopSnapshot*& fill);
  // The last three samples show a steady state and iterations remain: the
  // steady iteration time; nullopt: run on.
  [[nodiscard]] std::optional<double> steady_iteration(const LoopFrame& l) const;
  // The core decided after three samples (itself or by following a leader).
  [[nodiscard]] static bool decidable(const LoopFrame& l) { return l.samples.size() == 3 && l.remaining > 0; }

  // Skip the `l.remaining` iterations left of `l`, each `iteration_s` long,
  // at real time `now_s`. Adds the last iteration's provenance figures x the
  // skipped count to `prov` (attributed time scaled so the rows add up to
  // the skipped time exactly), the busy-time unions and the offset to the
  // skipped time, a report row; returns what each counter of the snapshot
  // gains (skipped x its last iteration's increase), for the core to add.
  std::vector<double> skip_rest(const LoopFrame& l, double iteration_s, double now_s, const Body& body,
                                std::vector<ProvenanceStats>& prov);

  [[nodiscard]] SkippedTime& skipped() { return skipped_; }
  [[nodiscard]] const SkippedTime& skipped() const { return skipped_; }
  // The loops extrapolated, in order of first extrapolation.
  [[nodiscard]] const std::vector<LoopExtrapolation>& rows() const { return rows_; }

 private:
  LoopPolicy policy_;
  std::vector<LoopFrame> stack_;
  SkippedTime skipped_;
  std::vector<LoopExtrapolation> rows_;
};

}  // namespace tpusim
