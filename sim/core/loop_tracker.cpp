#include "sim/core/loop_tracker.h"

#include <algorithm>
#include <cmath>

#include "common/units.h"

namespace tpusim {

LoopPolicy LoopPolicy::from(const SimulationConfig& c) {
  LoopPolicy p;
  p.mode = c.loops;
  p.warmup = c.loop_warmup;
  p.tolerance = c.loop_tolerance;
  return p;
}

bool steady_state(const BoundarySample& a, const BoundarySample& b, const BoundarySample& c, double tolerance) {
  constexpr double kResolution = 1e-12;  // SystemC's time resolution
  const double issue1 = b.issue_s - a.issue_s, issue2 = c.issue_s - b.issue_s;
  const double retire1 = b.retired_s - a.retired_s, retire2 = c.retired_s - b.retired_s;
  const double busy1 = b.busy_cycles - a.busy_cycles, busy2 = c.busy_cycles - b.busy_cycles;
  if (!(issue2 > 0)) return false;
  const double slack = tolerance * issue2 + kResolution;
  return b.state == c.state && std::abs(issue2 - issue1) <= slack && std::abs(retire2 - retire1) <= slack &&
         std::abs(retire2 - issue2) <= slack && std::abs(busy2 - busy1) <= tolerance * std::max(busy1, busy2) + 1e-6;
}

double SkippedTime::reported(double t) const {
  if (shifts.empty() || t + kTimeEpsilonSeconds < shifts.front().first) return t;
  const auto it = std::upper_bound(shifts.begin(), shifts.end(), t + kTimeEpsilonSeconds,
                                   [](double v, const std::pair<double, double>& s) { return v < s.first; });
  return t + std::prev(it)->second;
}

LoopFrame& LoopTracker::enter(std::uint32_t begin, std::int64_t count, bool sampled, std::uint32_t repeat_pc,
                              LoopKey key) {
  LoopFrame& l = stack_.emplace_back();
  l.begin = begin;
  l.remaining = count;
  if (sampled) {
    l.sampled = true;
    l.repeat_pc = repeat_pc;
    l.total = count;
    l.key = key;
  }
  return l;
}

bool LoopTracker::sample(LoopFrame& l, const BoundarySample& s, LoopSnapshot*& fill) {
  if (l.done < policy_.warmup) return false;
  if (l.samples.size() == 3) l.samples.erase(l.samples.begin());
  l.samples.push_back(s);
  std::swap(l.prev, l.cur);
  fill = &l.cur;
  return true;
}

std::optional<double> LoopTracker::steady_iteration(const LoopFrame& l) const {
  if (!decidable(l) || !steady_state(l.samples[0], l.samples[1], l.samples[2], policy_.tolerance)) {
    return std::nullopt;
  }
  return l.samples[2].issue_s - l.samples[1].issue_s;
}

std::vector<double> LoopTracker::skip_rest(const LoopFrame& l, double iteration_s, double now_s, const Body& body,
                                           std::vector<ProvenanceStats>& prov) {
  const std::int64_t skipped = l.remaining;
  const auto times = static_cast<double>(skipped);
  const double added_s = times * iteration_s;
  const LoopSnapshot& a = l.prev;
  const LoopSnapshot& b = l.cur;
  std::vector<double> gains(b.stats.size());
  for (std::size_t i = 0; i < gains.size(); ++i) gains[i] = times * (b.stats[i] - a.stats[i]);
  // Provenance rows: the last iteration's figures x the skipped iterations;
  // attributed time scaled to the added time exactly, so rows sum to the step.
  double attributed = 0;
  for (std::size_t k = 0; k < body.prov.size(); ++k) attributed += b.prov[k].attributed_s - a.prov[k].attributed_s;
  const double scale = attributed > 0 ? added_s / (times * attributed) : 0.0;
  for (std::size_t k = 0; k < body.prov.size(); ++k) {
    ProvenanceStats& ps = prov[body.prov[k]];
    ps.attributed_s += times * scale * (b.prov[k].attributed_s - a.prov[k].attributed_s);
    ps.busy_s += times * (b.prov[k].busy_s - a.prov[k].busy_s);
    for (std::size_t r = 0; r < kResources; ++r) ps.busy_by[r] += times * (b.prov[k].busy_by[r] - a.prov[k].busy_by[r]);
    ps.flops += times * (b.prov[k].flops - a.prov[k].flops);
    ps.bf16_flops += times * (b.prov[k].bf16_flops - a.prov[k].bf16_flops);
    ps.transcendentals += times * (b.prov[k].transcendentals - a.prov[k].transcendentals);
    ps.hbm_bytes += times * (b.prov[k].hbm_bytes - a.prov[k].hbm_bytes);
    ps.instructions += static_cast<std::uint64_t>(skipped) * (b.prov[k].instructions - a.prov[k].instructions);
  }
  // A body that retired nothing in its last iteration: the loop's own row takes the time.
  if (!(attributed > 0)) prov[body.repeat_prov].attributed_s += added_s;
  skipped_.compute_s += times * (b.compute_s - a.compute_s);
  skipped_.comm_s += times * (b.comm_s - a.comm_s);
  skipped_.exposed_s += times * (b.exposed_s - a.exposed_s);
  skipped_.offset_s += added_s;
  skipped_.shifts.emplace_back(now_s, skipped_.offset_s);
  // The report: one row per loop, aggregated over its dynamic instances.
  auto row = std::find_if(rows_.begin(), rows_.end(), [&](const LoopExtrapolation& e) { return e.where == body.where; });
  if (row == rows_.end()) {
    LoopExtrapolation fresh;
    fresh.label = body.label.empty() ? std::string("repeat") : body.label;
    fresh.where = body.where;
    rows_.push_back(std::move(fresh));
    row = std::prev(rows_.end());
  }
  row->instances += 1;
  row->total_iterations += l.total;
  row->simulated_iterations += l.done;
  row->iteration_s = iteration_s;
  row->extrapolated_s += added_s;
  return gains;
}

}  // namespace tpusim
