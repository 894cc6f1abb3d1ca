#include "sim/collective_fabric.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>
#include <tuple>

#include "sim/timing/instruction_cost.h"

namespace tpusim {
namespace {

constexpr double kEps = kTimeEpsilonSeconds;

std::string list_devices(const std::vector<std::int64_t>& d) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(d.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) s += fmt::format("{}{}", i ? ", " : "", d[i]);
  if (d.size() > shown) s += fmt::format(" and {} more", d.size() - shown);
  return s;
}

// Union-find root with path halving.
std::int64_t root(std::vector<std::int64_t>& parent, std::int64_t x) {
  while (parent[static_cast<size_t>(x)] != x) {
    parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
    x = parent[static_cast<size_t>(x)];
  }
  return x;
}

}  // namespace

std::string_view spmd_mode_name(SpmdMode m) { return m == SpmdMode::kFull ? "full" : "symmetric"; }

CollectiveFabric::CollectiveFabric(SpmdMode mode, CollectiveTimer& timer, bool concurrent)
    : mode_(mode), timer_(timer), concurrent_(concurrent) {}

Result<const CollectiveFabric::Groups*> CollectiveFabric::groups_for(const isa::Program& program,
                                                                     const isa::Collective& c) {
  const auto key = std::make_pair(&program, c.groups.id);
  if (auto it = groups_.find(key); it != groups_.end()) return &it->second;
  const bool permute = c.op == isa::CollectiveKind::kCollectivePermute;
  const isa::ReplicaGroups* listed =
      c.groups.present() && c.groups.id < program.replica_groups.size() ? &program.replica_groups[c.groups.id] : nullptr;
  std::int64_t tiled = 1;
  auto resolved = resolve_groups(listed, permute, num_devices(), tiled);
  if (!resolved.ok()) return resolved.errors();
  tiled_ = std::max(tiled_, tiled);
  Groups g;
  const auto n = static_cast<size_t>(num_devices());
  g.group_of.assign(n, -1);
  if (permute) {
    // Members: the connected component of the pair graph (a device waits for
    // its source to send and its target to receive).
    std::vector<std::int64_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    for (const auto& p : *resolved) parent[static_cast<size_t>(root(parent, p[0]))] = root(parent, p[1]);
    std::map<std::int64_t, std::int64_t> index;
    for (std::int64_t d = 0; d < num_devices(); ++d) {
      const std::int64_t r = root(parent, d);
      auto [it, fresh] = index.emplace(r, static_cast<std::int64_t>(g.members.size()));
      if (fresh) g.members.emplace_back();
      g.members[static_cast<size_t>(it->second)].push_back(d);
      g.group_of[static_cast<size_t>(d)] = it->second;
    }
  } else {
    for (const auto& grp : *resolved) {
      const auto gi = static_cast<std::int64_t>(g.members.size());
      g.members.push_back(grp);
      for (std::int64_t d : grp) g.group_of[static_cast<size_t>(d)] = gi;
    }
  }
  g.groups = std::make_shared<const interconnect::ReplicaGroups>(std::move(resolved).value());
  return &groups_.emplace(key, std::move(g)).first->second;
}

void CollectiveFabric::record(std::uint64_t ordinal, const CollectiveTiming& t, interconnect::CollectiveKind kind,
                              double bytes) {
  if (mode_ == SpmdMode::kFull && !recorded_.insert(ordinal).second) return;
  for (size_t a = 0; a < axis_busy_s_.size(); ++a) {
    axis_busy_s_[a] += t.axis_busy_s[a];
    axis_links_[a] = std::max(axis_links_[a], t.axis_links[a]);
  }
  dcn_busy_s_ += t.dcn_busy_s;
  dcn_ports_ = std::max(dcn_ports_, t.dcn_ports);
  const std::string op(interconnect::collective_name(kind));
  for (CollectiveRow& r : rows_) {
    if (r.op == op && r.bytes == bytes && r.group_size == t.group_size && r.algorithm == t.algorithm) {
      r.count += 1;
      return;
    }
  }
  rows_.push_back(CollectiveRow{op, bytes, t.group_size, t.algorithm, t.bound, t.seconds, 1});
}

