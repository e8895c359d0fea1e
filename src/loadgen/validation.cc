#include "loadgen/validation.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/units.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {
namespace {

using nlohmann::ordered_json;

double Ms(int64_t ns) { return double(ns) / 1e6; }
double Round3(double v) { return std::round(v * 1e3) / 1e3; }

CheckStatus Worst(CheckStatus a, CheckStatus b) { return int(a) > int(b) ? a : b; }

// A request's span in flight: from its send to its end (or last token); -1 when never sent.
struct Span { int64_t from = -1, to = -1; };
Span SpanOf(const RequestRecord& r) {
  Span s;
  if (r.sent_ns < 0) return s;
  int64_t end = r.end_ns >= 0 ? r.end_ns : r.last_token_ns;
  if (end < r.sent_ns) return s;
  s.from = r.sent_ns;
  s.to = end;
  return s;
}

// The in-flight count as a step function: (time, count from then on), in time order.
std::vector<std::pair<int64_t, int>> InFlightSteps(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<int64_t, int>> events;
  for (const RequestRecord& r : records) {
    Span s = SpanOf(r);
    if (s.from < 0) continue;
    events.emplace_back(s.from, +1);
    events.emplace_back(s.to, -1);
  }
  // Ends before starts at the same instant: a closed loop's next request is not counted twice.
  std::sort(events.begin(), events.end());
  std::vector<std::pair<int64_t, int>> steps;
  int n = 0;
  for (const auto& [t, d] : events) {
    n += d;
    if (!steps.empty() && steps.back().first == t) steps.back().second = n;
    else steps.emplace_back(t, n);
  }
  return steps;
}

ValidationCheck RateCheck(const BenchRun& run, const BenchOptions& o) {
  ValidationCheck c{"rate", CheckStatus::kOk, "", ordered_json::object()};
  std::vector<int64_t> sent, sched;
  for (const RequestRecord& r : run.records) {
    if (r.sent_ns >= 0) sent.push_back(r.sent_ns);
    sched.push_back(r.scheduled_ns);
  }
  std::sort(sent.begin(), sent.end());
  std::sort(sched.begin(), sched.end());
  c.numbers["requested_rps"] = o.request_rate > 0 && std::isfinite(o.request_rate)
                                   ? ordered_json(o.request_rate) : ordered_json(nullptr);
  if (o.request_rate <= 0 || !std::isfinite(o.request_rate) || sent.size() < 3) {
    c.numbers["achieved_rps"] = nullptr;
    c.message = o.request_rate <= 0 ? "closed loop: no rate requested"
                : !std::isfinite(o.request_rate) ? "every request scheduled at once: no rate to hold"
                                                 : "fewer than 3 requests sent: not judged";
    return c;
  }
  const double n = double(sent.size());
  const double achieved = (n - 1) / std::max(1e-9, double(sent.back() - sent.front()) / 1e9);
  const double scheduled = (double(sched.size()) - 1) /
                           std::max(1e-9, double(sched.back() - sched.front()) / 1e9);
  // A Poisson schedule of n arrivals has a rate within ~3/sqrt(n) of the nominal one: a shortfall
  // inside that is the schedule's draw, not the client.
  const double allowance = std::max(kRateWarnShortfall, 3.0 / std::sqrt(n));
  const double shortfall = 1.0 - achieved / o.request_rate;
  c.numbers["achieved_rps"] = Round3(achieved);
  c.numbers["scheduled_rps"] = Round3(scheduled);
  c.numbers["sent"] = sent.size();
  c.numbers["shortfall"] = Round3(shortfall);
  c.numbers["allowed_shortfall"] = Round3(allowance);
  if (shortfall > std::max(kRateFailShortfall, allowance)) c.status = CheckStatus::kFail;
  else if (shortfall > allowance) c.status = CheckStatus::kWarn;
  c.message = fmt::format("requested {:g} req/s, sent {:.3g} req/s ({} sends; the schedule drew "
                          "{:.3g} req/s)", o.request_rate, achieved, sent.size(), scheduled);
  return c;
}

ValidationCheck ConcurrencyCheck(const BenchRun& run, const BenchOptions& o,
                                 const std::vector<std::pair<int64_t, int>>& steps) {
  ValidationCheck c{"concurrency", CheckStatus::kOk, "", ordered_json::object()};
  int max_seen = 0;
  for (const auto& s : steps) max_seen = std::max(max_seen, s.second);
  const bool open = o.request_rate > 0;
  const int requested = open ? o.max_concurrency : o.concurrency;
  c.numbers["requested"] = requested > 0 ? ordered_json(requested) : ordered_json(nullptr);
  c.numbers["max_in_flight"] = max_seen;
  c.numbers["measured_requests"] = run.records.size();
  if (requested <= 0) {
    c.message = fmt::format("open loop without a cap: at most {} in flight", max_seen);
    return c;
  }
  if (max_seen > requested) {
    c.status = CheckStatus::kFail;
    c.message = fmt::format("{} {} but {} requests were in flight at once (impossible)",
                            open ? "--max-concurrency" : "--concurrency", requested, max_seen);
  } else if (!open && max_seen < requested) {
    c.status = CheckStatus::kFail;
    c.message = fmt::format("--concurrency {} requested but at most {} requests were in flight "
                            "({} measured requests): the load asked for was never offered",
                            requested, max_seen, run.records.size());
  } else {
    c.message = fmt::format("{} {}: at most {} in flight", open ? "--max-concurrency" : "--concurrency",
                            requested, max_seen);
  }
  return c;
}

ValidationCheck LagCheck(const BenchRun& run, const BenchOptions& o) {
  ValidationCheck c{"schedule_lag", CheckStatus::kOk, "", ordered_json::object()};
  if (o.request_rate <= 0) {
    c.message = "closed loop: each request is sent when dispatched";
    c.numbers["p99_ms"] = nullptr;
    return c;
  }
  std::vector<double> lag_ms;
  for (const RequestRecord& r : run.records)
    if (r.sent_ns >= 0) lag_ms.push_back(Ms(std::max<int64_t>(0, r.sent_ns - r.scheduled_ns)));
  std::sort(lag_ms.begin(), lag_ms.end());
  if (lag_ms.empty()) {
    c.message = "no request sent";
    c.numbers["p99_ms"] = nullptr;
    return c;
  }
  const double p50 = stats::PercentileOfSorted(lag_ms, 50), p99 = stats::PercentileOfSorted(lag_ms, 99);
  c.numbers["p50_ms"] = Round3(p50);
  c.numbers["p99_ms"] = Round3(p99);
  c.numbers["max_ms"] = Round3(lag_ms.back());
  c.numbers["warn_ms"] = kLagWarnMs;
  c.numbers["fail_ms"] = kLagFailMs;
  c.numbers["includes_client_queue"] = o.max_concurrency > 0;
  if (o.max_concurrency > 0) {
    c.message = fmt::format("p99 {:.3f} ms, waiting for a --max-concurrency slot included "
                            "(client_queue): not judged", p99);
    return c;
  }
  if (p99 > kLagFailMs) c.status = CheckStatus::kFail;
  else if (p99 > kLagWarnMs) c.status = CheckStatus::kWarn;
  c.message = fmt::format("requests sent p99 {:.3f} ms after their scheduled time (p50 {:.3f} ms, "
                          "max {:.3f} ms)", p99, p50, lag_ms.back());
  return c;
}

ValidationCheck SaturationCheck(const BenchRun& run) {
  ValidationCheck c{"client_saturation", CheckStatus::kOk, "", ordered_json::object()};
  uint64_t reads = 0, late = 0;
  int saturated = 0;
  double max_busy = 0;
  for (const ThreadLoad& l : run.thread_load) {
    reads += l.reads;
    late += l.late_reads;
    saturated += l.saturated() ? 1 : 0;
    max_busy = std::max(max_busy, l.busy());
  }
  c.numbers["threads"] = run.thread_load.size();
  c.numbers["saturated_threads"] = saturated;
  c.numbers["max_busy"] = Round3(max_busy);
  c.numbers["late_read_share"] = reads ? ordered_json(Round3(double(late) / double(reads)))
                                       : ordered_json(nullptr);
  if (run.thread_load.empty()) {
    c.message = "the client's load was not measured";
    return c;
  }
  const double share = reads ? double(late) / double(reads) : 0;
  // A few late reads of a short run are the machine's noise, not a saturated client.
  if (share > kLateReadFailShare && reads >= kMinReadsToFail) c.status = CheckStatus::kFail;
  else if (share > kLateReadWarnShare || saturated > 0) c.status = CheckStatus::kWarn;
  c.message = fmt::format("{} of {} load threads saturated (busiest {:.0f}%), {:.1f}% of reads "
                          "handled over {:g} ms late", saturated, run.thread_load.size(),
                          100 * max_busy, 100 * share, Ms(kLateReadNs));
  return c;
}

ValidationCheck TokenCheck(const BenchRun& run) {
  ValidationCheck c{"token_counts", CheckStatus::kOk, "", ordered_json::object()};
  uint64_t ok = 0, mismatched = 0;
  for (const RequestRecord& r : run.records) {
    if (r.outcome != Outcome::kOk) continue;
    ++ok;
    mismatched += r.count_mismatch ? 1 : 0;
  }
  c.numbers["ok_requests"] = ok;
  c.numbers["mismatches"] = mismatched;
  const double share = ok ? double(mismatched) / double(ok) : 0;
  if (share > kMismatchFailShare) c.status = CheckStatus::kFail;
  else if (mismatched > 0) c.status = CheckStatus::kWarn;
  c.message = fmt::format("{} of {} ok requests: the server's usage disagreed with the tokens "
                          "counted in the stream", mismatched, ok);
  return c;
}

ValidationCheck WarmupCheck(const BenchRun& run) {
  ValidationCheck c{"warmup", CheckStatus::kOk, "", ordered_json::object()};
  c.numbers["excluded_requests"] = run.warmup_requests;
  if (run.warmup_requests > 0) {
    c.message = fmt::format("{} warm-up request{} excluded", run.warmup_requests,
                            run.warmup_requests == 1 ? "" : "s");
    return c;
  }
  // No warm-up: was the first request cold (a TTFT far above the others')?
  std::vector<double> ttft_ms;
  for (const RequestRecord& r : run.records)
    if (r.outcome == Outcome::kOk && r.first_token_ns >= 0)
      ttft_ms.push_back(Ms(r.first_token_ns - r.scheduled_ns));
  if (ttft_ms.size() < 5) {
    c.message = "no warm-up requests (too few requests to tell whether the first was cold)";
    return c;
  }
  const double first = ttft_ms.front();
  std::vector<double> rest(ttft_ms.begin() + 1, ttft_ms.end());
  std::sort(rest.begin(), rest.end());
  const double median = stats::PercentileOfSorted(rest, 50);
  c.numbers["first_ttft_ms"] = Round3(first);
  c.numbers[keys::kMedianTtftMs] = Round3(median);
  if (first > 3 * median && first - median > 5) {
    c.status = CheckStatus::kWarn;
    c.message = fmt::format("no warm-up, and the first request's TTFT ({:.1f} ms) is {:.1f}x the "
                            "median ({:.1f} ms): add --warmup", first, first / median, median);
  } else {
    c.message = "no warm-up requests; the first request was not slower than the rest";
  }
  return c;
}

ValidationCheck SteadyCheck(const BenchRun& run, const BenchOptions& o,
                            const std::vector<std::pair<int64_t, int>>& steps) {
  ValidationCheck c{"steady_state", CheckStatus::kOk, "", ordered_json::object()};
  const int64_t t0 = run.start_ns, t1 = std::max(run.end_ns, run.start_ns + 1);
  if (steps.empty()) {
    c.message = "no request in flight";
    c.numbers["held_share"] = nullptr;
    return c;
  }
  // The level to hold: the closed loop's concurrency, the open loop's cap, else the
  // time-weighted median of the in-flight count.
  int target = o.request_rate > 0 ? o.max_concurrency : o.concurrency;
  const bool judged = target > 0;  // an uncapped open loop's in-flight count is the arrivals' draw
  if (target <= 0) {
    std::vector<std::pair<int, int64_t>> time_at;  // count, time spent at it
    int64_t total = 0;
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      int64_t d = steps[i + 1].first - steps[i].first;
      time_at.emplace_back(steps[i].second, d);
      total += d;
    }
    std::sort(time_at.begin(), time_at.end());
    int64_t acc = 0;
    target = 1;
    for (const auto& [n, d] : time_at) {
      acc += d;
      if (2 * acc >= total) { target = std::max(1, n); break; }
    }
  }
  int64_t held = 0, first = -1, last = -1;
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    if (steps[i].second < target) continue;
    held += steps[i + 1].first - steps[i].first;
    if (first < 0) first = steps[i].first;
    last = steps[i + 1].first;
  }
  const double span_ms = Ms(t1 - t0);
  const double share = span_ms > 0 ? Ms(held) / span_ms : 0;
  c.numbers["target_in_flight"] = target;
  c.numbers["held_share"] = Round3(std::min(1.0, share));
  c.numbers["window_start_ms"] = first >= 0 ? ordered_json(Round3(Ms(first - t0))) : ordered_json(nullptr);
  c.numbers["window_end_ms"] = last >= 0 ? ordered_json(Round3(Ms(last - t0))) : ordered_json(nullptr);
  c.numbers["run_ms"] = Round3(span_ms);
  uint64_t inside = 0;
  if (first >= 0) {
    for (const RequestRecord& r : run.records) {
      Span s = SpanOf(r);
      if (s.from >= first && s.to <= last) ++inside;
    }
  }
  c.numbers["requests_inside"] = inside;
  if (first < 0 && judged) {
    c.status = CheckStatus::kFail;
    c.message = fmt::format("{} in flight was never reached", target);
  } else if (first < 0) {
    c.message = "no request was in flight for a measurable time";
  } else {
    if (judged && share < kSteadyWarnShare) c.status = CheckStatus::kWarn;
    c.message = fmt::format("{} in flight{} held {:.0f}% of the run, from {:.1f} ms to {:.1f} ms "
                            "({} requests inside)", target, judged ? "" : " (the median: not judged)", 100 * std::min(1.0, share),
                            Ms(first - t0), Ms(last - t0), inside);
  }
  return c;
}

