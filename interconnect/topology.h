// Topology of a TPU system: one or more ICI slices (1D ring, 2D/3D torus or
// mesh, optionally twisted) joined by the data-center network (DCN).
//
// Device ids follow the order jax.devices() lists TPU chips in one slice
// (x fastest, then y, then z; see docs/interconnect.md for the source), and
// slices follow one another: id = slice * chips_per_slice + x + X*(y + Y*z).
//
// Links: every chip has, per axis, a link to its + and its - neighbour (each a
// separate one-way resource); a chip at the end of an axis without wraparound
// has no link there. Every chip also has one DCN egress and one DCN ingress
// port. LinkIds are dense so the network can keep per-link state in a vector.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/diagnostic.h"

namespace tpusim::interconnect {

using DeviceId = std::int64_t;
using LinkId = std::uint32_t;

inline constexpr int kMaxAxes = 3;
using Coord = std::array<std::int64_t, kMaxAxes>;  // unused axes are 0

enum class Direction : int { kPlus = 0, kMinus = 1 };

enum class LinkKind { kIci, kDcnEgress, kDcnIngress };

struct LinkInfo {
  LinkKind kind = LinkKind::kIci;
  DeviceId from = 0;  // the chip that transmits on this link (or owns the DCN port)
  DeviceId to = 0;    // the chip that receives (== from for DCN ports)
  int axis = -1;      // ICI only
  Direction direction = Direction::kPlus;
  bool wrap = false;  // ICI only: the wraparound link of its axis
};

class Topology {
 public:
  // dims: chips per axis (1 to 3 axes, each >= 1). wraparound: per axis (an
  // axis of length <= 2 never wraps: its two neighbours are the same chip and
  // TPU slices do not wire it twice). twisted: twisted-torus wiring (needs every
  // axis wrapped and extents of exactly K and 2K). slices >= 1.
  static Result<Topology> create(std::vector<std::int64_t> dims, std::vector<bool> wraparound,
                                 bool twisted = false, std::int64_t slices = 1);
  static Result<Topology> from_config(const SystemTopology& system);

  // Parses "8", "4x4", "4x4x4" (the form `validate collective` uses) and
  // applies one wraparound flag to every axis.
  static Result<Topology> parse(const std::string& text, bool wraparound);

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] std::int64_t dim(int axis) const { return dims_[static_cast<size_t>(axis)]; }
  [[nodiscard]] bool wraps(int axis) const { return wrap_[static_cast<size_t>(axis)]; }
  [[nodiscard]] bool twisted() const { return twisted_; }
  [[nodiscard]] std::int64_t slices() const { return slices_; }
  [[nodiscard]] std::int64_t chips_per_slice() const { return chips_per_slice_; }
  [[nodiscard]] std::int64_t num_devices() const { return chips_per_slice_ * slices_; }
  [[nodiscard]] std::string describe() const;  // "4x4x8 torus (twisted), 2 slices"

  // Device id <-> (slice, coordinates).
  [[nodiscard]] Coord coords(DeviceId d) const;
  [[nodiscard]] std::int64_t slice_of(DeviceId d) const { return d / chips_per_slice_; }
  [[nodiscard]] DeviceId device(std::int64_t slice, const Coord& c) const;

  // The chip one hop away along `axis` in `dir`, or -1 if there is no link.
  [[nodiscard]] DeviceId neighbor(DeviceId d, int axis, Direction dir) const;

  // Links.
  [[nodiscard]] std::size_t num_links() const { return links_.size(); }
  [[nodiscard]] const LinkInfo& link(LinkId id) const { return links_[id]; }
  // The ICI link leaving `d` along axis/dir; only valid when neighbor() >= 0.
  [[nodiscard]] LinkId ici_link(DeviceId d, int axis, Direction dir) const;
  [[nodiscard]] LinkId dcn_egress(DeviceId d) const;
  [[nodiscard]] LinkId dcn_ingress(DeviceId d) const;

  // Hops along `axis` from a to b the shorter way (wrapped) or straight (line).
  [[nodiscard]] std::int64_t axis_distance(int axis, std::int64_t a, std::int64_t b) const;

  // Axes on which src->dst is a tie (wrapped axis, distance exactly half the
  // axis): bit a set. Routes can go either way there; see route().
  [[nodiscard]] std::uint32_t tie_axes(DeviceId src, DeviceId dst) const;

  // Dimension-ordered route (x, then y, then z), shortest way round on
  // wrapped axes; on a tie axis whose bit is set in `tie_minus` the route goes
  // the minus way, otherwise the plus way. Twisted tori route the short axes
  // first, choosing the way round that minimizes total hops. Across slices:
  // DCN egress of src, DCN ingress of the chip with src's coordinates in dst's
  // slice, then ICI inside that slice. Empty when src == dst.
  [[nodiscard]] std::vector<LinkId> route(DeviceId src, DeviceId dst,
                                          std::uint32_t tie_minus = 0) const;
  void append_route(DeviceId src, DeviceId dst, std::uint32_t tie_minus,
                    std::vector<LinkId>& out) const;

 private:
  Topology() = default;
  void build_links();
  void append_slice_route(std::int64_t slice, Coord from, const Coord& to, std::uint32_t tie_minus,
                          std::vector<LinkId>& out) const;
  void append_axis_steps(std::int64_t slice, Coord& at, int axis, Direction dir, std::int64_t steps,
                         std::vector<LinkId>& out) const;
  [[nodiscard]] Coord step(const Coord& c, int axis, Direction dir, bool& exists) const;

  int rank_ = 1;
  std::array<std::int64_t, kMaxAxes> dims_{1, 1, 1};
  std::array<bool, kMaxAxes> wrap_{false, false, false};
  bool twisted_ = false;
  std::int64_t twist_k_ = 0;  // short extent K of a twisted torus
  std::int64_t slices_ = 1;
  std::int64_t chips_per_slice_ = 1;
  std::vector<LinkInfo> links_;
  LinkId dcn_base_ = 0;
};

}  // namespace tpusim::interconnect
