// The resource that set an op's time, from what its instructions kept busy:
// the rule the report's "limiter" column and the trace's op slices share.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "common/config.h"
#include "sim/timing/unit_timing.h"

namespace tpusim {

// Below this use of every resource an op mostly waited (dependencies,
// latency, a barrier or another chip's collective): its limiter is "waiting".
inline constexpr double kLimiterMinUse = 0.5;

struct LimiterUse {
  // Each resource's use over the op's time: busy time over (time x units),
  // HBM by its bytes at the sustained bandwidth (hbm.bandwidth x efficiency).
  std::array<double, kResources> use{};
  Resource busiest = Resource::kVpuAlu;  // the most used resource, also when below kLimiterMinUse
  double utilization = 0;                // the busiest resource's use
  // The limiter: the busiest resource at kLimiterMinUse or more; none = waiting.
  [[nodiscard]] std::optional<Resource> limiter() const {
    return utilization >= kLimiterMinUse ? std::optional(busiest) : std::nullopt;
  }
  // resource_name() of the limiter, or "waiting".
  [[nodiscard]] std::string_view limiter_name() const;
};

// `busy_by`: busy seconds per resource (summed over units); `hbm_bytes`
// moved; `time_s` the op's share of the timeline; `cores` the TensorCores
// whose units ran it (units per core from the chip). No time: all zero.
LimiterUse find_limiter(const std::array<double, kResources>& busy_by, double hbm_bytes, double time_s,
                        const ChipConfig& chip, int cores);

}  // namespace tpusim
