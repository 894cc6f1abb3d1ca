// Steady-state extrapolation of `repeat` loops (issue 6; docs/lowering.md,
// "Control flow"). With simulation.loops = extrapolate, a TensorCore's
// sequencer samples its state each time it reaches a loop's `end`. Once two
// consecutive iterations took the same time (within simulation.loop_tolerance)
// and left the core in the same discrete state, it issues no more iterations:
// the simulation is time-invariant (no cost depends on absolute time), so the
// rest of the program would only run later by (remaining iterations x the
// steady iteration time). The core carries that as a time offset (added to its
// end time, trace timestamps after the skip, the SPMD split) and adds the last
// iteration's stat deltas x the remaining iterations to every counter it owns
// (unit busy cycles, FLOPs, HBM bytes, instructions, provenance rows, the
// fabric's collective counts), so utilizations and per-op sums stay consistent.
//
// Cores of one simulation (every chip of a full-mode SPMD run, the TensorCores
// of a megacore chip) must skip the same iterations, or their collectives and
// core barriers would no longer match: they share a
// LoopCoordinator; the first core to join leads, the others wait at each
// sampled boundary until the leader has passed it and follow its decision
// (skip there, with the leader's iteration time, or run on).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "common/config.h"

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

// One reused section (isa::Program::reuse): the op the program holds once
// stands for `instances` identical ops; the simulator ran one and added the
// rest's time and counters at the end (docs/lowering.md, "Reuse").
struct SectionReuse {
  std::string label;           // the op lowered (provenance root)
  std::int64_t instances = 1;  // including the one simulated
  double instance_s = 0;       // attributed time of the simulated instance
  double added_s = 0;          // (instances - 1) x instance_s
};

// "reused fusion.7 x32: 31 instances not simulated, 12.3 us each, 381.3 us added"
// (one per reused op, at most `limit`, then a count of the rest).
std::vector<std::string> reuse_notes(const std::vector<SectionReuse>& reused, std::size_t limit = 5);

// "while.3 (prog.tasm:4:1): 4 of 2000 iterations simulated, steady 1.234 us per
// iteration, 2.463 ms extrapolated" (one per loop).
std::vector<std::string> loop_notes(const std::vector<LoopExtrapolation>& loops);

// Shared by the cores of one simulation (see above). SystemC-aware only
// through the event followers wait on.
class LoopCoordinator {
 public:
  LoopCoordinator();
  // Each core joins once, before sc_start(); the first (index 0) leads.
  int join() { return cores_++; }
  [[nodiscard]] int cores() const { return cores_; }

  // A dynamic loop instance: the `repeat`'s rank among the core's sampled
  // loops (the same on every core: TensorCore::number_coordinated_loops) and
  // how many times this core entered it before.
  using Key = std::pair<std::uint32_t, std::uint64_t>;
  // Leader: it passed sampled boundary `iteration` of `key`; skip_s > 0 when
  // it extrapolated the rest there with that iteration time.
  void publish(const Key& key, std::int64_t iteration, double skip_s);
  // A core left the instance (the leader: followers stop waiting for it).
  void leave(const Key& key, int core);
  // The leader ran its whole program (followers stop waiting).
  void leader_finished();

  enum class Verdict { kWait, kRunOn, kSkip };
  // Follower at sampled boundary `iteration` of `key`; with kSkip,
  // `iteration_s` is the leader's iteration time.
  Verdict follow(const Key& key, std::int64_t iteration, double& iteration_s) const;
  sc_core::sc_event& changed() { return changed_; }

 private:
  struct State {
    std::int64_t passed = 0;
    std::int64_t skip_at = -1;
    double iteration_s = 0;
    bool leader_left = false;
    int left = 0;
  };
  int cores_ = 0;
  bool leader_finished_ = false;
  std::map<Key, State> loops_;
  sc_core::sc_event changed_;
};

}  // namespace tpusim
