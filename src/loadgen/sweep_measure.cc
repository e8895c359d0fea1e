// Measuring one step of the sweep (MeasureStep): rounds until the window is stable, then the
// step's statistics over the window. And the server's metrics over a step.
#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/units.h"
#include "loadgen/sweep.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {
namespace {

std::optional<double> MeanMs(double sum_s, double count) {
  if (count <= 0) return std::nullopt;
  return sum_s / count * 1e3;
}

void MaxInto(std::optional<double>& into, const std::optional<double>& v) {
  if (v) into = std::max(into.value_or(*v), *v);
}

std::optional<double> P99Ms(std::vector<int64_t> ns, double pct = 99) {
  if (ns.empty()) return std::nullopt;
  std::vector<double> v(ns.begin(), ns.end());
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, pct) / 1e6;
}

// The knee latency of one request, when it has one.
std::optional<int64_t> KneeValue(const RequestSample& r, KneeLatency k) {
  if (!r.ok) return std::nullopt;
  switch (k) {
    case KneeLatency::kTtft: return r.ttft_ns;
    case KneeLatency::kE2el: return r.e2el_ns;
    case KneeLatency::kTpot:
    case KneeLatency::kItl: return r.tpot_ns;  // ITL per request: its mean gap (TPOT)
  }
  return std::nullopt;
}

// How one step is measured: the window holds at least `need` requests, the step spends at most
// `cap`, in rounds of `round_size`.
struct StepPlan {
  int need = 0, cap = 0, round_size = 0;
};

StepPlan PlanStep(double load, const SweepOptions& o) {
  StepPlan p;
  p.need = std::max(o.min_requests, o.rate_mode ? o.min_requests : int(2 * load));
  p.cap = o.max_requests > 0 ? std::max(o.max_requests, p.need)
                             : std::max({400, int(8 * load), p.need});
  // Closed loop: whole multiples of the concurrency, so no round ends on a partial wave.
  const int half = (o.min_requests + 1) / 2;
  const int c = std::max(1, int(load));
  p.round_size = o.rate_mode ? half : c * ((half + c - 1) / c);
  return p;
}

// The rounds of a step and its window: rounds[first..].
struct Window {
  std::vector<RoundResult> rounds;
  size_t first = 0;

  size_t size() const {
    size_t n = 0;
    for (size_t i = first; i < rounds.size(); ++i) n += rounds[i].requests.size();
    return n;
  }
  // Drops leading rounds while the rest still holds `need` requests.
  void Slide(int need) {
    while (first + 1 < rounds.size() && size() - rounds[first].requests.size() >= size_t(need))
      ++first;
  }
};

enum class Verdict { kStable, kNothingSucceeds, kUnsettled };

// Whether the p99 of the window's last half agrees with the p99 of the whole window.
Verdict JudgeWindow(const Window& w, const SweepOptions& o) {
  std::vector<int64_t> whole, last;
  std::vector<const RequestSample*> win;
  for (size_t i = w.first; i < w.rounds.size(); ++i)
    for (const auto& q : w.rounds[i].requests) win.push_back(&q);
  for (size_t i = 0; i < win.size(); ++i) {
    auto v = KneeValue(*win[i], o.knee_latency);
    if (!v) continue;
    whole.push_back(*v);
    if (i >= win.size() / 2) last.push_back(*v);
  }
  auto pw = P99Ms(whole), pl = P99Ms(last);
  if (pw && pl && std::fabs(*pl - *pw) <= o.stable_tolerance * *pw) return Verdict::kStable;
  return whole.empty() ? Verdict::kNothingSucceeds : Verdict::kUnsettled;
}

// The step's request counts, failures, latency percentiles, throughput and SLO share over the
// window's requests, itls and duration.
void Summarize(const std::vector<RequestSample>& all, std::vector<int64_t> itls, int64_t dur_ns,
               const SweepOptions& o, SweepStep& s) {
  std::vector<int64_t> ttft, tpot, e2el;
  int64_t out_tokens = 0;
  uint64_t good = 0;
  for (const RequestSample& r : all) {
    ++s.requests;
    if (!r.ok) {
      ++s.failed;
      ++s.failures[r.failure];
      if (s.first_error.empty()) s.first_error = r.failure + (r.error.empty() ? "" : ": " + r.error);
      continue;
    }
    ++s.completed;
    ttft.push_back(r.ttft_ns);
    e2el.push_back(r.e2el_ns);
    if (r.tpot_ns) tpot.push_back(*r.tpot_ns);
    out_tokens += r.output_tokens;
    bool ok = true;
    if (o.slo.ttft_ms && NsToMs(r.ttft_ns) > *o.slo.ttft_ms) ok = false;
    if (o.slo.tpot_ms && NsToMs(r.tpot_ns.value_or(0)) > *o.slo.tpot_ms) ok = false;
    if (o.slo.e2el_ms && NsToMs(r.e2el_ns) > *o.slo.e2el_ms) ok = false;
    good += ok;
  }
  s.duration_s = std::max(1e-9, NsToSec(dur_ns));
  s.p99_ttft_ms = P99Ms(ttft);
  s.median_ttft_ms = P99Ms(ttft, 50);
  s.p99_tpot_ms = P99Ms(tpot);
  s.p99_itl_ms = P99Ms(itls);
  s.median_itl_ms = P99Ms(std::move(itls), 50);
  s.p99_e2el_ms = P99Ms(e2el);
  if (!e2el.empty()) {
    double sum = 0;
    for (int64_t v : e2el) sum += NsToMs(v);
    s.mean_e2el_ms = sum / double(e2el.size());
  }
  s.output_tokens_per_s = double(out_tokens) / s.duration_s;
  s.request_throughput = double(s.completed) / s.duration_s;
  if (o.slo.any()) {
    s.goodput = double(good) / s.duration_s;
    double pct = s.requests ? 100.0 * double(good) / double(s.requests) : 0;
    s.slo_met = s.requests > 0 && pct >= o.slo.percent;
  }
}

