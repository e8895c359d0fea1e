#include "trace/analysis/gpu_timeline.h"

#include <algorithm>
#include <cctype>

#include "trace/analysis/intervals.h"

namespace latdoc::trace {

namespace {

// The same interval algebra in double microseconds, to replay TraceLens's float arithmetic.
struct DInterval {
  double s, e;
};
using DSet = std::vector<DInterval>;

DSet MergeD(std::vector<DInterval> v) {
  // As MergeIntervals: the input is usually in start order already.
  auto by_start = [](const DInterval& a, const DInterval& b) { return a.s < b.s; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end(), by_start);
  DSet out;
  for (const DInterval& i : v) {
    if (!(i.e > i.s)) continue;
    if (!out.empty() && i.s <= out.back().e) {
      out.back().e = std::max(out.back().e, i.e);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

double LengthD(const DSet& s) {
  double n = 0;
  for (const DInterval& i : s) n += i.e - i.s;
  return n;
}

DSet SubtractD(const DSet& a, const DSet& b) {
  DSet out;
  size_t j = 0;
  for (const DInterval& x : a) {
    double cur = x.s;
    while (j < b.size() && b[j].e <= cur) ++j;
    for (size_t k = j; k < b.size() && b[k].s < x.e; ++k) {
      if (b[k].s > cur) out.push_back({cur, b[k].s});
      cur = std::max(cur, b[k].e);
    }
    if (cur < x.e) out.push_back({cur, x.e});
  }
  return out;
}

DSet UniteD(const DSet& a, const DSet& b) {
  std::vector<DInterval> all(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), all.begin(),
             [](const DInterval& x, const DInterval& y) { return x.s < y.s; });
  return MergeD(std::move(all));
}

}  // namespace

bool IsCommunicationKernel(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    const char c0 = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    if (c0 != 'n' && c0 != 'r') continue;
    if (std::tolower(static_cast<unsigned char>(name[i + 1])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 2])) == 'c' &&
        std::tolower(static_cast<unsigned char>(name[i + 3])) == 'l') {
      return true;
    }
  }
  return false;
}

namespace {

// IntervalSetBuilder for DInterval (MergeD of every interval added).
class DSetBuilder {
 public:
  void Add(const DInterval& i) {
    if (!(i.e > i.s)) return;
    if (!late_.empty() || (!out_.empty() && i.s < last_start_)) {
      late_.push_back(i);
      return;
    }
    last_start_ = i.s;
    if (!out_.empty() && i.s <= out_.back().e) {
      out_.back().e = std::max(out_.back().e, i.e);
    } else {
      out_.push_back(i);
    }
  }
  DSet Finish() {
    if (late_.empty()) return std::move(out_);
    out_.insert(out_.end(), late_.begin(), late_.end());
    return MergeD(std::move(out_));
  }

 private:
  DSet out_;
  std::vector<DInterval> late_;
  double last_start_ = 0;
};

// Accessors so that UnionLength serves both interval types.
int64_t Lo(const Interval& i) { return i.start_ns; }
int64_t Hi(const Interval& i) { return i.end_ns; }
int64_t& Hi(Interval& i) { return i.end_ns; }
double Lo(const DInterval& i) { return i.s; }
double Hi(const DInterval& i) { return i.e; }
double& Hi(DInterval& i) { return i.e; }

// The length of the set the builders would make, summed in the same order (LengthD's sums
// are order-sensitive), keeping only the interval still open. An interval starting before
// the open one could touch closed ones: then in_order() turns false and the length is not
// valid.
template <typename I>
class UnionLength {
 public:
  using T = decltype(Lo(I{}));
  void Add(const I& i) {
    if (!(Hi(i) > Lo(i))) return;
    if (open_) {
      if (Lo(i) < Lo(cur_)) in_order_ = false;
      if (Lo(i) <= Hi(cur_)) {
        Hi(cur_) = std::max(Hi(cur_), Hi(i));
        return;
      }
      length_ += Hi(cur_) - Lo(cur_);
    }
    cur_ = i;
    open_ = true;
  }
  bool in_order() const { return in_order_; }
  T Finish() {
    if (open_) length_ += Hi(cur_) - Lo(cur_);
    open_ = false;
    return length_;
  }

 private:
  I cur_{};
  bool open_ = false;
  bool in_order_ = true;
  T length_{};
};

bool IsComm(std::vector<int8_t>& cache, const Trace& trace, NameId name) {
  if (name >= cache.size()) return IsCommunicationKernel(trace.Name(name));
  if (cache[name] < 0) cache[name] = IsCommunicationKernel(trace.Name(name)) ? 1 : 0;
  return cache[name] == 1;
}

}  // namespace

