#include "sim/timing/limiter.h"

#include <algorithm>
#include <cstdint>

namespace tpusim {

std::string_view LimiterUse::limiter_name() const {
  const auto l = limiter();
  return l ? resource_name(*l) : std::string_view("waiting");
}

LimiterUse find_limiter(const std::array<double, kResources>& busy_by, double hbm_bytes, double time_s,
                        const ChipConfig& chip, int cores) {
  LimiterUse out;
  if (!(time_s > 0)) return out;
  const auto n = static_cast<double>(std::max(1, cores));
  const double mxus = static_cast<double>(std::max<std::int64_t>(1, chip.core.mxu.count)) * n;
  const double xlus = static_cast<double>(std::max<std::int64_t>(1, chip.core.xlu.count)) * n;
  const double hbm = chip.hbm.bandwidth * chip.hbm.efficiency;
  for (std::size_t k = 0; k < kResources; ++k) {
    const auto r = static_cast<Resource>(k);
    const double units = r == Resource::kMxuCompute || r == Resource::kMxuWeights ? mxus
                         : r == Resource::kXlu                                    ? xlus
                                                                                  : n;
    out.use[k] = r == Resource::kHbm ? (hbm > 0 ? hbm_bytes / (hbm * time_s) : 0.0) : busy_by[k] / (units * time_s);
  }
  const auto best = std::max_element(out.use.begin(), out.use.end());
  out.busiest = static_cast<Resource>(best - out.use.begin());
  out.utilization = *best;
  return out;
}

}  // namespace tpusim
