#include "interconnect/collectives.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tpusim::interconnect {

namespace {

constexpr TransferId kNone = std::numeric_limits<TransferId>::max();
constexpr const char* kAxisNames[] = {"x", "y", "z"};

Diagnostic spec_error(std::string message) {
  return Diagnostic{"<collective>", 0, 0, std::move(message), {}};
}

enum class RingOp { kGather, kScatter };

// One ring (closed: bidirectional shortest-way ring) or line (open: two-way
// line) phase over `members`, in order. `entry[d]` is what device d's first
// sends wait for; on return it holds the join that completes when d has
// received everything of this phase (the next phase's entry).
void add_ring_phase(Network& net, const std::vector<DeviceId>& m, bool closed, RingOp op,
                    double shard, const ReductionCost& reduce, std::vector<TransferId>& entry) {
  const auto n = static_cast<std::int64_t>(m.size());
  if (n < 2) return;
  auto at = [&](std::int64_t i) { return m[static_cast<size_t>(((i % n) + n) % n)]; };
  auto reduce_s = [&](double bytes) { return reduce ? reduce(bytes) : 0.0; };

  std::vector<std::vector<TransferId>> incoming(static_cast<size_t>(n));
  std::vector<double> final_bytes(static_cast<size_t>(n), 0.0);  // RS: partials landing at the owner
  struct Hop {
    std::int64_t from, to;
    double bytes;
  };
  std::vector<Hop> hops;
  for (int dir : {+1, -1}) {
    // On a line, ReduceScatter chains all start at the end chip; it sends them
    // one after the other, longest first (the mirror of the AllGather line).
    const bool serialize_starts = !closed && op == RingOp::kScatter;
    TransferId previous_start = kNone;
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t o = serialize_starts && dir > 0 ? n - 1 - k : k;
      hops.clear();
      if (closed) {
        const std::int64_t d = n / 2;  // hops a flow travels
        for (std::int64_t j = 1; j <= d; ++j) {
          if (op == RingOp::kGather) {
            // Owner o's shard spreads the shorter way; the antipode of an even
            // ring gets half from each side.
            const double b = (n % 2 == 0 && j == d) ? shard / 2 : shard;
            hops.push_back({o + dir * (j - 1), o + dir * j, b});
          } else {
            // Partial sums of shard o flow towards o from both sides.
            const double b = (n % 2 == 0 && j == 1) ? shard / 2 : shard;
            hops.push_back({o - dir * (d - j + 1), o - dir * (d - j), b});
          }
        }
      } else if (op == RingOp::kGather) {
        const std::int64_t len = dir > 0 ? n - 1 - o : o;
        for (std::int64_t j = 1; j <= len; ++j) hops.push_back({o + dir * (j - 1), o + dir * j, shard});
      } else {
        const std::int64_t start = dir > 0 ? 0 : n - 1;
        const std::int64_t len = dir > 0 ? o : n - 1 - o;
        for (std::int64_t j = 1; j <= len; ++j) {
          hops.push_back({start + dir * (j - 1), start + dir * j, shard});
        }
      }
      TransferId prev = kNone;
      double prev_bytes = 0;
      for (const Hop& h : hops) {
        const DeviceId src = at(h.from);
        const double delay = (op == RingOp::kScatter && prev != kNone) ? reduce_s(prev_bytes) : 0.0;
        const TransferId t = net.add_transfer(src, at(h.to), h.bytes, 0, delay);
        const TransferId dep = prev != kNone ? prev : entry[static_cast<size_t>(src)];
        if (dep != kNone) net.add_dependency(dep, t);
        if (prev == kNone && serialize_starts) {
          if (previous_start != kNone) net.add_dependency(previous_start, t);
          previous_start = t;
        }
        incoming[static_cast<size_t>(((h.to % n) + n) % n)].push_back(t);
        prev = t;
        prev_bytes = h.bytes;
      }
      if (op == RingOp::kScatter && prev != kNone) final_bytes[static_cast<size_t>(o)] += prev_bytes;
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const auto iu = static_cast<size_t>(i);
    const DeviceId d = m[iu];
    const double delay = op == RingOp::kScatter ? reduce_s(final_bytes[iu]) : 0.0;
    // The owner's own final reduction delays its completion of the phase.
    const TransferId join = net.add_join(delay);
    if (entry[static_cast<size_t>(d)] != kNone) net.add_dependency(entry[static_cast<size_t>(d)], join);
    for (TransferId t : incoming[iu]) net.add_dependency(t, join);
    entry[static_cast<size_t>(d)] = join;
  }
}

// An axis-aligned box inside one slice: per spanned axis, its lines.
struct Box {
  std::vector<int> axes;                 // spanned axes, x first
  std::vector<bool> closed;              // per spanned axis: ring (true) or line
  std::vector<std::int64_t> extent;      // per spanned axis
};

std::optional<Box> as_box(const Topology& topo, const ReplicaGroup& g) {
  if (g.size() < 2 || topo.twisted()) return std::nullopt;
  const std::int64_t slice = topo.slice_of(g.front());
  std::array<std::set<std::int64_t>, kMaxAxes> values;
  for (DeviceId d : g) {
    if (topo.slice_of(d) != slice) return std::nullopt;
    const Coord c = topo.coords(d);
    for (int a = 0; a < topo.rank(); ++a) values[static_cast<size_t>(a)].insert(c[static_cast<size_t>(a)]);
  }
  Box box;
  std::int64_t product = 1;
  for (int a = 0; a < topo.rank(); ++a) {
    const auto& v = values[static_cast<size_t>(a)];
    const auto size = static_cast<std::int64_t>(v.size());
    product *= size;
    if (size == 1) continue;
    const bool contiguous = *v.rbegin() - *v.begin() + 1 == size;
    if (!contiguous) return std::nullopt;
    box.axes.push_back(a);
    box.closed.push_back(topo.wraps(a) && size == topo.dim(a));
    box.extent.push_back(size);
  }
  if (product != static_cast<std::int64_t>(g.size())) return std::nullopt;
  return box;
}

// Lines of the group along `axis`, each sorted by that coordinate.
std::vector<std::vector<DeviceId>> lines_along(const Topology& topo, const ReplicaGroup& g, int axis) {
  std::map<Coord, std::vector<std::pair<std::int64_t, DeviceId>>> by_key;
  for (DeviceId d : g) {
    Coord key = topo.coords(d);
    const std::int64_t pos = key[static_cast<size_t>(axis)];
    key[static_cast<size_t>(axis)] = 0;
    by_key[key].emplace_back(pos, d);
  }
  std::vector<std::vector<DeviceId>> lines;
  for (auto& [key, members] : by_key) {
    std::sort(members.begin(), members.end());
    std::vector<DeviceId> line;
    for (const auto& [pos, d] : members) line.push_back(d);
    lines.push_back(std::move(line));
  }
  return lines;
}

// How a group that is an axis-aligned box is scheduled (a group that is not
// runs the flat ring whatever the mode).
enum class BoxMode { kFlat, kPerAxis, kMultiAxis };

// ReduceScatter phases along the box axes `order` (indices into box.axes) on
// `data` unreduced bytes per device.
void add_box_scatter(Network& net, const ReplicaGroup& g, const Box& box, const std::vector<size_t>& order,
                     double data, const ReductionCost& reduce, std::vector<TransferId>& entry) {
  for (size_t i : order) {
    const auto ni = static_cast<double>(box.extent[i]);
    for (const auto& line : lines_along(net.topology(), g, box.axes[i])) {
      add_ring_phase(net, line, box.closed[i], RingOp::kScatter, data / ni, reduce, entry);
    }
    data /= ni;
  }
}

// AllGather phases along the box axes `order` of an array of `gathered` bytes
// per device (each device holds gathered / |g| before the first phase).
void add_box_gather(Network& net, const ReplicaGroup& g, const Box& box, const std::vector<size_t>& order,
                    double gathered, const ReductionCost& reduce, std::vector<TransferId>& entry) {
  double held = gathered / static_cast<double>(g.size());
  for (size_t i : order) {
    for (const auto& line : lines_along(net.topology(), g, box.axes[i])) {
      add_ring_phase(net, line, box.closed[i], RingOp::kGather, held, reduce, entry);
    }
    held *= static_cast<double>(box.extent[i]);
  }
}

std::string schedule_rings(Network& net, const ReplicaGroup& g, const CollectiveSpec& spec, BoxMode mode,
                           std::vector<TransferId>& entry) {
  const Topology& topo = net.topology();
  const auto n = static_cast<double>(g.size());
  const bool do_rs = spec.kind == CollectiveKind::kReduceScatter || spec.kind == CollectiveKind::kAllReduce;
  const bool do_ag = spec.kind == CollectiveKind::kAllGather || spec.kind == CollectiveKind::kAllReduce;
  const std::optional<Box> box = mode != BoxMode::kFlat ? as_box(topo, g) : std::nullopt;
  if (!box) {
    // One logical ring over the group in its listed order.
    if (do_rs) add_ring_phase(net, g, g.size() > 2, RingOp::kScatter, spec.bytes / n, spec.reduction_cost, entry);
    if (do_ag) add_ring_phase(net, g, g.size() > 2, RingOp::kGather, spec.bytes / n, spec.reduction_cost, entry);
    return std::string(algorithm_name(CollectiveAlgorithm::kFlatRing));
  }
  const size_t k = box->axes.size();
  // One spanned axis: the multi-axis schedule is the per-axis ring itself.
  const bool multi = mode == BoxMode::kMultiAxis && k >= 2;
  std::string desc(algorithm_name(multi ? CollectiveAlgorithm::kMultiAxis : CollectiveAlgorithm::kPerAxisRing));
  desc += "(";
  for (size_t i = 0; i < k; ++i) {
    desc += fmt::format("{}{}:{}", i ? "," : "", kAxisNames[box->axes[i]], box->closed[i] ? "ring" : "line");
  }
  desc += ")";
  // Per-axis phase orders: ReduceScatter x, y, z; AllGather z, y, x.
  std::vector<size_t> rs_order(k), ag_order(k);
  for (size_t i = 0; i < k; ++i) {
    rs_order[i] = i;
    ag_order[i] = k - 1 - i;
  }
  if (!multi) {
    if (do_rs) add_box_scatter(net, g, *box, rs_order, spec.bytes, spec.reduction_cost, entry);
    if (do_ag) add_box_gather(net, g, *box, ag_order, spec.bytes, spec.reduction_cost, entry);
    return desc;
  }
  // Multi-axis: k shares of V/k, share s running the per-axis phases in the
  // orders rotated by s, all at once; at every phase index the shares are on
  // k different axes, so all of a chip's axes carry data together. Each
  // share has its own per-chip joins; a chip has finished when all have.
  std::vector<std::vector<TransferId>> share_entry(k, entry);
  for (size_t s = 0; s < k; ++s) {
    std::vector<size_t> rs(k), ag(k);
    for (size_t i = 0; i < k; ++i) {
      rs[i] = rs_order[(i + s) % k];
      ag[i] = ag_order[(i + s) % k];
    }
    const double share = spec.bytes / static_cast<double>(k);
    if (do_rs) add_box_scatter(net, g, *box, rs, share, spec.reduction_cost, share_entry[s]);
    if (do_ag) add_box_gather(net, g, *box, ag, share, spec.reduction_cost, share_entry[s]);
  }
  for (DeviceId d : g) {
    const TransferId join = net.add_join();
    for (const auto& e : share_entry) {
      if (e[static_cast<size_t>(d)] != kNone) net.add_dependency(e[static_cast<size_t>(d)], join);
    }
    entry[static_cast<size_t>(d)] = join;
  }
  return desc;
}

// A group spanning S >= 2 slices with the same local chips in each: the
// slice-local groups (slice order; every one lists slice 0's chips in the
// group's order, moved to its slice) and, per local chip, its S peers (the
// chips with its coordinates, one per slice, in slice order).
struct Multislice {
  std::vector<ReplicaGroup> local;
  std::vector<ReplicaGroup> peers;
};

std::optional<Multislice> as_multislice(const Topology& topo, const ReplicaGroup& g) {
  const std::int64_t cps = topo.chips_per_slice();
  std::map<std::int64_t, std::vector<DeviceId>> by_slice;  // slice -> local ids in listed order
  for (DeviceId d : g) by_slice[topo.slice_of(d)].push_back(d % cps);
  if (by_slice.size() < 2) return std::nullopt;
  const std::vector<DeviceId>& first = by_slice.begin()->second;
  const std::set<DeviceId> local_ids(first.begin(), first.end());
  for (const auto& [slice, ids] : by_slice) {
    if (ids.size() != first.size() || std::set<DeviceId>(ids.begin(), ids.end()) != local_ids) return std::nullopt;
  }
  Multislice m;
  for (const auto& [slice, ids] : by_slice) {
    ReplicaGroup local;
    for (DeviceId id : first) local.push_back(slice * cps + id);
    m.local.push_back(std::move(local));
  }
  for (DeviceId id : first) {
    ReplicaGroup peers;
    for (const auto& [slice, ids] : by_slice) peers.push_back(slice * cps + id);
    m.peers.push_back(std::move(peers));
  }
  return m;
}

// The two-level multislice schedule (docs/interconnect.md, "Hierarchical
// multislice collectives"): ReduceScatter over ICI inside every slice on V,
// then over DCN among the peers on the V/L the chip now holds; AllGather
// mirrors it (DCN on V/L first, then ICI on V), so only the 1/L shard crosses
// the slice boundary. The DCN phase is the flat ring over the S peers (their
// route is their own DCN egress and the peer's ingress, no ICI hop).
std::string schedule_hierarchical(Network& net, const Multislice& ms, const CollectiveSpec& spec,
                                  std::vector<TransferId>& entry) {
  const bool do_rs = spec.kind == CollectiveKind::kReduceScatter || spec.kind == CollectiveKind::kAllReduce;
  const bool do_ag = spec.kind == CollectiveKind::kAllGather || spec.kind == CollectiveKind::kAllReduce;
  const auto l = static_cast<double>(ms.local.front().size());
  const auto s = static_cast<double>(ms.peers.front().size());
  const bool closed = ms.peers.front().size() > 2;
  std::string ici;
  auto ici_phase = [&](CollectiveKind kind) {
    if (l < 2) return;
    CollectiveSpec phase = spec;
    phase.kind = kind;
    for (const ReplicaGroup& g : ms.local) ici = schedule_rings(net, g, phase, BoxMode::kPerAxis, entry);
  };
  if (do_rs) {
    ici_phase(CollectiveKind::kReduceScatter);
    for (const ReplicaGroup& p : ms.peers) {
      add_ring_phase(net, p, closed, RingOp::kScatter, spec.bytes / l / s, spec.reduction_cost, entry);
    }
  }
  if (do_ag) {
    for (const ReplicaGroup& p : ms.peers) {
      add_ring_phase(net, p, closed, RingOp::kGather, spec.bytes / l / s, spec.reduction_cost, entry);
    }
    ici_phase(CollectiveKind::kAllGather);
  }
  // e.g. "hierarchical(per-axis-ring(x:ring,y:ring)+dcn:line(2))"
  const std::string dcn = fmt::format("dcn:{}({})", closed ? "ring" : "line", ms.peers.front().size());
  return l < 2 ? fmt::format("hierarchical({})", dcn) : fmt::format("hierarchical({}+{})", ici, dcn);
}

// A chunk on its shortest route, split evenly over the two ways of tie axes.
void add_direct(Network& net, DeviceId src, DeviceId dst, double bytes) {
  if (src == dst) return;
  const std::uint32_t ties = net.topology().tie_axes(src, dst);
  const int ways = 1 << std::popcount(ties);
  // Enumerate the submasks of `ties`.
  std::uint32_t sub = ties;
  while (true) {
    net.add_transfer(src, dst, bytes / ways, sub);
    if (sub == 0) break;
    sub = (sub - 1) & ties;
  }
}

}  // namespace

