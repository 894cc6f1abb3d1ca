// A shared resource that serves requests first come, first served: each
// request occupies it for a service time computed by a pure timing function.
// Concurrent users therefore share its throughput instead of each seeing the
// full rate (what a unit's isolated cost function would assume). Plain C++,
// no SystemC: modules call reserve() with the current simulated time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim {

class BandwidthServer {
 public:
  explicit BandwidthServer(int servers = 1) : free_at_(static_cast<size_t>(std::max(1, servers)), 0.0) {}

  // Occupies the earliest-free server for `service_s` seconds, starting no
  // earlier than `now_s`. Returns the time the service ends.
  double reserve(double now_s, double service_s) {
    auto it = std::min_element(free_at_.begin(), free_at_.end());
    const double start = std::max(now_s, *it);
    *it = start + service_s;
    busy_s_ += service_s;
    queued_s_ += start - now_s;
    return *it;
  }

  [[nodiscard]] double busy_seconds() const { return busy_s_; }     // summed over servers
  [[nodiscard]] double queued_seconds() const { return queued_s_; }  // waiting for a free server
  [[nodiscard]] int servers() const { return static_cast<int>(free_at_.size()); }

 private:
  std::vector<double> free_at_;
  double busy_s_ = 0;
  double queued_s_ = 0;
};

}  // namespace tpusim
