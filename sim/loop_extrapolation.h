// Steady-state extrapolation of `repeat` loops (docs/lowering.md, "Control
// flow"); each core's bookkeeping is its LoopTracker (sim/core/loop_tracker.h).
// With simulation.loops = extrapolate, a TensorCore's
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
#include "sim/core/loop_tracker.h"
#include "sim/core/reuse_accounts.h"

namespace tpusim {

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

  // A dynamic loop instance (LoopKey): the `repeat`'s rank among the core's
  // sampled loops (the same on every core: TensorCore::number_coordinated_loops)
  // and how many times this core entered it before.
  using Key = LoopKey;
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
