#include "trace/analysis/gpu_timeline.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <type_traits>
#include <utility>

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

// TraceLens's category algebra over intervals met in start order (a finalized table), without
// holding the sets: each category's union is built as ops come, and an interval, once closed (an
// op of its category starts past its end), is final, as is everything it is measured against:
// any later op starts after it. So a communication interval is measured against computation,
// and a copy interval against computation and communication, when it closes, and only the
// intervals a still-open one may need are kept. The pieces are those Subtract/SubtractD and
// Unite/UniteD make, summed in the same order: the double sums are TraceLens's to the last bit.
template <typename I>
class CategorySweep {
 public:
  using T = std::remove_cvref_t<decltype(Lo(std::declval<const I&>()))>;
  enum Cat { kComp = 0, kComm = 1, kMem = 2 };

  // REQUIRES: intervals in start order over all categories.
  void Add(Cat c, const I& iv) {
    if (!(Hi(iv) > Lo(iv))) return;   // empty: dropped, as the set builders drop them
    Open& o = open_[c];
    if (o.open && Lo(iv) <= Hi(o.cur)) {
      Hi(o.cur) = std::max(Hi(o.cur), Hi(iv));
    } else {
      if (o.open) Close(c);
      o.cur = iv;
      o.open = true;
    }
    Forget(Lo(iv));
  }
  void Finish() {
    for (Cat c : {kComp, kComm, kMem}) {
      if (open_[c].open) Close(c);
      open_[c].open = false;
    }
  }

  T comp_len{}, comm_len{}, mem_len{};
  T exposed_comm{}, exposed_mem{};   // |comm − comp|, |mem − (comp ∪ comm)|

 private:
  struct Open {
    I cur{};
    bool open = false;
  };

  void Close(Cat c) {
    const I x = open_[c].cur;
    switch (c) {
      case kComp:
        comp_len += Hi(x) - Lo(x);
        comp_.push_back(x);
        break;
      case kComm:
        comm_len += Hi(x) - Lo(x);
        Known(comp_, kComp, scratch_);
        Subtract(x, scratch_, exposed_comm);
        comm_.push_back(x);
        break;
      case kMem: {
        mem_len += Hi(x) - Lo(x);
        Known(comp_, kComp, scratch_);
        Known(comm_, kComm, scratch2_);
        // UniteD: both by start (computation first on ties), then merged as MergeD merges.
        united_.clear();
        size_t i = 0, j = 0;
        while (i < scratch_.size() || j < scratch2_.size()) {
          const bool take_comp = j == scratch2_.size() || (i < scratch_.size() && !(Lo(scratch2_[j]) < Lo(scratch_[i])));
          const I& v = take_comp ? scratch_[i++] : scratch2_[j++];
          if (!united_.empty() && Lo(v) <= Hi(united_.back())) {
            Hi(united_.back()) = std::max(Hi(united_.back()), Hi(v));
          } else {
            united_.push_back(v);
          }
        }
        Subtract(x, united_, exposed_mem);
        break;
      }
    }
  }

  // The intervals of a category known so far and kept: the closed ones, then the open one.
  void Known(const std::deque<I>& closed, Cat c, std::vector<I>& out) const {
    out.assign(closed.begin(), closed.end());
    if (open_[c].open) out.push_back(open_[c].cur);
  }

  // Adds the pieces of x − b (b sorted, disjoint) to `sum`, as Subtract/SubtractD cut them.
  static void Subtract(const I& x, const std::vector<I>& b, T& sum) {
    T cur = Lo(x);
    size_t k = 0;
    while (k < b.size() && Hi(b[k]) <= cur) ++k;
    for (; k < b.size() && Lo(b[k]) < Hi(x); ++k) {
      if (Lo(b[k]) > cur) sum += Lo(b[k]) - cur;
      cur = std::max(cur, Hi(b[k]));
    }
    if (cur < Hi(x)) sum += Hi(x) - cur;
  }

  // Drops closed intervals no interval still to close can reach: those ending before the
  // earliest start of one (an open one's, or `now`, which every later op starts at or after).
  void Forget(T now) {
    T comm_or_mem = now;
    if (open_[kComm].open) comm_or_mem = std::min(comm_or_mem, Lo(open_[kComm].cur));
    if (open_[kMem].open) comm_or_mem = std::min(comm_or_mem, Lo(open_[kMem].cur));
    while (!comp_.empty() && Hi(comp_.front()) < comm_or_mem) comp_.pop_front();
    const T mem = open_[kMem].open ? std::min(now, Lo(open_[kMem].cur)) : now;
    while (!comm_.empty() && Hi(comm_.front()) < mem) comm_.pop_front();
  }

  Open open_[3];
  std::deque<I> comp_, comm_;   // closed, kept while an open interval may reach them
  std::vector<I> scratch_, scratch2_, united_;
};

bool IsComm(std::vector<int8_t>& cache, const Trace& trace, NameId name) {
  if (name >= cache.size()) return IsCommunicationKernel(trace.Name(name));
  if (cache[name] < 0) cache[name] = IsCommunicationKernel(trace.Name(name)) ? 1 : 0;
  return cache[name] == 1;
}

