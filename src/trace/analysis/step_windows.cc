// Step 2 of the per-step analysis (steps.cc has the plan): the steps' host windows, from the
// profiler's or vLLM's ranges, else from the cadence of the op sequence.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/strings.h"
#include "trace/analysis/steps_internal.h"

namespace latdoc::trace::steps_internal {
namespace {

// Outermost ranges, by start: a range inside the one before is dropped (nested annotations).
std::vector<Window> Outermost(std::vector<Window> v) {
  std::sort(v.begin(), v.end(), [](const Window& a, const Window& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<Window> out;
  for (const Window& w : v) {
    if (!out.empty() && w.start_ns < out.back().end_ns) continue;
    out.push_back(w);
  }
  return out;
}

// The cadence: the largest N (some name ran exactly N times) such that the names run a
// multiple of N times hold ≥ cadence_coverage of the ops, unless too many names ran a
// divisor of N times: a model's per-layer kernels hold most ops and run layers × steps
// times, but the per-step ones (embedding, LM head, sampling) are several names run N/layers
// times; one or two names that run every k-th step only do not make N a layer. 0: none.
int64_t CadenceSteps(const StepContext& c) {
  const AnalysisOptions& o = c.o;
  std::vector<int64_t> counts;
  int64_t names_seen = 0;
  for (int64_t n : c.name_count) {
    if (n >= o.min_steps) {
      counts.push_back(n);
      ++names_seen;
    }
  }
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  for (auto it = counts.rbegin(); it != counts.rend(); ++it) {
    // A name "runs a multiple of N times" also when a few of its instances are one-offs (a
    // prefill step that shares the decode step's elementwise kernels): at most
    // cadence_extra_share of its count past a multiple of N.
    int64_t covered = 0, divisor_names = 0;
    for (int64_t n : c.name_count) {
      if (n >= *it &&
          static_cast<double>(n % *it) <= o.cadence_extra_share * static_cast<double>(n))
        covered += n;
      if (n >= o.min_steps && n < *it && *it % n == 0) ++divisor_names;
    }
    if (static_cast<double>(covered) >= o.cadence_coverage * static_cast<double>(c.device_ops) &&
        static_cast<double>(divisor_names) <=
            o.cadence_divisor_names_share * static_cast<double>(names_seen)) {
      return *it;
    }
  }
  return 0;
}

}  // namespace

std::vector<Window> RangeWindows(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  std::vector<Window> windows;
  std::vector<uint8_t> range_kind(trace.names.size(), 0);  // 1: ProfilerStep#, 2: execute_model
  bool any = false;
  for (NameId id = 0; id < trace.names.size(); ++id) {
    const std::string_view n = trace.Name(id);
    if (n.substr(0, 13) == "ProfilerStep#") {
      range_kind[id] = 1;
      any = true;
    } else if (n.find("execute_model") != std::string_view::npos) {
      range_kind[id] = 2;
      any = true;
    }
  }
  if (any) {
    std::vector<Window> ranges[3];
    trace.cpu_ops.ForEach([&](const CpuOp& cpu) {
      if (cpu.source != s.source || cpu.name >= range_kind.size() || range_kind[cpu.name] == 0)
        return;
      ranges[range_kind[cpu.name]].push_back({cpu.start_ns, cpu.end_ns()});
    });
    for (int k : {1, 2}) {
      std::vector<Window> w = Outermost(std::move(ranges[k]));
      if (static_cast<int64_t>(w.size()) >= c.o.min_steps) {
        windows = std::move(w);
        s.method = k == 1 ? StepMethod::kProfilerStep : StepMethod::kVllmRange;
        s.detail = k == 1 ? "ProfilerStep#N ranges" : "execute_model ranges";
        break;
      }
    }
  }
  return windows;
}

bool CadenceWindows(StepContext& c) {
  const Trace& trace = c.trace;
  StepStats& s = c.s;
  const int64_t steps = CadenceSteps(c);
  if (steps == 0) {
    s.detail = "no step ranges, graph launches or repeated launch sequence found";
    return false;
  }
  // The anchor: the name run `steps` times whose first instance comes first.
  NameId anchor = 0;
  bool found = false;
  std::vector<int64_t> anchor_issue;
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (!c.OnDevice(op)) return;
    if (!found && c.name_count[op.name] == steps) {
      anchor = op.name;
      found = true;
    }
    if (found && op.name == anchor) anchor_issue.push_back(IssueNs(op));
  });
  // Graph launches of the file: one per step makes them the steps.
  std::vector<int64_t> graph_starts;
  trace.api_calls.ForEach([&](const ApiCall& a) {
    if (a.source == s.source && a.kind == ApiKind::kGraphLaunch) graph_starts.push_back(a.start_ns);
  });
  std::vector<int64_t>& starts =
      static_cast<int64_t>(graph_starts.size()) == steps ? graph_starts : anchor_issue;
  std::sort(starts.begin(), starts.end());
  if (&starts == &graph_starts) {
    s.method = StepMethod::kGraphLaunch;
    s.detail = "one graph launch per step";
  } else {
    s.method = StepMethod::kCadence;
    s.detail =
        "a repeated launch sequence, each step opened by " + ShortenMiddle(trace.Name(anchor), 80);
    c.cadence_ops_per_step = c.device_ops / steps;
  }
  for (size_t i = 0; i < starts.size(); ++i) {
    c.windows.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : INT64_MAX});
  }
  return true;
}

}  // namespace latdoc::trace::steps_internal
