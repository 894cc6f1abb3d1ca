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
    const double gap_end = std::min({start, collective_done_s_, t});
    std::erase_if(in_flight_, [&](const auto& c) { return c.first <= retired_until_s_ + kEps; });
    std::uint32_t waited_for = collective_prov_;
    double first_done = collective_done_s_;
    for (const auto& [d, prov] : in_flight_) {
      if (d + kEps >= gap_end && d < first_done) {
        first_done = d;
        waited_for = prov;
      }
    }
    rows[waited_for].attributed_s += gap_end - retired_until_s_;
    retired_until_s_ = gap_end;
  }
  rows[provenance].attributed_s += t - retired_until_s_;
  retired_until_s_ = t;
}

void Retirement::finish(double end_s, std::vector<ProvenanceStats>& rows) {
  if (end_s > retired_until_s_) {  // the last collective's tail: the program waited for it
    rows[collective_prov_].attributed_s += end_s - retired_until_s_;
    retired_until_s_ = end_s;
  }
}

}  // namespace tpusim
