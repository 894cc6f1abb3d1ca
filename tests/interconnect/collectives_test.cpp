// Agreement of link-level simulated collectives with the closed forms of
// the collective cost forms. Every expected value below is computed from
// the formula written next to it, not from the simulator.
#include "interconnect/collectives.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

namespace tpusim::interconnect {
namespace {

constexpr double kW = 4.5e10;  // v5e one-way link bandwidth (the collective cost forms)
constexpr double kH = 1e-6;    // per-hop latency (book's rule of thumb)
constexpr double kV = 33554432;  // bf16[2048,8192]

NetworkParams params(double hop_latency = kH, std::uint32_t max_packets = 64) {
  NetworkParams p;
  p.ici_bytes_per_s = kW;
  p.ici_hop_latency_s = hop_latency;
  p.packet_bytes = 4096;
  p.max_packets_per_message = max_packets;
  return p;
}
// Big systems: 16 packets per message keep Debug runs short (packet count
// does not change an uncontended single-hop ring step: bytes/w + h either way).
NetworkParams big_params() { return params(kH, 16); }

Topology topo(std::vector<std::int64_t> dims, bool wrap) {
  auto t = Topology::create(dims, std::vector<bool>(dims.size(), wrap));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

double sim(const Topology& t, CollectiveKind k, double bytes, const NetworkParams& p,
           ReplicaGroups groups = {}, CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) {
  CollectiveSpec spec;
  spec.kind = k;
  spec.bytes = bytes;
  spec.groups = std::move(groups);
  spec.algorithm = algorithm;
  auto r = simulate_collective(t, p, spec);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->seconds : -1;
}

// --- Closed forms (the collective cost forms), one axis of N chips -------------------
// Ring with wraparound (bidirectional): (N-1)/N · V/(2w) + ⌈(N-1)/2⌉·h.
// Line (no wraparound): (N-1)/N · V/w + (N-1)·h.
double ag_axis(double n, bool wrap, double v, double h) {
  return wrap ? (n - 1) / n * v / (2 * kW) + std::ceil((n - 1) / 2) * h
              : (n - 1) / n * v / kW + (n - 1) * h;
}
// AllToAll: ring (V/N²)·L/(2w), L = Σ_{d=1}^{N-1} min(d, N-d); line
// (V/N²)·⌊N/2⌋⌈N/2⌉/w. All chunks fly at once, so hop latencies overlap the
// transmission: T = max(T_bw + h, farthest·h), farthest = ⌊N/2⌋ or N-1 hops.
double a2a_axis(std::int64_t n, bool wrap, double v, double h) {
  const double nn = static_cast<double>(n);
  if (!wrap) {
    return std::max(v / (nn * nn) * static_cast<double>((n / 2) * ((n + 1) / 2)) / kW + h, (nn - 1) * h);
  }
  double l = 0;
  for (std::int64_t d = 1; d < n; ++d) l += static_cast<double>(std::min(d, n - d));
  return std::max(v / (nn * nn) * l / (2 * kW) + h, static_cast<double>(n / 2) * h);
}

void expect_close(double simulated, double expected, double tolerance) {
  EXPECT_NEAR(simulated / expected, 1.0, tolerance)
      << "simulated " << simulated * 1e6 << " us, formula " << expected * 1e6 << " us";
}

// --- The cost forms' worked example (8-ring, v5e links, h = 0) -------
TEST(CollectivesTest, WorkedExampleBandwidthTermsOnEightRing) {
  const Topology ring = topo({8}, true);
  const NetworkParams p = params(0.0);
  // 7/8 · V / 9e10 = 326.2 µs
  expect_close(sim(ring, CollectiveKind::kAllGather, kV, p), 326.2e-6, 0.001);
  expect_close(sim(ring, CollectiveKind::kReduceScatter, kV, p), 326.2e-6, 0.001);
  expect_close(sim(ring, CollectiveKind::kAllReduce, kV, p), 652.4e-6, 0.001);
  // V/64 · 16 / 9e10 = 93.2 µs
  expect_close(sim(ring, CollectiveKind::kAllToAll, kV, p), 93.2e-6, 0.01);
  // Without wraparound: 7/8 · V / 4.5e10 = 652.4 µs
  expect_close(sim(topo({8}, false), CollectiveKind::kAllGather, kV, p), 652.4e-6, 0.001);
}

TEST(CollectivesTest, WorkedExampleWithHopLatency) {
  // The cost forms' example row: 326.2 µs + 4 hops of 1 µs = 330.2 µs.
  expect_close(sim(topo({8}, true), CollectiveKind::kAllGather, kV, params()), 330.2e-6, 0.001);
}

// --- Rings of 4..16, with and without wraparound, large messages -----------
TEST(CollectivesTest, RingsAgreeWithClosedFormsForLargeMessages) {
  for (std::int64_t n : {4, 5, 6, 7, 8, 12, 16}) {
    for (bool wrap : {true, false}) {
      SCOPED_TRACE(testing::Message() << "N=" << n << " wrap=" << wrap);
      const Topology t = topo({n}, wrap);
      const double nn = static_cast<double>(n);
      const double ag = ag_axis(nn, wrap, kV, kH);
      expect_close(sim(t, CollectiveKind::kAllGather, kV, params()), ag, 0.05);
      expect_close(sim(t, CollectiveKind::kReduceScatter, kV, params()), ag, 0.05);
      expect_close(sim(t, CollectiveKind::kAllReduce, kV, params()), 2 * ag, 0.05);
      expect_close(sim(t, CollectiveKind::kAllToAll, kV, params()), a2a_axis(n, wrap, kV, kH), 0.05);
    }
  }
}

// --- Latency regime: tiny messages cost steps · h -------------------------
TEST(CollectivesTest, SmallMessagesCostStepsTimesHopLatency) {
  for (std::int64_t n : {4, 8, 16}) {
    for (bool wrap : {true, false}) {
      SCOPED_TRACE(testing::Message() << "N=" << n << " wrap=" << wrap);
      const Topology t = topo({n}, wrap);
      const double v = 64.0 * static_cast<double>(n);  // 64 B per shard: far below w·h = 45 kB
      const double steps = wrap ? std::ceil((static_cast<double>(n) - 1) / 2) : static_cast<double>(n - 1);
      expect_close(sim(t, CollectiveKind::kAllGather, v, params()), ag_axis(static_cast<double>(n), wrap, v, kH), 0.10);
      expect_close(sim(t, CollectiveKind::kAllGather, v, params()), steps * kH, 0.10);
      expect_close(sim(t, CollectiveKind::kAllReduce, v, params()), 2 * steps * kH, 0.10);
      expect_close(sim(t, CollectiveKind::kAllToAll, v, params()), a2a_axis(n, wrap, v, kH), 0.10);
    }
  }
}

// --- The collective's fixed start-up (ici.collective_startup) --------------
// Paid once per collective before its first transfer: exactly c more than
// without it, on a short ring and a long one alike, where the hop latency
// is paid once per ring step ((N-1)/2 of them on a wrapped ring of N).
TEST(CollectivesTest, StartupIsPaidOncePerCollectiveWhateverItsLength) {
  constexpr double kC = 9.92e-6;
  NetworkParams with = params();
  with.collective_startup_s = kC;
  for (std::int64_t n : {4, 16}) {
    SCOPED_TRACE(testing::Message() << "N=" << n);
    const Topology t = topo({n}, true);
    const double v = 64.0 * static_cast<double>(n);  // latency-bound: steps x h
    for (const CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kAllReduce, CollectiveKind::kAllToAll}) {
      EXPECT_NEAR(sim(t, k, v, with) - sim(t, k, v, params()), kC, 1e-12) << collective_name(k);
    }
    // The hop latency still grows with the ring: ceil((N-1)/2) steps.
    EXPECT_NEAR(sim(t, CollectiveKind::kAllGather, v, with), kC + std::ceil((static_cast<double>(n) - 1) / 2) * kH,
                0.10 * kH);
  }
  // A collective-permute, and a two-slice all-reduce (ICI, then DCN, then
  // ICI: one collective, one start-up).
  const Topology ring = topo({8}, true);
  CollectiveSpec permute;
  permute.kind = CollectiveKind::kCollectivePermute;
  permute.bytes = 1 << 20;
  permute.source_target_pairs = {{0, 1}, {1, 2}, {2, 3}};
  auto a = simulate_collective(ring, params(), permute);
  auto b = simulate_collective(ring, with, permute);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(b->seconds - a->seconds, kC, 1e-12);
  auto two = Topology::create({4}, {true}, false, 2);
  ASSERT_TRUE(two.ok());
  NetworkParams dcn = params();
  dcn.dcn_bytes_per_s = 12.5e9;
  dcn.dcn_latency_s = 10e-6;
  NetworkParams dcn_with = dcn;
  dcn_with.collective_startup_s = kC;
  EXPECT_NEAR(sim(*two, CollectiveKind::kAllReduce, kV, dcn_with) - sim(*two, CollectiveKind::kAllReduce, kV, dcn), kC,
              1e-12);
}

// --- One axis of a torus: every parallel ring runs at once ----------------
TEST(CollectivesTest, SingleAxisOfTorusMatchesOneRing) {
  for (bool wrap : {true, false}) {
    const Topology t = topo({8, 4}, wrap);
    // groups along y (4 chips each), 8 of them in parallel on disjoint links
    const double expected = ag_axis(4, wrap, kV, kH);
    const auto per_axis = CollectiveAlgorithm::kPerAxisRing;
    expect_close(sim(t, CollectiveKind::kAllGather, kV, params(), groups_spanning_axes(t, 0b10), per_axis), expected,
                 0.05);
    expect_close(sim(t, CollectiveKind::kAllReduce, kV, params(), groups_spanning_axes(t, 0b01), per_axis),
                 2 * ag_axis(8, wrap, kV, kH), 0.05);
  }
}

// --- Whole tori: per-axis phases ------------------------------------------
// RS phases x, y, z on data V, V/Nx, V/(NxNy); AG phases z, y, x on held data
// V/N, V/N·Nz, V/N·NzNy (shard = held data). Each phase is one axis formula.
double ag_torus(const std::vector<std::int64_t>& dims, bool wrap, double v, double h) {
  double n = 1;
  for (auto d : dims) n *= static_cast<double>(d);
  double held = v / n, total = 0;
  for (size_t k = dims.size(); k-- > 0;) {
    const double nk = static_cast<double>(dims[k]);
    total += ag_axis(nk, wrap, held * nk, h);  // one axis with V_k = held·N_k
    held *= nk;
  }
  return total;
}
double rs_torus(const std::vector<std::int64_t>& dims, bool wrap, double v, double h) {
  double data = v, total = 0;
  for (auto d : dims) {
    total += ag_axis(static_cast<double>(d), wrap, data, h);
    data /= static_cast<double>(d);
  }
  return total;
}
// AllToAll on a torus with dimension-ordered routing: the busiest axis.
double a2a_torus(const std::vector<std::int64_t>& dims, bool wrap, double v, double h) {
  double n = 1;
  for (auto d : dims) n *= static_cast<double>(d);
  double bw = 0, lat = 0;
  for (auto d : dims) {
    const double na = static_cast<double>(d);
    // one axis's link load = (N/N_a) times that of an N_a ring with V_a = V·N_a²/N² ...
    // written directly: chunk V/N², (N/N_a)·L_a/2 chunks per link direction (ring),
    // (N/N_a)·⌊N_a/2⌋⌈N_a/2⌉ on the middle link of a line.
    double load;
    if (wrap) {
      double l = 0;
      for (std::int64_t k = 1; k < d; ++k) l += static_cast<double>(std::min(k, d - k));
      load = (n / na) * l / 2;
    } else {
      load = (n / na) * static_cast<double>((d / 2) * ((d + 1) / 2));
    }
    bw = std::max(bw, v / (n * n) * load / kW);
    lat += (wrap ? static_cast<double>(d / 2) : na - 1) * h;
  }
  return std::max(bw + h, lat);  // as a2a_axis: latency overlaps transmission
}

TEST(CollectivesTest, WholeToriAgreeWithPerAxisPhaseClosedForms) {
  struct Case {
    std::vector<std::int64_t> dims;
    bool wrap;
  };
  for (const Case& c : {Case{{4, 4}, true}, Case{{4, 4}, false}, Case{{16, 16}, true},
                        Case{{16, 16}, false}, Case{{4, 4, 4}, true}, Case{{8, 8, 8}, true},
                        Case{{8, 8, 8}, false}}) {
    SCOPED_TRACE(testing::Message() << c.dims.size() << "D " << c.dims[0] << " wrap=" << c.wrap);
    const Topology t = topo(c.dims, c.wrap);
    const double ag = ag_torus(c.dims, c.wrap, kV, kH);
    const double rs = rs_torus(c.dims, c.wrap, kV, kH);
    const auto per_axis = CollectiveAlgorithm::kPerAxisRing;
    expect_close(sim(t, CollectiveKind::kAllGather, kV, big_params(), {}, per_axis), ag, 0.05);
    expect_close(sim(t, CollectiveKind::kReduceScatter, kV, big_params(), {}, per_axis), rs, 0.05);
    expect_close(sim(t, CollectiveKind::kAllReduce, kV, big_params(), {}, per_axis), rs + ag, 0.05);
    // Latency regime: 64 B shards, time = Σ_axes steps · h for each of RS and AG.
    const double tiny = 64.0 * static_cast<double>(t.num_devices());
    expect_close(sim(t, CollectiveKind::kAllReduce, tiny, big_params(), {}, per_axis),
                 rs_torus(c.dims, c.wrap, tiny, kH) + ag_torus(c.dims, c.wrap, tiny, kH), 0.10);
  }
}

// --- Multi-axis: k shares of V/k, per-axis phases in rotated axis orders ----
// With equal extents and rings every share moves the same bytes at every
// phase index, each on its own axis, and every chip of a ring finishes a
// phase at the same time, so no link is shared: each phase is the one-axis
// formula on the share, and the whole is the per-axis form on V/k (bandwidth
// term divided by k, the same Σ steps·h latency term).
TEST(CollectivesTest, MultiAxisEqualExtentsIsPerAxisOnAShare) {
  struct Case {
    std::vector<std::int64_t> dims;
    bool wrap;
  };
  for (const Case& c : {Case{{4, 4}, true}, Case{{8, 8}, true}, Case{{4, 4, 4}, true}}) {
    SCOPED_TRACE(testing::Message() << c.dims.size() << "D " << c.dims[0] << " wrap=" << c.wrap);
    const Topology t = topo(c.dims, c.wrap);
    const double k = static_cast<double>(c.dims.size());
    const auto multi = CollectiveAlgorithm::kMultiAxis;
    const double ag = ag_torus(c.dims, c.wrap, kV / k, kH);
    const double rs = rs_torus(c.dims, c.wrap, kV / k, kH);
    expect_close(sim(t, CollectiveKind::kAllGather, kV, big_params(), {}, multi), ag, 0.01);
    expect_close(sim(t, CollectiveKind::kReduceScatter, kV, big_params(), {}, multi), rs, 0.01);
    expect_close(sim(t, CollectiveKind::kAllReduce, kV, big_params(), {}, multi), rs + ag, 0.01);
  }
  // 4x4 torus AllGather written out: per share V/2, phases y then x (share 0)
  // or x then y (share 1); phase 1 moves 3/4·(V/2)/4/(2w), phase 2
  // 3/4·(V/2)/(2w), 2 ring steps of h each: 15/64·V/w + 4h = 178.763 us.
  const Topology t44 = topo({4, 4}, true);
  expect_close(sim(t44, CollectiveKind::kAllGather, kV, big_params(), {}, CollectiveAlgorithm::kMultiAxis),
               15.0 / 64 * kV / kW + 4 * kH, 0.01);
}

TEST(CollectivesTest, MultiAxisOnLinesLiesBetweenShareAndWhole) {
  // Lines of 4 (4x4 without wraparound): the middle chips of a line finish a
  // phase before its ends, start their share's next phase, and meet the other
  // share's previous phase still crossing that axis, so links are shared; the
  // time lies between the per-axis form on V/2 (no sharing) and on V.
  const Topology t = topo({4, 4}, false);
  const double multi = sim(t, CollectiveKind::kAllGather, kV, big_params(), {}, CollectiveAlgorithm::kMultiAxis);
  EXPECT_GE(multi, ag_torus({4, 4}, false, kV / 2, kH) * 0.99);
  EXPECT_LT(multi, ag_torus({4, 4}, false, kV, kH));
}

TEST(CollectivesTest, MultiAxisUsesBothLinksOfA2x2Box) {
  // A 2x2x1 box (two lines of 2, as a v7 2x2x1 slice): per-axis gathers V/4
  // over y then V/2 over x, one link at a time: 3/4·V/w + 2h. Multi-axis
  // runs the two halves on y and x at once: 3/8·V/w + 2h (every chip takes
  // in 3/4·V over its two links).
  const Topology t = topo({2, 2, 1}, false);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllGather;
  spec.bytes = kV;
  spec.algorithm = CollectiveAlgorithm::kMultiAxis;
  auto r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "multi-axis(x:line,y:line)");
  expect_close(r->seconds, 3.0 / 8 * kV / kW + 2 * kH, 0.01);
  expect_close(sim(t, CollectiveKind::kAllGather, kV, params(), {}, CollectiveAlgorithm::kPerAxisRing),
               3.0 / 4 * kV / kW + 2 * kH, 0.01);
  // AllReduce: RS then AG per share, 2·(3/8·V/w + 2h).
  expect_close(sim(t, CollectiveKind::kAllReduce, kV, params(), {}, CollectiveAlgorithm::kMultiAxis),
               2 * (3.0 / 8 * kV / kW + 2 * kH), 0.01);
  // Latency regime (64 B shards): the shards run concurrently, so the steps
  // are the per-axis ones, 2h.
  expect_close(sim(t, CollectiveKind::kAllGather, 256, params(), {}, CollectiveAlgorithm::kMultiAxis), 2 * kH,
               0.10);
}

TEST(CollectivesTest, MultiAxisOnOneAxisIsThePerAxisRing) {
  const Topology t = topo({8, 4}, true);
  for (std::uint32_t mask : {0b01u, 0b10u}) {
    for (CollectiveKind k : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter, CollectiveKind::kAllReduce}) {
      CollectiveSpec spec;
      spec.kind = k;
      spec.bytes = kV;
      spec.groups = groups_spanning_axes(t, mask);
      spec.algorithm = CollectiveAlgorithm::kPerAxisRing;
      auto per_axis = simulate_collective(t, params(), spec);
      spec.algorithm = CollectiveAlgorithm::kMultiAxis;
      auto multi = simulate_collective(t, params(), spec);
      ASSERT_TRUE(per_axis.ok() && multi.ok());
      EXPECT_EQ(multi->seconds, per_axis->seconds);
      EXPECT_EQ(multi->algorithm, per_axis->algorithm);  // what ran: the per-axis ring
    }
  }
}

