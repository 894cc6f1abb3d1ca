// HBM strided-tile timing against hand-derived numbers and a brute-force
// enumeration of bursts.
#include "sim/timing/hbm_timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace tpusim {
namespace {

HbmConfig test_hbm() {
  HbmConfig h;
  h.capacity = 16e9;
  h.bandwidth = 1e12;  // 1 TB/s nominal
  h.efficiency = 0.8;  // -> 8e11 B/s, 1e11 B/s per channel
  h.channels = 8;
  h.access_granularity = 64;
  h.latency = 500e-9;
  h.address_map = HbmAddressMap::kModulo;  // the hand-derived numbers below; the XOR map has tests of its own
  return h;
}

TEST(HbmTiming, DenseTransferSpreadsOverAllChannels) {
  // 1 MiB at offset 0: 16384 bursts, 2048 per channel -> 131072 B at 1e11 B/s
  // = 1.31072 us, + 0.5 us latency = 1.81072 us = 1811 cycles at 1 GHz.
  const auto t = hbm_transfer(test_hbm(), StridedTile{1, 1 << 20, 1 << 20, 0});
  EXPECT_EQ(t.bursts, 16384);
  EXPECT_EQ(t.busiest_channel_bursts, 2048);
  EXPECT_EQ(t.moved_bytes, 1u << 20);
  EXPECT_NEAR(t.seconds(), 1.81072e-6, 1e-15);
  EXPECT_DOUBLE_EQ(t.access_efficiency(), 1.0);
  EXPECT_EQ(hbm_transfer_cycles(test_hbm(), StridedTile{1, 1 << 20, 1 << 20, 0}, 1e9), 1811u);
}

TEST(HbmTiming, ShortRowsWasteBurstsAndCampOnOneChannel) {
  // 256 rows of 32 B, stride 4096 = 64 bursts = 8 x (granularity x channels):
  // every row is one burst (32 B wasted) on channel 0. 256 bursts x 64 B =
  // 16384 B on one channel at 1e11 B/s = 163.84 ns + 500 ns -> 664 cycles.
  const StridedTile tile{256, 32, 4096, 0};
  const auto t = hbm_transfer(test_hbm(), tile);
  EXPECT_EQ(t.useful_bytes, 8192u);
  EXPECT_EQ(t.moved_bytes, 16384u);
  EXPECT_DOUBLE_EQ(t.access_efficiency(), 0.5);
  EXPECT_EQ(t.busiest_channel_bursts, 256);
  EXPECT_EQ(hbm_transfer_cycles(test_hbm(), tile, 1e9), 664u);
}

TEST(HbmTiming, SkewedStrideSpreadsRowsOverChannels) {
  // Stride 4160 = 65 bursts: row r lands on channel r mod 8, 32 bursts each:
  // 2048 B at 1e11 B/s = 20.48 ns + 500 ns = 520.48 -> 521 cycles.
  const StridedTile tile{256, 32, 4160, 0};
  const auto t = hbm_transfer(test_hbm(), tile);
  EXPECT_EQ(t.busiest_channel_bursts, 32);
  EXPECT_EQ(hbm_transfer_cycles(test_hbm(), tile, 1e9), 521u);
}

TEST(HbmTiming, MisalignedRowTouchesExtraBursts) {
  // 128 B at offset 32 covers bytes 32..159: bursts 0, 1, 2.
  const auto t = hbm_transfer(test_hbm(), StridedTile{1, 128, 128, 32});
  EXPECT_EQ(t.bursts, 3);
  EXPECT_EQ(t.moved_bytes, 192u);
  EXPECT_EQ(t.busiest_channel_bursts, 1);
}

TEST(HbmTiming, UnalignedStrideCountsEachRowsBursts) {
  // 10 rows of 40 B, stride 100: rows start at 0,100,…,900; the rows at
  // 100, 300, 500, 700, 800 straddle a 64 B boundary (2 bursts), the others
  // fit in one: 5 x 2 + 5 x 1 = 15 bursts, indices 0..14 once each, so
  // channels 0..6 get 2 and channel 7 gets 1.
  const auto t = hbm_transfer(test_hbm(), StridedTile{10, 40, 100, 0});
  EXPECT_EQ(t.bursts, 15);
  EXPECT_EQ(t.moved_bytes, 960u);
  EXPECT_EQ(t.busiest_channel_bursts, 2);
}

// Every burst of a tile enumerated: (bursts, busiest channel's bursts) for
// test_hbm()'s 64 B bursts over 8 channels.
std::pair<std::int64_t, std::int64_t> brute_force_bursts(const StridedTile& tile) {
  std::vector<std::int64_t> per(8, 0);
  std::int64_t bursts = 0;
  for (std::int64_t r = 0; r < tile.rows; ++r) {
    const auto s = static_cast<std::int64_t>(tile.offset + static_cast<Bytes>(r) * tile.stride_bytes);
    for (std::int64_t b = s / 64; b <= (s + static_cast<std::int64_t>(tile.row_bytes) - 1) / 64; ++b) {
      ++per[static_cast<std::size_t>(b % 8)];
      ++bursts;
    }
  }
  return {bursts, *std::max_element(per.begin(), per.end())};
}

TEST(HbmTiming, PeriodicShortcutMatchesBruteForce) {
  // The implementation simulates one period of row alignments and scales;
  // enumerate every burst here instead.
  const HbmConfig h = test_hbm();
  for (const StridedTile tile : {StridedTile{1000, 40, 100, 7}, StridedTile{777, 200, 300, 13},
                                 StridedTile{513, 64, 512, 0}, StridedTile{3, 5, 1 << 20, 63}}) {
    const auto [bursts, busiest] = brute_force_bursts(tile);
    const auto t = hbm_transfer(h, tile);
    EXPECT_EQ(t.bursts, bursts) << tile.rows << "x" << tile.row_bytes;
    EXPECT_EQ(t.busiest_channel_bursts, busiest);
  }
}

TEST(HbmTiming, RememberedPatternsGiveTheCountsOfEachTile) {
  // Burst counts are remembered by pattern (offset and stride modulo
  // granularity x channels = 512 B). Tiles sharing a residue, a dense tile
  // and a strided one with the same residue (stride 1024 vs row 512), and
  // offsets a multiple of 512 apart each get their own brute-force counts.
  const HbmConfig h = test_hbm();
  for (int pass = 0; pass < 2; ++pass) {
    for (const StridedTile tile :
         {StridedTile{4, 512, 512, 0}, StridedTile{4, 512, 1024, 0}, StridedTile{4, 512, 1536, 512},
          StridedTile{9, 40, 100, 7}, StridedTile{9, 40, 612, 519}, StridedTile{9, 40, 100, 1031},
          StridedTile{1, 100, 100, 3}, StridedTile{1, 100, 100, 515}, StridedTile{2, 48, 560, 60}}) {
      const auto [bursts, busiest] = brute_force_bursts(tile);
      const auto t = hbm_transfer(h, tile);
      EXPECT_EQ(t.bursts, bursts) << tile.rows << "x" << tile.row_bytes << " stride " << tile.stride_bytes;
      EXPECT_EQ(t.busiest_channel_bursts, busiest) << tile.rows << "x" << tile.row_bytes;
    }
  }
}

// The XOR address map, enumerated independently: burst b goes to channel
// (b mod C + h) mod C, h = the k-bit groups (2^k >= C) of b div C XORed
// together, mod C.
std::pair<std::int64_t, std::int64_t> brute_force_xor(const StridedTile& tile, std::int64_t g, std::int64_t channels) {
  int k = 0;
  while ((std::int64_t{1} << k) < channels) ++k;
  std::vector<std::int64_t> per(static_cast<std::size_t>(channels), 0);
  std::int64_t bursts = 0;
  for (std::int64_t r = 0; r < tile.rows; ++r) {
    const auto s = static_cast<std::int64_t>(tile.offset + static_cast<Bytes>(r) * tile.stride_bytes);
    for (std::int64_t b = s / g; b <= (s + static_cast<std::int64_t>(tile.row_bytes) - 1) / g; ++b) {
      std::int64_t x = 0;
      for (std::int64_t rest = b / channels; rest != 0 && k > 0; rest >>= k) x ^= rest & ((std::int64_t{1} << k) - 1);
      ++per[static_cast<std::size_t>((b % channels + x % channels) % channels)];
      ++bursts;
    }
  }
  return {bursts, *std::max_element(per.begin(), per.end())};
}

TEST(HbmTiming, XorMapSpreadsAPowerOfTwoStride) {
  // A KV-cache read as decode does it: 2048 rows of 256 B (4 bursts), 8 KiB
  // apart, over 128 channels of 64 B bursts. Under modulo every row starts
  // on channel 0 (8192 = 64 x 128): 4 channels serve all 8192 bursts, 2048
  // each. Under XOR row r = r0 + 128 r1 (its bursts' higher part is r) lands
  // on channels (j + r0 ^ r1) mod 128 (j = 0..3), and r0 ^ r1 takes every
  // value 16 times: 64 bursts per channel.
  HbmConfig h = test_hbm();
  h.channels = 128;
  const StridedTile tile{2048, 256, 8192, 0};
  EXPECT_EQ(hbm_transfer(h, tile).busiest_channel_bursts, 2048);
  h.address_map = HbmAddressMap::kXor;
  const auto x = hbm_transfer(h, tile);
  EXPECT_EQ(x.bursts, 8192);
  EXPECT_EQ(x.busiest_channel_bursts, 64);
  // A dense stream balances as under modulo: 1 MiB over 8 channels, 2048
  // each; over 48 (not a power of two), ceil(16384 / 48) = 342.
  h.channels = 8;
  EXPECT_EQ(hbm_transfer(h, StridedTile{1, 1 << 20, 1 << 20, 0}).busiest_channel_bursts, 2048);
  h.channels = 48;
  EXPECT_EQ(hbm_transfer(h, StridedTile{1, 1 << 20, 1 << 20, 0}).busiest_channel_bursts, 342);
}

TEST(HbmTiming, XorMapMatchesBruteForce) {
  for (const std::int64_t channels : {8, 6, 32, 48}) {
    HbmConfig h = test_hbm();
    h.channels = channels;
    h.address_map = HbmAddressMap::kXor;
    for (const StridedTile tile :
         {StridedTile{1000, 40, 100, 7}, StridedTile{777, 200, 300, 13}, StridedTile{513, 64, 512, 0},
          StridedTile{3, 5, 1 << 20, 63}, StridedTile{1, 100000, 100000, 4000}, StridedTile{300, 4096, 65536, 192}}) {
      const auto [bursts, busiest] = brute_force_xor(tile, 64, channels);
      const auto t = hbm_transfer(h, tile);
      EXPECT_EQ(t.bursts, bursts) << channels << " channels, " << tile.rows << "x" << tile.row_bytes;
      EXPECT_EQ(t.busiest_channel_bursts, busiest) << channels << " channels, " << tile.rows << "x" << tile.row_bytes;
    }
  }
}

TEST(HbmTiming, EmptyTransferIsFree) {
  const auto t = hbm_transfer(test_hbm(), StridedTile{0, 64, 64, 0});
  EXPECT_EQ(t.seconds(), 0.0);
  EXPECT_EQ(seconds_to_cycles(0.0, 1e9), 0u);
}

}  // namespace
}  // namespace tpusim