std::string_view algorithm_name(CollectiveAlgorithm a) { return enum_name(a); }

std::optional<CollectiveAlgorithm> parse_algorithm(std::string_view name) {
  CollectiveAlgorithm a{};
  if (!parse_enum(name, a)) return std::nullopt;
  return a;
}

namespace {

Result<std::string> schedule_transfers(Network& net, const CollectiveSpec& spec) {
  const Topology& topo = net.topology();
  const std::int64_t devices = topo.num_devices();
  if (!(spec.bytes >= 0)) return spec_error("collective bytes must be >= 0");
  auto check_device = [&](DeviceId d) -> std::optional<Diagnostic> {
    if (d < 0 || d >= devices) {
      return spec_error(fmt::format("device {} is outside the system of {} devices", d, devices));
    }
    return std::nullopt;
  };

  if (spec.kind == CollectiveKind::kCollectivePermute) {
    if (spec.algorithm != CollectiveAlgorithm::kAuto && spec.algorithm != CollectiveAlgorithm::kDirect) {
      return spec_error("collective-permute supports only the direct algorithm");
    }
    std::set<DeviceId> sources, targets;
    for (const auto& [s, t] : spec.source_target_pairs) {
      if (auto e = check_device(s)) return *e;
      if (auto e = check_device(t)) return *e;
      if (!sources.insert(s).second || !targets.insert(t).second) {
        return spec_error(fmt::format("collective-permute pair {{{},{}}} repeats a source or target", s, t));
      }
      add_direct(net, s, t, spec.bytes);
    }
    return std::string(algorithm_name(CollectiveAlgorithm::kDirect));
  }

  ReplicaGroups all;
  const ReplicaGroups* groups = &spec.groups;
  if (spec.groups.empty()) {
    all.emplace_back();
    for (DeviceId d = 0; d < devices; ++d) all.back().push_back(d);
    groups = &all;
  }
  std::vector<bool> seen(static_cast<size_t>(devices), false);
  for (const auto& g : *groups) {
    if (g.empty()) return spec_error("a replica group is empty");
    for (DeviceId d : g) {
      if (auto e = check_device(d)) return *e;
      if (seen[static_cast<size_t>(d)]) {
        return spec_error(fmt::format("device {} appears in more than one replica group", d));
      }
      seen[static_cast<size_t>(d)] = true;
    }
  }

  std::set<std::string> used;
  if (spec.kind == CollectiveKind::kAllToAll) {
    if (spec.algorithm != CollectiveAlgorithm::kAuto && spec.algorithm != CollectiveAlgorithm::kDirect) {
      return spec_error("all-to-all supports only the direct algorithm");
    }
    for (const auto& g : *groups) {
      // The collective cost forms: every device sends a V/N² chunk to every other (V is
      // the global array; each device holds V/N before and after).
      const double n = static_cast<double>(g.size());
      const double chunk = spec.bytes / (n * n);
      for (DeviceId s : g) {
        for (DeviceId t : g) add_direct(net, s, t, chunk);
      }
    }
    return std::string(algorithm_name(CollectiveAlgorithm::kDirect));
  }

  if (spec.algorithm == CollectiveAlgorithm::kDirect) {
    return spec_error(fmt::format("{} has no direct algorithm; use per-axis-ring, multi-axis, flat-ring or hierarchical",
                                  collective_name(spec.kind)));
  }
  // auto: multi-axis for a box of one slice (per-axis-ring when it spans one
  // axis); docs/interconnect.md says why.
  const BoxMode mode = spec.algorithm == CollectiveAlgorithm::kFlatRing       ? BoxMode::kFlat
                       : spec.algorithm == CollectiveAlgorithm::kPerAxisRing  ? BoxMode::kPerAxis
                       : spec.algorithm == CollectiveAlgorithm::kHierarchical ? BoxMode::kPerAxis
                                                                              : BoxMode::kMultiAxis;
  std::vector<TransferId> entry(static_cast<size_t>(devices), kNone);
  for (const auto& g : *groups) {
    if (spec.algorithm == CollectiveAlgorithm::kHierarchical || spec.algorithm == CollectiveAlgorithm::kAuto) {
      // auto: only where the ICI level has work (one chip per slice is the flat ring already).
      const std::optional<Multislice> ms = as_multislice(topo, g);
      if (ms && (spec.algorithm == CollectiveAlgorithm::kHierarchical || ms->local.front().size() >= 2)) {
        used.insert(schedule_hierarchical(net, *ms, spec, entry));
        continue;
      }
    }
    used.insert(schedule_rings(net, g, spec, mode, entry));
  }
  std::string desc;
  for (const auto& u : used) desc += (desc.empty() ? "" : " + ") + u;
  return desc;
}

}  // namespace

