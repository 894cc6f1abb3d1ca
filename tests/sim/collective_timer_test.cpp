// The pure pieces of the SPMD model: collective timers (placeholder and
// network), the VPU reduction cost, replica-group resolution, V from the
// instruction's tiles, and the interval union behind "exposed
// communication". Expected numbers come from the collective cost forms' closed forms
// and the preset figures, derived in the comments.
#include <array>
#include <cmath>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config_loader.h"
#include "sim/collective_timer.h"
#include "sim/interval_union.h"

namespace tpusim {
namespace {

using interconnect::CollectiveKind;
using ::testing::HasSubstr;

LoadedConfig chip_with(const std::string& preset, std::vector<std::string> sets) {
  auto cfg = load_config(preset, sets);
  EXPECT_TRUE(cfg.ok()) << (cfg.ok() ? "" : format_all(cfg.errors()));
  return std::move(cfg).value();
}

std::shared_ptr<const interconnect::ReplicaGroups> groups_of(interconnect::ReplicaGroups g) {
  return std::make_shared<const interconnect::ReplicaGroups>(std::move(g));
}

std::shared_ptr<const interconnect::ReplicaGroups> all_of(std::int64_t n) {
  interconnect::ReplicaGroup g;
  for (std::int64_t d = 0; d < n; ++d) g.push_back(d);
  return groups_of({g});
}

NetworkCollectiveTimer timer_for(const ChipConfig& chip) {
  auto topo = interconnect::Topology::from_config(chip.system);
  EXPECT_TRUE(topo.ok());
  return NetworkCollectiveTimer(chip, std::move(topo).value());
}

TEST(CollectiveTimer, RingAllGatherMatchesCollectivesMdWorkedExample) {
  // the cost forms' worked example: 8 chips on a ring, v5e links w = 4.5e10
  // B/s, V = 33,554,432 B: AllGather 7/8 · V / (2w) = 326.2 us, plus
  // ceil(7/2) = 4 hops of 1 us.
  const LoadedConfig cfg = chip_with("v5e", {"system.topology=[8]", "system.wraparound=[true]"});
  NetworkCollectiveTimer timer = timer_for(cfg.chip);
  CollectiveRequest r{CollectiveKind::kAllGather, 33554432.0, all_of(8), isa::DType::kBf16};
  auto t = timer.time(r);
  ASSERT_TRUE(t.ok());
  const double expect = 7.0 / 8.0 * 33554432.0 / 9e10 + 4e-6;
  EXPECT_NEAR(t->seconds, expect, 0.05 * expect);
  EXPECT_EQ(t->group_size, 8);
  EXPECT_EQ(t->bound, "bandwidth");
  EXPECT_THAT(t->algorithm, HasSubstr("x:ring"));
}

TEST(CollectiveTimer, LineAllReduceIncludesVpuReductionAndIsCached) {
  // v5p, 8 chips without wraparound (a line), w = 9e10: AllReduce
  // 2 · 7/8 · V / w = 326.2 us for V = 16 MiB; latency adds 2 · 7 hops.
  const LoadedConfig cfg = chip_with("v5p", {"system.topology=[8]"});
  NetworkCollectiveTimer timer = timer_for(cfg.chip);
  const double v = 16777216.0;
  CollectiveRequest r{CollectiveKind::kAllReduce, v, all_of(8), isa::DType::kBf16};
  auto t = timer.time(r);
  ASSERT_TRUE(t.ok());
  const double bandwidth_term = 2 * 7.0 / 8.0 * v / 9e10;
  EXPECT_NEAR(t->seconds, bandwidth_term + 14e-6, 0.05 * bandwidth_term);
  EXPECT_THAT(t->algorithm, HasSubstr("x:line"));

  // The reduction makes it slower than the same schedule with free adds.
  interconnect::CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.bytes = v;
  auto free_adds = interconnect::simulate_collective(timer.topology(),
                                                     interconnect::NetworkParams::from_config(cfg.chip.ici, cfg.chip.dcn), spec);
  ASSERT_TRUE(free_adds.ok());
  EXPECT_GT(t->seconds, free_adds->seconds);

  // Same request again: served from the cache, no second network run.
  EXPECT_EQ(timer.network_runs(), 1u);
  auto again = timer.time(r);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->seconds, t->seconds);
  EXPECT_EQ(timer.network_runs(), 1u);
  EXPECT_EQ(timer.cache_hits(), 1u);
  r.bytes = v / 2;
  ASSERT_TRUE(timer.time(r).ok());
  EXPECT_EQ(timer.network_runs(), 2u);

