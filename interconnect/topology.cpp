#include "interconnect/topology.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace tpusim::interconnect {

namespace {

Diagnostic topology_error(std::string message) {
  return Diagnostic{"<system>", 0, 0, std::move(message), {}};
}

std::int64_t mod(std::int64_t a, std::int64_t n) { return ((a % n) + n) % n; }

}  // namespace

Result<Topology> Topology::create(std::vector<std::int64_t> dims, std::vector<bool> wraparound,
                                  bool twisted, std::int64_t slices) {
  if (dims.empty() || dims.size() > static_cast<size_t>(kMaxAxes)) {
    return topology_error(fmt::format("a topology has 1 to {} axes, got {}", kMaxAxes, dims.size()));
  }
  if (!wraparound.empty() && wraparound.size() != dims.size()) {
    return topology_error(fmt::format("wraparound lists {} axes but the topology has {}",
                                      wraparound.size(), dims.size()));
  }
  if (slices < 1) return topology_error("slices must be at least 1");
  Topology t;
  t.rank_ = static_cast<int>(dims.size());
  t.chips_per_slice_ = 1;
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] < 1) return topology_error(fmt::format("axis {} has {} chips; at least 1", a, dims[a]));
    t.dims_[a] = dims[a];
    // An axis of 1 or 2 chips has no separate wraparound link.
    t.wrap_[a] = !wraparound.empty() && wraparound[a] && dims[a] > 2;
    t.chips_per_slice_ *= dims[a];
  }
  t.slices_ = slices;
  if (twisted) {
    // Twisted tori exist for k×k×2k and k×2k×2k slices with every axis wrapped
    // (Cloud TPU v4 docs, "Twisted tori topologies"); 2D k×2k is the classic
    // twisted torus of Cámara et al., IEEE TPDS 2010.
    const auto bounds = std::minmax_element(dims.begin(), dims.end());
    const std::int64_t lo = *bounds.first, hi = *bounds.second;
    const bool shape_ok = dims.size() >= 2 && hi == 2 * lo &&
                          std::all_of(dims.begin(), dims.end(), [&](std::int64_t d) { return d == lo || d == hi; });
    bool all_wrap = true;
    for (size_t a = 0; a < dims.size(); ++a) all_wrap = all_wrap && t.wrap_[a];
    if (!shape_ok || !all_wrap) {
      return topology_error(
          "a twisted torus needs extents K and 2K only (k×2k, k×k×2k, k×2k×2k) and wraparound on "
          "every axis");
    }
    t.twisted_ = true;
    t.twist_k_ = lo;
  }
  t.build_links();
  return t;
}

Result<Topology> Topology::from_config(const SystemTopology& system) {
  return create(system.topology, system.wraparound, system.twisted, system.slices);
}

Result<Topology> Topology::parse(const std::string& text, bool wraparound) {
  std::vector<std::int64_t> dims;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t x = text.find('x', pos);
    const std::string part = text.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    if (part.empty() || part.size() > 9 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return topology_error(
          fmt::format("topology '{}': expected chips per axis like 8, 4x4 or 4x4x4", text));
    }
    dims.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return create(dims, std::vector<bool>(dims.size(), wraparound));
}

std::string Topology::describe() const {
  std::string s;
  bool any_wrap = false;
  for (int a = 0; a < rank_; ++a) {
    s += (a ? "x" : "") + std::to_string(dims_[static_cast<size_t>(a)]);
    any_wrap = any_wrap || wrap_[static_cast<size_t>(a)];
  }
  s += any_wrap ? " torus" : " mesh";
  if (any_wrap) {
    std::string w;
    for (int a = 0; a < rank_; ++a) w += wrap_[static_cast<size_t>(a)] ? "w" : "-";
    if (w.find('-') != std::string::npos) s += " (wrap " + w + ")";
  }
  if (twisted_) s += " (twisted)";
  if (slices_ > 1) s += fmt::format(", {} slices over DCN", slices_);
  return s;
}

Coord Topology::coords(DeviceId d) const {
  std::int64_t local = d % chips_per_slice_;
  Coord c{0, 0, 0};
  for (int a = 0; a < rank_; ++a) {
    c[static_cast<size_t>(a)] = local % dims_[static_cast<size_t>(a)];
    local /= dims_[static_cast<size_t>(a)];
  }
  return c;
}

DeviceId Topology::device(std::int64_t slice, const Coord& c) const {
  DeviceId id = 0;
  for (int a = rank_ - 1; a >= 0; --a) id = id * dims_[static_cast<size_t>(a)] + c[static_cast<size_t>(a)];
  return slice * chips_per_slice_ + id;
}

