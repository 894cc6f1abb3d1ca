#include "interconnect/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim::interconnect {
namespace {

Topology make(std::vector<std::int64_t> dims, std::vector<bool> wrap, bool twisted = false,
              std::int64_t slices = 1) {
  auto t = Topology::create(std::move(dims), std::move(wrap), twisted, slices);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : format_all(t.errors()));
  return std::move(t).value();
}

// A route must be a connected walk from src to dst over existing links.
void expect_valid_route(const Topology& t, DeviceId src, DeviceId dst, const std::vector<LinkId>& r) {
  DeviceId at = src;
  for (LinkId l : r) {
    const LinkInfo& li = t.link(l);
    if (li.kind == LinkKind::kIci) {
      ASSERT_EQ(li.from, at);
      ASSERT_GE(li.to, 0);
      at = li.to;
    } else if (li.kind == LinkKind::kDcnEgress) {
      ASSERT_EQ(li.from, at);
    } else {
      at = li.to;  // ingress port of the chip that receives
    }
  }
  EXPECT_EQ(at, dst);
}

TEST(TopologyTest, DeviceIdsAreXFastestLikeJaxDevices) {
  const Topology t = make({4, 4, 4}, {true, true, true});
  EXPECT_EQ(t.num_devices(), 64);
  EXPECT_EQ(t.coords(1), (Coord{1, 0, 0}));
  EXPECT_EQ(t.coords(4), (Coord{0, 1, 0}));
  EXPECT_EQ(t.coords(16), (Coord{0, 0, 1}));
  EXPECT_EQ(t.coords(63), (Coord{3, 3, 3}));
  for (DeviceId d = 0; d < 64; ++d) EXPECT_EQ(t.device(0, t.coords(d)), d);
}

TEST(TopologyTest, MultisliceIdsFollowSlices) {
  const Topology t = make({2, 2}, {false, false}, false, 3);
  EXPECT_EQ(t.num_devices(), 12);
  EXPECT_EQ(t.slice_of(5), 1);
  EXPECT_EQ(t.coords(5), (Coord{1, 0, 0}));
  EXPECT_EQ(t.device(2, Coord{1, 1, 0}), 11);
}

TEST(TopologyTest, NeighboursWrapOnlyWhereConfigured) {
  const Topology ring = make({8}, {true});
  EXPECT_EQ(ring.neighbor(7, 0, Direction::kPlus), 0);
  EXPECT_EQ(ring.neighbor(0, 0, Direction::kMinus), 7);
  const Topology line = make({8}, {false});
  EXPECT_EQ(line.neighbor(7, 0, Direction::kPlus), -1);
  EXPECT_EQ(line.neighbor(0, 0, Direction::kMinus), -1);
  EXPECT_EQ(line.neighbor(3, 0, Direction::kPlus), 4);
  // An axis of two chips has one link each way, never a second "wrap" link.
  const Topology two = make({2}, {true});
  EXPECT_FALSE(two.wraps(0));
  EXPECT_EQ(two.neighbor(1, 0, Direction::kPlus), -1);
  // Mixed: 4x4 with only y wrapped.
  const Topology mixed = make({4, 4}, {false, true});
  EXPECT_EQ(mixed.neighbor(3, 0, Direction::kPlus), -1);
  EXPECT_EQ(mixed.neighbor(12, 1, Direction::kPlus), 0);
}

