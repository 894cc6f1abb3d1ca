#include "sim/loop_extrapolation.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace tpusim {

std::vector<std::string> reuse_notes(const std::vector<SectionReuse>& reused, std::size_t limit) {
  std::vector<std::string> out;
  if (reused.empty()) return out;
  std::int64_t instances = 0;
  double added = 0;
  for (const auto& r : reused) {
    instances += r.instances - 1;
    added += r.added_s;
  }
  out.push_back(fmt::format("reuse: {} ops stand for {} more identical ops, not simulated again: {:.4g} us added "
                            "(simulation.reuse: off simulates every op)",
                            reused.size(), instances, added * 1e6));
  std::vector<const SectionReuse*> order;
  for (const auto& r : reused) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->added_s > b->added_s; });
  for (std::size_t i = 0; i < order.size() && i < limit; ++i) {
    const SectionReuse& r = *order[i];
    out.push_back(fmt::format("reused {} x{}: {:.4g} us each, {:.4g} us added", r.label, r.instances,
                              r.instance_s * 1e6, r.added_s * 1e6));
  }
  if (order.size() > limit) out.push_back(fmt::format("reused: {} more ops", order.size() - limit));
  return out;
}

std::vector<std::string> loop_notes(const std::vector<LoopExtrapolation>& loops) {
  std::vector<std::string> out;
  for (const LoopExtrapolation& l : loops) {
    out.push_back(fmt::format(
        "loop extrapolated: {} ({}): {} of {} iterations simulated{}, steady {:.4g} us per iteration, {:.4g} us "
        "extrapolated",
        l.label, l.where, l.simulated_iterations, l.total_iterations,
        l.instances > 1 ? fmt::format(" over {} instances", l.instances) : std::string(), l.iteration_s * 1e6,
        l.extrapolated_s * 1e6));
  }
  return out;
}

LoopCoordinator::LoopCoordinator() : changed_(sc_core::sc_gen_unique_name("loop_coordinator")) {}

void LoopCoordinator::publish(const Key& key, std::int64_t iteration, double skip_s) {
  State& s = loops_[key];
  s.passed = std::max(s.passed, iteration);
  if (skip_s > 0) {
    s.skip_at = iteration;
    s.iteration_s = skip_s;
  }
  changed_.notify(sc_core::SC_ZERO_TIME);
}

void LoopCoordinator::leave(const Key& key, int core) {
  State& s = loops_[key];
  if (core == 0) {
    s.leader_left = true;
    changed_.notify(sc_core::SC_ZERO_TIME);
  }
  if (++s.left >= cores_) loops_.erase(key);
}

void LoopCoordinator::leader_finished() {
  leader_finished_ = true;
  changed_.notify(sc_core::SC_ZERO_TIME);
}

LoopCoordinator::Verdict LoopCoordinator::follow(const Key& key, std::int64_t iteration, double& iteration_s) const {
  const auto it = loops_.find(key);
  if (it != loops_.end()) {
    if (it->second.skip_at == iteration) {
      iteration_s = it->second.iteration_s;
      return Verdict::kSkip;
    }
    if (it->second.passed >= iteration || it->second.leader_left) return Verdict::kRunOn;
  }
  return leader_finished_ ? Verdict::kRunOn : Verdict::kWait;
}

}  // namespace tpusim