Coord Topology::step(const Coord& c, int axis, Direction dir, bool& exists) const {
  const auto ax = static_cast<size_t>(axis);
  const std::int64_t n = dims_[ax];
  Coord r = c;
  const std::int64_t next = c[ax] + (dir == Direction::kPlus ? 1 : -1);
  exists = true;
  if (next >= 0 && next < n) {
    r[ax] = next;
    return r;
  }
  if (!wrap_[ax]) {
    exists = false;
    return r;
  }
  r[ax] = mod(next, n);
  if (twisted_ && n == twist_k_) {
    // Crossing the wraparound of a short axis shifts every long (2K) axis by
    // K: the twist of Cámara et al. (k×2k) applied per long axis (diagonal
    // offset on k×2k×2k).
    for (int b = 0; b < rank_; ++b) {
      const auto bx = static_cast<size_t>(b);
      if (dims_[bx] == 2 * twist_k_) r[bx] = mod(r[bx] + twist_k_, dims_[bx]);
    }
  }
  return r;
}

DeviceId Topology::neighbor(DeviceId d, int axis, Direction dir) const {
  if (axis < 0 || axis >= rank_ || dims_[static_cast<size_t>(axis)] == 1) return -1;
  bool exists = false;
  const Coord n = step(coords(d), axis, dir, exists);
  return exists ? device(slice_of(d), n) : -1;
}

void Topology::build_links() {
  const std::int64_t n = num_devices();
  links_.clear();
  links_.reserve(static_cast<size_t>(n) * static_cast<size_t>(2 * rank_ + 2));
  for (DeviceId d = 0; d < n; ++d) {
    const Coord c = coords(d);
    for (int a = 0; a < rank_; ++a) {
      for (Direction dir : {Direction::kPlus, Direction::kMinus}) {
        LinkInfo li;
        li.kind = LinkKind::kIci;
        li.from = d;
        li.to = neighbor(d, a, dir);
        li.axis = a;
        li.direction = dir;
        const std::int64_t x = c[static_cast<size_t>(a)];
        li.wrap = li.to >= 0 && ((dir == Direction::kPlus && x == dims_[static_cast<size_t>(a)] - 1) ||
                                 (dir == Direction::kMinus && x == 0));
        links_.push_back(li);
      }
    }
  }
  dcn_base_ = static_cast<LinkId>(links_.size());
  for (DeviceId d = 0; d < n; ++d) {
    links_.push_back(LinkInfo{LinkKind::kDcnEgress, d, d, -1, Direction::kPlus, false});
    links_.push_back(LinkInfo{LinkKind::kDcnIngress, d, d, -1, Direction::kPlus, false});
  }
}

LinkId Topology::ici_link(DeviceId d, int axis, Direction dir) const {
  return static_cast<LinkId>(d * 2 * rank_ + axis * 2 + static_cast<int>(dir));
}

LinkId Topology::dcn_egress(DeviceId d) const { return dcn_base_ + static_cast<LinkId>(2 * d); }
LinkId Topology::dcn_ingress(DeviceId d) const { return dcn_base_ + static_cast<LinkId>(2 * d + 1); }

std::int64_t Topology::axis_distance(int axis, std::int64_t a, std::int64_t b) const {
  const auto ax = static_cast<size_t>(axis);
  const std::int64_t straight = std::llabs(b - a);
  return wrap_[ax] ? std::min(straight, dims_[ax] - straight) : straight;
}

std::uint32_t Topology::tie_axes(DeviceId src, DeviceId dst) const {
  if (twisted_) return 0;  // twisted routes pick one minimal way; no splitting
  const Coord a = coords(src);
  const Coord b = coords(dst);
  std::uint32_t mask = 0;
  for (int ax = 0; ax < rank_; ++ax) {
    const auto i = static_cast<size_t>(ax);
    if (wrap_[i] && dims_[i] % 2 == 0 && std::llabs(b[i] - a[i]) == dims_[i] / 2) mask |= 1u << ax;
  }
  return mask;
}

void Topology::append_axis_steps(std::int64_t slice, Coord& at, int axis, Direction dir,
                                 std::int64_t steps, std::vector<LinkId>& out) const {
  for (std::int64_t s = 0; s < steps; ++s) {
    bool exists = false;
    const Coord next = step(at, axis, dir, exists);
    out.push_back(ici_link(device(slice, at), axis, dir));
    at = next;
  }
}