TEST(TopologyTest, DimensionOrderedShortestRoutes) {
  const Topology ring = make({8}, {true});
  EXPECT_EQ(ring.route(0, 6).size(), 2u);  // the short way round, minus
  EXPECT_EQ(ring.link(ring.route(0, 6)[0]).direction, Direction::kMinus);
  EXPECT_EQ(ring.tie_axes(0, 4), 1u);
  EXPECT_EQ(ring.link(ring.route(0, 4, 0)[0]).direction, Direction::kPlus);
  EXPECT_EQ(ring.link(ring.route(0, 4, 1)[0]).direction, Direction::kMinus);
  const Topology line = make({8}, {false});
  EXPECT_EQ(line.route(0, 7).size(), 7u);
  EXPECT_EQ(line.tie_axes(0, 4), 0u);

  const Topology torus = make({4, 4, 4}, {true, true, true});
  const DeviceId dst = torus.device(0, Coord{3, 2, 1});
  const auto r = torus.route(0, dst);
  ASSERT_EQ(r.size(), 1u + 2u + 1u);
  EXPECT_EQ(torus.link(r[0]).axis, 0);  // x first
  EXPECT_EQ(torus.link(r[1]).axis, 1);
  EXPECT_EQ(torus.link(r[3]).axis, 2);
  expect_valid_route(torus, 0, dst, r);
  for (DeviceId s = 0; s < 64; s += 7) {
    for (DeviceId d = 0; d < 64; ++d) expect_valid_route(torus, s, d, torus.route(s, d, 0b101));
  }
}

TEST(TopologyTest, TwistedTorusShiftsLongAxesAtShortWraps) {
  EXPECT_FALSE(Topology::create({4, 4, 4}, {true, true, true}, true).ok());
  EXPECT_FALSE(Topology::create({4, 4, 8}, {true, true, false}, true).ok());
  const Topology t = make({4, 4, 8}, {true, true, true}, true);
  // (3,0,0) +x wraps to x=0 and shifts z by K=4.
  EXPECT_EQ(t.neighbor(t.device(0, Coord{3, 0, 0}), 0, Direction::kPlus), t.device(0, Coord{0, 0, 4}));
  const Topology plain = make({4, 4, 8}, {true, true, true});
  // Breadth-first distances over the twisted links: routes must be minimal.
  std::vector<std::size_t> dist(static_cast<size_t>(t.num_devices()), SIZE_MAX);
  std::vector<DeviceId> frontier{0};
  dist[0] = 0;
  for (size_t i = 0; i < frontier.size(); ++i) {
    for (int a = 0; a < 3; ++a) {
      for (Direction dir : {Direction::kPlus, Direction::kMinus}) {
        const DeviceId n = t.neighbor(frontier[i], a, dir);
        if (n >= 0 && dist[static_cast<size_t>(n)] == SIZE_MAX) {
          dist[static_cast<size_t>(n)] = dist[static_cast<size_t>(frontier[i])] + 1;
          frontier.push_back(n);
        }
      }
    }
  }
  std::size_t longest = 0, longest_plain = 0;
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const auto r = t.route(0, d);
    expect_valid_route(t, 0, d, r);
    EXPECT_EQ(r.size(), dist[static_cast<size_t>(d)]);
    longest = std::max(longest, r.size());
    longest_plain = std::max(longest_plain, plain.route(0, d).size());
  }
  EXPECT_EQ(longest_plain, 8u);  // 2 + 2 + 4
  EXPECT_LT(longest, longest_plain);  // the twist shortens the diameter
}

TEST(TopologyTest, MultisliceRoutesCrossDcnThenIci) {
  const Topology t = make({4}, {true}, false, 2);
  const auto r = t.route(1, 4 + 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(t.link(r[0]).kind, LinkKind::kDcnEgress);
  EXPECT_EQ(t.link(r[1]).kind, LinkKind::kDcnIngress);
  EXPECT_EQ(t.link(r[1]).to, 5);
  expect_valid_route(t, 1, 6, r);
}

TEST(TopologyTest, ParsesValidationTopologies) {
  auto t = Topology::parse("4x4x4", false);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rank(), 3);
  EXPECT_FALSE(t->wraps(2));
  EXPECT_EQ(Topology::parse("16", true)->describe(), "16 torus");
  EXPECT_FALSE(Topology::parse("4xx4", true).ok());
  EXPECT_FALSE(Topology::parse("", true).ok());
  EXPECT_FALSE(Topology::parse("2x2x2x2", true).ok());
  SystemTopology sys;
  sys.topology = {4, 8};
  sys.wraparound = {false, true};
  auto c = Topology::from_config(sys);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->describe(), "4x8 torus (wrap -w)");
}

}  // namespace
}  // namespace tpusim::interconnect