// The in-order pass's sweeps closed and their lengths into t.
void FinishInOrder(CategorySweep<Interval>& sweep, CategorySweep<DInterval>& dsweep,
                   UnionLength<Interval>& all, UnionLength<DInterval>& dall, double total_us,
                   GpuTimeline& t) {
  sweep.Finish();
  dsweep.Finish();
  t.busy_ns = all.Finish();
  t.computation_ns = sweep.comp_len;
  t.exposed_comm_ns = sweep.exposed_comm;
  t.exposed_memcpy_ns = sweep.exposed_mem;
  t.total_comm_ns = sweep.comm_len;
  t.total_memcpy_ns = sweep.mem_len;
  const double busy_us = dall.Finish();
  t.busy_ms = busy_us / 1000.0;
  t.idle_ms = (total_us - busy_us) / 1000.0;
  t.computation_ms = dsweep.comp_len / 1000.0;
  t.exposed_comm_ms = dsweep.exposed_comm / 1000.0;
  t.exposed_memcpy_ms = dsweep.exposed_mem / 1000.0;
  t.total_comm_ms = dsweep.comm_len / 1000.0;
  t.total_memcpy_ms = dsweep.mem_len / 1000.0;
  t.idle_ns = t.total_ns - t.busy_ns;
}

// Not finalized (out of start order): the sets themselves, held in memory.
template <typename OnDevice, typename Dropped, typename Category>
void OutOfOrderTimeline(const Trace& trace, OnDevice on_device, Dropped dropped, Category category,
                        double total_us, GpuTimeline& t) {
  using IC = CategorySweep<Interval>;
  std::vector<Interval> ivs[3];
  std::vector<DInterval> divs[3];
  std::vector<Interval> all_ivs;
  std::vector<DInterval> all_divs;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!on_device(op) || dropped(op)) return;
    const double ds = static_cast<double>(op.start_ns) / 1000.0;
    const Interval iv{op.start_ns, op.end_ns()};
    const DInterval div{ds, ds + static_cast<double>(op.dur_ns) / 1000.0};
    const int c = category(op);
    ivs[c].push_back(iv);
    divs[c].push_back(div);
    all_ivs.push_back(iv);
    all_divs.push_back(div);
  });
  t.busy_ns = TotalLength(MergeIntervals(std::move(all_ivs)));
  const double busy_us = LengthD(MergeD(std::move(all_divs)));
  const IntervalSet comp_set = MergeIntervals(std::move(ivs[IC::kComp]));
  const IntervalSet comm_set = MergeIntervals(std::move(ivs[IC::kComm]));
  const IntervalSet memcpy_set = MergeIntervals(std::move(ivs[IC::kMem]));
  t.idle_ns = t.total_ns - t.busy_ns;
  t.computation_ns = TotalLength(comp_set);
  t.exposed_comm_ns = TotalLength(Subtract(comm_set, comp_set));
  t.exposed_memcpy_ns = TotalLength(Subtract(memcpy_set, Unite(comp_set, comm_set)));
  t.total_comm_ns = TotalLength(comm_set);
  t.total_memcpy_ns = TotalLength(memcpy_set);

  const DSet dcomp_set = MergeD(std::move(divs[IC::kComp]));
  const DSet dcomm_set = MergeD(std::move(divs[IC::kComm]));
  const DSet dmemcpy_set = MergeD(std::move(divs[IC::kMem]));
  t.busy_ms = busy_us / 1000.0;
  t.idle_ms = (total_us - busy_us) / 1000.0;
  t.computation_ms = LengthD(dcomp_set) / 1000.0;
  t.exposed_comm_ms = LengthD(SubtractD(dcomm_set, dcomp_set)) / 1000.0;
  t.exposed_memcpy_ms = LengthD(SubtractD(dmemcpy_set, UniteD(dcomp_set, dcomm_set))) / 1000.0;
  t.total_comm_ms = LengthD(dcomm_set) / 1000.0;
  t.total_memcpy_ms = LengthD(dmemcpy_set) / 1000.0;
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
  // IsCommunicationKernel per name, not per op: -1 unknown yet, 0 no, 1 yes.
  std::vector<int8_t> comm_by_name(trace.names.size(), -1);
  using IC = CategorySweep<Interval>;
  using DC = CategorySweep<DInterval>;
  auto category = [&](const GpuOp& op) {
    if (op.kind == GpuOpKind::kMemcpy) return IC::kMem;
    return IsComm(comm_by_name, trace, op.name) ? IC::kComm : IC::kComp;
  };
  // One pass in gpu_ops order (start order once finalized).
  UnionLength<Interval> all;
  UnionLength<DInterval> dall;
  IC sweep;
  DC dsweep;
  double dfirst = 0, dlast = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  int64_t last_start = INT64_MIN;
  bool in_order = true;
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
    if (op.start_ns < last_start) in_order = false;
    last_start = op.start_ns;
    if (!in_order) return;
    all.Add(iv);
    dall.Add(div);
    const auto c = category(op);
    sweep.Add(c, iv);
    dsweep.Add(static_cast<DC::Cat>(c), div);
  });
  if (t.ops == 0) return t;
  t.total_ns = last - first;
  const double total_us = dlast - dfirst;
  t.total_ms = total_us / 1000.0;
  if (in_order) {
    FinishInOrder(sweep, dsweep, all, dall, total_us, t);
    return t;
  }
  OutOfOrderTimeline(trace, on_device, dropped, category, total_us, t);
  return t;
}

}  // namespace latdoc::trace
