#include "sim/timing/dma_timing.h"

#include <algorithm>
#include <cmath>

#include "sim/timing/vmem_timing.h"

namespace tpusim {

OpTiming dma_hbm_vmem_timing(const DmaConfig& dma, const HbmConfig& hbm, const VmemConfig& vmem,
                             double clock_hz, const StridedTile& hbm_tile) {
  OpTiming t;
  const HbmTransferTiming h = hbm_transfer(hbm, hbm_tile);
  if (h.useful_bytes == 0) return t;
  const Cycles latency = seconds_to_cycles(h.latency_seconds, clock_hz);
  const Cycles hbm_cycles = seconds_to_cycles(h.transfer_seconds, clock_hz);
  const Cycles vmem_cycles = vmem_access_cycles(vmem, h.useful_bytes, 1);
  const auto chunk = static_cast<Bytes>(std::max(1.0, dma.chunk));
  const Bytes requests = (h.moved_bytes + chunk - 1) / chunk;
  const auto outstanding = static_cast<Bytes>(std::max<std::int64_t>(1, dma.outstanding));
  const Bytes rounds = (requests + outstanding - 1) / outstanding;
  const Cycles window = (rounds - 1) * latency;
  // The engine issues its requests as the outstanding slots free: it is
  // busy for the transfer's bandwidth time (or its request rounds) and free
  // for the next transfer while the last requests' data is still on its way.
  t.issue = std::max<Cycles>(1, std::max({hbm_cycles, vmem_cycles, window}));
  t.done = latency + t.issue;
  return t;
}

OpTiming dma_vmem_vmem_timing(const VmemConfig& vmem, Bytes bytes) {
  OpTiming t;
  t.done = vmem_access_cycles(vmem, 2 * bytes, 2);
  t.issue = t.done;
  return t;
}

double host_transfer_seconds(const HostLinkConfig& host, Bytes bytes) {
  if (bytes == 0) return 0;
  return host.latency + (host.bandwidth > 0 ? static_cast<double>(bytes) / host.bandwidth : 0.0);
}

}  // namespace tpusim
