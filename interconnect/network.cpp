#include "interconnect/network.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <unordered_map>

#include <boost/container_hash/hash.hpp>

namespace tpusim::interconnect {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

std::uint64_t bits(double v) { return std::bit_cast<std::uint64_t>(v); }

}  // namespace

NetworkParams NetworkParams::from_config(const IciConfig& ici, const DcnConfig& dcn) {
  NetworkParams p;
  p.ici_bytes_per_s = ici.link_bandwidth * ici.link_efficiency;
  p.ici_hop_latency_s = ici.hop_latency;
  p.collective_startup_s = ici.collective_startup;
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

void Network::reset() {
  transfers_.clear();
  routes_.clear();
  edges_.clear();
  succ_offset_.clear();
  succ_.clear();
  std::fill(link_free_.begin(), link_free_.end(), 0.0);
  std::fill(link_busy_.begin(), link_busy_.end(), 0.0);
  heap_.clear();
  seq_ = 0;
  makespan_ = 0;
  ran_ = false;
  tag_ = 0;
  watch_index_.clear();
  busy_.clear();
  skip_.clear();
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
    if (--s.pending == 0 && skip_[succ_[e]] == 0) start(succ_[e], s.ready + s.start_delay);
  }
}

Network::Replicas Network::plan_replicas() {
  Replicas r;
  const std::size_t n = transfers_.size();
  if (!params_.replicate_identical || n < 2) return r;
  ReplicaScratch& w = scratch_;
  // A join without dependencies completes at its start delay, a fixed time:
  // it does not tie its successors together.
  w.source.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) w.source[i] = transfers_[i].route_length == 0 && transfers_[i].pending == 0;
  w.parent.resize(n);
  std::iota(w.parent.begin(), w.parent.end(), 0u);
  const auto find = [&](std::uint32_t x) {
    while (w.parent[x] != x) {
      w.parent[x] = w.parent[w.parent[x]];
      x = w.parent[x];
    }
    return x;
  };
  const auto unite = [&](std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) w.parent[std::max(a, b)] = std::min(a, b);
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    if (w.source[i] != 0) continue;
    for (std::uint32_t e = succ_offset_[i]; e < succ_offset_[i + 1]; ++e) unite(i, succ_[e]);
  }
  w.user.assign(topo_.num_links(), kNone);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Transfer& t = transfers_[i];
    for (std::uint32_t h = 0; h < t.route_length; ++h) {
      std::uint32_t& u = w.user[routes_[t.route_offset + h]];
      if (u == kNone) {
        u = i;
      } else {
        unite(i, u);
      }
    }
  }
  // The components, each with its transfers in index order (CSR: first[c]..first[c + 1] of order).
  w.comp.assign(n, kNone);
  w.local.assign(n, 0);
  w.comp_of_root.assign(n, kNone);
  w.size.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    if (w.source[i] != 0) continue;
    std::uint32_t& c = w.comp_of_root[find(i)];
    if (c == kNone) {
      c = static_cast<std::uint32_t>(w.size.size());
      w.size.push_back(0);
    }
    w.comp[i] = c;
    w.local[i] = w.size[c]++;
  }
  const std::size_t ncomp = w.size.size();
  r.components = ncomp;
  r.simulated = ncomp;
  if (ncomp < 2) return r;
  w.first.assign(ncomp + 1, 0);
  for (std::size_t c = 0; c < ncomp; ++c) w.first[c + 1] = w.first[c] + w.size[c];
  w.order.resize(w.first[ncomp]);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (w.comp[i] != kNone) w.order[w.first[w.comp[i]] + w.local[i]] = i;
  }

  // What run()'s first loop does before any event: the starts it makes in
  // each component, in order, with their times (joins complete at once and
  // start their successors), and each transfer's state after it.
  w.pending.resize(n);
  w.ready.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) w.pending[i] = transfers_[i].pending;
  w.starts.clear();  // (component, local index, time) in start order
  const auto start = [&](auto&& self, TransferId id, double time) -> void {
    if (w.comp[id] != kNone) w.starts.push_back({w.comp[id], w.local[id], time});
    if (transfers_[id].route_length != 0) return;
    for (std::uint32_t e = succ_offset_[id]; e < succ_offset_[id + 1]; ++e) {
      const TransferId s = succ_[e];
      w.ready[s] = std::max(w.ready[s], time);
      if (--w.pending[s] == 0) self(self, s, w.ready[s] + transfers_[s].start_delay);
    }
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    if (w.pending[i] == 0) start(start, i, transfers_[i].start_delay);
  }
  std::stable_sort(w.starts.begin(), w.starts.end(),
                   [](const ReplicaScratch::Start& a, const ReplicaScratch::Start& b) { return a.comp < b.comp; });
  w.starts_first.assign(ncomp + 1, 0);
  for (const ReplicaScratch::Start& st : w.starts) ++w.starts_first[st.comp + 1];
  for (std::size_t c = 0; c < ncomp; ++c) w.starts_first[c + 1] += w.starts_first[c];

  // A component's description up to renaming, word by word (equal words,
  // equal runs): streamed into a hash of its first words, compared against
  // a kind's stored words, or stored for a new kind; the sink returns false
  // to stop early. `links` gets its links in the order they are first named.
  w.link_local.assign(topo_.num_links(), kNone);
  const auto describe = [&](std::uint32_t c, std::vector<LinkId>& links, auto&& sink) {
    links.clear();
    bool more = true;
    for (std::uint32_t k = w.first[c]; more && k < w.first[c + 1]; ++k) {
      const TransferId id = w.order[k];
      const Transfer& t = transfers_[id];
      more = sink(bits(t.bytes)) && sink(bits(t.packet_bytes)) && sink(t.packets) && sink(bits(t.start_delay)) &&
             sink(t.route_length) && sink(t.tag) && sink(w.pending[id]) && sink(bits(w.ready[id]));
      for (std::uint32_t h = 0; more && h < t.route_length; ++h) {
        const LinkId l = routes_[t.route_offset + h];
        if (w.link_local[l] == kNone) {
          w.link_local[l] = static_cast<std::uint32_t>(links.size());
          links.push_back(l);
        }
        more = sink(w.link_local[l]) && sink(bits(link_bw_[l])) && sink(bits(link_latency_[l]));
      }
      more = more && sink(succ_offset_[id + 1] - succ_offset_[id]);
      for (std::uint32_t e = succ_offset_[id]; more && e < succ_offset_[id + 1]; ++e) more = sink(w.local[succ_[e]]);
    }
    more = more && sink(kNone);
    for (std::uint32_t k = w.starts_first[c]; more && k < w.starts_first[c + 1]; ++k) {
      more = sink(w.starts[k].local) && sink(bits(w.starts[k].time));
    }
    for (const LinkId l : links) w.link_local[l] = kNone;
    return more;
  };

  struct Kind {
    std::uint32_t comp;
    std::vector<std::uint64_t> words;
    std::vector<LinkId> links;
  };
  std::vector<Kind> kinds;
  std::unordered_map<std::size_t, std::vector<std::uint32_t>> by_hash;  // hash -> indices into kinds
  r.skip.assign(n, 0);
  r.simulated = 0;
  std::vector<LinkId> links;
  for (std::uint32_t c = 0; c < ncomp; ++c) {
    std::size_t hash = 0;
    std::size_t hashed = 0;
    describe(c, links, [&](std::uint64_t word) {
      boost::hash_combine(hash, word);
      return ++hashed < 64;  // the first words tell most kinds apart; a match is checked in full
    });
    std::vector<std::uint32_t>& candidates = by_hash[hash];
    const Kind* same = nullptr;
    for (const std::uint32_t k : candidates) {
      std::size_t pos = 0;
      bool equal = true;
      const std::vector<std::uint64_t>& words = kinds[k].words;
      describe(c, links, [&](std::uint64_t word) {
        equal = pos < words.size() && words[pos] == word;
        ++pos;
        return equal;
      });
      if (equal && pos == words.size()) {
        same = &kinds[k];
        break;
      }
    }
    if (same == nullptr) {
      Kind kind{c, {}, {}};
      describe(c, kind.links, [&kind](std::uint64_t word) {
        kind.words.push_back(word);
        return true;
      });
      candidates.push_back(static_cast<std::uint32_t>(kinds.size()));
      kinds.push_back(std::move(kind));
      ++r.simulated;
      continue;
    }
    for (std::uint32_t k = 0; k < w.size[c]; ++k) {
      const TransferId replica = w.order[w.first[c] + k];
      r.skip[replica] = 1;
      r.transfers.emplace_back(replica, w.order[w.first[same->comp] + k]);
    }
    for (std::size_t k = 0; k < links.size(); ++k) r.links.emplace_back(links[k], same->links[k]);
  }
  return r;
}

