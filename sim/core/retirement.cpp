#include "sim/core/retirement.h"

#include <algorithm>

#include "common/units.h"

namespace tpusim {

void Retirement::retire(double start, double done, bool collective, std::uint32_t provenance,
                        std::vector<ProvenanceStats>& rows) {
  constexpr double kEps = kTimeEpsilonSeconds;
  if (collective) {
    if (done >= collective_done_s_) collective_prov_ = provenance;
    collective_done_s_ = std::max(collective_done_s_, done);
    std::erase_if(in_flight_, [&](const auto& c) { return c.first <= retired_until_s_ + kEps; });
    in_flight_.emplace_back(done, provenance);
    return;
  }
  const double t = std::max(done, retired_until_s_);
  if (collective_done_s_ > retired_until_s_ + kEps && start > retired_until_s_ + kEps) {
    charge_wait(std::min({start, collective_done_s_, t}), rows);
  }
  rows[provenance].attributed_s += t - retired_until_s_;
  retired_until_s_ = t;
}

void Retirement::charge_wait(double gap_end, std::vector<ProvenanceStats>& rows) {
  constexpr double kEps = kTimeEpsilonSeconds;
  std::erase_if(in_flight_, [&](const auto& c) { return c.first <= retired_until_s_ + kEps; });
  std::sort(in_flight_.begin(), in_flight_.end());
  // Collectives completing inside the wait take it up to their completion,
  // in the order they complete (a chain of collectives with nothing between
  // them: each its own time).
  for (const auto& [d, prov] : in_flight_) {
    if (d + kEps >= gap_end) break;
    rows[prov].attributed_s += d - retired_until_s_;
    retired_until_s_ = d;
  }
  // The rest: the first to complete when (or after) the core resumed.
  std::uint32_t waited_for = collective_prov_;
  for (const auto& [d, prov] : in_flight_) {
    if (d + kEps >= gap_end) {
      waited_for = prov;
      break;
    }
  }
  rows[waited_for].attributed_s += gap_end - retired_until_s_;
  retired_until_s_ = gap_end;
}

void Retirement::finish(double end_s, std::vector<ProvenanceStats>& rows) {
  // The collectives' tail: the program waited for them.
  if (end_s > retired_until_s_) charge_wait(end_s, rows);
}

}  // namespace tpusim
