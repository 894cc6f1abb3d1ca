// DMA timing: pure functions combining the HBM, VMEM and DMA-engine limits
// for one DMA instruction (a strided rectangular tile).
#pragma once

#include <cstdint>

#include "common/config.h"
#include "sim/timing/hbm_timing.h"
#include "sim/timing/unit_timing.h"

namespace tpusim {

// HBM <-> VMEM: the tile as laid out in HBM (its strides decide burst waste
// and channel spread); the VMEM side is written/read densely.
//   latency  = ceil(hbm.latency · clock)
//   hbm      = busiest channel's bursts at its bandwidth (hbm_transfer), in cycles
//   vmem     = vmem_access_cycles(useful bytes, one port)
//   requests = ceil(moved bytes / dma.chunk); at most dma.outstanding in
//              flight, each round trip costs one latency (Little's law):
//   window   = (ceil(requests / outstanding) - 1) · latency
//   issue    = max(hbm, vmem, window): the engine issues its requests as
//              outstanding slots free and is then free for its next transfer
//              (pipelined: the next transfer's requests follow this one's)
//   done     = latency + issue: the last data arrives one latency after the
//              last request left.
OpTiming dma_hbm_vmem_timing(const DmaConfig& dma, const HbmConfig& hbm, const VmemConfig& vmem,
                             double clock_hz, const StridedTile& hbm_tile);

// VMEM -> VMEM: read and write share the ports: 2 · bytes through one port each
// way, i.e. vmem_access_cycles(2 · bytes, 2 ports) when two ports exist.
OpTiming dma_vmem_vmem_timing(const VmemConfig& vmem, Bytes bytes);

// Seconds one transfer of `bytes` holds one direction of the host link
// (PCIe): latency + bytes / bandwidth.
double host_transfer_seconds(const HostLinkConfig& host, Bytes bytes);

}  // namespace tpusim
