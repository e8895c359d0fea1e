#include "trace/analysis/intervals.h"

#include <algorithm>

namespace latdoc::trace {

IntervalSet MergeIntervals(std::vector<Interval> v) {
  // Callers mostly pass intervals taken from start-sorted tables: skip the sort then. The
  // result does not depend on the order of equal starts, so any start order gives the same set.
  auto by_start = [](const Interval& a, const Interval& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
  IntervalSet out;
  for (const Interval& i : v) {
    if (i.end_ns <= i.start_ns) continue;
    if (!out.empty() && i.start_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t TotalLength(const IntervalSet& s) {
  int64_t n = 0;
  for (const Interval& i : s) n += i.end_ns - i.start_ns;
  return n;
}

IntervalSet Subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t j = 0;
  for (const Interval& x : a) {
    int64_t cur = x.start_ns;
    while (j < b.size() && b[j].end_ns <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start_ns < x.end_ns) {
      if (b[k].start_ns > cur) out.push_back({cur, b[k].start_ns});
      cur = std::max(cur, b[k].end_ns);
      ++k;
    }
    if (cur < x.end_ns) out.push_back({cur, x.end_ns});
  }
  return out;
}

IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].start_ns, b[j].start_ns);
    const int64_t e = std::min(a[i].end_ns, b[j].end_ns);
    if (s < e) out.push_back({s, e});
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet Unite(const IntervalSet& a, const IntervalSet& b) {
  std::vector<Interval> all(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), all.begin(),
             [](const Interval& x, const Interval& y) { return x.start_ns < y.start_ns; });
  return MergeIntervals(std::move(all));
}

IntervalSet IntervalSetBuilder::Finish() {
  IntervalSet out = std::move(out_);
  out_.clear();
  if (late_.empty()) return out;
  // The union does not depend on how the intervals are grouped: the set so far plus the rest.
  out.insert(out.end(), late_.begin(), late_.end());
  late_.clear();
  return MergeIntervals(std::move(out));
}

}  // namespace latdoc::trace
