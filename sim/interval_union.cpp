#include "sim/interval_union.h"

#include <algorithm>
#include <iterator>

namespace tpusim {

void IntervalUnion::add(double begin, double end) {
  if (!(end > begin)) return;
  auto it = spans_.upper_bound(begin);
  if (it != spans_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {  // overlaps or touches the previous span
      begin = prev->first;
      end = std::max(end, prev->second);
      total_ -= prev->second - prev->first;
      it = spans_.erase(prev);
    }
  }
  while (it != spans_.end() && it->first <= end) {
    end = std::max(end, it->second);
    total_ -= it->second - it->first;
    it = spans_.erase(it);
  }
  spans_.emplace(begin, end);
  total_ += end - begin;
}

double IntervalUnion::measure() const {
  double total = 0;
  for (const auto& [b, e] : spans_) total += e - b;
  return total;
}

double IntervalUnion::measure_minus(const IntervalUnion& other) const {
  double total = 0;
  for (const auto& [b, e] : spans_) {
    double covered = 0;
    // Spans of `other` that may overlap [b, e): start before e, end after b.
    auto it = other.spans_.upper_bound(b);
    if (it != other.spans_.begin()) --it;
    for (; it != other.spans_.end() && it->first < e; ++it) {
      const double lo = std::max(b, it->first);
      const double hi = std::min(e, it->second);
      if (hi > lo) covered += hi - lo;
    }
    total += (e - b) - covered;
  }
  return total;
}

}  // namespace tpusim
