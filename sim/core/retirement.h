// In-order retirement and per-op time attribution of a TensorCore's timeline
// (DESIGN.md principle 4: every figure rolls up to the HLO op). Instructions
// retire in program order; the time until the oldest unfinished instruction
// completes is charged to its provenance (like a reorder buffer's head), so
// the rows sum to the step.
//
// A collective does not own the clock while it flies: the ops the schedule
// puts between its -start and -done run meanwhile and keep their own time.
// It is charged only where the core waits for it: the gap before the next
// instruction starts (the sequencer stalled at the -done), and the
// program's end. With several collectives in flight, those completing
// inside the gap take it up to their completion, in order, and the rest
// goes to the first to complete when (or after) the core resumes: the one
// it waited for. Plain C++, no SystemC.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/timing/unit_timing.h"

namespace tpusim {

// What the time of one provenance (HLO op / label) went to.
struct ProvenanceStats {
  double attributed_s = 0;  // share of the core's timeline (in-order retirement; sums to total)
  double busy_s = 0;        // unit busy time of its instructions, summed over units
  std::array<double, kResources> busy_by{};  // busy_s by the resource it went to
  double flops = 0;
  // flops at the bf16 MXU rate: an MXU FLOP of a dtype the MXUs run r times as fast as bf16 (core.mxu.rate)
  // counts 1/r (fp8 at 2: one half), every other FLOP 1. Over the chip's bf16 peak it is the compute bound.
  double bf16_flops = 0;
  double transcendentals = 0;
  double hbm_bytes = 0;
  std::uint64_t instructions = 0;
  // Its instructions are collectives (their time is communication; the HBM
  // bytes they move are not a memory bound).
  [[nodiscard]] bool collective() const { return busy_by[static_cast<std::size_t>(Resource::kIci)] > 0; }
};

class Retirement {
 public:
  // The next instruction in program order retires: it started at `start_s`
  // and completes at `done_s`; `rows` is indexed by provenance id.
  void retire(double start_s, double done_s, bool collective, std::uint32_t provenance,
              std::vector<ProvenanceStats>& rows);
  // The program ends at `end_s`: the time after the last retirement is the
  // wait for the last collective.
  void finish(double end_s, std::vector<ProvenanceStats>& rows);
  // Everything before this time is charged.
  [[nodiscard]] double retired_until() const { return retired_until_s_; }
  // The latest completion of a retired collective.
  [[nodiscard]] double collective_done() const { return collective_done_s_; }

 private:
  // The core waited from retired_until() to `gap_end` for collectives in flight.
  void charge_wait(double gap_end, std::vector<ProvenanceStats>& rows);

  double retired_until_s_ = 0;
  double collective_done_s_ = 0;
  std::uint32_t collective_prov_ = 0;  // the collective completing last
  // Retired collectives that may still fly: (done, provenance).
  std::vector<std::pair<double, std::uint32_t>> in_flight_;
};

}  // namespace tpusim