void Network::copy_replicas(const Replicas& r) {
  for (const auto& [dst, src] : r.transfers) {
    Transfer& d = transfers_[dst];
    const Transfer& s = transfers_[src];
    d.finish = s.finish;
    d.last_delivery = s.last_delivery;
    d.delivered = s.delivered;
    d.ready = s.ready;
    d.pending = s.pending;
  }
  for (const auto& [dst, src] : r.links) {
    link_busy_[dst] = link_busy_[src];
    link_free_[dst] = link_free_[src];
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

  Replicas replicas = plan_replicas();
  skip_ = std::move(replicas.skip);
  skip_.resize(n, 0);
  // A watched replica link's intervals are its simulated twin's: record
  // those too (hidden slots, dropped after the copy).
  std::vector<LinkId> hidden;
  if (!watch_index_.empty()) {
    for (const auto& [dst, src] : replicas.links) {
      if (watch_index_[dst] < 0 || watch_index_[src] >= 0) continue;
      watch_index_[src] = static_cast<std::int32_t>(busy_.size());
      busy_.emplace_back();
      hidden.push_back(src);
    }
  }

  NetworkRunStats stats;
  stats.transfers = n;
  stats.components = replicas.components;
  stats.simulated_components = replicas.simulated;
  for (std::size_t i = 0; i < n; ++i) {
    stats.packets += transfers_[i].packets;
    if (transfers_[i].pending == 0 && skip_[i] == 0) start(static_cast<TransferId>(i), transfers_[i].start_delay);
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
  copy_replicas(replicas);
  if (!watch_index_.empty()) {
    for (const auto& [dst, src] : replicas.links) {
      if (watch_index_[dst] >= 0) busy_[static_cast<std::size_t>(watch_index_[dst])] = busy_intervals(src);
    }
    for (const LinkId l : hidden) {
      busy_[static_cast<std::size_t>(watch_index_[l])].clear();
      watch_index_[l] = -1;
    }
  }
  stats.makespan_s = makespan_;
  for (double b : link_busy_) stats.max_link_busy_s = std::max(stats.max_link_busy_s, b);
  return stats;
}

}  // namespace tpusim::interconnect