GpuTimeline ComputeGpuTimeline(const Trace& trace, const GpuTimelineOptions& options,
                               std::optional<SourceDevice> device) {
  GpuTimeline t;
  if (device) {
    t.source = device->source;
    t.device = device->device;
  }
  auto on_device = [&](const GpuOp& op) {
    return !device || (op.source == device->source && op.device == device->device);
  };
  auto dropped = [&](const GpuOp& op) {
    return options.require_host_launch && !op.linked() &&
           !(op.source < options.all_ops_of_source.size() && options.all_ops_of_source[op.source]);
  };
  auto counted = [&](const GpuOp& op) { return on_device(op) && !dropped(op); };
  // One pass in gpu_ops order (start order once finalized) builds the category sets and the
  // length of the union of all, which is all that is needed of that one. `counted` is the
  // loop's filter, for the fallback below.
  UnionLength<Interval> all;
  UnionLength<DInterval> dall;
  IntervalSetBuilder comp, comm, memcpy;
  DSetBuilder dcomp, dcomm, dmemcpy;
  double dfirst = 0, dlast = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  // IsCommunicationKernel per name, not per op: -1 unknown yet, 0 no, 1 yes.
  std::vector<int8_t> comm_by_name(trace.names.size(), -1);
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!on_device(op)) return;
    if (dropped(op)) {
      ++t.ops_dropped_unlinked;
      return;
    }
    ++t.ops;
    const Interval iv{op.start_ns, op.end_ns()};
    first = std::min(first, iv.start_ns);
    last = std::max(last, iv.end_ns);
    const double ds = static_cast<double>(op.start_ns) / 1000.0;
    const DInterval div{ds, ds + static_cast<double>(op.dur_ns) / 1000.0};
    if (t.ops == 1 || div.s < dfirst) dfirst = div.s;
    if (t.ops == 1 || div.e > dlast) dlast = div.e;
    all.Add(iv);
    dall.Add(div);
    if (op.kind == GpuOpKind::kMemcpy) {
      memcpy.Add(iv);
      dmemcpy.Add(div);
    } else if (IsComm(comm_by_name, trace, op.name)) {
      comm.Add(iv);
      dcomm.Add(div);
    } else {
      comp.Add(iv);
      dcomp.Add(div);
    }
  });
  if (t.ops == 0) return t;
  int64_t busy_ns = all.Finish();
  double busy_us = dall.Finish();
  if (!all.in_order() || !dall.in_order()) {
    // Not finalized (out of start order): merge the stored intervals instead.
    std::vector<Interval> ivs;
    std::vector<DInterval> divs;
    trace.gpu_ops.ForEach([&](const GpuOp& op) {
      if (!counted(op)) return;
      const double ds = static_cast<double>(op.start_ns) / 1000.0;
      ivs.push_back({op.start_ns, op.end_ns()});
      divs.push_back({ds, ds + static_cast<double>(op.dur_ns) / 1000.0});
    });
    busy_ns = TotalLength(MergeIntervals(std::move(ivs)));
    busy_us = LengthD(MergeD(std::move(divs)));
  }
  const IntervalSet comp_set = comp.Finish();
  const IntervalSet comm_set = comm.Finish();
  const IntervalSet memcpy_set = memcpy.Finish();
  t.total_ns = last - first;
  t.busy_ns = busy_ns;
  t.idle_ns = t.total_ns - t.busy_ns;
  t.computation_ns = TotalLength(comp_set);
  // An empty set contributes nothing, and a set united with an empty one is itself: the
  // shortcuts give the same numbers as the general expressions.
  if (!comm_set.empty()) t.exposed_comm_ns = TotalLength(Subtract(comm_set, comp_set));
  if (!memcpy_set.empty()) {
    t.exposed_memcpy_ns = TotalLength(
        Subtract(memcpy_set, comm_set.empty() ? comp_set : Unite(comp_set, comm_set)));
  }
  t.total_comm_ns = TotalLength(comm_set);
  t.total_memcpy_ns = TotalLength(memcpy_set);

  const DSet dcomp_set = dcomp.Finish();
  const DSet dcomm_set = dcomm.Finish();
  const DSet dmemcpy_set = dmemcpy.Finish();
  const double total_us = dlast - dfirst;
  t.total_ms = total_us / 1000.0;
  t.busy_ms = busy_us / 1000.0;
  t.idle_ms = (total_us - busy_us) / 1000.0;
  t.computation_ms = LengthD(dcomp_set) / 1000.0;
  t.exposed_comm_ms =
      LengthD(dcomm_set.empty() ? DSet{} : SubtractD(dcomm_set, dcomp_set)) / 1000.0;
  t.exposed_memcpy_ms =
      LengthD(dmemcpy_set.empty()  ? DSet{}
              : dcomm_set.empty() ? SubtractD(dmemcpy_set, dcomp_set)
                                  : SubtractD(dmemcpy_set, UniteD(dcomp_set, dcomm_set))) /
      1000.0;
  t.total_comm_ms = LengthD(dcomm_set) / 1000.0;
  t.total_memcpy_ms = LengthD(dmemcpy_set) / 1000.0;
  return t;
}

}  // namespace latdoc::trace
