// A union of time intervals [begin, end), kept merged and sorted: what the
// SPMD report uses to split a chip's time into compute and exposed
// communication (communication intervals not covered by any compute
// interval). Plain C++, unit-tested in tests/sim/interval_union_test.cpp.
#pragma once

#include <map>

namespace tpusim {

class IntervalUnion {
 public:
  // Adds [begin, end); empty or inverted intervals are ignored.
  void add(double begin, double end);
  // Total length of the union.
  [[nodiscard]] double measure() const;
  // Length of the part of this union not covered by `other`.
  [[nodiscard]] double measure_minus(const IntervalUnion& other) const;
  [[nodiscard]] std::size_t pieces() const { return spans_.size(); }
  // measure(), kept up to date by add() (O(1); equal to measure() up to rounding).
  [[nodiscard]] double running_measure() const { return total_; }

 private:
  std::map<double, double> spans_;  // begin -> end, disjoint and non-touching
  double total_ = 0;
};

}  // namespace tpusim
