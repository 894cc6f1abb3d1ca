// How long a collective instruction takes: a small interface the TensorCore's
// ICI unit calls (through sim/collective_fabric.h), with two implementations:
// - PlaceholderCollectiveTimer: the single-chip estimate (bytes at the chip's
//   total ICI bandwidth plus one hop), used when there is no system to simulate.
// - NetworkCollectiveTimer: every group of the collective's replica-group spec
//   runs at once on the link-level network of the configured system
//   (interconnect::simulate_collective), with the reduction of received data
//   on the vector unit; timings are cached per distinct (kind, bytes, groups,
//   algorithm), so a program that repeats a collective pays once.
// Plain C++, no SystemC (DESIGN.md principle 1).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/config.h"
#include "sim/timing/instruction_cost.h"  // placeholder_collective_seconds
#include "common/diagnostic.h"
#include "interconnect/collectives.h"
#include "interconnect/network.h"
#include "interconnect/topology.h"
#include "isa/program.h"
#include "isa/types.h"

namespace tpusim {


struct CollectiveRequest {
  interconnect::CollectiveKind kind = interconnect::CollectiveKind::kAllReduce;
  // V of the collective cost forms (see collective_v_bytes).
  double bytes = 0;
  // Resolved groups (resolve_groups); for collective-permute, the
  // [source, target] pairs.
  std::shared_ptr<const interconnect::ReplicaGroups> groups;
  isa::DType dtype = isa::DType::kBf16;  // of the reduced data
};

// The busy intervals of one watched link direction in a network run, in
// seconds from the run's start; an interval's tag is the index of its
// collective in the run (0 for a collective timed alone).
struct LinkBusy {
  interconnect::LinkId link = 0;
  std::vector<interconnect::Network::BusyInterval> intervals;
};

struct CollectiveTiming {
  double seconds = 0;
  std::string algorithm;        // what ran ("per-axis-ring(x:ring)", "placeholder", …)
  std::int64_t group_size = 0;  // members of one group (2 for a permute pair)
  // "bandwidth" when the busiest link was busy at least half the time,
  // otherwise "latency" (hop latencies and dependent steps dominate).
  std::string bound;
  // Link busy seconds summed over every link direction of an axis (DCN: all
  // egress and ingress ports), and how many link directions the axis has:
  // busy / links / step time is the axis's average utilization.
  std::array<double, interconnect::kMaxAxes> axis_busy_s{};
  std::array<std::int64_t, interconnect::kMaxAxes> axis_links{};
  double dcn_busy_s = 0;
  std::int64_t dcn_ports = 0;
  std::vector<LinkBusy> link_busy;  // the watched links (CollectiveTimer::watch) that carried data
};

// One of several collectives that run on the network at the same time
// (ici.concurrent_collectives > 1): what it is and when it starts, in seconds
// from any origin common to the set.
struct ConcurrentCollective {
  CollectiveRequest request;
  double start_s = 0;
};

class CollectiveTimer {
 public:
  virtual ~CollectiveTimer() = default;
  virtual Result<CollectiveTiming> time(const CollectiveRequest& request) = 0;
  // Seconds each of `set` takes from its own start until its last group
  // finishes when they all run together (links shared). This base version
  // times each alone (no network to share).
  virtual Result<std::vector<double>> time_together(const std::vector<ConcurrentCollective>& set);
  [[nodiscard]] virtual std::int64_t num_devices() const = 0;
  // From now on, timings record the busy intervals of these devices' links
  // (ICI directions and DCN ports), for a trace. This base version has no links.
  virtual void watch(const std::vector<std::int64_t>& devices) { (void)devices; }
  // The watched links' intervals in the last time_together() (tags index its set).
  [[nodiscard]] virtual const std::vector<LinkBusy>& last_joint_link_busy() const;
};


class PlaceholderCollectiveTimer final : public CollectiveTimer {
 public:
  explicit PlaceholderCollectiveTimer(const ChipConfig& chip) : chip_(chip) {}
  Result<CollectiveTiming> time(const CollectiveRequest& request) override;
  [[nodiscard]] std::int64_t num_devices() const override { return 1; }

