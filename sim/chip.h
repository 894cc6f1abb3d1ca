// One chip of a System (DESIGN.md: System > Chip[N] > TensorCore): its HBM
// (the model `hbm.model` names, memory/hbm_model.h) and its TensorCores, one
// per program, bound to the HBM's target socket. The TensorCores of a
// megacore chip run on one scheduler (CoreSync) and meet at core.barrier.
// In a system, core 0 is the chip's device on the collective fabric.
// A SystemC module: construct during elaboration, read after sc_start().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/stats.h"
#include "isa/program.h"
#include "memory/hbm_model.h"
#include "sim/core_sync.h"
#include "sim/tensor_core.h"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  // `name` is also the stat prefix ("chip3" -> "chip3.hbm.*", "chip3.core0.*").
  // `cfg` and `programs` must outlive the chip. `loops`: the loop
  // coordinator every chip of the system shares (nullptr: the core decides
  // alone); used only when the chip runs one program.
  Chip(sc_core::sc_module_name name, const ChipConfig& cfg, const HbmModelInfo& hbm_model,
       const std::vector<isa::Program>& programs, StatsRegistry& stats, TraceWriter* trace, SpmdBinding device,
       LoopCoordinator* loops);

  [[nodiscard]] std::size_t num_cores() const { return cores_.size(); }
  [[nodiscard]] const TensorCore& core(std::size_t c) const { return *cores_[c]; }
  // Every core ran its program to the end.
  [[nodiscard]] bool finished() const;
  // The chip's end: its last core's end (or the kernel's time for a core that did not finish).
  [[nodiscard]] double end_seconds() const;
  // The first core error, "" when none, prefixed "chip 3 core 1: " (`who` =
  // "chip 3"; "" for a lone chip; the core only on a multi-core chip).
  [[nodiscard]] std::string error(const std::string& who) const;
  // The deadlock report's lines of every unfinished core, each prefixed.
  void blocked(const std::string& who, std::vector<std::string>& out) const;

 private:
  std::unique_ptr<HbmModel> hbm_;
  std::unique_ptr<CoreSync> sync_;  // megacore only
  std::vector<std::unique_ptr<TensorCore>> cores_;
};

}  // namespace tpusim