void Topology::append_slice_route(std::int64_t slice, Coord at, const Coord& to,
                                  std::uint32_t tie_minus, std::vector<LinkId>& out) const {
  // Steps and direction along one axis the shorter way (straight on a line).
  auto plan = [&](int ax, const Coord& from) -> std::pair<Direction, std::int64_t> {
    const auto i = static_cast<size_t>(ax);
    const std::int64_t n = dims_[i];
    const std::int64_t fwd = mod(to[i] - from[i], n);  // hops going +
    if (!wrap_[i]) {
      return to[i] >= from[i] ? std::pair{Direction::kPlus, to[i] - from[i]}
                              : std::pair{Direction::kMinus, from[i] - to[i]};
    }
    const std::int64_t back = n - fwd;
    if (fwd == 0) return {Direction::kPlus, 0};
    if (fwd < back) return {Direction::kPlus, fwd};
    if (back < fwd) return {Direction::kMinus, back};
    return (tie_minus >> ax) & 1u ? std::pair{Direction::kMinus, back} : std::pair{Direction::kPlus, fwd};
  };

  if (!twisted_) {
    for (int ax = 0; ax < rank_; ++ax) {
      const auto [dir, steps] = plan(ax, at);
      append_axis_steps(slice, at, ax, dir, steps, out);
    }
    return;
  }
  // Twisted: choose, for each short axis, the way round (crossing its wrap
  // shifts the long axes by K); then route the long axes the shorter way.
  std::vector<int> short_axes;
  for (int ax = 0; ax < rank_; ++ax) {
    if (dims_[static_cast<size_t>(ax)] == twist_k_) short_axes.push_back(ax);
  }
  std::uint32_t best_choice = 0;
  std::int64_t best_hops = std::numeric_limits<std::int64_t>::max();
  for (std::uint32_t choice = 0; choice < (1u << short_axes.size()); ++choice) {
    std::int64_t hops = 0;
    std::int64_t shift = 0;
    for (size_t k = 0; k < short_axes.size(); ++k) {
      const auto i = static_cast<size_t>(short_axes[k]);
      const std::int64_t fwd = mod(to[i] - at[i], twist_k_);
      const bool minus = (choice >> k) & 1u;
      if (fwd == 0 && minus) { hops = std::numeric_limits<std::int64_t>::max() / 2; break; }
      hops += minus ? twist_k_ - fwd : fwd;
      const bool crosses = minus ? (fwd != 0 && to[i] > at[i]) : (to[i] < at[i]);
      if (crosses) shift += twist_k_;
    }
    for (int ax = 0; ax < rank_; ++ax) {
      const auto i = static_cast<size_t>(ax);
      if (dims_[i] == twist_k_) continue;
      hops += axis_distance(ax, mod(at[i] + shift, dims_[i]), to[i]);
    }
    if (hops < best_hops) {
      best_hops = hops;
      best_choice = choice;
    }
  }
  for (size_t k = 0; k < short_axes.size(); ++k) {
    const int ax = short_axes[k];
    const auto i = static_cast<size_t>(ax);
    const std::int64_t fwd = mod(to[i] - at[i], twist_k_);
    const bool minus = (best_choice >> k) & 1u;
    append_axis_steps(slice, at, ax, minus ? Direction::kMinus : Direction::kPlus,
                      minus ? twist_k_ - fwd : fwd, out);
  }
  for (int ax = 0; ax < rank_; ++ax) {
    if (dims_[static_cast<size_t>(ax)] == twist_k_) continue;
    const auto [dir, steps] = plan(ax, at);
    append_axis_steps(slice, at, ax, dir, steps, out);
  }
}

void Topology::append_route(DeviceId src, DeviceId dst, std::uint32_t tie_minus,
                            std::vector<LinkId>& out) const {
  if (src == dst) return;
  const std::int64_t s_src = slice_of(src);
  const std::int64_t s_dst = slice_of(dst);
  const Coord from = coords(src);
  if (s_src != s_dst) {
    // Over DCN to the same position in the destination slice, then ICI.
    out.push_back(dcn_egress(src));
    out.push_back(dcn_ingress(device(s_dst, from)));
  }
  append_slice_route(s_dst, from, coords(dst), tie_minus, out);
}

std::vector<LinkId> Topology::route(DeviceId src, DeviceId dst, std::uint32_t tie_minus) const {
  std::vector<LinkId> out;
  append_route(src, dst, tie_minus, out);
  return out;
}

}  // namespace tpusim::interconnect
