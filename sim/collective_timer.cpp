#include "sim/collective_timer.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <set>
#include <variant>

#include "sim/timing/vpu_timing.h"

namespace tpusim {
namespace {

Diagnostic groups_error(std::string message) { return Diagnostic{"<replica groups>", 0, 0, std::move(message), ""}; }

std::int64_t first_group_size(const interconnect::ReplicaGroups& g, std::int64_t devices) {
  return g.empty() ? devices : static_cast<std::int64_t>(g.front().size());
}

}  // namespace


Result<CollectiveTiming> PlaceholderCollectiveTimer::time(const CollectiveRequest& r) {
  CollectiveTiming t;
  t.seconds = placeholder_collective_seconds(chip_, r.bytes);
  t.algorithm = "placeholder";
  t.group_size = r.groups ? first_group_size(*r.groups, 1) : 1;
  t.bound = "bandwidth";
  return t;
}

interconnect::ReductionCost vpu_reduction_cost(const ChipConfig& chip, isa::DType dtype) {
  const VpuConfig vpu = chip.core.vpu;
  const double clock = chip.clock;
  const std::int64_t bits = std::max<std::int64_t>(1, isa::dtype_bits(dtype));
  // A vreg holds sublanes × lanes 32-bit elements; narrower dtypes pack.
  const double per_vreg =
      static_cast<double>(vpu.sublanes * vpu.lanes) * static_cast<double>(std::max<std::int64_t>(1, 32 / bits));
  const double bytes_per_element = static_cast<double>(bits) / 8.0;
  return [vpu, clock, per_vreg, bytes_per_element](double bytes) {
    if (bytes <= 0 || per_vreg <= 0 || clock <= 0) return 0.0;
    VpuElementwise e;
    e.op = isa::VpuOp::kAdd;
    e.vregs = static_cast<std::int64_t>(std::ceil(bytes / bytes_per_element / per_vreg));
    e.vmem_inputs = 2;
    e.vmem_outputs = 1;
    return static_cast<double>(vpu_elementwise_timing(vpu, e).done) / clock;
  };
}

NetworkCollectiveTimer::NetworkCollectiveTimer(const ChipConfig& chip, interconnect::Topology topology,
                                               interconnect::CollectiveAlgorithm algorithm)
    : chip_(chip),
      topology_(std::move(topology)),
      params_(interconnect::NetworkParams::from_config(chip.ici, chip.dcn)),
      algorithm_(algorithm) {}

Result<std::vector<double>> CollectiveTimer::time_together(const std::vector<ConcurrentCollective>& set) {
  std::vector<double> out;
  out.reserve(set.size());
  for (const ConcurrentCollective& c : set) {
    auto t = time(c.request);
    if (!t.ok()) return t.errors();
    out.push_back(t->seconds);
  }
  return out;
}

NetworkCollectiveTimer::Key NetworkCollectiveTimer::key_of(const CollectiveRequest& r) const {
  const bool reduces = r.kind == interconnect::CollectiveKind::kAllReduce ||
                       r.kind == interconnect::CollectiveKind::kReduceScatter;
  return Key{static_cast<int>(r.kind), r.bytes, reduces ? static_cast<int>(r.dtype) : -1,
             r.groups ? *r.groups : interconnect::ReplicaGroups{}};
}

Result<std::string> NetworkCollectiveTimer::schedule(interconnect::Network& net, const CollectiveRequest& r,
                                                     double start_s) const {
  const interconnect::ReplicaGroups empty;
  const interconnect::ReplicaGroups& groups = r.groups ? *r.groups : empty;
  const bool reduces = r.kind == interconnect::CollectiveKind::kAllReduce ||
                       r.kind == interconnect::CollectiveKind::kReduceScatter;
  interconnect::CollectiveSpec spec;
  spec.kind = r.kind;
  spec.bytes = r.bytes;
  // The configured schedule is for the ring collectives; all-to-all and
  // permute have only the direct algorithm.
  const bool ring_kind = r.kind == interconnect::CollectiveKind::kAllGather ||
                         r.kind == interconnect::CollectiveKind::kReduceScatter ||
                         r.kind == interconnect::CollectiveKind::kAllReduce;
  spec.algorithm = ring_kind ? algorithm_ : interconnect::CollectiveAlgorithm::kAuto;
  if (r.kind == interconnect::CollectiveKind::kCollectivePermute) {
    for (const auto& p : groups) {
      if (p.size() != 2) return groups_error("collective-permute pairs must have two entries [source, target]");
      spec.source_target_pairs.emplace_back(p[0], p[1]);
    }
  } else {
    spec.groups = groups;
  }
  if (reduces) spec.reduction_cost = vpu_reduction_cost(chip_, r.dtype);
  return interconnect::schedule_collective(net, spec, start_s);
}

Result<std::vector<double>> NetworkCollectiveTimer::time_together(const std::vector<ConcurrentCollective>& set) {
  if (set.size() == 1) {
    auto t = time(set.front().request);
    if (!t.ok()) return t.errors();
    last_joint_link_busy_ = t->link_busy;
    return std::vector<double>{t->seconds};
  }
  double origin = set.empty() ? 0.0 : set.front().start_s;
  for (const ConcurrentCollective& c : set) origin = std::min(origin, c.start_s);
  std::vector<std::pair<Key, double>> key;
  key.reserve(set.size());
  for (const ConcurrentCollective& c : set) key.emplace_back(key_of(c.request), c.start_s - origin);
  if (auto it = joint_cache_.find(key); it != joint_cache_.end()) {
    ++hits_;
    last_joint_link_busy_ = it->second.link_busy;
    return it->second.seconds;
  }
  interconnect::Network& net = network();
  net.watch(watched_);
  std::vector<std::pair<interconnect::TransferId, interconnect::TransferId>> ranges;  // [first, end) per collective
  for (const ConcurrentCollective& c : set) {
    net.set_tag(static_cast<std::uint32_t>(ranges.size()));
    const auto first = static_cast<interconnect::TransferId>(net.num_transfers());
    // Held back until the collective starts (schedule_collective's gate).
    Result<std::string> desc = schedule(net, c.request, c.start_s - origin);
    if (!desc.ok()) return desc.errors();
    const auto end = static_cast<interconnect::TransferId>(net.num_transfers());
    ranges.emplace_back(first, end);
  }
  net.run();
  ++joint_runs_;
  std::vector<double> out;
  out.reserve(set.size());
  for (std::size_t i = 0; i < set.size(); ++i) {
    double finish = set[i].start_s - origin;
    for (interconnect::TransferId t = ranges[i].first; t < ranges[i].second; ++t) {
      finish = std::max(finish, net.finish_time(t));
    }
    out.push_back(finish - (set[i].start_s - origin));
  }
  last_joint_link_busy_ = link_busy(net);
  joint_cache_.emplace(std::move(key), JointRun{out, last_joint_link_busy_});
  return out;
}

const std::vector<LinkBusy>& CollectiveTimer::last_joint_link_busy() const {
  static const std::vector<LinkBusy> kNone;
  return kNone;
}

interconnect::Network& NetworkCollectiveTimer::network() {
  if (!network_) {
    network_ = std::make_unique<interconnect::Network>(topology_, params_);
  } else {
    network_->reset();
  }
  return *network_;
}

void NetworkCollectiveTimer::watch(const std::vector<std::int64_t>& devices) {
  watched_.clear();
  for (const std::int64_t d : devices) {
    if (d < 0 || d >= num_devices()) continue;
    for (int axis = 0; axis < topology_.rank(); ++axis) {
      for (const auto dir : {interconnect::Direction::kPlus, interconnect::Direction::kMinus}) {
        const interconnect::LinkId l = topology_.ici_link(d, axis, dir);
        if (topology_.link(l).to >= 0) watched_.push_back(l);  // (no link at the end of an unwrapped axis)
      }
    }
    if (topology_.slices() > 1) {
      watched_.push_back(topology_.dcn_egress(d));
      watched_.push_back(topology_.dcn_ingress(d));
    }
  }
  // Timings cached before had no intervals recorded.
  cache_.clear();
  joint_cache_.clear();
}

std::vector<LinkBusy> NetworkCollectiveTimer::link_busy(const interconnect::Network& net) const {
  std::vector<LinkBusy> out;
  for (const interconnect::LinkId l : watched_) {
    const auto& v = net.busy_intervals(l);
    if (!v.empty()) out.push_back(LinkBusy{l, v});
  }
  return out;
}

Result<CollectiveTiming> NetworkCollectiveTimer::time(const CollectiveRequest& r) {
  const interconnect::ReplicaGroups empty;
  const interconnect::ReplicaGroups& groups = r.groups ? *r.groups : empty;
  Key key = key_of(r);
  if (auto it = cache_.find(key); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  interconnect::Network& net = network();
  net.watch(watched_);
  Result<std::string> desc = schedule(net, r);
  if (!desc.ok()) return desc.errors();
  const interconnect::NetworkRunStats stats = net.run();
  ++runs_;
  CollectiveTiming t;
  t.seconds = stats.makespan_s;
  t.algorithm = std::move(desc.value());
  t.group_size = r.kind == interconnect::CollectiveKind::kCollectivePermute ? 2
                                                                           : first_group_size(groups, num_devices());
  t.bound = stats.max_link_busy_s >= 0.5 * stats.makespan_s ? "bandwidth" : "latency";
  for (interconnect::LinkId l = 0; l < topology_.num_links(); ++l) {
    const interconnect::LinkInfo& info = topology_.link(l);
    if (info.kind == interconnect::LinkKind::kIci) {
      if (info.to < 0) continue;  // the end of an axis without wraparound: no link
      const auto a = static_cast<size_t>(info.axis);
      t.axis_busy_s[a] += net.link_busy_seconds(l);
      t.axis_links[a] += 1;
    } else {
      t.dcn_busy_s += net.link_busy_seconds(l);
      t.dcn_ports += 1;
    }
  }
  t.link_busy = link_busy(net);
  cache_.emplace(std::move(key), t);
  return t;
}

double collective_v_bytes(interconnect::CollectiveKind kind, double src_bytes, double dst_bytes,
                          std::int64_t group_size) {
  switch (kind) {
    case interconnect::CollectiveKind::kAllGather: return dst_bytes;
    case interconnect::CollectiveKind::kReduceScatter:
    case interconnect::CollectiveKind::kAllReduce:
    case interconnect::CollectiveKind::kCollectivePermute: return src_bytes;
    case interconnect::CollectiveKind::kAllToAll: return static_cast<double>(group_size) * src_bytes;
  }
  return src_bytes;
}

HbmBytes collective_hbm_bytes(CollectiveHbmTraffic traffic, const CollectiveShare& share) {
  if (traffic == CollectiveHbmTraffic::kNone) return {};
  const double v = share.v_bytes;
  const double n = static_cast<double>(std::max<std::int64_t>(1, share.group_size));
  const double f = (n - 1) / n;
  const bool reduction = traffic == CollectiveHbmTraffic::kTransfersReduction;
  switch (share.kind) {
    case interconnect::CollectiveKind::kAllGather: return {v, v};
    case interconnect::CollectiveKind::kReduceScatter:
      return reduction ? HbmBytes{3 * f * v, 2 * f * v} : HbmBytes{f * v, f * v};
    case interconnect::CollectiveKind::kAllReduce:
      return reduction ? HbmBytes{4 * f * v, 3 * f * v} : HbmBytes{2 * f * v, 2 * f * v};
    case interconnect::CollectiveKind::kAllToAll: return {v / n, v / n};
    case interconnect::CollectiveKind::kCollectivePermute: return {share.sends ? v : 0.0, share.receives ? v : 0.0};
  }
  return {};
}

Result<interconnect::ReplicaGroups> resolve_groups(const isa::ReplicaGroups* groups, bool permute,
                                                   std::int64_t n, std::int64_t& tiled) {
  tiled = 1;
  interconnect::ReplicaGroups out;
  if (groups == nullptr || groups->empty()) {
    if (permute) return out;  // no pairs: nothing moves
    out.emplace_back(static_cast<size_t>(n));
    std::iota(out.back().begin(), out.back().end(), 0);
    return out;
  }
  std::int64_t max_id = -1;
  for (const auto& g : *groups) {
    if (g.empty()) return groups_error("a replica group is empty");
    if (permute && g.size() != 2) {
      return groups_error(fmt::format("collective-permute pairs have two entries, one has {}", g.size()));
    }
    for (std::int64_t d : g) {
      if (d < 0) return groups_error(fmt::format("device {} in a replica group is negative", d));
      max_id = std::max(max_id, d);
    }
  }
  const std::int64_t m = max_id + 1;
  if (m > n) {
    return groups_error(fmt::format(
        "the replica groups name device {} but the system has {} chips: expected device ids 0..{} (or a system of "
        "at least {} chips: --system / system.topology)",
        max_id, n, n - 1, m));
  }
  if (n % m != 0) {
    return groups_error(fmt::format(
        "the replica groups cover devices 0..{} ({} chips), which does not divide the system's {} chips: expected "
        "groups over a number of chips that divides {} (the other chips run copies of them)",
        max_id, m, n, n));
  }
  if (!permute) {
    std::vector<int> seen(static_cast<size_t>(m), 0);
    for (const auto& g : *groups) {
      for (std::int64_t d : g) {
        if (seen[static_cast<size_t>(d)]++ != 0) {
          return groups_error(fmt::format("device {} appears in more than one replica group", d));
        }
      }
    }
    for (std::int64_t d = 0; d < m; ++d) {
      if (seen[static_cast<size_t>(d)] == 0) {
        return groups_error(fmt::format("device {} (of 0..{}) is in no replica group", d, max_id));
      }
    }
  }
  tiled = n / m;
  for (std::int64_t k = 0; k < tiled; ++k) {
    for (const auto& g : *groups) {
      interconnect::ReplicaGroup copy;
      copy.reserve(g.size());
      for (std::int64_t d : g) copy.push_back(d + k * m);
      out.push_back(std::move(copy));
    }
  }
  return out;
}

std::vector<Diagnostic> check_replica_groups(const isa::Program& program, std::int64_t num_devices) {
  std::vector<Diagnostic> out;
  std::set<std::uint32_t> checked;  // group lists are shared by id; report each once
  for (const isa::Instruction& inst : program.code) {
    const auto* c = std::get_if<isa::Collective>(&inst.op);
    if (c == nullptr) continue;
    if (c->groups.present() && !checked.insert(c->groups.id).second) continue;
    const bool permute = c->op == isa::CollectiveKind::kCollectivePermute;
    const isa::ReplicaGroups* listed = c->groups.present() && c->groups.id < program.replica_groups.size()
                                           ? &program.replica_groups[c->groups.id]
                                           : nullptr;
    std::int64_t tiled = 1;
    auto resolved = resolve_groups(listed, permute, num_devices, tiled);
    if (resolved.ok()) continue;
    const std::string_view op = interconnect::collective_name(c->op);
    const std::string_view prov = program.provenance(inst);
    const std::string what = prov.empty() ? std::string(op) : fmt::format("{} \"{}\"", op, prov);
    out.push_back(Diagnostic{program.file, static_cast<int>(inst.loc.line), static_cast<int>(inst.loc.column),
                             fmt::format("{}: {}", what, resolved.errors().front().message), ""});
  }
  return out;
}

}  // namespace tpusim