Result<std::uint64_t> CollectiveFabric::admit(
    const CollectiveRequest& request, double now,
    std::pair<std::uint64_t, std::pair<const isa::Program*, std::uint32_t>> key) {
  // A new busy period when nothing of the old one is in flight any more.
  bool in_flight = false;
  for (std::uint64_t id : period_) {
    const Job& j = jobs_.at(id);
    in_flight = in_flight || j.start + j.seconds > now + kEps;
  }
  if (!in_flight) {
    flush_period();  // its links' intervals are final
    const std::vector<std::uint64_t> old = std::move(period_);
    period_.clear();
    for (std::uint64_t id : old) {
      jobs_.at(id).in_period = false;
      release(id);  // drops it if nobody reads it any more
    }
  }
  const std::uint64_t id = next_job_++;
  Job& job = jobs_[id];
  job.request = request;
  job.start = now;
  job.in_period = true;
  job.key = key;
  job.changed = std::make_unique<sc_core::sc_event>(sc_core::sc_gen_unique_name("collective_changed"));
  period_.push_back(id);
  // The network run in a canonical order (start, collective ordinal, pc):
  // collectives that start together are timed the same whichever chip's
  // issue the kernel ran first.
  std::vector<std::size_t> order(period_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Job& ja = jobs_.at(period_[a]);
    const Job& jb = jobs_.at(period_[b]);
    return std::tie(ja.start, ja.key.first, ja.key.second.second) <
           std::tie(jb.start, jb.key.first, jb.key.second.second);
  });
  std::vector<ConcurrentCollective> set;
  set.reserve(period_.size());
  for (std::size_t i : order) set.push_back(ConcurrentCollective{jobs_.at(period_[i]).request, jobs_.at(period_[i]).start});
  auto sorted_times = timer_.time_together(set);
  if (!sorted_times.ok()) return sorted_times.errors();
  if (tracing_links_) {
    // The latest run of the period holds its whole history so far.
    period_busy_ = timer_.last_joint_link_busy();
    period_origin_ = set.front().start_s;
    period_names_.clear();
    for (const ConcurrentCollective& c : set) {
      period_origin_ = std::min(period_origin_, c.start_s);
      period_names_.push_back(interconnect::collective_name(c.request.kind));
    }
  }
  std::vector<double> times(period_.size());
  for (std::size_t k = 0; k < order.size(); ++k) times[order[k]] = (*sorted_times)[k];
  for (std::size_t i = 0; i < period_.size(); ++i) {
    Job& j = jobs_.at(period_[i]);
    const double t = times[i];
    if (period_[i] == id) {
      j.seconds = t;
      continue;
    }
    // Finished collectives keep their time (a later start cannot change the
    // past of the network); those in flight may finish later now.
    if (j.start + j.seconds <= now + kEps) continue;
    const double s = std::max(t, now - j.start);
    if (s != j.seconds) {
      j.seconds = s;
      j.changed->notify(sc_core::SC_ZERO_TIME);
    }
  }
  return id;
}

CollectiveFabric::Poll CollectiveFabric::poll_job(std::uint64_t id, double base) const {
  const Job& j = jobs_.at(id);
  const double completion = base + j.seconds;
  if (completion <= sc_core::sc_time_stamp().to_seconds() + kEps) return Poll{true, completion, nullptr, 0, base};
  return Poll{false, 0, j.changed.get(), completion, base};
}

void CollectiveFabric::release(std::uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.refs > 0 || it->second.in_period) return;
  if (mode_ == SpmdMode::kFull) job_of_.erase(it->second.key);
  jobs_.erase(it);
}

