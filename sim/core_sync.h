// The cross-core rendezvous of a megacore chip (v4, v5p: two TensorCores
// acting as one device). The lowering splits each section's work over the
// cores and ends it with `core.barrier`; the n-th core.barrier of every core
// completes when the last core reaches it. No timing of its own: the cost is
// the wait for the slowest core, which the sequencers measure.
#pragma once

#include <cstdint>
#include <systemc>

namespace tpusim {

class CoreSync {
 public:
  explicit CoreSync(int cores) : cores_(cores < 1 ? 1 : cores) {}

  // A core arrives at its next core.barrier. Returns the generation to wait
  // out: the core may pass once generation() differs from it (immediately
  // for the last core to arrive).
  std::uint64_t arrive() {
    const std::uint64_t g = generation_;
    if (++arrived_ == cores_) {
      arrived_ = 0;
      ++generation_;
      released_.notify(sc_core::SC_ZERO_TIME);
    }
    return g;
  }
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  [[nodiscard]] const sc_core::sc_event& released() const { return released_; }
  [[nodiscard]] int cores() const { return cores_; }

 private:
  int cores_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  sc_core::sc_event released_;
};

}  // namespace tpusim