TEST(CollectivesTest, MultiAxisUnequalExtentsLiesBetweenItsBounds) {
  // 4x2 (x a ring of 4, y a line of 2) AllGather, shares V/2 of which a chip
  // holds V/16. Share 0 (y then x): V/16 over y (1/2·(V/8)/w + h), then
  // 3/4·(V/2)/(2w) + 2h; share 1 (x then y): 3/4·(V/4)/(2w) + 2h, then
  // 1/2·(V/2)/w + h. The shares fall out of step and meet on the x links, so
  // there is no exact form; the time lies between the slower share alone,
  // 11/32·V/w + 3h, and the per-axis ring, 1/2·V/w + 3h.
  auto t42 = Topology::create({4, 2}, {true, false});
  ASSERT_TRUE(t42.ok());
  const double multi = sim(*t42, CollectiveKind::kAllGather, kV, params(), {}, CollectiveAlgorithm::kMultiAxis);
  const double per_axis =
      sim(*t42, CollectiveKind::kAllGather, kV, params(), {}, CollectiveAlgorithm::kPerAxisRing);
  expect_close(per_axis, 0.5 * kV / kW + 3 * kH, 0.01);
  EXPECT_GE(multi, (11.0 / 32 * kV / kW + 3 * kH) * 0.99);
  EXPECT_LT(multi, per_axis);
}