ValidationCheck ImpossibleCheck(const BenchRun& run) {
  ValidationCheck c{"impossible", CheckStatus::kOk, "", ordered_json::object()};
  uint64_t bad_ttft = 0, bad_e2el = 0, bad_order = 0;
  for (const RequestRecord& r : run.records) {
    if (r.outcome != Outcome::kOk) continue;
    if (r.first_token_ns - r.scheduled_ns <= 0) ++bad_ttft;
    if (r.last_token_ns < r.first_token_ns) ++bad_e2el;
    for (size_t i = 1; i < r.chunks.size(); ++i) {
      if (r.chunks[i].first < r.chunks[i - 1].first) { ++bad_order; break; }
    }
  }
  c.numbers["nonpositive_ttft"] = bad_ttft;
  c.numbers["e2el_below_ttft"] = bad_e2el;
  c.numbers["chunks_out_of_order"] = bad_order;
  if (bad_ttft + bad_e2el + bad_order > 0) {
    c.status = CheckStatus::kFail;
    c.message = fmt::format("{} requests with a TTFT <= 0, {} with an E2EL below the TTFT, {} with "
                            "chunks out of order", bad_ttft, bad_e2el, bad_order);
  } else {
    c.message = "no negative or zero latencies";
  }
  return c;
}

}  // namespace

