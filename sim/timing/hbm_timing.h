// HBM transfer time for a strided rectangular tile: a pure function of the
// HbmConfig (DESIGN.md principle 1). The Hbm module and the DMA cost model
// call it; nothing here knows about SystemC.
//
// Model (each term cited in hbm_timing.cpp):
//  * every row of the tile is fetched in whole access-granularity bursts, so a
//    short or misaligned row wastes the rest of its first/last burst;
//  * bursts spread over the channels by hbm.address_map: modulo (default) is
//    burst index mod channels (a stride that is a multiple of
//    granularity·channels camps on one channel); xor rotates that by an
//    XOR-fold of the index's higher bits, as memory controllers hash
//    addresses, so streams and power-of-two strides both spread. A channel moves
//    bandwidth·efficiency/channels bytes per second, and the transfer ends
//    when its busiest channel does;
//  * one access latency is paid up front (requests are pipelined after it).
#pragma once

#include <cstdint>

#include "common/config.h"
#include "common/units.h"

namespace tpusim {

// `rows` rows of `row_bytes` each; row r starts at offset + r·stride_bytes.
// stride_bytes == row_bytes (or rows == 1) is a dense, contiguous transfer.
struct StridedTile {
  std::int64_t rows = 1;
  Bytes row_bytes = 0;
  Bytes stride_bytes = 0;
  Bytes offset = 0;  // byte address of the first row in the memory
  [[nodiscard]] Bytes useful_bytes() const { return static_cast<Bytes>(rows) * row_bytes; }
  [[nodiscard]] bool dense() const { return rows <= 1 || stride_bytes == row_bytes; }
};

struct HbmTransferTiming {
  Bytes useful_bytes = 0;         // what the program asked for
  Bytes moved_bytes = 0;          // whole bursts actually transferred
  std::int64_t bursts = 0;        // moved_bytes / access_granularity
  std::int64_t busiest_channel_bursts = 0;
  double transfer_seconds = 0;    // busiest channel's bursts at its bandwidth
  double latency_seconds = 0;     // HbmConfig::latency
  [[nodiscard]] double seconds() const { return latency_seconds + transfer_seconds; }
  // useful_bytes / moved_bytes: the access efficiency of the pattern.
  [[nodiscard]] double access_efficiency() const;
};

HbmTransferTiming hbm_transfer(const HbmConfig& hbm, const StridedTile& tile);

// The same in core clock cycles, rounded up: ceil(seconds · clock_hz).
Cycles hbm_transfer_cycles(const HbmConfig& hbm, const StridedTile& tile, double clock_hz);

// Seconds → cycles at a clock, rounded up (the one conversion used here).
Cycles seconds_to_cycles(double seconds, double clock_hz);

}  // namespace tpusim
