// The sweep's plan (RunSweep): the ladder, stopping early, then refinement around the knee.
// Measuring a step is sweep_measure.cc; the analysis after each, sweep_analyse.cc.
#include "loadgen/sweep.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "loadgen/sweep_analyse.h"

namespace latdoc::loadgen {

std::string_view KneeLatencyName(KneeLatency k) {
  switch (k) {
    case KneeLatency::kTtft: return "ttft";
    case KneeLatency::kTpot: return "tpot";
    case KneeLatency::kItl: return "itl";
    case KneeLatency::kE2el: return "e2el";
  }
  return "?";
}

StatusOr<KneeLatency> ParseKneeLatency(std::string_view t) {
  if (t == "ttft") return KneeLatency::kTtft;
  if (t == "tpot") return KneeLatency::kTpot;
  if (t == "itl") return KneeLatency::kItl;
  if (t == "e2el") return KneeLatency::kE2el;
  return InvalidArgument(fmt::format("--knee-latency: '{}': expected ttft, tpot, itl or e2el", t));
}

std::string_view BendName(Bend b) {
  switch (b) {
    case Bend::kNone: return "none";
    case Bend::kQueueing: return "queueing";
    case Bend::kKvCache: return "kv_cache";
    case Bend::kCompute: return "compute";
    case Bend::kFrontEnd: return "front_end";
  }
  return "?";
}

namespace {

double RoundLoad(double x, bool rate_mode) {
  if (!rate_mode) return std::max(1.0, std::round(x));
  if (x <= 0) return x;
  double mag = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return std::round(x / mag) * mag;
}

bool SameLoad(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

size_t InsertStep(std::vector<SweepStep>& steps, SweepStep s) {
  auto it = std::lower_bound(steps.begin(), steps.end(), s.load,
                             [](const SweepStep& a, double v) { return a.load < v; });
  size_t at = size_t(it - steps.begin());
  steps.insert(it, std::move(s));
  return at;
}

bool Measured(const std::vector<SweepStep>& steps, double load) {
  for (const auto& s : steps)
    if (SameLoad(s.load, load)) return true;
  return false;
}

// The knee stands when a second step past it agreed (stats/knee.h), or when the step past it
// shows the server's queue or KV cache filling: the server's metrics say it is no stall.
bool KneeConfirmed(const SweepResult& r) {
  if (!r.knee_reached || !r.knee_index) return false;
  if (r.knee_confirmed_by) return true;
  for (size_t i : r.knee_steps)
    if (i > *r.knee_index)
      return r.steps[i].bend == Bend::kQueueing || r.steps[i].bend == Bend::kKvCache;
  return false;
}

// A closed-loop step whose output tokens/s fell under this share of a lower load's. More
// requests in flight never make a server slower per second unless its KV cache thrashes
// (preemption and recompute); a fall without KV pressure is the client's host stalling (on a
// shared machine, every stream at once), and it would put the knee too early.
constexpr double kStallThroughputShare = 0.75;

// The lower step whose throughput `s` fell under, or nullptr.
const SweepStep* ThroughputFellUnder(const std::vector<SweepStep>& steps, const SweepStep& s) {
  const SweepStep* best = nullptr;
  for (const auto& x : steps) {
    if (x.load < s.load && (!best || x.output_tokens_per_s > best->output_tokens_per_s)) best = &x;
  }
  return best && s.output_tokens_per_s < kStallThroughputShare * best->output_tokens_per_s
             ? best
             : nullptr;
}

}  // namespace

Status ValidateSweepOptions(const SweepOptions& o) {
  const char* what = o.rate_mode ? "--request-rate" : "--concurrency";
  if (!(o.lo > 0)) return InvalidArgument(fmt::format("{}: the range must start above 0", what));
  if (!std::isfinite(o.lo) || !std::isfinite(o.hi)) {
    return InvalidArgument(fmt::format("{} {}:{}: the range must be finite", what, o.lo, o.hi));
  }
  if (!o.rate_mode && (o.lo != std::floor(o.lo) || o.hi != std::floor(o.hi)))
    return InvalidArgument(fmt::format("{}: concurrency bounds must be whole numbers", what));
  if (!(o.hi > o.lo)) {
    return InvalidArgument(fmt::format(
        "{} {}:{}: a sweep needs a range with at least two points (lo < hi); "
        "for one load level use `latdoc bench`", what, o.lo, o.hi));
  }
  if (!(o.ladder_factor > 1)) return InvalidArgument("--ladder-factor must be above 1");
  if (!(o.refine_ratio > 1)) return InvalidArgument("--refine-ratio must be above 1");
  if (o.min_requests < 2) return InvalidArgument("--min-requests must be at least 2");
  if (o.max_requests != 0 && o.max_requests < o.min_requests)
    return InvalidArgument("--max-requests must be at least --min-requests");
  if (!(o.stable_tolerance > 0)) return InvalidArgument("--stable-tolerance must be above 0");
  if (o.max_error_rate < 0 || o.max_error_rate > 1)
    return InvalidArgument("--max-error-rate must be in [0, 1]");
  if (o.max_steps < 2) return InvalidArgument("--max-steps must be at least 2");
  return Status();
}

std::vector<double> LadderLevels(const SweepOptions& o) {
  std::vector<double> out;
  for (double x = o.lo; x < o.hi * (1 - 1e-9); x *= o.ladder_factor) {
    double v = RoundLoad(x, o.rate_mode);
    if (out.empty() || v > out.back()) out.push_back(v);
  }
  double hi = RoundLoad(o.hi, o.rate_mode);
  if (out.empty() || hi > out.back()) out.push_back(hi);
  return out;
}

namespace {

// One sweep in progress: the steps measured so far (in r.steps, ascending load), the steps run
// (against --max-steps), and the ladder step that was clearly past the knee.
class Sweep {
 public:
  Sweep(StepRunner& runner, const SweepOptions& o, std::function<void(const SweepStep&)> on_step)
      : runner_(runner), o_(o), on_step_(std::move(on_step)), unit_(o.rate_mode ? "req/s" : "concurrent") {}

