// Interval arithmetic on [start, end) nanosecond ranges: union, length, difference,
// intersection. The building block of the busy/idle and overlap analyses.
#pragma once

#include <cstdint>
#include <vector>

namespace latdoc::trace {

struct Interval {
  int64_t start_ns;
  int64_t end_ns;
};

// Sorted, disjoint, non-touching intervals. Empty intervals are dropped.
using IntervalSet = std::vector<Interval>;

// Merges arbitrary intervals (any order, overlapping) into an IntervalSet.
IntervalSet MergeIntervals(std::vector<Interval> intervals);
int64_t TotalLength(const IntervalSet& s);
// a − b and a ∩ b. REQUIRES: both are IntervalSets.
IntervalSet Subtract(const IntervalSet& a, const IntervalSet& b);
IntervalSet Intersect(const IntervalSet& a, const IntervalSet& b);
IntervalSet Unite(const IntervalSet& a, const IntervalSet& b);

}  // namespace latdoc::trace