  // Link busy per axis: a line all-reduce moves 2·(N-1)/N·V per chip over
  // its links: summed over all links, 8 chips × 2 × 7/8 × V / w of busy time
  // (each byte crosses one link per hop; the ring's V/N shards travel
  // neighbour to neighbour). 14 link directions on a line of 8.
  EXPECT_EQ(t->axis_links[0], 14);
  EXPECT_NEAR(t->axis_busy_s[0], 8 * 2 * 7.0 / 8.0 * v / 9e10, 0.02 * 8 * 2 * 7.0 / 8.0 * v / 9e10);
}

TEST(CollectiveTimer, SmallMessagesAreLatencyBound) {
  // 1 KiB over a ring of 8: the bandwidth term is 7/8 · 1024 / 9e10 = 10 ns
  // against 4 hops of 1 us.
  const LoadedConfig cfg = chip_with("v5e", {"system.topology=[8]", "system.wraparound=[true]"});
  NetworkCollectiveTimer timer = timer_for(cfg.chip);
  auto t = timer.time({CollectiveKind::kAllGather, 1024.0, all_of(8), isa::DType::kBf16});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->bound, "latency");
  EXPECT_NEAR(t->seconds, 4e-6, 0.1 * 4e-6);
}

TEST(CollectiveTimer, PlaceholderIsBytesOverTotalIciBandwidthPlusOneHop) {
  // v5e: 4 links × 45 GB/s × efficiency 1 = 180 GB/s; 18 MB takes 100 us + 1 us.
  const LoadedConfig cfg = chip_with("v5e", {});
  PlaceholderCollectiveTimer timer(cfg.chip);
  auto t = timer.time({CollectiveKind::kAllReduce, 18e6, nullptr, isa::DType::kBf16});
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->seconds, 101e-6, 1e-12);
  EXPECT_EQ(t->algorithm, "placeholder");
}

TEST(CollectiveTimer, StartupDelaysEachCollectiveFromItsOwnStart) {
  // ici.collective_startup c: a collective takes c more alone, and run
  // together with another that starts 30 us later on links of its own (the
  // two rows of a 2x8 torus, each gathered along x), each still takes its
  // solo time from its own start (so the later one's transfers begin at
  // 30 us + c, not at max(30 us, c)).
  const double c = 9.92e-6;
  const LoadedConfig plain = chip_with("v5e", {"system.topology=[8,2]", "system.wraparound=[true,false]"});
  const LoadedConfig with = chip_with("v5e", {"system.topology=[8,2]", "system.wraparound=[true,false]",
                                              "ici.collective_startup=9.92 us"});
  interconnect::ReplicaGroup row0, row1;
  for (std::int64_t x = 0; x < 8; ++x) {
    row0.push_back(x);
    row1.push_back(8 + x);
  }
  const CollectiveRequest a{CollectiveKind::kAllGather, 8e6, groups_of({row0}), isa::DType::kBf16};
  const CollectiveRequest b{CollectiveKind::kAllGather, 8e6, groups_of({row1}), isa::DType::kBf16};
  NetworkCollectiveTimer t0 = timer_for(plain.chip), t1 = timer_for(with.chip);
  auto solo0 = t0.time(a), solo1 = t1.time(a);
  ASSERT_TRUE(solo0.ok() && solo1.ok());
  EXPECT_NEAR(solo1->seconds - solo0->seconds, c, 1e-12);
  auto both = t1.time_together({{a, 0.0}, {b, 30e-6}});
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_NEAR((*both)[0], solo1->seconds, 1e-12);
  EXPECT_NEAR((*both)[1], solo1->seconds, 1e-12);
  // The placeholder (one chip) pays it too: bytes / 180 GB/s + 1 us + c.
  PlaceholderCollectiveTimer p(with.chip);
  auto pt = p.time({CollectiveKind::kAllReduce, 18e6, nullptr, isa::DType::kBf16});
  ASSERT_TRUE(pt.ok());
  EXPECT_NEAR(pt->seconds, 101e-6 + c, 1e-12);
}