 private:
  const ChipConfig& chip_;
};

// Seconds the chip's VPU needs to add `bytes` of `dtype` into a partial:
// vpu_elementwise_timing of an add reading 2 and writing 1 vreg per result
// vreg, done cycles at the chip clock.
interconnect::ReductionCost vpu_reduction_cost(const ChipConfig& chip, isa::DType dtype);

class NetworkCollectiveTimer final : public CollectiveTimer {
 public:
  NetworkCollectiveTimer(const ChipConfig& chip, interconnect::Topology topology,
                         interconnect::CollectiveAlgorithm algorithm = interconnect::CollectiveAlgorithm::kAuto);
  Result<CollectiveTiming> time(const CollectiveRequest& request) override;
  // One network run with every collective of `set` scheduled on it, each
  // held back until its start (a join every one of its transfers depends
  // on); the earliest start is time 0. One collective alone: time().
  // Cached per distinct set (requests and start offsets).
  Result<std::vector<double>> time_together(const std::vector<ConcurrentCollective>& set) override;
  [[nodiscard]] std::int64_t num_devices() const override { return topology_.num_devices(); }
  void watch(const std::vector<std::int64_t>& devices) override;
  [[nodiscard]] const std::vector<LinkBusy>& last_joint_link_busy() const override { return last_joint_link_busy_; }
  [[nodiscard]] const interconnect::Topology& topology() const { return topology_; }
  // Network runs of single collectives (joint runs: joint_runs()).
  [[nodiscard]] std::uint64_t network_runs() const { return runs_; }
  [[nodiscard]] std::uint64_t cache_hits() const { return hits_; }
  [[nodiscard]] std::uint64_t joint_runs() const { return joint_runs_; }

 private:
  using Key = std::tuple<int, double, int, interconnect::ReplicaGroups>;  // kind, bytes, dtype, groups
  Key key_of(const CollectiveRequest& r) const;
  // Adds the schedule of `r` (all its groups) to `net`; the algorithm it ran.
  Result<std::string> schedule(interconnect::Network& net, const CollectiveRequest& r, double start_s = 0) const;
  const ChipConfig& chip_;
  interconnect::Topology topology_;
  interconnect::NetworkParams params_;
  interconnect::CollectiveAlgorithm algorithm_;
  // The watched links' intervals of a run that has finished.
  std::vector<LinkBusy> link_busy(const interconnect::Network& net) const;
  std::map<Key, CollectiveTiming> cache_;
  struct JointRun {
    std::vector<double> seconds;
    std::vector<LinkBusy> link_busy;
  };
  std::map<std::vector<std::pair<Key, double>>, JointRun> joint_cache_;
  std::vector<interconnect::LinkId> watched_;
  std::vector<LinkBusy> last_joint_link_busy_;
  // One network reused by every run (Network::reset keeps its storage).
  std::unique_ptr<interconnect::Network> network_;
  interconnect::Network& network();
  std::uint64_t runs_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t joint_runs_ = 0;
};

// V of the collective cost forms from the instruction's tiles: all-gather the gathered
// dst; reduce-scatter and all-reduce the unreduced src; all-to-all
// group_size × src (the whole array; each peer gets V/N²); permute the src.
double collective_v_bytes(interconnect::CollectiveKind kind, double src_bytes, double dst_bytes,
                          std::int64_t group_size);

// One chip's part of a collective: the kind, V (collective_v_bytes), the
// group size and, for collective-permute, whether the chip is a source
// and/or a target of a pair.
struct CollectiveShare {
  interconnect::CollectiveKind kind = interconnect::CollectiveKind::kAllReduce;
  double v_bytes = 0;
  std::int64_t group_size = 1;
  bool sends = true;
  bool receives = true;
};

struct HbmBytes {
  double read = 0;
  double write = 0;
};

// What the chip's part of a collective reads from and writes to its HBM
// (ici.hbm_traffic), for the bandwidth-optimal schedules (every ring,
// multi-axis, hierarchical and direct schedule sends and receives the same
// per chip), with f = (N-1)/N:
// - transfers: every byte sent is read, every byte received written (ICI
//   DMAs run HBM to HBM): all-gather f·V each plus its own shard's V/N copied
//   into the output (read V, write V); reduce-scatter f·V each; all-reduce
//   2f·V each (reduce-scatter then all-gather in place); all-to-all the
//   buffer V/N each (f of it sent, its own 1/N copied); permute V read by a
//   source, V written by a target.
// - transfers+reduction: also the reduction of each received message of a
//   reduce-scatter (or an all-reduce's first half): it and the local
//   operand's chunk are read and the sum written, 2f·V read and f·V written.
// - none: nothing.
HbmBytes collective_hbm_bytes(CollectiveHbmTraffic traffic, const CollectiveShare& share);

// The program's replica groups (or permute pairs) for a system of
// `num_devices` chips. Empty = one group of every device. Groups that name
// devices 0..M-1 exactly, with M dividing num_devices, are tiled over the
// num_devices / M copies (device d + k·M): the other chips run the same
// program as data-parallel replicas; `tiled` is set to num_devices / M.
// Errors: a device outside the system, a device in two groups, a device of
// 0..M-1 in no group, M not dividing num_devices.
Result<interconnect::ReplicaGroups> resolve_groups(const isa::ReplicaGroups* groups, bool permute,
                                                   std::int64_t num_devices, std::int64_t& tiled);

// Bad input, found before simulating: every collective of `program` whose
// replica groups (or permute pairs) do not fit a system of `num_devices`
// chips (resolve_groups' errors), one diagnostic each at the collective's
// file:line:column (for lowered HLO: the HLO instruction), naming the op.
std::vector<Diagnostic> check_replica_groups(const isa::Program& program, std::int64_t num_devices);

}  // namespace tpusim