std::string_view CheckStatusName(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk: return "ok";
    case CheckStatus::kWarn: return "warn";
    case CheckStatus::kFail: return "fail";
  }
  return "ok";
}

Validation ValidateRun(const BenchRun& run, const BenchOptions& o) {
  Validation v;
  const auto steps = InFlightSteps(run.records);
  v.checks.push_back(RateCheck(run, o));
  v.checks.push_back(ConcurrencyCheck(run, o, steps));
  v.checks.push_back(LagCheck(run, o));
  v.checks.push_back(SaturationCheck(run));
  v.checks.push_back(TokenCheck(run));
  v.checks.push_back(WarmupCheck(run));
  v.checks.push_back(SteadyCheck(run, o, steps));
  v.checks.push_back(ImpossibleCheck(run));
  for (const ValidationCheck& c : v.checks) v.status = Worst(v.status, c.status);
  return v;
}

ordered_json Validation::Json() const {
  ordered_json j;
  j["status"] = CheckStatusName(status);
  ordered_json failed = ordered_json::array(), warned = ordered_json::array();
  ordered_json cs = ordered_json::array();
  for (const ValidationCheck& c : checks) {
    if (c.status == CheckStatus::kFail) failed.push_back(c.name);
    if (c.status == CheckStatus::kWarn) warned.push_back(c.name);
    ordered_json cj;
    cj["name"] = c.name;
    cj["status"] = CheckStatusName(c.status);
    cj["message"] = c.message;
    for (const auto& [k, val] : c.numbers.items()) cj[k] = val;
    cs.push_back(std::move(cj));
  }
  j["failed"] = failed;
  j["warned"] = warned;
  j["checks"] = cs;
  return j;
}