TEST(CollectivesTest, TorusAllToAllMatchesBusiestAxis) {
  struct Case {
    std::vector<std::int64_t> dims;
    bool wrap;
  };
  for (const Case& c : {Case{{4, 4}, true}, Case{{4, 4}, false}, Case{{8, 8}, true}, Case{{4, 4, 4}, true}}) {
    SCOPED_TRACE(testing::Message() << c.dims.size() << "D " << c.dims[0] << " wrap=" << c.wrap);
    const Topology t = topo(c.dims, c.wrap);
    double n = 1;
    double farthest = 0;  // hops of the farthest chunk: Σ_a ⌊N_a/2⌋ (ring) or N_a-1 (line)
    for (auto d : c.dims) {
      n *= static_cast<double>(d);
      farthest += c.wrap ? static_cast<double>(d / 2) : static_cast<double>(d - 1);
    }
    // Bandwidth regime: 1 MiB chunks (V/N² each); the busiest axis' load.
    const double big = n * n * 1048576;
    expect_close(sim(t, CollectiveKind::kAllToAll, big, big_params()), a2a_torus(c.dims, c.wrap, big, kH), 0.05);
    // Latency regime: 64-byte chunks arrive after the farthest chunk's hops.
    const double tiny = n * n * 64;
    expect_close(sim(t, CollectiveKind::kAllToAll, tiny, params()), farthest * kH, 0.10);
  }
}

