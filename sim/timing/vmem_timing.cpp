#include "sim/timing/vmem_timing.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tpusim {

double vmem_port_bytes_per_cycle(const VmemConfig& vmem) {
  const auto ports = std::max<std::int64_t>(1, vmem.ports);
  return vmem.bytes_per_cycle / static_cast<double>(ports);
}

Cycles vmem_access_cycles(const VmemConfig& vmem, Bytes bytes, std::int64_t ports_used) {
  if (bytes == 0) return 0;
  const auto ports = std::clamp<std::int64_t>(ports_used, 1, std::max<std::int64_t>(1, vmem.ports));
  const double per_cycle = vmem_port_bytes_per_cycle(vmem) * static_cast<double>(ports);
  if (per_cycle <= 0) return 0;
  return static_cast<Cycles>(std::ceil(static_cast<double>(bytes) / per_cycle - 1e-9));
}

Cycles vmem_strided_access_cycles(const VmemConfig& vmem, std::int64_t rows, Bytes row_bytes,
                                  Bytes stride_bytes, std::int64_t ports_used) {
  if (rows <= 0 || row_bytes == 0) return 0;
  const Cycles base = vmem_access_cycles(vmem, static_cast<Bytes>(rows) * row_bytes, ports_used);
  const std::int64_t banks = std::max<std::int64_t>(1, vmem.banks);
  const double word = vmem.bytes_per_cycle / static_cast<double>(banks);
  // A row at least one full bank sweep wide touches every bank: no conflict
  // beyond the port limit. Dense rows likewise.
  if (rows == 1 || stride_bytes == row_bytes || static_cast<double>(row_bytes) >= vmem.bytes_per_cycle ||
      word < 1.0) {
    return base;
  }
  const auto word_bytes = static_cast<std::int64_t>(word);
  std::vector<std::int64_t> hits(static_cast<std::size_t>(banks), 0);
  const std::int64_t group = std::min(rows, banks);
  for (std::int64_t r = 0; r < group; ++r) {
    const auto start = static_cast<std::int64_t>(static_cast<Bytes>(r) * stride_bytes);
    hits[static_cast<std::size_t>((start / word_bytes) % banks)] += 1;
  }
  const std::int64_t degree = *std::max_element(hits.begin(), hits.end());
  return base * static_cast<Cycles>(degree);
}

}  // namespace tpusim
