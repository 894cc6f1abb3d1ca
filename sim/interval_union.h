// A union of time intervals [begin, end), kept merged and sorted: what the
// SPMD report uses to split a chip's time into compute and exposed
// communication (communication intervals not covered by any compute
// interval). Plain C++, unit-tested in tests/sim/collective_timer_test.cpp.
#pragma once

#include <cstddef>
#include <limits>
#include <map>

namespace tpusim {

class IntervalUnion {
 public:
  // Adds [begin, end); empty or inverted intervals are ignored.
  void add(double begin, double end);
  // Total length of the union.
  [[nodiscard]] double measure() const;
  // Length of the part of this union before `limit` not covered by
  // `other`. (Parts either union dropped are not seen.)
  [[nodiscard]] double measure_minus(const IntervalUnion& other,
                                     double limit = std::numeric_limits<double>::infinity()) const;
  // Spans held (dropped ones not counted).
  [[nodiscard]] std::size_t pieces() const { return spans_.size(); }
  // measure(), kept up to date by add() (O(1); equal to measure() up to rounding).
  [[nodiscard]] double running_measure() const { return total_; }
  // Forgets the union before `cut`, keeping its length in measure(). Only
  // for a caller that adds nothing beginning before `cut` any more.
  void drop_before(double cut);

 private:
  std::map<double, double> spans_;  // begin -> end, disjoint and non-touching
  double total_ = 0;
  double dropped_ = 0;  // length of the spans drop_before() forgot
};

// A core's busy time: the union of its compute intervals, of its
// communication intervals, and the communication not covered by compute
// (exposed). Memory stays bounded by the recent past: fold_before(cut)
// forgets both unions before `cut` once they hold many spans, keeping every
// measure; the caller promises no later interval begins before `cut`.
class BusyTime {
 public:
  void add_compute(double begin, double end) { compute_.add(begin, end); }
  void add_comm(double begin, double end) { comm_.add(begin, end); }
  [[nodiscard]] double compute() const { return compute_.measure(); }
  [[nodiscard]] double comm() const { return comm_.measure(); }
  [[nodiscard]] double compute_running() const { return compute_.running_measure(); }
  [[nodiscard]] double comm_running() const { return comm_.running_measure(); }
  [[nodiscard]] double exposed() const { return exposed_dropped_ + comm_.measure_minus(compute_); }
  [[nodiscard]] std::size_t pieces() const { return compute_.pieces() + comm_.pieces(); }
  // Folds when the unions hold more spans than the last fold left (x2, at least 64): amortized O(1) per add.
  void maybe_fold_before(double cut);
  void fold_before(double cut);

 private:
  IntervalUnion compute_;
  IntervalUnion comm_;
  double exposed_dropped_ = 0;
  std::size_t fold_at_ = 64;
};

}  // namespace tpusim