// --- Contention emerges from shared links ---------------------------------
TEST(CollectivesTest, GroupsSharingLinksContend) {
  // 8-ring, two interleaved flat-ring groups {0,2,4,6} and {1,3,5,7}: every
  // logical hop is 2 physical hops, and both groups use every link, so each
  // link carries twice a single group's traffic: 2 · (3/4 · V/(2w)) plus
  // per step 2 hops of latency (2 steps).
  const Topology t = topo({8}, true);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllGather;
  spec.bytes = kV;
  spec.groups = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  auto r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "flat-ring");
  expect_close(r->seconds, 2 * (3.0 / 4 * kV / (2 * kW)) + 2 * 2 * kH, 0.05);
  // One group alone gets the links to itself: half the bandwidth time.
  spec.groups = {{0, 2, 4, 6}};
  auto alone = simulate_collective(t, params(), spec);
  ASSERT_TRUE(alone.ok());
  expect_close(alone->seconds, 3.0 / 4 * kV / (2 * kW) + 2 * 2 * kH, 0.05);
}

TEST(CollectivesTest, ReportsAlgorithmAndRejectsBadGroups) {
  const Topology t = topo({4, 4}, true);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllReduce;
  spec.bytes = 1 << 20;
  auto r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "multi-axis(x:ring,y:ring)");  // auto on a box of two axes
  spec.algorithm = CollectiveAlgorithm::kPerAxisRing;
  r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "per-axis-ring(x:ring,y:ring)");
  spec.algorithm = CollectiveAlgorithm::kFlatRing;
  r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "flat-ring");
  spec.groups = {{0, 1}, {1, 2}};
  EXPECT_FALSE(simulate_collective(t, params(), spec).ok());
  spec.groups = {{0, 99}};
  EXPECT_FALSE(simulate_collective(t, params(), spec).ok());
  spec.groups = {};
  spec.algorithm = CollectiveAlgorithm::kDirect;
  EXPECT_FALSE(simulate_collective(t, params(), spec).ok());
}