std::string Validation::Text() const {
  std::string t;
  for (const ValidationCheck& c : checks) {
    if (c.status == CheckStatus::kOk) continue;
    t += fmt::format("Validation {}: {}: {}\n", c.status == CheckStatus::kFail ? "FAIL" : "warn",
                     c.name, c.message);
  }
  return t;
}

ordered_json MergeValidations(const std::vector<Validation>& rounds) {
  CheckStatus worst = CheckStatus::kOk;
  ordered_json failed = ordered_json::array(), warned = ordered_json::array();
  ordered_json checks = ordered_json::array();
  for (size_t i = 0; i < rounds.size(); ++i) {
    worst = Worst(worst, rounds[i].status);
    const ordered_json j = rounds[i].Json();
    for (const auto& c : j["checks"]) {
      if (c["status"] == "ok") continue;
      ordered_json& names = c["status"] == "fail" ? failed : warned;
      if (std::find(names.begin(), names.end(), c["name"]) == names.end()) names.push_back(c["name"]);
      ordered_json copy = c;
      copy["round"] = i;
      checks.push_back(std::move(copy));
    }
  }
  ordered_json out;
  out["status"] = CheckStatusName(worst);
  out["failed"] = failed;
  out["warned"] = warned;
  out["rounds"] = rounds.size();
  out["checks"] = checks;
  return out;
}

