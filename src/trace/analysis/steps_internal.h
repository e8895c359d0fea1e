// What the files of the per-step analysis (ComputeSteps, trace_analysis.h) share, private to
// trace/analysis: steps.cc measures the steps (its plan says how), step_windows.cc finds their
// host windows (step 2 of the plan). The helpers the per-op loops call are inline here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace::steps_internal {

// When an op was issued: its launch call's start, or its GPU start without one.
inline int64_t IssueNs(const GpuOp& op) { return op.linked() ? op.launch.start_ns : op.start_ns; }

struct Window {
  int64_t start_ns, end_ns;  // host clock; end INT64_MAX: open
};

// Index of the window holding `t`, or -1 (before the first, after the last, or in a hole).
inline int FindWindow(const std::vector<Window>& w, int64_t t) {
  auto it = std::upper_bound(w.begin(), w.end(), t,
                             [](int64_t v, const Window& x) { return v < x.start_ns; });
  if (it == w.begin()) return -1;
  --it;
  return t < it->end_ns ? static_cast<int>(it - w.begin()) : -1;
}

// Per kernel name, the steps it ran in (for periodic kernels) and its time in the steps.
struct NameSteps {
  int32_t first = -1, last = -1, stride = 0;
  bool stride_ok = true;
  int64_t steps = 0, count = 0, total_ns = 0;
  GpuOpKind kind = GpuOpKind::kKernel;
  void Add(int32_t step, int64_t dur_ns) {
    ++count;
    total_ns += dur_ns;
    if (step == last) return;
    if (first < 0) {
      first = step;
    } else if (stride == 0) {
      stride = step - last;
    } else if (step - last != stride) {
      stride_ok = false;
    }
    last = step;
    ++steps;
  }
};

// What the passes of ComputeSteps share: the device, the step windows, and what the pass over
// the ops gathers for the later ones.
struct StepContext {
  StepContext(const Trace& t, const AnalysisOptions& opt, StepStats& st)
      : trace(t), o(opt), s(st) {}
  const Trace& trace;
  const AnalysisOptions& o;
  StepStats& s;
  std::vector<int64_t> name_count;  // per name, its ops on the device
  int64_t device_ops = 0;
  std::vector<Window> windows;       // the steps' host windows
  int64_t cadence_ops_per_step = 0;  // cadence: ops a full step has (caps the open last step)
  std::vector<int64_t> first_start, last_end, last_issue_end;  // per step
  std::unordered_map<NameId, NameSteps> by_name;
  std::unordered_map<NameId, int64_t> d2h_names;
  std::map<std::tuple<int32_t, int32_t>, int64_t> launches_by_thread;

  bool OnDevice(const GpuOp& op) const { return op.source == s.source && op.device == s.device; }
};

// 2. Step windows: explicit ranges first (ProfilerStep#N, then execute_model); none when
// neither kind has min_steps outermost ranges.
std::vector<Window> RangeWindows(StepContext& c);

// 2, without ranges: the windows of the cadence's steps, each opened by a graph launch (when
// the file has one per step) or by the anchor. False, with s.detail saying so, when the ops
// have no cadence.
bool CadenceWindows(StepContext& c);

}  // namespace latdoc::trace::steps_internal