TEST(CollectivesTest, ReductionCostHookDelaysReduceScatter) {
  // 4-ring RS: each flow's second hop waits for one reduction of the first
  // hop's bytes, and each owner reduces its two incoming partials at the end.
  const Topology t = topo({4}, true);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kReduceScatter;
  spec.bytes = kV;
  spec.reduction_cost = [](double) { return 10e-6; };
  auto r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  expect_close(r->seconds, ag_axis(4, true, kV, kH) + 2 * 10e-6, 0.01);
}

TEST(CollectivesTest, CollectivePermuteOneHopAndAcrossTheRing) {
  const Topology t = topo({8}, true);
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kCollectivePermute;
  spec.bytes = kV;
  for (DeviceId d = 0; d < 8; ++d) spec.source_target_pairs.emplace_back(d, (d + 1) % 8);
  auto r = simulate_collective(t, params(), spec);
  ASSERT_TRUE(r.ok());
  expect_close(r->seconds, kV / kW + kH, 0.01);  // one hop, own link
}

TEST(CollectivesTest, MultisliceGroupsCrossDcn) {
  // 2 slices of a 4-ring; groups {i, i+4} pair the same chip of both slices.
  // Each chip sends its V/2 shard over its own DCN port: (V/2)/dcn_bw + latency.
  const Topology t = Topology::create({4}, {true}, false, 2).value();
  NetworkParams p = params();
  p.dcn_bytes_per_s = 6.25e9;  // v5p, 50 Gbps per chip
  p.dcn_latency_s = 10e-6;
  ReplicaGroups groups;
  for (DeviceId i = 0; i < 4; ++i) groups.push_back({i, i + 4});
  CollectiveSpec spec;
  spec.kind = CollectiveKind::kAllGather;
  spec.bytes = kV;
  spec.groups = groups;
  auto r = simulate_collective(t, p, spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->algorithm, "flat-ring");
  expect_close(r->seconds, kV / 2 / 6.25e9 + 10e-6, 0.001);
}

