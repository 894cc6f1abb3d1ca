// The TensorCores of a megacore chip (v4, v5p: two TensorCores acting as
// one device): their cross-core rendezvous and the one scheduler they run on.
//
// The lowering splits each section's work over the cores and ends it with
// `core.barrier`; the n-th core.barrier of every core completes when the last
// core reaches it. No timing of its own: the cost is the wait for the slowest
// core, which the sequencers measure.
//
// The cores share the chip's HBM, whose reservations must come in time
// order, so their processes run on one CoreScheduler (sim/core_scheduler.h)
// on one SystemC thread: their accesses are ordered by the scheduler, and
// the chip runs ahead of the kernel's clock like a single core.
#pragma once

#include <cstdint>
#include <memory>
#include <systemc>

#include "sim/core_scheduler.h"

namespace tpusim {

class CoreSync {
 public:
  // Spawns the scheduler's SystemC thread: construct during elaboration.
  // `run_ahead`: see CoreScheduler (simulation.run_ahead).
  CoreSync(int cores, bool run_ahead)
      : cores_(cores < 1 ? 1 : cores), scheduler_(std::make_unique<CoreScheduler>(run_ahead)) {
    sc_core::sc_spawn([this] { scheduler_->run(); }, sc_core::sc_gen_unique_name("chip_scheduler"));
  }
  CoreSync(const CoreSync&) = delete;
  CoreSync& operator=(const CoreSync&) = delete;

  // The scheduler every core of the chip spawns its processes on.
  [[nodiscard]] CoreScheduler& scheduler() { return *scheduler_; }

  // A core arrives at its next core.barrier. Returns the generation to wait
  // out: the core may pass once generation() differs from it (immediately
  // for the last core to arrive); it waits on released().
  std::uint64_t arrive() {
    const std::uint64_t g = generation_;
    if (++arrived_ == cores_) {
      arrived_ = 0;
      ++generation_;
      scheduler_->notify(released_);
    }
    return g;
  }
  [[nodiscard]] std::uint64_t generation() const { return generation_; }
  [[nodiscard]] CoSignal& released() { return released_; }
  [[nodiscard]] int cores() const { return cores_; }

 private:
  int cores_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::unique_ptr<CoreScheduler> scheduler_;
  CoSignal released_;
};

}  // namespace tpusim
