// Quantiles with numpy's default linear interpolation (stats/quantile.h): of small in-memory
// samples, of values met in sorted order, and of samples of any size (spilled and sorted
// externally).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "stats/quantile.h"
#include "trace/model/spill_table.h"

namespace latdoc::trace {

// stats/quantile.h on the trace's int64 nanosecond samples.
inline double QuantileSorted(const std::vector<int64_t>& sorted, double q) {
  return stats::QuantileOfSorted(sorted, q);
}
inline double QuantileSelect(std::vector<int64_t>& v, double q) { return stats::QuantileBySelection(v, q); }

// The quantiles `qs` of n values met one by one in ascending order (value i of n): the same
// numbers as QuantileSorted over them, keeping two values per quantile.
class SortedQuantiles {
 public:
  // REQUIRES: n > 0; 0 <= q <= 1 for each q.
  SortedQuantiles(size_t n, std::initializer_list<double> qs) {
    for (double q : qs) {
      Want w;
      const double pos = q * static_cast<double>(n - 1);
      w.lo = static_cast<size_t>(pos);
      w.hi = std::min(w.lo + 1, n - 1);
      w.frac = pos - static_cast<double>(w.lo);
      wants_.push_back(w);
    }
  }
  void Feed(size_t i, int64_t v) {
    for (Want& w : wants_) {
      if (i == w.lo) w.at_lo = v;
      if (i == w.hi) w.at_hi = v;
    }
  }
  // The k-th quantile asked for, once every value was fed.
  double Get(size_t k) const {
    const Want& w = wants_[k];
    return static_cast<double>(w.at_lo) + w.frac * static_cast<double>(w.at_hi - w.at_lo);
  }

 private:
  struct Want {
    size_t lo = 0, hi = 0;
    double frac = 0;
    int64_t at_lo = 0, at_hi = 0;
  };
  std::vector<Want> wants_;
};

// A sample of any size, kept in a SpillTable: its quantiles are exact (QuantileSorted's) in the
// memory of a few blocks.
class QuantileSample {
 public:
  explicit QuantileSample(size_t block_rows = SpillTable<int64_t>::kDefaultBlockRows) : values_(block_rows) {}
  void Add(int64_t v) { values_.push_back(v); }
  bool empty() const { return values_.empty(); }
  size_t size() const { return values_.size(); }

  // The quantiles `qs`, in the order asked; the sample is used up. REQUIRES: !empty().
  std::vector<double> Take(std::initializer_list<double> qs) {
    std::vector<double> out;
    if (std::vector<int64_t>* v = values_.unspilled()) {
      for (double q : qs) out.push_back(QuantileSelect(*v, q));
    } else {
      SortedQuantiles want(values_.size(), qs);
      size_t i = 0;
      SortTable(std::move(values_), std::less<>()).ForEach([&](int64_t x) { want.Feed(i++, x); });
      for (size_t k = 0; k < qs.size(); ++k) out.push_back(want.Get(k));
    }
    values_.clear();
    return out;
  }

 private:
  SpillTable<int64_t> values_;
};

}  // namespace latdoc::trace
