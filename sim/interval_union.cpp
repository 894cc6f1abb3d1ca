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

void IntervalUnion::drop_before(double cut) {
  auto it = spans_.begin();
  while (it != spans_.end() && it->first < cut) {
    if (it->second <= cut) {
      dropped_ += it->second - it->first;
      it = spans_.erase(it);
      continue;
    }
    // Straddles the cut: keep [cut, end).
    const double end = it->second;
    dropped_ += cut - it->first;
    it = spans_.erase(it);
    spans_.emplace_hint(it, cut, end);
    break;
  }
}

double IntervalUnion::measure() const {
  double total = dropped_;
  for (const auto& [b, e] : spans_) total += e - b;
  return total;
}

double IntervalUnion::measure_minus(const IntervalUnion& other, double limit) const {
  double total = 0;
  for (const auto& [b, span_end] : spans_) {
    if (b >= limit) break;
    const double e = std::min(span_end, limit);
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

void BusyTime::maybe_fold_before(double cut) {
  if (pieces() <= fold_at_) return;
  fold_before(cut);
  fold_at_ = std::max<std::size_t>(64, 2 * pieces());
}

void BusyTime::fold_before(double cut) {
  exposed_dropped_ += comm_.measure_minus(compute_, cut);
  compute_.drop_before(cut);
  comm_.drop_before(cut);
}

}  // namespace tpusim
