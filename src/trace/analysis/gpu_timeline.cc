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
  std::sort(v.begin(), v.end(), [](const DInterval& a, const DInterval& b) { return a.s < b.s; });
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
  std::vector<DInterval> all(a);
  all.insert(all.end(), b.begin(), b.end());
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

GpuTimeline ComputeGpuTimeline(const Trace& trace, const GpuTimelineOptions& options,
                               std::optional<int32_t> device) {
  GpuTimeline t;
  t.device = device;
  std::vector<Interval> all, comp, comm, memcpy;
  std::vector<DInterval> dall, dcomp, dcomm, dmemcpy;
  double dfirst = 0, dlast = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const GpuOp& op : trace.gpu_ops) {
    if (device && op.device != *device) continue;
    if (options.require_host_launch && op.api == kNoLink) {
      ++t.ops_dropped_unlinked;
      continue;
    }
    ++t.ops;
    const Interval iv{op.start_ns, op.end_ns()};
    first = std::min(first, iv.start_ns);
    last = std::max(last, iv.end_ns);
    const double ds = static_cast<double>(op.start_ns) / 1000.0;
    const DInterval div{ds, ds + static_cast<double>(op.dur_ns) / 1000.0};
    if (t.ops == 1 || div.s < dfirst) dfirst = div.s;
    if (t.ops == 1 || div.e > dlast) dlast = div.e;
    all.push_back(iv);
    dall.push_back(div);
    if (op.kind == GpuOpKind::kMemcpy) {
      memcpy.push_back(iv);
      dmemcpy.push_back(div);
    } else if (IsCommunicationKernel(trace.Name(op.name))) {
      comm.push_back(iv);
      dcomm.push_back(div);
    } else {
      comp.push_back(iv);
      dcomp.push_back(div);
    }
  }
  if (t.ops == 0) return t;
  const IntervalSet all_set = MergeIntervals(std::move(all));
  const IntervalSet comp_set = MergeIntervals(std::move(comp));
  const IntervalSet comm_set = MergeIntervals(std::move(comm));
  const IntervalSet memcpy_set = MergeIntervals(std::move(memcpy));
  t.total_ns = last - first;
  t.busy_ns = TotalLength(all_set);
  t.idle_ns = t.total_ns - t.busy_ns;
  t.computation_ns = TotalLength(comp_set);
  t.exposed_comm_ns = TotalLength(Subtract(comm_set, comp_set));
  t.exposed_memcpy_ns = TotalLength(Subtract(memcpy_set, Unite(comp_set, comm_set)));
  t.total_comm_ns = TotalLength(comm_set);
  t.total_memcpy_ns = TotalLength(memcpy_set);

  const DSet dall_set = MergeD(std::move(dall));
  const DSet dcomp_set = MergeD(std::move(dcomp));
  const DSet dcomm_set = MergeD(std::move(dcomm));
  const DSet dmemcpy_set = MergeD(std::move(dmemcpy));
  const double total_us = dlast - dfirst;
  const double busy_us = LengthD(dall_set);
  t.total_ms = total_us / 1000.0;
  t.busy_ms = busy_us / 1000.0;
  t.idle_ms = (total_us - busy_us) / 1000.0;
  t.computation_ms = LengthD(dcomp_set) / 1000.0;
  t.exposed_comm_ms = LengthD(SubtractD(dcomm_set, dcomp_set)) / 1000.0;
  t.exposed_memcpy_ms = LengthD(SubtractD(dmemcpy_set, UniteD(dcomp_set, dcomm_set))) / 1000.0;
  t.total_comm_ms = LengthD(dcomm_set) / 1000.0;
  t.total_memcpy_ms = LengthD(dmemcpy_set) / 1000.0;
  return t;
}

}  // namespace latdoc::trace