TEST(CollectiveTimer, VpuReductionCostFollowsVpuRates) {
  // v5e VPU: 8 sublanes × 128 lanes, bf16 packs 2 per 32-bit element, so a
  // vreg holds 2048 bf16. 1 MiB = 524,288 bf16 = 256 vregs. Adding them
  // into a partial reads 2 and writes 1 vreg per result: issue = max(256/4
  // ALU, 512/3 loads = 171, 256/1 stores) = 256 cycles; done = 256 - 1 + 2
  // (ALU latency) = 257 cycles at 1.5 GHz.
  const LoadedConfig cfg = chip_with("v5e", {});
  const auto cost = vpu_reduction_cost(cfg.chip, isa::DType::kBf16);
  EXPECT_NEAR(cost(1048576.0), 257 / 1.5e9, 1e-13);
  // f32: 1024 per vreg, so the same 4 KiB per vreg and the same 257 cycles;
  // 3 MiB of f32 = 768 vregs: issue max(192, 512, 768) = 768, done 769.
  EXPECT_NEAR(vpu_reduction_cost(cfg.chip, isa::DType::kF32)(1048576.0), 257 / 1.5e9, 1e-13);
  EXPECT_NEAR(vpu_reduction_cost(cfg.chip, isa::DType::kF32)(3 * 1048576.0), 769 / 1.5e9, 1e-13);
  EXPECT_EQ(cost(0), 0.0);
}

TEST(CollectiveTimer, VBytesFromInstructionTiles) {
  // The collective cost forms: V is the gathered result (AG), the unreduced input
  // (RS, AR), the whole array N × per-device buffer (A2A).
  EXPECT_EQ(collective_v_bytes(CollectiveKind::kAllGather, 100, 800, 8), 800);
  EXPECT_EQ(collective_v_bytes(CollectiveKind::kReduceScatter, 800, 100, 8), 800);
  EXPECT_EQ(collective_v_bytes(CollectiveKind::kAllReduce, 800, 800, 8), 800);
  EXPECT_EQ(collective_v_bytes(CollectiveKind::kAllToAll, 100, 100, 8), 800);
  EXPECT_EQ(collective_v_bytes(CollectiveKind::kCollectivePermute, 100, 100, 2), 100);
}

