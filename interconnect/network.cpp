#include "interconnect/network.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <queue>

namespace tpusim::interconnect {

NetworkParams NetworkParams::from_config(const IciConfig& ici, const DcnConfig& dcn) {
  NetworkParams p;
  p.ici_bytes_per_s = ici.link_bandwidth * ici.link_efficiency;
  p.ici_hop_latency_s = ici.hop_latency;
  if (ici.packet_size > 0) p.packet_bytes = ici.packet_size;
  p.dcn_bytes_per_s = dcn.bandwidth_per_chip;
  p.dcn_latency_s = dcn.latency;
  return p;
}

Network::Network(const Topology& topology, const NetworkParams& params)
    : topo_(topology), params_(params) {
  const std::size_t n = topo_.num_links();
  link_free_.assign(n, 0.0);
  link_busy_.assign(n, 0.0);
  link_bw_.resize(n);
  link_latency_.resize(n);
  for (std::size_t l = 0; l < n; ++l) {
    const LinkInfo& li = topo_.link(static_cast<LinkId>(l));
    switch (li.kind) {
      case LinkKind::kIci:
        link_bw_[l] = params_.ici_bytes_per_s;
        link_latency_[l] = params_.ici_hop_latency_s;
        break;
      case LinkKind::kDcnEgress:
        link_bw_[l] = params_.dcn_bytes_per_s;
        link_latency_[l] = params_.dcn_latency_s;
        break;
      case LinkKind::kDcnIngress:
        link_bw_[l] = params_.dcn_bytes_per_s;
        link_latency_[l] = 0;
        break;
    }
  }
}

TransferId Network::add_transfer(DeviceId src, DeviceId dst, double bytes, std::uint32_t tie_minus,
                                 double start_delay_s) {
  Transfer t;
  t.tag = tag_;
  t.bytes = std::max(bytes, 0.0);
  t.start_delay = start_delay_s;
  t.route_offset = static_cast<std::uint32_t>(routes_.size());
  if (src != dst && t.bytes > 0) topo_.append_route(src, dst, tie_minus, routes_);
  t.route_length = static_cast<std::uint32_t>(routes_.size()) - t.route_offset;
  if (t.route_length > 0) {
    const double nominal = std::max(params_.packet_bytes, 1.0);
    const double wanted = std::ceil(t.bytes / nominal);
    t.packets = static_cast<std::uint32_t>(
        std::clamp(wanted, 1.0, static_cast<double>(std::max(params_.max_packets_per_message, 1u))));
    t.packet_bytes = t.bytes / t.packets;
  }
  transfers_.push_back(t);
  return static_cast<TransferId>(transfers_.size() - 1);
}

void Network::watch(const std::vector<LinkId>& links) {
  watch_index_.assign(topo_.num_links(), -1);
  busy_.clear();
  for (const LinkId l : links) {
    if (l >= watch_index_.size() || watch_index_[l] >= 0) continue;
    watch_index_[l] = static_cast<std::int32_t>(busy_.size());
    busy_.emplace_back();
  }
}

void Network::record_busy(LinkId link, double start, double end, std::uint32_t tag) {
  const std::int32_t w = watch_index_[link];
  if (w < 0) return;
  auto& v = busy_[static_cast<std::size_t>(w)];
  // A link's packets start in time order (it is free again only after the last).
  if (!v.empty() && v.back().tag == tag && start <= v.back().end * (1 + 1e-12)) {
    v.back().end = std::max(v.back().end, end);
  } else {
    v.push_back(BusyInterval{start, end, tag});
  }
}

const std::vector<Network::BusyInterval>& Network::busy_intervals(LinkId l) const {
  static const std::vector<BusyInterval> kNone;
  if (l >= watch_index_.size() || watch_index_[l] < 0) return kNone;
  return busy_[static_cast<std::size_t>(watch_index_[l])];
}

TransferId Network::add_join(double delay_s) {
  Transfer t;
  t.start_delay = delay_s;
  transfers_.push_back(t);
  return static_cast<TransferId>(transfers_.size() - 1);
}

void Network::add_dependency(TransferId before, TransferId after) {
  assert(before < transfers_.size() && after < transfers_.size());
  edges_.emplace_back(before, after);
}

void Network::push(double time, TransferId t, std::uint32_t packet, std::uint32_t hop) {
  heap_.push_back(Event{time, seq_++, t, packet, hop});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void Network::start(TransferId id, double time) {
  if (transfers_[id].route_length == 0) {
    complete(id, time);
    return;
  }
  push(time, id, 0, 0);
}

void Network::complete(TransferId id, double time) {
  Transfer& t = transfers_[id];
  t.finish = time;
  makespan_ = std::max(makespan_, time);
  for (std::uint32_t e = succ_offset_[id]; e < succ_offset_[id + 1]; ++e) {
    Transfer& s = transfers_[succ_[e]];
    s.ready = std::max(s.ready, time);
    if (--s.pending == 0) start(succ_[e], s.ready + s.start_delay);
  }
}

NetworkRunStats Network::run() {
  assert(!ran_ && "Network::run() is called once");
  ran_ = true;
  const std::size_t n = transfers_.size();
  // Successor lists in CSR form.
  succ_offset_.assign(n + 1, 0);
  for (const auto& [before, after] : edges_) {
    ++succ_offset_[before + 1];
    ++transfers_[after].pending;
  }
  for (std::size_t i = 0; i < n; ++i) succ_offset_[i + 1] += succ_offset_[i];
  succ_.resize(edges_.size());
  {
    std::vector<std::uint32_t> fill(succ_offset_.begin(), succ_offset_.end() - 1);
    for (const auto& [before, after] : edges_) succ_[fill[before]++] = after;
  }
  edges_.clear();
  edges_.shrink_to_fit();

  NetworkRunStats stats;
  stats.transfers = n;
  for (std::size_t i = 0; i < n; ++i) {
    stats.packets += transfers_[i].packets;
    if (transfers_[i].pending == 0) start(static_cast<TransferId>(i), transfers_[i].start_delay);
  }

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event ev = heap_.back();
    heap_.pop_back();
    ++stats.events;
    Transfer& t = transfers_[ev.transfer];
    const LinkId link = routes_[t.route_offset + ev.hop];
    const double begin = std::max(ev.time, link_free_[link]);
    const double serialization = t.packet_bytes / link_bw_[link];
    link_free_[link] = begin + serialization;
    link_busy_[link] += serialization;
    if (!busy_.empty()) record_busy(link, begin, begin + serialization, t.tag);
    if (ev.hop == 0 && ev.packet + 1 < t.packets) {
      push(begin + serialization, ev.transfer, ev.packet + 1, 0);  // the next packet leaves the source
    }
    if (ev.hop + 1 < t.route_length) {
      push(begin + link_latency_[link], ev.transfer, ev.packet, ev.hop + 1);  // cut-through
    } else {
      t.last_delivery = std::max(t.last_delivery, begin + link_latency_[link] + serialization);
      if (++t.delivered == t.packets) complete(ev.transfer, t.last_delivery);
    }
  }
  stats.makespan_s = makespan_;
  for (double b : link_busy_) stats.max_link_busy_s = std::max(stats.max_link_busy_s, b);
  return stats;
}

}  // namespace tpusim::interconnect