Result<CollectiveFabric::Ticket> CollectiveFabric::issue(std::int64_t device, const isa::Program& program,
                                                         std::uint32_t pc, std::uint64_t ordinal,
                                                         const std::string& where) {
  auto fail = [&](const std::string& message) {
    // `where` already names file:line:column of the instruction.
    return Diagnostic{program.file, 0, 0, fmt::format("{}: {}", where, message), ""};
  };
  const auto* c = std::get_if<isa::Collective>(&program.code[pc].op);
  if (c == nullptr) return fail("internal: not a collective");
  if (device < 0 || device >= num_devices()) return fail(fmt::format("device {} outside the system", device));
  auto groups = groups_for(program, *c);
  if (!groups.ok()) {
    std::vector<Diagnostic> ds;
    for (const auto& e : groups.errors()) ds.push_back(fail(e.message));
    return ds;
  }
  const Groups& g = *groups.value();
  const CollectiveKind kind = c->op;
  const std::int64_t gi = g.group_of[static_cast<size_t>(device)];
  const std::int64_t group_size =
      kind == interconnect::CollectiveKind::kCollectivePermute
          ? 2
          : static_cast<std::int64_t>(g.members[static_cast<size_t>(gi)].size());
  CollectiveRequest req;
  req.kind = kind;
  req.bytes = collective_v_bytes(kind, static_cast<double>(tile_bytes(program, c->src)),
                                 static_cast<double>(tile_bytes(program, c->dst)), group_size);
  req.groups = g.groups;
  req.dtype = program.buffers[c->src.buffer].dtype;
  auto timing = timer_.time(req);
  if (!timing.ok()) {
    std::vector<Diagnostic> ds;
    for (const auto& e : timing.errors()) ds.push_back(fail(e.message));
    return ds;
  }
  const double now = sc_core::sc_time_stamp().to_seconds();
  record(ordinal, *timing, kind, req.bytes);
  CollectiveShare share{kind, req.bytes, group_size, true, true};
  if (kind == interconnect::CollectiveKind::kCollectivePermute) {
    share.sends = share.receives = false;
    for (const auto& pair : *g.groups) {
      share.sends = share.sends || pair[0] == device;
      share.receives = share.receives || pair[1] == device;
    }
  }
  if (mode_ == SpmdMode::kSymmetric) {
    if (!concurrent_) {
      if (tracing_links_) add_link_busy(timing->link_busy, now, {interconnect::collective_name(kind)});
      return Ticket{now + timing->seconds, {}, 0, share, now};
    }
    auto job = admit(req, now, {ordinal, {&program, pc}});
    if (!job.ok()) {
      std::vector<Diagnostic> ds;
      for (const auto& e : job.errors()) ds.push_back(fail(e.message));
      return ds;
    }
    jobs_.at(*job).refs += 1;
    return Ticket{-1, {}, *job, share};
  }

  Instance& inst = pending_[{ordinal, gi}];
  if (inst.expected == 0) {
    inst.where = where;
    inst.pc = pc;
    inst.program = &program;
    inst.expected = g.members[static_cast<size_t>(gi)].size();
    inst.done = std::make_unique<sc_core::sc_event>(sc_core::sc_gen_unique_name("collective_done"));
    inst.kind = kind;
    inst.bytes = req.bytes;
    inst.request = req;
  } else if (inst.kind != kind || inst.bytes != req.bytes) {
    return fail(fmt::format("device {} issued this as its collective #{}, but another member of its group issued {} "
                            "({}, {} bytes) there",
                            device, ordinal, inst.where, interconnect::collective_name(inst.kind), inst.bytes));
  }
  inst.arrived.insert(device);
  inst.last_issue = std::max(inst.last_issue, now);
  if (inst.arrived.size() == inst.expected) {
    if (concurrent_) {
      // One network job per collective instance for all its groups, started
      // by the first group that is complete. The instance is the devices'
      // n-th collective, whichever program (tests give chips their own) and
      // pc it sits at: the groups were matched by that ordinal.
      const auto key = std::make_pair(ordinal, std::make_pair(static_cast<const isa::Program*>(nullptr), 0u));
      auto it = job_of_.find(key);
      if (it == job_of_.end()) {
        auto job = admit(inst.request, now, key);
        if (!job.ok()) {
          std::vector<Diagnostic> ds;
          for (const auto& e : job.errors()) ds.push_back(fail(e.message));
          return ds;
        }
        it = job_of_.emplace(key, *job).first;
      }
      inst.job = it->second;
      jobs_.at(inst.job).refs += 1;
    } else {
      inst.completion = inst.last_issue + timing->seconds;
      // The network run times every group at once: its links are traced
      // once, from the first group complete.
      if (tracing_links_ && traced_ordinals_.insert(ordinal).second) {
        add_link_busy(timing->link_busy, inst.last_issue, {interconnect::collective_name(kind)});
      }
    }
    inst.done->notify(sc_core::SC_ZERO_TIME);
  }
  return Ticket{-1, {ordinal, gi}, 0, share};
}

CollectiveFabric::Poll CollectiveFabric::poll(const Ticket& ticket) {
  if (ticket.completion >= 0) return Poll{true, ticket.completion, nullptr, 0, ticket.start};
  if (ticket.job != 0) {  // symmetric mode, concurrent collectives
    const Poll p = poll_job(ticket.job, jobs_.at(ticket.job).start);
    if (p.ready) {
      jobs_.at(ticket.job).refs -= 1;
      release(ticket.job);
    }
    return p;
  }
  Instance& inst = pending_.at(ticket.instance);
  if (inst.completion < 0 && inst.job == 0) return Poll{false, 0, inst.done.get()};
  const Poll p = inst.job != 0 ? poll_job(inst.job, inst.last_issue)
                               : Poll{true, inst.completion, nullptr, 0, inst.last_issue};
  if (p.ready && ++inst.consumed == inst.expected) {
    const std::uint64_t job = inst.job;
    pending_.erase(ticket.instance);
    if (job != 0) {
      jobs_.at(job).refs -= 1;
      release(job);
    }
  }
  return p;
}