TEST(CollectivesTest, GroupsThatAreReplicasAreSimulatedOnceWithTheSameTimes) {
  // Disjoint groups of one shape (every x line of an 8x8 torus; the 2x2
  // boxes of a 4x4 torus, multi-axis; chips at the same place in 4 slices)
  // run as one group's events; times and link busy are the full run's, bit
  // for bit, and still the closed form where there is one.
  struct Case {
    Topology topology;
    CollectiveKind kind;
    ReplicaGroups groups;
    std::uint64_t components;
  };
  std::vector<Case> cases;
  {
    ReplicaGroups lines;
    for (DeviceId y = 0; y < 8; ++y) {
      lines.emplace_back();
      for (DeviceId x = 0; x < 8; ++x) lines.back().push_back(y * 8 + x);
    }
    cases.push_back({topo({8, 8}, true), CollectiveKind::kAllGather, lines, 8});
  }
  {
    ReplicaGroups boxes;
    for (DeviceId by = 0; by < 4; by += 2) {
      for (DeviceId bx = 0; bx < 4; bx += 2) {
        boxes.push_back({by * 4 + bx, by * 4 + bx + 1, (by + 1) * 4 + bx, (by + 1) * 4 + bx + 1});
      }
    }
    cases.push_back({topo({4, 4}, true), CollectiveKind::kReduceScatter, boxes, 4});
  }
  {
    ReplicaGroups across;
    for (DeviceId i = 0; i < 4; ++i) across.push_back({i, i + 4, i + 8, i + 12});
    cases.push_back({Topology::create({4}, {true}, false, 4).value(), CollectiveKind::kAllReduce, across, 4});
  }
  for (const Case& c : cases) {
    CollectiveSpec spec;
    spec.kind = c.kind;
    spec.bytes = kV;
    spec.groups = c.groups;
    NetworkParams p = params();
    p.dcn_bytes_per_s = 6.25e9;
    p.dcn_latency_s = 10e-6;
    p.replicate_identical = false;
    const auto all = simulate_collective(c.topology, p, spec);
    p.replicate_identical = true;
    const auto rep = simulate_collective(c.topology, p, spec);
    ASSERT_TRUE(all.ok() && rep.ok());
    EXPECT_EQ(all->seconds, rep->seconds) << all->algorithm;
    EXPECT_EQ(all->network.max_link_busy_s, rep->network.max_link_busy_s);
    EXPECT_EQ(all->network.packets, rep->network.packets);
    EXPECT_EQ(rep->network.components, c.components) << rep->algorithm;
    EXPECT_EQ(rep->network.simulated_components, 1u) << rep->algorithm;
    EXPECT_EQ(rep->network.events * c.components, all->network.events);
  }
  // The 8 x lines: an 8-ring AllGather each, (N-1)/N V/(2w) + ceil((N-1)/2) h.
  CollectiveSpec lines;
  lines.kind = CollectiveKind::kAllGather;
  lines.bytes = kV;
  lines.groups = cases[0].groups;
  expect_close(simulate_collective(cases[0].topology, params(), lines)->seconds, ag_axis(8, true, kV, kH), 0.01);
}

