#include "sim/interval_union.h"

#include <algorithm>
#include <iterator>

namespace tpusim {

void IntervalUnion::add(double begin, double end) {
  if (!(end > begin)) return;
  // Intervals arrive roughly in time order: most land on the last span,
  // found without a search, and extend it in place (no node allocated).
  auto it = !spans_.empty() && begin >= std::prev(spans_.end())->first ? spans_.end() : spans_.upper_bound(begin);
  if (it != spans_.begin()) {
    auto prev = std::prev(it);
    if (prev->second >= begin) {  // overlaps or touches the previous span: grow it
      if (end <= prev->second) return;
      total_ -= prev->second - prev->first;
      while (it != spans_.end() && it->first <= end) {
        end = std::max(end, it->second);
        total_ -= it->second - it->first;
        it = spans_.erase(it);
      }
      prev->second = end;
      total_ += end - prev->first;
      return;
    }
  }
  while (it != spans_.end() && it->first <= end) {
    end = std::max(end, it->second);
    total_ -= it->second - it->first;
    it = spans_.erase(it);
  }
  spans_.emplace_hint(it, begin, end);
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