void CollectiveFabric::trace_links(const std::vector<std::int64_t>& devices) {
  tracing_links_ = !devices.empty();
  timer_.watch(devices);
}

void CollectiveFabric::add_link_busy(const std::vector<LinkBusy>& busy, double origin,
                                     const std::vector<std::string_view>& names) {
  for (const LinkBusy& b : busy) {
    auto& slices = link_slices_[b.link];
    for (const auto& i : b.intervals) {
      slices.push_back(LinkSlice{origin + i.start, origin + i.end, i.tag < names.size() ? names[i.tag] : "collective"});
    }
  }
}

void CollectiveFabric::flush_period() {
  if (period_busy_.empty()) return;
  add_link_busy(period_busy_, period_origin_, period_names_);
  period_busy_.clear();
}

void CollectiveFabric::write_link_tracks(TraceWriter& trace, const std::function<double(double)>& reported) {
  flush_period();
  const auto* net = dynamic_cast<const NetworkCollectiveTimer*>(&timer_);
  if (net == nullptr) return;
  const interconnect::Topology& topo = net->topology();
  for (auto& [link, slices] : link_slices_) {
    const interconnect::LinkInfo& info = topo.link(link);
    const std::string name = info.kind == interconnect::LinkKind::kIci
                                 ? fmt::format("ICI {}{}", "xyz"[info.axis], info.direction == interconnect::Direction::kPlus ? '+' : '-')
                             : info.kind == interconnect::LinkKind::kDcnEgress ? std::string("DCN out")
                                                                               : std::string("DCN in");
    const int track = trace.track(fmt::format("chip{}.links", info.from), name, "intervals");
    // Collectives timed in separate network runs may overlap on a link
    // (traffic of other groups routed through it): the later one is shown
    // from where the earlier ends.
    std::stable_sort(slices.begin(), slices.end(), [](const LinkSlice& a, const LinkSlice& b) { return a.start < b.start; });
    double until = -1;
    for (const LinkSlice& s : slices) {
      const double start = std::max(s.start, until);
      if (s.end <= start) continue;
      trace.slice(track, s.name, reported(start), reported(s.end));
      until = s.end;
    }
  }
  link_slices_.clear();
}

CollectiveFabric::Counters CollectiveFabric::counters() const {
  Counters c;
  c.row_counts.reserve(rows_.size());
  for (const CollectiveRow& r : rows_) c.row_counts.push_back(r.count);
  c.axis_busy_s = axis_busy_s_;
  c.dcn_busy_s = dcn_busy_s_;
  return c;
}

void CollectiveFabric::add_repeats(const Counters& a, const Counters& b, std::int64_t times) {
  for (std::size_t i = 0; i < b.row_counts.size() && i < rows_.size(); ++i) {
    const std::int64_t before = i < a.row_counts.size() ? a.row_counts[i] : 0;
    rows_[i].count += times * (b.row_counts[i] - before);
  }
  const auto t = static_cast<double>(times);
  for (std::size_t k = 0; k < axis_busy_s_.size(); ++k) axis_busy_s_[k] += t * (b.axis_busy_s[k] - a.axis_busy_s[k]);
  dcn_busy_s_ += t * (b.dcn_busy_s - a.dcn_busy_s);
}

std::vector<std::string> CollectiveFabric::blocked() const {
  std::vector<std::string> out;
  for (const auto& [key, inst] : pending_) {
    if (inst.completion >= 0 || inst.job != 0) continue;
    const auto& members =
        groups_.at({inst.program, std::get<isa::Collective>(inst.program->code[inst.pc].op).groups.id})
            .members[static_cast<size_t>(key.second)];
    std::vector<std::int64_t> arrived(inst.arrived.begin(), inst.arrived.end());
    std::vector<std::int64_t> missing;
    for (std::int64_t d : members) {
      if (!inst.arrived.contains(d)) missing.push_back(d);
    }
    out.push_back(fmt::format("collective #{} ({}): devices {} issued it and wait for devices {}, which never did",
                              key.first, inst.where, list_devices(arrived), list_devices(missing)));
  }
  return out;
}

}  // namespace tpusim