TEST(CollectiveTimer, HbmBytesPerChipFollowTheRingsSendsReceivesAndReductions) {
  // A ring of N = 8, V = 800: each chip sends and receives 7 chunks of V/8 =
  // 100 per reduce-scatter or all-gather pass; a reduction reads the
  // received chunk and the local one and writes their sum.
  using enum CollectiveHbmTraffic;
  const auto bytes = [](CollectiveHbmTraffic t, CollectiveKind k, double v, std::int64_t n, bool sends = true,
                        bool receives = true) {
    const HbmBytes b = collective_hbm_bytes(t, CollectiveShare{k, v, n, sends, receives});
    return std::make_pair(b.read, b.write);
  };
  using P = std::pair<double, double>;
  // All-gather: 700 sent and received, its own 100 copied into the output.
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kAllGather, 800, 8), P(800, 800));
  EXPECT_EQ(bytes(kTransfersReduction, CollectiveKind::kAllGather, 800, 8), P(800, 800));
  // Reduce-scatter: 700 sent, 700 received; + 7 reductions of (100 + 100 read, 100 written).
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kReduceScatter, 800, 8), P(700, 700));
  EXPECT_EQ(bytes(kTransfersReduction, CollectiveKind::kReduceScatter, 800, 8), P(2100, 1400));
  // All-reduce: the reduce-scatter, then an all-gather of the shards in place (700 each way).
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kAllReduce, 800, 8), P(1400, 1400));
  EXPECT_EQ(bytes(kTransfersReduction, CollectiveKind::kAllReduce, 800, 8), P(2800, 2100));
  // All-to-all: V = 8 x the buffer of 100; 7/8 of it sent and received, 1/8 kept (copied).
  EXPECT_EQ(bytes(kTransfersReduction, CollectiveKind::kAllToAll, 800, 8), P(100, 100));
  // Permute: a source reads its buffer, a target writes one; a chip on a cycle does both.
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kCollectivePermute, 100, 2, true, false), P(100, 0));
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kCollectivePermute, 100, 2, false, true), P(0, 100));
  EXPECT_EQ(bytes(kTransfers, CollectiveKind::kCollectivePermute, 100, 2), P(100, 100));
  // none: no HBM traffic; a group of one moves nothing but an all-gather's copy.
  EXPECT_EQ(bytes(kNone, CollectiveKind::kAllReduce, 800, 8), P(0, 0));
  EXPECT_EQ(bytes(kTransfersReduction, CollectiveKind::kReduceScatter, 800, 1), P(0, 0));
  // The choices parse and print back (params.def lists them).
  for (const auto* name : {"none", "transfers", "transfers+reduction"}) {
    CollectiveHbmTraffic t = kNone;
    EXPECT_TRUE(parse_enum(name, t)) << name;
    EXPECT_EQ(enum_name(t), name);
  }
}