std::string AddRunVariation(const std::vector<ordered_json>& runs, ordered_json* last) {
  ordered_json block;
  block["num_runs"] = runs.size();
  ordered_json metrics = ordered_json::object();
  std::string t = fmt::format("{:-^52}\n", fmt::format(" Run-to-run variation ({} runs) ", runs.size()));
  t += fmt::format("{:<26}{:>13}{:>13}\n", "Metric", "mean", "CV");
  for (const char* name : kHeadlineMetrics) {
    std::vector<double> v;
    for (const ordered_json& r : runs)
      if (r.contains(name) && r[name].is_number()) v.push_back(r[name].get<double>());
    if (v.size() != runs.size() || v.empty()) continue;
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    const double stdev = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0;
    const bool has_cv = mean != 0;
    const double cv = has_cv ? stdev / std::fabs(mean) : 0;
    metrics[name] = {{"values", v}, {"mean", mean}, {"stdev", stdev},
                     {"cv", has_cv ? ordered_json(cv) : ordered_json(nullptr)}};
    t += fmt::format("{:<26}{:>13.2f}{:>13}\n", name, mean,
                     has_cv ? fmt::format("{:.1f}%", 100 * cv) : std::string("n/a"));
  }
  block["metrics"] = metrics;
  ordered_json per = ordered_json::array();
  ordered_json& val = (*last)["validation"];
  for (size_t i = 0; i < runs.size(); ++i) {
    const ordered_json& r = runs[i];
    const std::string status = r.contains("validation") ? r["validation"].value("status", "ok") : "ok";
    per.push_back({{"run", i + 1}, {"validation", status}});
    if (i + 1 == runs.size() || !r.contains("validation") || !val.is_object()) continue;
    for (const auto& c : r["validation"]["checks"]) {
      if (c.value("status", "ok") == "ok") continue;
      ordered_json copy = c;
      copy["name"] = fmt::format("run {}: {}", i + 1, c.value("name", "?"));
      val["checks"].push_back(copy);
      val[c["status"] == "fail" ? "failed" : "warned"].push_back(copy["name"]);
      if (c["status"] == "fail" || val["status"] == "ok") val["status"] = c["status"];
    }
  }
  block["per_run"] = per;
  (*last)["runs"] = block;
  return t;
}

}  // namespace latdoc::loadgen
