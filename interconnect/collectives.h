// Collective algorithms, expressed as dependent point-to-point transfers and
// timed by the link-level Network (network.h): the time is what the simulated
// links deliver, never a closed form. docs/interconnect.md has the schedules
// and their closed forms.
//
// Algorithms (CollectiveAlgorithm):
// - per-axis-ring: for a group that is an axis-aligned box of one slice, one
//   phase per spanned axis; each phase runs a bidirectional shortest-way ring
//   on every line of the box along that axis (wrapped axis spanned fully), or
//   the two-way line schedule (no wraparound / partial axis). ReduceScatter
//   phases go x, y, z; AllGather phases z, y, x; AllReduce = RS then AG.
// - multi-axis: for a box spanning k >= 2 axes, the data in k equal shares;
//   share s runs the per-axis-ring phases in the axis orders rotated by s, all
//   shares at once, so at any phase index the shares are on k different axes
//   and every axis' links carry data together (the scaling book's multi-axis
//   AllGather). A box spanning one axis runs per-axis-ring. `auto` picks it
//   for boxes of one slice.
// - flat-ring: the group, in the listed order, as one logical bidirectional
//   ring whose hops are routed over the physical network (any group).
// - direct: AllToAll / CollectivePermute — every chunk sent at once on its own
//   shortest (dimension-ordered) route, split evenly between the two ways on
//   tie axes.
// - hierarchical: for a group spanning several slices with the same chips in
//   each (multislice), the two-level schedule: ReduceScatter inside each
//   slice over ICI (per-axis-ring or flat-ring), then over DCN among the S
//   chips that share local coordinates (a ring over the slices on the 1/L
//   shard), AllGather mirrored (DCN first, then ICI); AllReduce = RS then AG.
//   Groups inside one slice run per-axis-ring. `auto` picks it for multislice
//   groups with at least two chips per slice (its ICI phases stay per-axis).
// Every group of the spec runs at the same time on the same network, so
// groups that share links contend.
#pragma once

#include "common/collective.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "interconnect/network.h"
#include "interconnect/topology.h"

namespace tpusim::interconnect {

// The kinds are the project's one collective vocabulary (common/collective.h).
using tpusim::CollectiveKind;

// The schedules (common/config.h: the config key system.collective_algorithm names them).
using tpusim::CollectiveAlgorithm;

// XLA's opcode names ("all-gather").
inline std::string_view collective_name(CollectiveKind k) { return hlo_collective_name(k); }
inline std::optional<CollectiveKind> parse_collective_kind(std::string_view name) { return parse_hlo_collective(name); }
std::string_view algorithm_name(CollectiveAlgorithm a);
std::optional<CollectiveAlgorithm> parse_algorithm(std::string_view name);

using tpusim::ReplicaGroup;  // common/collective.h
using tpusim::ReplicaGroups;

// Seconds the vector unit needs to reduce `bytes` of incoming data into the
// local partial; called once per received ReduceScatter message.
using ReductionCost = std::function<double(double bytes)>;

struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::kAllGather;
  // V of the collective cost forms: the full (gathered) array per device for AllGather;
  // the unreduced input for ReduceScatter/AllReduce; for AllToAll the whole
  // array, N × the per-device buffer (the cost forms' formula and worked
  // example send V/N² to each peer); the sent buffer for CollectivePermute.
  double bytes = 0;
  ReplicaGroups groups;  // empty = one group of every device
  std::vector<std::pair<DeviceId, DeviceId>> source_target_pairs;  // collective-permute
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  ReductionCost reduction_cost;  // empty = reduction is free
};

struct CollectiveResult {
  double seconds = 0;      // from start until the last group has finished
  std::string algorithm;   // what ran, e.g. "multi-axis(x:ring,y:line)"
  NetworkRunStats network;
};

// Builds the schedule of every group on one network and runs it.
Result<CollectiveResult> simulate_collective(const Topology& topology, const NetworkParams& params,
                                             const CollectiveSpec& spec);

// Adds the schedule to `net` without running it (for callers that combine
// several collectives or other traffic); returns the algorithm description.
// No transfer starts before start_s + NetworkParams::collective_startup_s
// (the collective's start on a shared network, and its fixed start-up).
Result<std::string> schedule_collective(Network& net, const CollectiveSpec& spec, double start_s = 0);

// Every chip in a group with the chips that differ from it only along the
// axes in `axes_mask` (bit 0 = x), slice by slice; groups in device order.
ReplicaGroups groups_spanning_axes(const Topology& topology, std::uint32_t axes_mask);

// HLO's iota replica-group form `[G,S]<=[d0,d1,...]T(p0,p1,...)`: iota over
// prod(d) reshaped to `reshape_dims`, transposed by `permutation` (empty =
// identity), and read out as G groups of S.
Result<ReplicaGroups> expand_iota_groups(std::int64_t num_groups, std::int64_t group_size,
                                         const std::vector<std::int64_t>& reshape_dims,
                                         const std::vector<std::int64_t>& permutation);

}  // namespace tpusim::interconnect