TEST(CollectiveTimer, ResolveGroupsTilesDataParallelCopiesAndRejectsBadGroups) {
  std::int64_t tiled = 0;
  const isa::ReplicaGroups tp8{{0, 1, 2, 3, 4, 5, 6, 7}};
  auto g = resolve_groups(&tp8, false, 64, tiled);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(tiled, 8);
  ASSERT_EQ(g->size(), 8u);
  EXPECT_EQ((*g)[3], (interconnect::ReplicaGroup{24, 25, 26, 27, 28, 29, 30, 31}));

  auto all = resolve_groups(nullptr, false, 4, tiled);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (interconnect::ReplicaGroups{{0, 1, 2, 3}}));

  const isa::ReplicaGroups too_big{{0, 9}};
  auto e1 = resolve_groups(&too_big, false, 8, tiled);
  ASSERT_FALSE(e1.ok());
  EXPECT_THAT(e1.errors().front().message, HasSubstr("device 9 but the system has 8 chips"));
  const isa::ReplicaGroups twice{{0, 1}, {1, 2}, {3}};
  ASSERT_FALSE(resolve_groups(&twice, false, 4, tiled).ok());
  const isa::ReplicaGroups hole{{0, 2}};
  auto e3 = resolve_groups(&hole, false, 3, tiled);
  ASSERT_FALSE(e3.ok());
  EXPECT_THAT(e3.errors().front().message, HasSubstr("device 1 (of 0..2) is in no replica group"));
  const isa::ReplicaGroups three{{0, 1, 2}};
  auto e4 = resolve_groups(&three, false, 8, tiled);
  ASSERT_FALSE(e4.ok());
  EXPECT_THAT(e4.errors().front().message, HasSubstr("does not divide"));

  const isa::ReplicaGroups pairs{{0, 1}, {1, 0}};
  auto p = resolve_groups(&pairs, true, 4, tiled);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (interconnect::ReplicaGroups{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
}

TEST(IntervalUnion, MergesOverlapsAndSubtracts) {
  IntervalUnion compute;
  compute.add(0, 2);
  compute.add(1, 3);   // overlaps: [0,3)
  compute.add(5, 6);
  compute.add(3, 4);   // touches: [0,4)
  compute.add(7, 7);   // empty: ignored
  EXPECT_EQ(compute.pieces(), 2u);
  EXPECT_DOUBLE_EQ(compute.measure(), 5.0);
  IntervalUnion comm;
  comm.add(2, 8);      // covered by compute on [2,4) and [5,6): 3 of 6
  EXPECT_DOUBLE_EQ(comm.measure_minus(compute), 3.0);
  EXPECT_DOUBLE_EQ(compute.measure_minus(comm), 2.0);  // [0,2)
  IntervalUnion all;
  all.add(-1, 10);
  all.add(0, 1);       // inside: no change
  EXPECT_EQ(all.pieces(), 1u);
  EXPECT_DOUBLE_EQ(comm.measure_minus(all), 0.0);
}

TEST(IntervalUnion, AgreesWithACellByCellUnionInAnyInsertionOrder) {
  // Integer intervals on [0, 200): the union's measure and piece count
  // against an array of covered unit cells (pieces = maximal covered runs).
  // Mostly time-ordered adds (the simulator's pattern: the last span grows
  // in place) mixed with adds into the past that bridge or absorb spans.
  std::uint64_t seed = 12345;
  auto next = [&seed](int n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  for (int round = 0; round < 50; ++round) {
    IntervalUnion u;
    std::array<bool, 200> cell{};
    int cursor = 0;
    for (int k = 0; k < 40; ++k) {
      const bool past = next(4) == 0;
      const int b = past ? next(190) : std::min(cursor + next(6), 190);
      const int e = std::min(b + 1 + next(past ? 30 : 5), 200);
      cursor = std::max(cursor, b);
      u.add(b, e);
      for (int c = b; c < e; ++c) cell[static_cast<std::size_t>(c)] = true;
      int covered = 0, runs = 0;
      for (std::size_t c = 0; c < cell.size(); ++c) {
        covered += cell[c] ? 1 : 0;
        runs += cell[c] && (c == 0 || !cell[c - 1]) ? 1 : 0;
      }
      ASSERT_DOUBLE_EQ(u.measure(), covered) << "round " << round << " add " << k;
      ASSERT_DOUBLE_EQ(u.running_measure(), covered);
      ASSERT_EQ(u.pieces(), static_cast<std::size_t>(runs));
    }
  }
}

TEST(BusyTime, FoldingThePastKeepsEveryMeasureAndBoundsTheSpansHeld) {
  // Compute and communication intervals in the simulator's pattern: each
  // begins at or after the current time, which only moves forward. A
  // BusyTime folded at the current time after every add must report what
  // two plain unions report (the oracle), while holding few spans.
  std::uint64_t seed = 777;
  auto next = [&seed](int n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  BusyTime folded;
  IntervalUnion compute, comm;
  double now = 0;
  std::size_t most = 0;
  for (int k = 0; k < 20000; ++k) {
    now += next(3);
    const double b = now + next(4);
    const double e = b + 1 + next(k % 500 < 50 ? 40 : 6);  // bursts of long collectives
    if (next(5) == 0) {
      folded.add_comm(b, e);
      comm.add(b, e);
    } else if (next(3) > 0) {  // gaps with nothing busy
      folded.add_compute(b, e);
      compute.add(b, e);
    }
    folded.maybe_fold_before(now);
    most = std::max(most, folded.pieces());
  }
  EXPECT_NEAR(folded.compute(), compute.measure(), 1e-6);
  EXPECT_NEAR(folded.comm(), comm.measure(), 1e-6);
  EXPECT_NEAR(folded.exposed(), comm.measure_minus(compute), 1e-6);
  EXPECT_GT(comm.measure_minus(compute), 1000);  // the case exercises exposure
  EXPECT_GT(compute.pieces(), 1000u);            // and many disjoint spans
  EXPECT_LE(most, 200u);
}

}  // namespace
}  // namespace tpusim