// The step's statistics from the window's rounds (earlier rounds were a transient).
void SummarizeWindow(const Window& w, const SweepOptions& o, SweepStep& s) {
  std::vector<RequestSample> all;
  std::vector<int64_t> itls;
  int64_t dur_ns = 0;
  std::vector<Validation> checked;
  for (size_t i = w.first; i < w.rounds.size(); ++i) {
    const RoundResult& r = w.rounds[i];
    all.insert(all.end(), r.requests.begin(), r.requests.end());
    itls.insert(itls.end(), r.itl_ns.begin(), r.itl_ns.end());
    dur_ns += r.dur_ns;
    s.server.Merge(r.server);
    if (r.validation) checked.push_back(*r.validation);
  }
  if (!checked.empty()) s.validation = MergeValidations(checked);
  Summarize(all, std::move(itls), dur_ns, o, s);
}

}  // namespace

std::optional<double> ServerStepMetrics::queue_mean_ms() const { return MeanMs(queue_sum_s, queue_count); }
std::optional<double> ServerStepMetrics::prefill_mean_ms() const { return MeanMs(prefill_sum_s, prefill_count); }
std::optional<double> ServerStepMetrics::decode_mean_ms() const { return MeanMs(decode_sum_s, decode_count); }
std::optional<double> ServerStepMetrics::step_time_ms() const { return MeanMs(itl_sum_s, itl_count); }

void ServerStepMetrics::Merge(const ServerStepMetrics& o) {
  available = available || o.available;
  if (error.empty()) error = o.error;
  if (server.empty()) server = o.server;
  MaxInto(max_running, o.max_running);
  MaxInto(max_waiting, o.max_waiting);
  MaxInto(max_kv_cache_usage, o.max_kv_cache_usage);
  if (o.preemptions) preemptions = preemptions.value_or(0) + *o.preemptions;
  queue_sum_s += o.queue_sum_s;
  queue_count += o.queue_count;
  prefill_sum_s += o.prefill_sum_s;
  prefill_count += o.prefill_count;
  decode_sum_s += o.decode_sum_s;
  decode_count += o.decode_count;
  itl_sum_s += o.itl_sum_s;
  itl_count += o.itl_count;
}

std::optional<double> SweepStep::KneeP99Ms(KneeLatency k) const {
  switch (k) {
    case KneeLatency::kTtft: return p99_ttft_ms;
    case KneeLatency::kTpot: return p99_tpot_ms;
    case KneeLatency::kItl: return p99_itl_ms;
    case KneeLatency::kE2el: return p99_e2el_ms;
  }
  return std::nullopt;
}

// Plan: run rounds until the most recent `need` requests (whole rounds: the WINDOW) are
// stable: the p99 of the window's last half agrees with the p99 of the window. Earlier rounds
// are a transient (warm-up): spent, but left out of the step's statistics.
StatusOr<SweepStep> MeasureStep(StepRunner& runner, double load, const SweepOptions& o) {
  runner.StartStep(load);
  SweepStep s;
  s.load = load;
  const StepPlan plan = PlanStep(load, o);
  Window w;
  int spent = 0;
  while (true) {
    if (runner.interrupted()) {
      s.interrupted = true;
      break;
    }
    int n = std::min(plan.round_size, plan.cap - spent);
    if (n <= 0) break;
    ASSIGN_OR_RETURN(RoundResult r, runner.RunRound(load, n));
    ++s.rounds;
    spent += int(r.requests.size());
    bool interrupted = r.interrupted;
    w.rounds.push_back(std::move(r));
    if (interrupted) {
      s.interrupted = true;
      break;
    }
    w.Slide(plan.need);
    if (w.size() < size_t(plan.need)) continue;
    const Verdict v = JudgeWindow(w, o);
    if (v == Verdict::kStable) {
      s.stable = true;
      break;
    }
    if (v == Verdict::kNothingSucceeds) break;  // nothing succeeds: do not insist
    if (spent >= plan.cap) break;
  }
  s.spent = uint64_t(spent);
  SummarizeWindow(w, o, s);
  return s;
}

}  // namespace latdoc::loadgen