  // The ladder, stopping early. Errors: as RunSweep's.
  Status ClimbLadder();
  // Geometric midpoints around the knee until both halves are within refine_ratio.
  Status Refine();
  // The final analysis, and the stop reason in terms of the final knee.
  SweepResult Finish();

 private:
  // Measures one step and analyses the sweep with it. False: the sweep stops (interrupted, or
  // the server went away after a step was measured: r_ is marked partial).
  StatusOr<bool> Measure(double load, const char* phase);
  // A closed-loop step whose throughput fell under a lower step's, without KV pressure, is
  // measured once more and the better measurement kept. False: measuring it again failed, `s`
  // was kept and the sweep stops, partial.
  bool RemeasureStall(SweepStep& s, const SweepStep& lower, double load, const char* phase);
  // True: the ladder stops at step `s` (measured at `load`, ladder index `li`): errors climbed
  // or the SLO broke (r_.stop_reason says so), or the step is clearly past the knee.
  // Errors: every request failed so far (kUnavailable).
  StatusOr<bool> LadderStops(const SweepStep& s, double load, size_t li);
  void Keep(SweepStep s) {
    if (on_step_) on_step_(s);
    InsertStep(r_.steps, std::move(s));
  }

  StepRunner& runner_;
  const SweepOptions& o_;
  std::function<void(const SweepStep&)> on_step_;
  const char* unit_;
  SweepResult r_;
  int steps_run_ = 0;
  std::optional<double> stopped_past_knee_at_;
};

bool Sweep::RemeasureStall(SweepStep& s, const SweepStep& lower, double load, const char* phase) {
  ++steps_run_;  // the second measurement counts against --max-steps
  StatusOr<SweepStep> again = MeasureStep(runner_, load, o_);
  if (!again.ok()) {
    // The server went away: keep the first measurement and stop, marked partial.
    s.remeasured = fmt::format("{:.0f} output tokens/s, under {:.0f}% of the {:.0f} at {} {}; "
                               "measuring it again failed: {}", s.output_tokens_per_s,
                               100 * kStallThroughputShare, lower.output_tokens_per_s,
                               lower.load, unit_, again.status().message());
    Keep(std::move(s));
    AnalyzeSweep(o_, r_);
    r_.partial = true;
    r_.partial_reason = fmt::format("stopped at {} {} (measuring it again): {}", load, unit_,
                                    again.status().message());
    return false;
  }
  r_.requests_spent += again->spent;
  const uint64_t spent = s.spent + again->spent;
  const bool again_interrupted = again->interrupted;
  // The better measurement, as long as it is clean: the first had no failures.
  const bool keep_again = !again_interrupted && again->failed == 0 &&
                          again->output_tokens_per_s > s.output_tokens_per_s;
  const std::string note = fmt::format(
      "{:.0f} output tokens/s, under {:.0f}% of the {:.0f} at {} {} with {} (a stall of "
      "the client's host?): measured again, {:.0f} tokens/s{}; kept the {}",
      s.output_tokens_per_s, 100 * kStallThroughputShare, lower.output_tokens_per_s,
      lower.load, unit_, s.server.available ? "no KV pressure" : "KV pressure unknown (no /metrics)",
      again->output_tokens_per_s,
      again->failed > 0 ? fmt::format(" and {} failed", again->failed) : std::string(),
      keep_again ? "second" : "first");
  if (keep_again) s = std::move(*again);
  s.phase = phase;
  s.spent = spent;
  s.remeasured = note;
  s.interrupted = s.interrupted || again_interrupted;
  return true;
}

StatusOr<bool> Sweep::Measure(double load, const char* phase) {
  StatusOr<SweepStep> measured = MeasureStep(runner_, load, o_);
  if (!measured.ok()) {
    // The server went away mid-sweep (killed, restarted, network gone): the steps done are
    // kept and written, marked partial with the reason, as after Ctrl-C. Before any step
    // was measured the error stands.
    if (r_.steps.empty()) return measured.status();
    r_.partial = true;
    r_.partial_reason = fmt::format("stopped at {} {}: {}", load, unit_, measured.status().message());
    return false;
  }
  SweepStep s = std::move(*measured);
  s.phase = phase;
  ++steps_run_;
  r_.requests_spent += s.spent;
  // A suspected host stall is measured once more, and the better measurement kept: a real
  // fall (or a second stall) stays, a passing one does not bend the curve.
  if (!o_.rate_mode && !s.interrupted && s.completed > 0 && s.failed == 0) {
    ClassifyStep(s, o_.rate_mode);
    const SweepStep* lower = s.bend == Bend::kKvCache ? nullptr : ThroughputFellUnder(r_.steps, s);
    if (lower && !RemeasureStall(s, *lower, load, phase)) return false;
  }
  bool interrupted = s.interrupted;
  if (s.spent > 0) Keep(std::move(s));
  if (interrupted) {
    r_.partial = true;
    r_.partial_reason = "interrupted";
    return false;
  }
  AnalyzeSweep(o_, r_);
  return true;
}

StatusOr<bool> Sweep::LadderStops(const SweepStep& s, double load, size_t li) {
  if (s.error_rate() > o_.max_error_rate) {
    if (li == 0 || s.completed == 0) {
      bool any_ok = false;
      for (const auto& x : r_.steps) any_ok = any_ok || x.completed > 0;
      if (!any_ok) {
        return Unavailable(fmt::format(
            "every request failed at {} {} ({} of {}; {}): the server cannot be swept",
            load, unit_, s.failed, s.requests, s.first_error));
      }
    }
    r_.stop_reason = fmt::format("errors climbed: {:.1f}% of requests failed at {} {} (over "
                                 "--max-error-rate {:.1f}%; {})",
                                 100 * s.error_rate(), load, unit_, 100 * o_.max_error_rate,
                                 s.first_error);
    return true;
  }
  if (s.slo_met && !*s.slo_met) {
    r_.stop_reason = fmt::format("SLO broken at {} {}", load, unit_);
    return true;
  }
  if (r_.knee_reached && r_.knee_index) {
    const SweepStep& k = r_.steps[*r_.knee_index];
    size_t past = 0;
    for (const auto& x : r_.steps) past += x.load > k.load;
    bool clearly = past >= 2 || KneeConfirmed(r_);
    if (clearly && s.load > k.load) {
      stopped_past_knee_at_ = s.load;  // the reason is written once the knee is final
      return true;
    }
  }
  return false;
}

Status Sweep::ClimbLadder() {
  std::vector<double> ladder = LadderLevels(o_);
  for (size_t li = 0; li < ladder.size(); ++li) {
    if (steps_run_ >= o_.max_steps) {
      r_.stop_reason = fmt::format("--max-steps {} reached", o_.max_steps);
      break;
    }
    double load = ladder[li];
    ASSIGN_OR_RETURN(bool go_on, Measure(load, "ladder"));
    if (!go_on) break;
    const SweepStep* s = nullptr;
    for (const auto& x : r_.steps)
      if (SameLoad(x.load, load)) s = &x;
    if (!s) continue;
    ASSIGN_OR_RETURN(bool stop, LadderStops(*s, load, li));
    if (stop) break;
    if (li + 1 == ladder.size()) r_.stop_reason = fmt::format("top of the range ({} {})", load, unit_);
  }
  return Status();
}

// The SLO boundary is refined the same way: between the highest step meeting the SLO and the
// next step, which misses it.
Status Sweep::Refine() {
  while (!r_.partial && r_.knee_index && steps_run_ < o_.max_steps) {
    std::vector<stats::SweepPoint> pts;
    size_t knee_pos = 0;
    for (size_t j = 0; j < r_.knee_steps.size(); ++j) {
      stats::SweepPoint p;
      p.concurrency = r_.steps[r_.knee_steps[j]].load;
      p.p99_latency_ns = 1;
      pts.push_back(p);
      if (r_.knee_steps[j] == *r_.knee_index) knee_pos = j;
    }
    stats::KneeResult k;
    k.knee_index = knee_pos;
    k.reached = r_.knee_reached;
    std::vector<double> candidates;
    if (r_.knee_reached) candidates = stats::RefineProbes(pts, k, o_.refine_ratio);
    if (r_.highest_meeting_slo && *r_.highest_meeting_slo + 1 < r_.steps.size()) {
      double a = r_.steps[*r_.highest_meeting_slo].load, b = r_.steps[*r_.highest_meeting_slo + 1].load;
      if (b / a > o_.refine_ratio) candidates.push_back(std::sqrt(a * b));
    }
    std::vector<double> probes;
    for (double p : candidates) {
      double v = RoundLoad(p, o_.rate_mode);
      if (v < o_.lo || v > o_.hi || Measured(r_.steps, v)) continue;
      if (std::find(probes.begin(), probes.end(), v) == probes.end()) probes.push_back(v);
    }
    if (probes.empty()) break;
    for (double v : probes) {
      if (steps_run_ >= o_.max_steps) break;
      ASSIGN_OR_RETURN(bool cont, Measure(v, "refine"));
      if (!cont) break;
    }
  }
  return Status();
}

SweepResult Sweep::Finish() {
  AnalyzeSweep(o_, r_);
  r_.model = runner_.model();
  // Refinement moves the knee (16 on the ladder, 19 refined): the reason names the final one,
  // so every line of the output gives the same knee.
  if (stopped_past_knee_at_) {
    r_.stop_reason =
        r_.knee_index && r_.knee_reached
            ? fmt::format("clearly past the knee at {} {} (the ladder stopped at {} {})",
                          r_.steps[*r_.knee_index].load, unit_, *stopped_past_knee_at_, unit_)
            : fmt::format("the ladder stopped at {} {}, past the knee it had then",
                          *stopped_past_knee_at_, unit_);
  }
  return std::move(r_);
}

}  // namespace

// Plan: the ladder (stopping early), then refinement rounds around the knee. Every measured
// step goes into r.steps in ascending load; AnalyzeSweep runs after each so the stop rules see
// the current knee.
StatusOr<SweepResult> RunSweep(StepRunner& runner, const SweepOptions& o,
                               std::function<void(const SweepStep&)> on_step) {
  RETURN_IF_ERROR(ValidateSweepOptions(o));
  Sweep sweep(runner, o, std::move(on_step));
  RETURN_IF_ERROR(sweep.ClimbLadder());
  RETURN_IF_ERROR(sweep.Refine());
  return sweep.Finish();
}

}  // namespace latdoc::loadgen