Result<std::string> schedule_collective(Network& net, const CollectiveSpec& spec, double start_s) {
  const auto first = static_cast<TransferId>(net.num_transfers());
  Result<std::string> desc = schedule_transfers(net, spec);
  if (!desc.ok()) return desc;
  const auto end = static_cast<TransferId>(net.num_transfers());
  // Hold the whole schedule back until the collective starts and its fixed
  // start-up (ici.collective_startup) is paid, whatever the schedule's
  // length. One gate without dependencies of its own: it completes at a
  // fixed time, so it does not join the schedule's replicas (network.h).
  const double gate_s = start_s + net.params().collective_startup_s;
  if (gate_s > 0 && end > first) {
    const TransferId gate = net.add_join(gate_s);
    for (TransferId t = first; t < end; ++t) net.add_dependency(gate, t);
  }
  return desc;
}

Result<CollectiveResult> simulate_collective(const Topology& topology, const NetworkParams& params,
                                             const CollectiveSpec& spec) {
  Network net(topology, params);
  Result<std::string> desc = schedule_collective(net, spec);
  if (!desc) return desc.errors();
  CollectiveResult r;
  r.algorithm = std::move(desc.value());
  r.network = net.run();
  r.seconds = r.network.makespan_s;
  return r;
}

ReplicaGroups groups_spanning_axes(const Topology& topology, std::uint32_t axes_mask) {
  ReplicaGroups groups;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    const Coord c = topology.coords(d);
    bool first = true;
    for (int a = 0; a < topology.rank(); ++a) {
      if ((axes_mask >> a & 1u) && c[static_cast<size_t>(a)] != 0) first = false;
    }
    if (!first) continue;
    // Enumerate the box x fastest, which is device order.
    ReplicaGroup g;
    std::int64_t size = 1;
    for (int a = 0; a < topology.rank(); ++a) {
      if (axes_mask >> a & 1u) size *= topology.dim(a);
    }
    for (std::int64_t i = 0; i < size; ++i) {
      Coord m = c;
      std::int64_t rest = i;
      for (int a = 0; a < topology.rank(); ++a) {
        if (!(axes_mask >> a & 1u)) continue;
        m[static_cast<size_t>(a)] = rest % topology.dim(a);
        rest /= topology.dim(a);
      }
      g.push_back(topology.device(topology.slice_of(d), m));
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

Result<ReplicaGroups> expand_iota_groups(std::int64_t num_groups, std::int64_t group_size,
                                         const std::vector<std::int64_t>& reshape_dims,
                                         const std::vector<std::int64_t>& permutation) {
  if (num_groups < 1 || group_size < 1) return spec_error("iota replica groups need [G,S] >= 1");
  std::int64_t total = 1;
  for (std::int64_t d : reshape_dims) {
    if (d < 1) return spec_error("iota reshape dimensions must be >= 1");
    total *= d;
  }
  if (total != num_groups * group_size) {
    return spec_error(fmt::format("iota reshape dims hold {} devices, [G,S] needs {}", total,
                                  num_groups * group_size));
  }
  const size_t rank = reshape_dims.size();
  std::vector<std::int64_t> perm = permutation;
  if (perm.empty()) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<std::int64_t>(i));
  }
  std::vector<std::int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted.size() != rank || sorted[i] != static_cast<std::int64_t>(i)) {
      return spec_error("iota transpose must be a permutation of the reshape dimensions");
    }
  }
  // Row-major strides of the reshaped iota.
  std::vector<std::int64_t> stride(rank, 1);
  for (size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * reshape_dims[i];
  std::vector<std::int64_t> tdims(rank);
  for (size_t k = 0; k < rank; ++k) tdims[k] = reshape_dims[static_cast<size_t>(perm[k])];
  ReplicaGroups groups(static_cast<size_t>(num_groups));
  std::vector<std::int64_t> idx(rank, 0);
  for (std::int64_t linear = 0; linear < total; ++linear) {
    std::int64_t rest = linear;
    for (size_t k = rank; k-- > 0;) {
      idx[k] = rest % tdims[k];
      rest /= tdims[k];
    }
    std::int64_t value = 0;
    for (size_t k = 0; k < rank; ++k) value += idx[k] * stride[static_cast<size_t>(perm[k])];
    groups[static_cast<size_t>(linear / group_size)].push_back(value);
  }
  return groups;
}

}  // namespace tpusim::interconnect
