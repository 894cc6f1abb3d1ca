// The packet engine on its own: expected times from bytes/bandwidth and hop
// latency, derived by hand in each comment.
#include "interconnect/network.h"

#include <gtest/gtest.h>

namespace tpusim::interconnect {
namespace {

constexpr double kW = 4.5e10;
constexpr double kH = 1e-6;

NetworkParams params() {
  NetworkParams p;
  p.ici_bytes_per_s = kW;
  p.ici_hop_latency_s = kH;
  p.packet_bytes = 4096;
  p.max_packets_per_message = 64;
  p.dcn_bytes_per_s = 6.25e9;
  p.dcn_latency_s = 10e-6;
  return p;
}

Topology line(std::int64_t n) { return Topology::create({n}, {false}).value(); }

TEST(NetworkTest, OneHopCostsBytesOverBandwidthPlusLatency) {
  const Topology t = line(2);
  Network net(t, params());
  const TransferId m = net.add_transfer(0, 1, 1 << 20);
  const auto stats = net.run();
  EXPECT_DOUBLE_EQ(net.finish_time(m), (1 << 20) / kW + kH);  // 23.30 µs + 1 µs
  EXPECT_EQ(stats.packets, 64u);  // 1 MiB / 4 KiB = 256, capped at 64
}

TEST(NetworkTest, ResetForgetsEverythingButTheStorage) {
  // A network run, reset and given other traffic behaves as a fresh one:
  // 0 -> 1 then 0 -> 2 over two hops, bytes/W + 2h, the first run's link
  // busy time gone.
  const Topology t = line(3);
  Network net(t, params());
  net.add_transfer(0, 1, 1 << 20);
  net.run();
  net.reset();
  const TransferId m = net.add_transfer(0, 2, 1 << 19);
  const auto stats = net.run();
  EXPECT_NEAR(net.finish_time(m), (1 << 19) / kW + 2 * kH, 1e-15);
  EXPECT_EQ(stats.transfers, 1u);
  EXPECT_NEAR(net.link_busy_seconds(t.ici_link(0, 0, Direction::kPlus)), (1 << 19) / kW, 1e-18);
  EXPECT_NEAR(stats.makespan_s, net.finish_time(m), 1e-18);
}

TEST(NetworkTest, WatchedLinksRecordBusyIntervalsByTag) {
  // 0 -> 1, 1 MiB with tag 0, then (after it) 512 KiB with tag 1 after a
  // 10 us pause: link 0->1 is busy [0, 1 MiB / W) for the first (its 64
  // packets back to back make one interval), then from 1 MiB / W + 1 us
  // (delivery) + 10 us for 512 KiB / W with the second tag.
  const Topology t = line(2);
  Network net(t, params());
  const LinkId l = t.ici_link(0, 0, Direction::kPlus);
  net.watch({l});
  const TransferId a = net.add_transfer(0, 1, 1 << 20);
  net.set_tag(1);
  const TransferId b = net.add_transfer(0, 1, 1 << 19, 0, 10e-6);
  net.add_dependency(a, b);
  net.run();
  const auto& v = net.busy_intervals(l);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_DOUBLE_EQ(v[0].start, 0.0);
  EXPECT_NEAR(v[0].end, (1 << 20) / kW, 1e-15);
  EXPECT_EQ(v[0].tag, 0u);
  EXPECT_NEAR(v[1].start, (1 << 20) / kW + kH + 10e-6, 1e-15);
  EXPECT_NEAR(v[1].end - v[1].start, (1 << 19) / kW, 1e-15);
  EXPECT_EQ(v[1].tag, 1u);
  // The way back was not watched.
  EXPECT_TRUE(net.busy_intervals(t.ici_link(1, 0, Direction::kMinus)).empty());
}

TEST(NetworkTest, MultiHopMessagesPipelineByPacket) {
  // 7 hops, 64 packets, cut-through: bytes/w + 7h, not 7·bytes/w.
  const Topology t = line(8);
  Network net(t, params());
  const double bytes = 64.0 * 65536;
  const TransferId m = net.add_transfer(0, 7, bytes);
  net.run();
  EXPECT_NEAR(net.finish_time(m), bytes / kW + 7 * kH, 1e-12);
}

TEST(NetworkTest, MessagesSharingALinkShareItsBandwidth) {
  // 0->2 and 1->3 both cross link 1->2; 0->1 and 2->3 only start them.
  const Topology t = line(4);
  Network net(t, params());
  const double bytes = 1 << 22;
  const TransferId a = net.add_transfer(0, 2, bytes);
  const TransferId b = net.add_transfer(1, 3, bytes);
  net.run();
  const double both = 2 * bytes / kW;  // link 1->2 carries both messages
  EXPECT_NEAR(std::max(net.finish_time(a), net.finish_time(b)) / both, 1.0, 0.03);
  // Alone, one message takes half that.
  Network alone(t, params());
  const TransferId c = alone.add_transfer(0, 2, bytes);
  alone.run();
  EXPECT_NEAR(alone.finish_time(c), bytes / kW + 2 * kH, 1e-12);
}

TEST(NetworkTest, DependenciesAndJoinsOrderTransfers) {
  const Topology t = line(2);
  Network net(t, params());
  const double bytes = 1 << 20;
  const TransferId a = net.add_transfer(0, 1, bytes);
  const TransferId j = net.add_join(5e-6);  // e.g. a reduction after a arrives
  const TransferId b = net.add_transfer(1, 0, bytes);
  net.add_dependency(a, j);
  net.add_dependency(j, b);
  const auto stats = net.run();
  EXPECT_NEAR(net.finish_time(j), bytes / kW + kH + 5e-6, 1e-12);
  EXPECT_NEAR(net.finish_time(b), 2 * (bytes / kW + kH) + 5e-6, 1e-12);
  EXPECT_NEAR(stats.makespan_s, net.finish_time(b), 1e-15);
}

TEST(NetworkTest, CrossSliceTrafficUsesDcnPorts) {
  const Topology t = Topology::create({2}, {false}, false, 2).value();
  Network net(t, params());
  const double bytes = 1 << 20;
  const TransferId m = net.add_transfer(0, 2, bytes);  // same position, other slice
  net.run();
  // egress (bytes/6.25e9 + 10 µs latency), cut-through into the ingress port
  EXPECT_NEAR(net.finish_time(m), bytes / 6.25e9 + 10e-6, 1e-9);
  EXPECT_NEAR(net.link_busy_seconds(t.dcn_egress(0)), bytes / 6.25e9, 1e-12);
}

// The rows of a 4x4 torus, each a chain of three one-hop sends along x
// (0 -> 1 -> 2 -> 3), all released by one gate join at 3 us; row 3 sends
// twice the bytes. Rows 0..2 are replicas of one another, row 3 is not.
TEST(NetworkTest, IdenticalIndependentComponentsAreSimulatedOnceWithTheSameResults) {
  const Topology t = Topology::create({4, 4}, {true, true}).value();
  for (const bool replicate : {false, true}) {
    NetworkParams p = params();
    p.replicate_identical = replicate;
    Network net(t, p);
    std::vector<std::vector<TransferId>> chains;
    for (DeviceId y = 0; y < 4; ++y) {
      const double bytes = y == 3 ? 2 << 20 : 1 << 20;
      std::vector<TransferId> chain;
      for (DeviceId x = 0; x < 3; ++x) {
        chain.push_back(net.add_transfer(y * 4 + x, y * 4 + x + 1, bytes));
        if (x > 0) net.add_dependency(chain[chain.size() - 2], chain.back());
      }
      chains.push_back(chain);
    }
    const TransferId gate = net.add_join(3e-6);  // a fixed time: it does not tie the rows together
    for (const auto& c : chains) net.add_dependency(gate, c.front());
    const NetworkRunStats stats = net.run();
    // Each row: the gate, then three sends of bytes/W + h each, one after another.
    for (DeviceId y = 0; y < 4; ++y) {
      const double bytes = y == 3 ? 2 << 20 : 1 << 20;
      for (std::size_t x = 0; x < 3; ++x) {
        EXPECT_NEAR(net.finish_time(chains[static_cast<std::size_t>(y)][x]),
                    3e-6 + static_cast<double>(x + 1) * (bytes / kW + kH), 1e-12)
            << "row " << y << " send " << x << (replicate ? " (replicas)" : " (all simulated)");
        const LinkId l = t.ici_link(y * 4 + static_cast<DeviceId>(x), 0, Direction::kPlus);
        EXPECT_NEAR(net.link_busy_seconds(l), bytes / kW, 1e-15);
      }
    }
    EXPECT_NEAR(stats.makespan_s, 3e-6 + 3 * ((2 << 20) / kW + kH), 1e-12);
    EXPECT_EQ(stats.packets, 12u * 64u);
    if (replicate) {
      EXPECT_EQ(stats.components, 4u);
      EXPECT_EQ(stats.simulated_components, 2u);  // rows 0..2 once, row 3
      EXPECT_EQ(stats.events, 2u * 3u * 64u);     // two rows' packets, one hop each
    } else {
      EXPECT_EQ(stats.events, 4u * 3u * 64u);
    }
  }
}

TEST(NetworkTest, ReplicasMatchTheFullRunExactlyUnderContention) {
  // Each row of a 4x4 torus: every chip sends to the chips one and two
  // ahead along x at once, both the + way (shared links, cut-through, ties
  // broken by push order). Replicas must reproduce every finish time and link busy time bit
  // for bit, and a watched link of a replica row its intervals.
  const Topology t = Topology::create({4, 4}, {true, true}).value();
  const LinkId watched = t.ici_link(13, 0, Direction::kPlus);  // row 3
  const auto run = [&](bool replicate, std::vector<double>& finish, std::vector<double>& busy,
                       std::vector<Network::BusyInterval>& intervals) {
    NetworkParams p = params();
    p.replicate_identical = replicate;
    Network net(t, p);
    net.watch({watched});
    std::vector<TransferId> ids;
    for (DeviceId y = 0; y < 4; ++y) {
      for (DeviceId x = 0; x < 4; ++x) {
        for (DeviceId d : {1, 2}) ids.push_back(net.add_transfer(y * 4 + x, y * 4 + (x + d) % 4, 3e5 + 1e4 * d));
      }
    }
    const NetworkRunStats stats = net.run();
    for (TransferId id : ids) finish.push_back(net.finish_time(id));
    for (LinkId l = 0; l < t.num_links(); ++l) busy.push_back(net.link_busy_seconds(l));
    intervals = net.busy_intervals(watched);
    return stats;
  };
  std::vector<double> f0, b0, f1, b1;
  std::vector<Network::BusyInterval> i0, i1;
  const NetworkRunStats all = run(false, f0, b0, i0);
  const NetworkRunStats rep = run(true, f1, b1, i1);
  EXPECT_EQ(f0, f1);
  EXPECT_EQ(b0, b1);
  EXPECT_EQ(all.makespan_s, rep.makespan_s);
  EXPECT_EQ(all.max_link_busy_s, rep.max_link_busy_s);
  ASSERT_EQ(i0.size(), i1.size());
  ASSERT_FALSE(i0.empty());
  for (std::size_t k = 0; k < i0.size(); ++k) {
    EXPECT_EQ(i0[k].start, i1[k].start);
    EXPECT_EQ(i0[k].end, i1[k].end);
  }
  EXPECT_EQ(rep.components, 4u);
  EXPECT_EQ(rep.simulated_components, 1u);
  EXPECT_EQ(rep.events * 4, all.events);
}

TEST(NetworkTest, ParamsFromConfigApplyLinkEfficiency) {
  IciConfig ici;
  ici.link_bandwidth = 4.5e10;
  ici.link_efficiency = 0.8;
  ici.hop_latency = 1e-6;
  ici.packet_size = 8192;
  DcnConfig dcn;
  dcn.bandwidth_per_chip = 3.125e9;
  dcn.latency = 5e-6;
  const NetworkParams p = NetworkParams::from_config(ici, dcn);
  EXPECT_DOUBLE_EQ(p.ici_bytes_per_s, 3.6e10);
  EXPECT_DOUBLE_EQ(p.packet_bytes, 8192);
  EXPECT_DOUBLE_EQ(p.dcn_bytes_per_s, 3.125e9);
}

}  // namespace
}  // namespace tpusim::interconnect
