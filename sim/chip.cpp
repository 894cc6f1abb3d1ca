#include "sim/chip.h"

#include <algorithm>
#include <fmt/format.h>

namespace tpusim {
namespace {

// "chip 3 core 1: ", "chip 3: ", "core 1: " or "" (a lone one-core chip).
std::string label(const std::string& who, std::size_t core, std::size_t cores) {
  std::string s = who;
  if (cores > 1) s += fmt::format("{}core {}", s.empty() ? "" : " ", core);
  return s.empty() ? s : s + ": ";
}

}  // namespace

Chip::Chip(sc_core::sc_module_name name, const ChipConfig& cfg, const HbmModelInfo& hbm_model,
           const std::vector<isa::Program>& programs, StatsRegistry& stats, TraceWriter* trace, SpmdBinding device,
           LoopCoordinator* loops)
    : sc_module(name) {
  const std::string prefix = basename();
  hbm_ = hbm_model.make("hbm", cfg.hbm, stats, prefix + ".hbm");
  const std::size_t ncores = programs.size();
  if (ncores > 1) sync_ = std::make_unique<CoreSync>(static_cast<int>(ncores), cfg.simulation.run_ahead);
  cores_.reserve(ncores);
  for (std::size_t c = 0; c < ncores; ++c) {
    const std::string core_name = fmt::format("core{}", c);
    // Core 0 is the chip's device on the fabric; the lowering gives the
    // other cores no collectives.
    cores_.push_back(std::make_unique<TensorCore>(core_name.c_str(), cfg, programs[c], stats,
                                                  prefix + "." + core_name, trace, c == 0 ? device : SpmdBinding{},
                                                  sync_.get()));
    cores_.back()->hbm_socket.bind(hbm_->target());
    // Cores that extrapolate loops skip the same iterations (one coordinator
    // for every core of the system); core 0 also scales the shared HBM's
    // counters, which both cores' iterations moved.
    cores_.back()->set_loop_coordination(loops, c == 0 ? std::vector<std::string>{prefix + ".hbm."}
                                                       : std::vector<std::string>{});
    // Reused sections add what their instructions moved through the chip's HBM.
    cores_.back()->set_reuse_stat_prefixes({prefix + ".hbm."});
  }
}

bool Chip::finished() const {
  return std::all_of(cores_.begin(), cores_.end(), [](const auto& c) { return c->finished(); });
}

double Chip::end_seconds() const {
  double end = 0;
  for (const auto& c : cores_) {
    // Reused sections: the cores of a megacore chip meet at every section's
    // end, so a reused section lasts as long on every core; core 0's time
    // for it (the provenance rows' timeline) is the chip's.
    const double own = c->finished() ? c->end_seconds() - c->reuse_added_seconds() : sc_core::sc_time_stamp().to_seconds();
    end = std::max(end, own);
  }
  return end + (cores_.front()->finished() ? cores_.front()->reuse_added_seconds() : 0.0);
}

std::string Chip::error(const std::string& who) const {
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    if (!cores_[c]->error().empty()) {
      return label(who, c, cores_.size()) + cores_[c]->error();
    }
  }
  return {};
}

void Chip::blocked(const std::string& who, std::vector<std::string>& out) const {
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    if (cores_[c]->finished()) continue;
    for (const auto& b : cores_[c]->blocked()) {
      out.push_back(label(who, c, cores_.size()) + b);
    }
  }
}

}  // namespace tpusim