TEST(CollectivesTest, IotaReplicaGroupsExpand) {
  // [2,4]<=[4,2]T(1,0): iota(8) as 4x2, transposed to 2x4 -> {0,2,4,6},{1,3,5,7}
  auto g = expand_iota_groups(2, 4, {4, 2}, {1, 0});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (ReplicaGroups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  auto plain = expand_iota_groups(2, 4, {8}, {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, (ReplicaGroups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_FALSE(expand_iota_groups(2, 4, {3, 2}, {}).ok());
}

// --- Hierarchical multislice collectives (docs/interconnect.md) ------------
namespace hier {

constexpr double kDcnBw = 6.25e9;  // v5p: 50 Gbps per chip (Cloud TPU v5p docs)
constexpr double kDcnLat = 10e-6;  // v5p's dcn.latency

NetworkParams dcn_params() {
  NetworkParams p = params();
  p.dcn_bytes_per_s = kDcnBw;
  p.dcn_latency_s = kDcnLat;
  return p;
}

// The DCN phase, ReduceScatter or AllGather over S slices on D bytes per chip
// (D = data entering the RS / gathered by the AG): a ring over the S peers
// whose two directions share one egress port, so every step moves two shards
// D/S through it (the first RS step two halves): (S-1)/S · D/B + ⌊S/2⌋·Ld.
double dcn_phase(std::int64_t s, double d) {
  const double ss = static_cast<double>(s);
  return (ss - 1) / ss * d / kDcnBw + static_cast<double>(s / 2) * kDcnLat;
}

// One ICI phase of a whole wrapped box: AG phases z, y, x on held·N_k;
// RS phases x, y, z on V/Π_{j<k} N_j (the per-axis-ring closed forms above).
double ici_ag(const std::vector<std::int64_t>& dims, double v) {
  double n = 1;
  for (auto d : dims) n *= static_cast<double>(d);
  double held = v / n, t = 0;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    const double nk = static_cast<double>(*it);
    t += ag_axis(nk, true, held * nk, kH);
    held *= nk;
  }
  return t;
}
double ici_rs(const std::vector<std::int64_t>& dims, double v) {
  double data = v, t = 0;
  for (auto d : dims) {
    t += ag_axis(static_cast<double>(d), true, data, kH);
    data /= static_cast<double>(d);
  }
  return t;
}

CollectiveResult run(const Topology& t, CollectiveKind k, double bytes, CollectiveAlgorithm a,
                     ReplicaGroups groups = {}) {
  CollectiveSpec spec;
  spec.kind = k;
  spec.bytes = bytes;
  spec.algorithm = a;
  spec.groups = std::move(groups);
  auto r = simulate_collective(t, dcn_params(), spec);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.errors().front().message);
  return r.ok() ? *r : CollectiveResult{};
}

}  // namespace hier

TEST(CollectivesTest, HierarchicalAllReduceTwoSlicesMatchesClosedForm) {
  // 2 slices of a 4x4 torus (32 chips, one group): RS over ICI on V, RS + AG
  // over DCN on V/16 between the 2 peers (a line), AG over ICI on V.
  const Topology t = Topology::create({4, 4}, {true, true}, false, 2).value();
  const auto r = hier::run(t, CollectiveKind::kAllReduce, kV, CollectiveAlgorithm::kAuto);
  EXPECT_EQ(r.algorithm, "hierarchical(per-axis-ring(x:ring,y:ring)+dcn:line(2))");
  const double expected = hier::ici_rs({4, 4}, kV) + 2 * hier::dcn_phase(2, kV / 16) + hier::ici_ag({4, 4}, kV);
  expect_close(r.seconds, expected, 0.01);
}

TEST(CollectivesTest, HierarchicalGatherAndScatterOverFourAndThreeSlices) {
  // 8-rings, S = 4 (even: the DCN ring's first RS step carries half shards)
  // and S = 3 (odd). AG: DCN on the V/N pieces first (gathers V/8), then ICI;
  // RS: ICI first, then DCN on V/8.
  for (std::int64_t s : {4, 3}) {
    const Topology t = Topology::create({8}, {true}, false, s).value();
    const auto ag = hier::run(t, CollectiveKind::kAllGather, kV, CollectiveAlgorithm::kHierarchical);
    expect_close(ag.seconds, hier::dcn_phase(s, kV / 8) + hier::ici_ag({8}, kV), 0.01);
    const auto rs = hier::run(t, CollectiveKind::kReduceScatter, kV, CollectiveAlgorithm::kHierarchical);
    expect_close(rs.seconds, hier::ici_rs({8}, kV) + hier::dcn_phase(s, kV / 8), 0.01);
    EXPECT_EQ(rs.algorithm, fmt::format("hierarchical(per-axis-ring(x:ring)+dcn:{}({}))", s > 2 ? "ring" : "line", s));
  }
}

TEST(CollectivesTest, HierarchicalMovesOnlyTheShardOverDcn) {
  // DCN egress+ingress busy time of the hierarchical all-reduce: every chip
  // sends (and receives) 2·(S-1)/S·V/L over DCN; the flat ring over the same
  // 32 chips in device order moves whole V/32 shards through the 2 boundary
  // chips per step, so it takes longer than the hierarchical schedule.
  const Topology t = Topology::create({4, 4}, {true, true}, false, 2).value();
  const auto h = hier::run(t, CollectiveKind::kAllReduce, kV, CollectiveAlgorithm::kHierarchical);
  const auto flat = hier::run(t, CollectiveKind::kAllReduce, kV, CollectiveAlgorithm::kFlatRing);
  EXPECT_EQ(flat.algorithm, "flat-ring");
  EXPECT_GT(flat.seconds, h.seconds);
}

TEST(CollectivesTest, HierarchicalFallsBackForUnevenGroupsAndKeepsSingleSliceBoxes) {
  const Topology t = Topology::create({4}, {true}, false, 2).value();
  // Chips 0,1 of slice 0 with chips 4,5,6 of slice 1: not the same local
  // chips in every slice, so the flat ring runs (and says so).
  const auto uneven = hier::run(t, CollectiveKind::kAllGather, kV, CollectiveAlgorithm::kHierarchical,
                                {{0, 1, 4, 5, 6}, {2, 3, 7}});
  EXPECT_EQ(uneven.algorithm, "flat-ring");
  // Groups inside one slice: the per-axis ring of each slice.
  const auto local = hier::run(t, CollectiveKind::kAllGather, kV, CollectiveAlgorithm::kHierarchical,
                               {{0, 1, 2, 3}, {4, 5, 6, 7}});
  EXPECT_EQ(local.algorithm, "per-axis-ring(x:ring)");
  expect_close(local.seconds, ag_axis(4, true, kV, kH), 0.01);
  // One chip per slice: only the DCN phase.
  const auto peers = hier::run(t, CollectiveKind::kAllGather, kV, CollectiveAlgorithm::kHierarchical,
                               {{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  EXPECT_EQ(peers.algorithm, "hierarchical(dcn:line(2))");
  expect_close(peers.seconds, hier::dcn_phase(2, kV), 0.01);
}

}  // namespace
}  // namespace tpusim::interconnect
