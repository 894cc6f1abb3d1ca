#include "sim/timing/hbm_timing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <vector>

namespace tpusim {
namespace {

// Per-channel burst counts for a run of `n` consecutive bursts starting at
// burst index `first`, added into a circular difference array.
void add_run(std::vector<std::int64_t>& per_channel, std::int64_t first, std::int64_t n) {
  const auto ch = static_cast<std::int64_t>(per_channel.size());
  const std::int64_t full = n / ch;
  const std::int64_t rem = n % ch;
  if (full > 0) {
    for (auto& c : per_channel) c += full;
  }
  const std::int64_t c0 = first % ch;
  for (std::int64_t i = 0; i < rem; ++i) per_channel[static_cast<std::size_t>((c0 + i) % ch)] += 1;
}

// The XOR address map (hbm.address_map: xor), for any channel count C:
// burst b goes to channel (b mod C + h(b div C)) mod C, where h XOR-folds
// the higher part's bits in k-bit groups (2^k >= C). Each aligned block of
// C consecutive bursts shares one rotation, so it covers every channel once
// (streams balance exactly as under modulo); a stride that is a multiple of
// C bursts changes the higher part row by row, so its rows rotate over the
// channels instead of camping on one.
struct XorMap {
  std::int64_t channels = 1;
  int k = 0;
  explicit XorMap(std::int64_t c) : channels(c) {
    while ((std::int64_t{1} << k) < c) ++k;
  }
  [[nodiscard]] std::int64_t channel(std::int64_t burst) const {
    std::uint64_t high = static_cast<std::uint64_t>(burst / channels), x = 0;
    const std::uint64_t mask = (std::uint64_t{1} << k) - 1;
    for (; high != 0 && k > 0; high >>= k) x ^= high & mask;
    return (burst % channels + static_cast<std::int64_t>(x % static_cast<std::uint64_t>(channels))) % channels;
  }
  // Adds a run of n consecutive bursts from `first`: the whole aligned
  // blocks at once (one burst per channel each), the ends burst by burst.
  void add_run(std::vector<std::int64_t>& per_channel, std::int64_t first, std::int64_t n) const {
    const std::int64_t end = first + n;
    const std::int64_t a = std::min(end, (first + channels - 1) / channels * channels);
    const std::int64_t z = std::max(a, end / channels * channels);
    for (std::int64_t b = first; b < a; ++b) per_channel[static_cast<std::size_t>(channel(b))] += 1;
    if (const std::int64_t blocks = (z - a) / channels; blocks > 0) {
      for (auto& c : per_channel) c += blocks;
    }
    for (std::int64_t b = z; b < end; ++b) per_channel[static_cast<std::size_t>(channel(b))] += 1;
  }
};

// Bursts of a tile and those of its busiest channel. Depends on the tile only
// through its row count and length and, modulo g·channels (where the channel
// pattern repeats), its offset and stride.
struct BurstCounts {
  std::int64_t bursts = 0;
  std::int64_t busiest = 0;
};

// Under the XOR map: every row's run of bursts (no period short of the
// address space; at most the tile's bursts plus two blocks per row of work).
BurstCounts count_bursts_xor(std::int64_t g, std::int64_t channels, const StridedTile& tile) {
  const XorMap map(channels);
  std::vector<std::int64_t> per_channel(static_cast<std::size_t>(channels), 0);
  BurstCounts r;
  const std::int64_t rows = tile.dense() ? 1 : tile.rows;
  const Bytes len = tile.dense() ? tile.useful_bytes() : tile.row_bytes;
  for (std::int64_t row = 0; row < rows; ++row) {
    const auto s = static_cast<std::int64_t>(tile.offset + static_cast<Bytes>(row) * tile.stride_bytes);
    const std::int64_t first = s / g, last = (s + static_cast<std::int64_t>(len) - 1) / g;
    map.add_run(per_channel, first, last - first + 1);
    r.bursts += last - first + 1;
  }
  r.busiest = *std::max_element(per_channel.begin(), per_channel.end());
  return r;
}

BurstCounts count_bursts(std::int64_t g, std::int64_t channels, const StridedTile& tile) {
  std::vector<std::int64_t> per_channel(static_cast<std::size_t>(channels), 0);
  const auto row_burst_range = [&](Bytes start, Bytes len) {
    const auto s = static_cast<std::int64_t>(start);
    const auto first = s / g;
    const auto last = (s + static_cast<std::int64_t>(len) - 1) / g;
    return std::pair{first, last - first + 1};
  };
  BurstCounts r;
  if (tile.dense()) {
    const auto [first, n] = row_burst_range(tile.offset, tile.useful_bytes());
    add_run(per_channel, first, n);
    r.bursts = n;
  } else {
    // Row starts repeat modulo g·channels (same misalignment, same channel)
    // with period P = g·channels / gcd(stride mod g·channels, g·channels):
    // simulate one period and scale, so the cost is O(min(rows, P)).
    const std::int64_t wrap = g * channels;
    const auto stride = static_cast<std::int64_t>(tile.stride_bytes);
    const std::int64_t step = stride % wrap;
    const std::int64_t period = step == 0 ? 1 : wrap / std::gcd(step, wrap);
    const std::int64_t simulated = std::min(tile.rows, period);
    std::vector<std::int64_t> one(static_cast<std::size_t>(channels), 0);
    std::int64_t bursts_period = 0;
    std::int64_t bursts_tail = 0;
    const std::int64_t reps = tile.rows / simulated;
    const std::int64_t tail_rows = tile.rows % simulated;
    std::vector<std::int64_t> tail(static_cast<std::size_t>(channels), 0);
    for (std::int64_t row = 0; row < simulated; ++row) {
      const Bytes start = tile.offset + static_cast<Bytes>(row) * tile.stride_bytes;
      const auto [first, n] = row_burst_range(start, tile.row_bytes);
      add_run(one, first, n);
      bursts_period += n;
      if (row < tail_rows) {
        add_run(tail, first, n);
        bursts_tail += n;
      }
    }
    for (std::size_t c = 0; c < per_channel.size(); ++c) per_channel[c] = one[c] * reps + tail[c];
    r.bursts = bursts_period * reps + bursts_tail;
  }
  r.busiest = *std::max_element(per_channel.begin(), per_channel.end());
  return r;
}

// count_bursts, remembered: a loop's DMAs repeat the same few patterns every
// iteration, and a strided pattern costs up to g·channels row steps. The key
// is everything the counts depend on (under modulo, offset and stride
// reduced modulo g·channels; under XOR, the whole offset and stride), so a
// hit returns exactly what a computation would.
BurstCounts count_bursts_cached(std::int64_t g, std::int64_t channels, HbmAddressMap map, const StridedTile& tile) {
  const bool xor_map = map == HbmAddressMap::kXor;
  const auto wrap = xor_map ? static_cast<Bytes>(-1) : static_cast<Bytes>(g * channels);
  const std::array<std::int64_t, 7> key = {g,
                                           channels,
                                           xor_map ? 1 : 0,
                                           tile.rows,
                                           static_cast<std::int64_t>(tile.row_bytes),
                                           tile.dense() ? -1 : static_cast<std::int64_t>(tile.stride_bytes % wrap),
                                           static_cast<std::int64_t>(tile.offset % wrap)};
  struct KeyHash {
    std::size_t operator()(const std::array<std::int64_t, 7>& k) const {
      std::size_t h = 0;
      for (const auto v : k) h = h * 1000003U ^ std::hash<std::int64_t>{}(v);
      return h;
    }
  };
  thread_local std::unordered_map<std::array<std::int64_t, 7>, BurstCounts, KeyHash> cache;
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= (1U << 16)) cache.clear();  // bounded memory
  const BurstCounts r = xor_map ? count_bursts_xor(g, channels, tile) : count_bursts(g, channels, tile);
  cache.emplace(key, r);
  return r;
}

}  // namespace

