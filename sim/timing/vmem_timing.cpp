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

}  // namespace tpusim
