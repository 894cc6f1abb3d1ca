// Link-level network simulation: a plain discrete-event engine (a priority
// queue of packet events, no clock ticking, no SystemC), so it is fast and
// unit-testable; a SystemC module can wrap it later (DESIGN.md principle 1).
//
// Model (docs/interconnect.md, "Network model"):
// - Every link direction is a FIFO bandwidth resource. ICI: ici.link_bandwidth
//   × ici.link_efficiency bytes/s one way, ici.hop_latency per hop. DCN: each
//   chip has an egress and an ingress port of dcn.bandwidth_per_chip; the
//   egress adds dcn.latency.
// - A transfer (src -> dst, bytes) follows Topology::route() and is cut into
//   P = min(ceil(bytes / packet_size), max_packets_per_message) equal packets
//   (packet size grows for large messages so event counts stay bounded).
// - Virtual cut-through per packet: a packet occupies a link for
//   packet_bytes / bandwidth from the moment the link is free; its head reaches
//   the next chip `latency` after it starts, and it is delivered
//   latency + serialization after it starts on the last link. An uncontended
//   message over H hops therefore takes bytes/bw + H·latency (+ the
//   serialization of one packet per extra hop only if a later link is busy).
// - A message injects its next packet when the previous one has left the
//   first link, so messages sharing a first link interleave packet by packet.
// - Transfers may depend on others (data dependencies of a collective
//   schedule): a transfer starts `start_delay` after its last dependency was
//   fully delivered. Joins are zero-cost transfers used as barriers.
//
// Replicas (an exact shortcut, NetworkParams::replicate_identical): transfers
// fall into independent components (linked by a dependency or a shared link
// direction; a join without dependencies, which completes at a fixed time, is
// not a link between its successors). Components that are the same up to a
// renaming of their transfers and links (bytes, packets, delays, routes'
// link bandwidths and latencies, dependencies, start times) evolve the same
// way, event for event: a component's events interact only with its own, and
// their order among equal times is their push order within it. run() then
// simulates one component of each kind and copies its finish times, link
// busy time and watched intervals to the others. The groups of a collective
// on a torus (the rings of every line of a box, every slice's copy of a
// group) are such replicas, so a run costs one group's events, not all.
#pragma once

#include <cstdint>
#include <vector>

#include "common/config.h"
#include "interconnect/topology.h"

namespace tpusim::interconnect {

struct NetworkParams {
  double ici_bytes_per_s = 0;    // one link, one direction, payload (after efficiency)
  double ici_hop_latency_s = 0;  // per hop
  // Once per collective, before its first transfer (schedule_collective: a
  // join every transfer of the collective depends on).
  double collective_startup_s = 0;
  double packet_bytes = 4096;    // nominal packet size
  std::uint32_t max_packets_per_message = 64;  // packet size grows beyond this
  double dcn_bytes_per_s = 0;    // per chip, one direction
  double dcn_latency_s = 0;
  // Simulate one of each kind of identical independent component (above);
  // false runs every transfer's events (the results are the same).
  bool replicate_identical = true;

  static NetworkParams from_config(const IciConfig& ici, const DcnConfig& dcn);
};

using TransferId = std::uint32_t;

struct NetworkRunStats {
  double makespan_s = 0;       // last delivery (or join) time
  std::uint64_t transfers = 0;
  std::uint64_t packets = 0;
  std::uint64_t events = 0;    // packet-hop events processed (the replicas' are copied, not processed)
  std::uint64_t components = 0;  // independent components of the transfers (0: not split)
  std::uint64_t simulated_components = 0;  // of those, simulated: one per kind
  double max_link_busy_s = 0;  // busiest link direction
};

class Network {
 public:
  // Keeps a reference: `topology` must outlive the network.
  Network(const Topology& topology, const NetworkParams& params);

  // A message; `tie_minus` picks the way round on tie axes (Topology::route).
  TransferId add_transfer(DeviceId src, DeviceId dst, double bytes, std::uint32_t tie_minus = 0,
                          double start_delay_s = 0);
  // A node without traffic that completes `delay_s` after its dependencies
  // (a barrier, or a local compute step such as a final reduction).
  TransferId add_join(double delay_s = 0);
  // `after` starts only once `before` has been delivered completely.
  void add_dependency(TransferId before, TransferId after);