double HbmTransferTiming::access_efficiency() const {
  return moved_bytes == 0 ? 1.0
                          : static_cast<double>(useful_bytes) / static_cast<double>(moved_bytes);
}

HbmTransferTiming hbm_transfer(const HbmConfig& hbm, const StridedTile& tile) {
  HbmTransferTiming r;
  r.latency_seconds = hbm.latency;
  r.useful_bytes = tile.useful_bytes();
  if (r.useful_bytes == 0) {
    r.latency_seconds = 0;
    return r;
  }
  // Access granularity: HBM moves whole bursts. A pseudo-channel access is
  // 32 B on HBM2 (64-bit x BL4, JESD235) and HBM3 (32-bit x BL8, JESD238);
  // controllers often pair them into 64 B. The config says which.
  const auto g = static_cast<std::int64_t>(std::max(1.0, hbm.access_granularity));
  const std::int64_t channels = std::max<std::int64_t>(1, hbm.channels);
  const BurstCounts counts = count_bursts_cached(g, channels, hbm.address_map, tile);
  r.bursts = counts.bursts;
  r.moved_bytes = static_cast<Bytes>(r.bursts * g);
  r.busiest_channel_bursts = counts.busiest;
  // A channel's share of the nominal bandwidth, derated by the efficiency a
  // long sequential stream reaches (refresh, bus turnaround, page misses).
  const double channel_bytes_per_second =
      hbm.bandwidth * hbm.efficiency / static_cast<double>(channels);
  r.transfer_seconds = channel_bytes_per_second <= 0
                           ? 0.0
                           : static_cast<double>(r.busiest_channel_bursts * g) /
                                 channel_bytes_per_second;
  return r;
}

Cycles seconds_to_cycles(double seconds, double clock_hz) {
  if (seconds <= 0 || clock_hz <= 0) return 0;
  // Guard against 1810.0000000002 becoming 1811 through float noise.
  return static_cast<Cycles>(std::ceil(seconds * clock_hz - 1e-9));
}

Cycles hbm_transfer_cycles(const HbmConfig& hbm, const StridedTile& tile, double clock_hz) {
  return seconds_to_cycles(hbm_transfer(hbm, tile).seconds(), clock_hz);
}

}  // namespace tpusim
