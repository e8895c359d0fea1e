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

// Builds MergeIntervals(every interval added) as they come. Intervals added in start order
// (taken from a start-sorted table) are merged on the fly, with nothing stored but the set;
// any order still gives the right set, at the cost of a sort of what came out of order.
class IntervalSetBuilder {
 public:
  void Add(const Interval& i) {
    if (i.end_ns <= i.start_ns) return;   // empty: dropped, as MergeIntervals does
    if (!late_.empty() || (!out_.empty() && i.start_ns < last_start_ns_)) {
      late_.push_back(i);
      return;
    }
    last_start_ns_ = i.start_ns;
    if (!out_.empty() && i.start_ns <= out_.back().end_ns) {
      if (i.end_ns > out_.back().end_ns) out_.back().end_ns = i.end_ns;
    } else {
      out_.push_back(i);
    }
  }
  // The set; the builder is left empty.
  IntervalSet Finish();

 private:
  IntervalSet out_;
  std::vector<Interval> late_;
  int64_t last_start_ns_ = 0;
};

}  // namespace latdoc::trace
