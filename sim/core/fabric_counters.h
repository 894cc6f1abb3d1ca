// What the collective fabric has counted so far (sim/collective_fabric.h):
// a plain snapshot, so loop extrapolation and section reuse can add the
// difference of two snapshots once per skipped repeat.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace tpusim {

struct FabricCounters {
  std::vector<std::int64_t> row_counts;  // per report row: collectives issued
  std::array<double, 3> axis_busy_s{};   // link busy time per ICI axis
  double dcn_busy_s = 0;
};

}  // namespace tpusim