  // Records the busy intervals of `links` during run() (for a trace's link
  // tracks); call before run().
  void watch(const std::vector<LinkId>& links);
  // Transfers added from now on carry `tag` (0 at first) into the intervals.
  void set_tag(std::uint32_t tag) { tag_ = tag; }

  // Runs all transfers to completion (time starts at 0). Call once per
  // reset.
  NetworkRunStats run();

  // Forgets every transfer, dependency, watch and result, keeping the
  // storage: a caller that runs many networks on one topology reuses one
  // Network and does not fault fresh pages in for each.
  void reset();

  // A watched link's busy time: packets back to back of one tag form one interval.
  struct BusyInterval {
    double start = 0;
    double end = 0;
    std::uint32_t tag = 0;
  };
  // In time order; empty for a link not watched or never used.
  [[nodiscard]] const std::vector<BusyInterval>& busy_intervals(LinkId l) const;

  [[nodiscard]] double finish_time(TransferId t) const { return transfers_[t].finish; }
  [[nodiscard]] double link_busy_seconds(LinkId l) const { return link_busy_[l]; }
  [[nodiscard]] std::size_t num_transfers() const { return transfers_.size(); }
  [[nodiscard]] const Topology& topology() const { return topo_; }
  [[nodiscard]] const NetworkParams& params() const { return params_; }

 private:
  struct Transfer {
    double bytes = 0;
    double packet_bytes = 0;
    double start_delay = 0;
    double ready = 0;       // latest completion among dependencies
    double last_delivery = 0;
    double finish = -1;
    std::uint32_t packets = 0;
    std::uint32_t delivered = 0;
    std::uint32_t pending = 0;  // unfinished dependencies
    std::uint32_t route_offset = 0;
    std::uint32_t route_length = 0;
    std::uint32_t tag = 0;
  };
  struct Event {
    double time;
    std::uint64_t seq;  // FIFO among equal times: deterministic
    TransferId transfer;
    std::uint32_t packet;
    std::uint32_t hop;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };

  // The components' replicas (see the header comment): `skip` marks the
  // transfers not simulated; after the run, each copy's destination takes
  // its source's results.
  struct Replicas {
    std::vector<char> skip;                                  // by transfer
    std::vector<std::pair<TransferId, TransferId>> transfers;  // (replica, simulated)
    std::vector<std::pair<LinkId, LinkId>> links;              // (replica, simulated)
    std::uint64_t components = 0;
    std::uint64_t simulated = 0;
  };
  Replicas plan_replicas();
  // plan_replicas's working storage, kept between runs (Network::reset).
  struct ReplicaScratch {
    struct Start {
      std::uint32_t comp;
      std::uint32_t local;
      double time;
    };
    std::vector<char> source;
    std::vector<std::uint32_t> parent, user, comp, local, comp_of_root, size, first, order, pending, link_local;
    std::vector<std::uint32_t> starts_first;
    std::vector<double> ready;
    std::vector<Start> starts;
  };
  ReplicaScratch scratch_;
  void copy_replicas(const Replicas& r);

  void start(TransferId t, double time);
  void complete(TransferId t, double time);
  void push(double time, TransferId t, std::uint32_t packet, std::uint32_t hop);

  const Topology& topo_;
  NetworkParams params_;
  std::vector<Transfer> transfers_;
  std::vector<LinkId> routes_;
  std::vector<std::pair<TransferId, TransferId>> edges_;  // (before, after)
  std::vector<std::uint32_t> succ_offset_;
  std::vector<TransferId> succ_;
  std::vector<double> link_free_;
  std::vector<double> link_busy_;
  std::vector<double> link_bw_;
  std::vector<double> link_latency_;
  std::vector<Event> heap_;
  std::uint64_t seq_ = 0;
  double makespan_ = 0;
  bool ran_ = false;
  std::uint32_t tag_ = 0;
  std::vector<std::int32_t> watch_index_;                 // by link: index into busy_, or -1
  std::vector<std::vector<BusyInterval>> busy_;           // per watched link
  std::vector<char> skip_;                                // by transfer: a replica, not simulated
  void record_busy(LinkId link, double start, double end, std::uint32_t tag);
};

}  // namespace tpusim::interconnect
