#include "loadgen/sweep.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/units.h"
#include "servermetrics/server_dialect.h"
#include "stats/sample_summary.h"

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

double RoundLoad(double x, bool rate_mode) {
  if (!rate_mode) return std::max(1.0, std::round(x));
  if (x <= 0) return x;
  double mag = std::pow(10.0, std::floor(std::log10(x)) - 2);
  return std::round(x / mag) * mag;
}

bool SameLoad(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

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

// Plan: run rounds until the most recent `need` requests (whole rounds: the WINDOW) are
// stable: the p99 of the window's last half agrees with the p99 of the window. Earlier rounds
// are a transient (warm-up): spent, but left out of the step's statistics.
StatusOr<SweepStep> MeasureStep(StepRunner& runner, double load, const SweepOptions& o) {
  runner.StartStep(load);
  SweepStep s;
  s.load = load;
  const int need = std::max(o.min_requests, o.rate_mode ? o.min_requests : int(2 * load));
  const int cap = o.max_requests > 0 ? std::max(o.max_requests, need)
                                     : std::max({400, int(8 * load), need});
  // Closed loop: whole multiples of the concurrency, so no round ends on a partial wave.
  const int half = (o.min_requests + 1) / 2;
  const int c = std::max(1, int(load));
  const int round_size = o.rate_mode ? half : c * ((half + c - 1) / c);
  std::vector<RoundResult> rounds;
  size_t first = 0;  // the window's first round
  int spent = 0;
  auto window_size = [&] {
    size_t n = 0;
    for (size_t i = first; i < rounds.size(); ++i) n += rounds[i].requests.size();
    return n;
  };
  while (true) {
    if (runner.interrupted()) {
      s.interrupted = true;
      break;
    }
    int n = std::min(round_size, cap - spent);
    if (n <= 0) break;
    ASSIGN_OR_RETURN(RoundResult r, runner.RunRound(load, n));
    ++s.rounds;
    spent += int(r.requests.size());
    bool interrupted = r.interrupted;
    rounds.push_back(std::move(r));
    if (interrupted) {
      s.interrupted = true;
      break;
    }
    // Slide the window: drop leading rounds while the rest still holds `need` requests.
    while (first + 1 < rounds.size() &&
           window_size() - rounds[first].requests.size() >= size_t(need))
      ++first;
    if (window_size() < size_t(need)) continue;
    std::vector<int64_t> whole, last;
    std::vector<const RequestSample*> win;
    for (size_t i = first; i < rounds.size(); ++i)
      for (const auto& q : rounds[i].requests) win.push_back(&q);
    for (size_t i = 0; i < win.size(); ++i) {
      auto v = KneeValue(*win[i], o.knee_latency);
      if (!v) continue;
      whole.push_back(*v);
      if (i >= win.size() / 2) last.push_back(*v);
    }
    auto pw = P99Ms(whole), pl = P99Ms(last);
    if (pw && pl && std::fabs(*pl - *pw) <= o.stable_tolerance * *pw) {
      s.stable = true;
      break;
    }
    if (whole.empty()) break;  // nothing succeeds: do not insist
    if (spent >= cap) break;
  }
  s.spent = uint64_t(spent);
  std::vector<RequestSample> all;
  std::vector<int64_t> itls;
  int64_t dur_ns = 0;
  for (size_t i = first; i < rounds.size(); ++i) {
    all.insert(all.end(), rounds[i].requests.begin(), rounds[i].requests.end());
    itls.insert(itls.end(), rounds[i].itl_ns.begin(), rounds[i].itl_ns.end());
    dur_ns += rounds[i].dur_ns;
    s.server.Merge(rounds[i].server);
  }
  std::vector<Validation> checked;
  for (size_t i = first; i < rounds.size(); ++i)
    if (rounds[i].validation) checked.push_back(*rounds[i].validation);
  if (!checked.empty()) s.validation = MergeValidations(checked);

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
  s.median_itl_ms = P99Ms(itls, 50);
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
  return s;
}

namespace {

// What the server's metrics say about one step: KV pressure (usage >= 95% or preemptions),
// queueing (the mean queue time, from the queue-time histogram that covers every request, is
// above two engine steps, i.e. more than the wait for the next step; or, closed loop, the
// engine never ran as many requests as the client kept in flight while some waited), or
// neither. The waiting gauge is one instant per scrape: a 0 there does not outweigh the
// histogram. But in a closed loop whose engine ran as many requests at once as the client kept
// in flight, no batch limit bound: a long queue time there is prompts waiting for their prefill
// to be scheduled (behind steps that carry other prompts' prefill, each step taking at most the
// token budget), and the step is what bends (compute), not the server's batch limit.
void ClassifyStep(SweepStep& s, bool rate_mode) {
  const ServerStepMetrics& m = s.server;
  s.bend = Bend::kNone;
  s.bend_evidence.clear();
  if (!m.available) return;
  auto step = m.step_time_ms();
  auto queue = m.queue_mean_ms();
  if ((m.max_kv_cache_usage && *m.max_kv_cache_usage >= 0.95) ||
      (m.preemptions && *m.preemptions > 0)) {
    s.bend = Bend::kKvCache;
    s.bend_evidence = fmt::format(
        "KV cache usage up to {}, {} preemptions",
        m.max_kv_cache_usage ? fmt::format("{:.0f}%", *m.max_kv_cache_usage * 100) : "n/a",
        FormatCount(m.preemptions));
    return;
  }
  const bool queued = queue && *queue > 0 && *queue > 2 * step.value_or(0);
  const bool waited = (m.max_waiting && *m.max_waiting > 0) || queued;
  const bool plateau = !rate_mode && m.max_running && waited && *m.max_running < s.load - 0.5;
  const bool ran_all = !rate_mode && m.max_running && *m.max_running >= s.load - 0.5;
  if (plateau || (queued && !ran_all)) {
    s.bend = Bend::kQueueing;
    s.bend_evidence = fmt::format(
        "requests waited: mean queue time {:.1f} ms ({}x the {} ms step), up to {} waiting while "
        "{} ran",
        queue.value_or(0), step && queue ? fmt::format("{:.1f}", *queue / *step) : "n/a",
        step ? fmt::format("{:.2f}", *step) : "n/a",
        FormatCount(m.max_waiting), FormatCount(m.max_running));
    return;
  }
  s.bend = Bend::kCompute;
  if (queued) {  // and ran_all
    s.bend_evidence = fmt::format(
        "no batch limit bound: {} running of {} offered, {} seen waiting; the mean queue time "
        "{:.1f} ms ({} engine steps) is prompts waiting for their prefill to be scheduled (steps "
        "that carry a prefill are long, and each takes at most --max-num-batched-tokens prompt "
        "tokens); engine step {}, KV {}",
        FormatCount(m.max_running), FormatCount(s.load), FormatCount(m.max_waiting), *queue,
        step ? FormatFixed(*queue / *step, 1) : "n/a", step ? FormatFixed(*step, 2) + " ms" : "n/a",
        m.max_kv_cache_usage ? fmt::format("{:.0f}%", *m.max_kv_cache_usage * 100) : "n/a");
    return;
  }
  s.bend_evidence = fmt::format(
      "no queueing or KV pressure (queue {}, KV {}); engine step {}",
      queue ? fmt::format("{:.2f} ms", *queue) : "n/a",
      m.max_kv_cache_usage ? fmt::format("{:.0f}%", *m.max_kv_cache_usage * 100) : "n/a",
      step ? fmt::format("{:.2f} ms", *step) : "n/a");
}

// The engine's own time per request: queue + prefill + decode means.
std::optional<double> EngineMs(const SweepStep& s) {
  auto q = s.server.queue_mean_ms(), p = s.server.prefill_mean_ms(), d = s.server.decode_mean_ms();
  if (!q || !p || !d) return std::nullopt;
  return *q + *p + *d;
}

// A step called compute whose client latency grew, since the lowest step, more than twice as
// much as the engine's own time did: what grew is in front of the engine.
void ClassifyFrontEnd(SweepStep& s, const SweepStep& base, const char* unit) {
  auto engine = EngineMs(s), engine0 = EngineMs(base);
  if (s.bend != Bend::kCompute || !engine || !engine0 || !s.mean_e2el_ms || !base.mean_e2el_ms) return;
  const double client_growth = *s.mean_e2el_ms - *base.mean_e2el_ms;
  const double engine_growth = *engine - *engine0;
  if (client_growth <= 0.1 * *base.mean_e2el_ms || engine_growth >= 0.5 * client_growth) return;
  s.bend = Bend::kFrontEnd;
  s.bend_evidence = fmt::format(
      "since {:g} {}, the client's mean E2EL grew {:.1f} -> {:.1f} ms but the engine's queue + "
      "prefill + decode only {:.1f} -> {:.1f} ms",
      base.load, unit, *base.mean_e2el_ms, *s.mean_e2el_ms, *engine0, *engine);
}

// The batch size the engine actually ran at a step: the running gauge, else (closed loop) the
// concurrency. A request rate is no batch size: in rate mode, without the gauge, unknown.
std::optional<double> BatchOf(const SweepStep& s, bool rate_mode) {
  if (s.server.max_running) {
    return std::max(1.0, rate_mode ? *s.server.max_running : std::min(s.load, *s.server.max_running));
  }
  if (rate_mode) return std::nullopt;
  return s.load;
}

int64_t RoundUpTo(double v, int64_t m) { return int64_t(std::ceil(v / double(m))) * m; }

}  // namespace

// Plan: the knee over the steps with an acceptable error rate; bends per step; a step-time fit
// over the steps where nothing queued; then the recommendations and the two regimes.
namespace {

// The recommendations (made in vLLM's terms: a batch of N sequences, a token budget of V per
// step) in the flags of the server the steps' /metrics named, and every text in its words.
void SpeakServerDialect(const SweepOptions& o, SweepResult& r) {
  servermetrics::ServerKind kind = servermetrics::ServerKind::kUnknown;
  for (const SweepStep& s : r.steps)
    if (!s.server.server.empty()) { kind = servermetrics::ServerKindFromId(s.server.server); break; }
  if (kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown) return;
  auto say = [&](std::string t) { return servermetrics::InServerFlags(kind, std::move(t)); };
  for (std::string* t : {&r.knee_explanation, &r.low_load_regime, &r.high_load_regime}) *t = say(*t);
  if (r.recommendations.size() != 2) return;
  const Recommendation seqs = r.recommendations[0], tokens = r.recommendations[1];
  // Tokens a request holds in its context: prompt + output, when both are known.
  const int per_request = o.input_len > 0 && o.output_len > 0 ? o.input_len + o.output_len : 0;
  auto context_for = [&](int64_t n) { return RoundUpTo(double(n) * per_request, 256); };
  std::vector<Recommendation> out;
  switch (kind) {
    case servermetrics::ServerKind::kLlamaCpp: {
      out.push_back({"--parallel", seqs.value,
                     say(seqs.reason) + "; -np for short. Keep continuous batching on (the default; "
                                        "--no-cont-batching serves one batch at a time)"});
      Recommendation ctx{"--ctx-size", std::nullopt, ""};
      if (seqs.value && per_request > 0) {
        ctx.value = context_for(*seqs.value);
        ctx.reason = fmt::format("-c for short; at least this: llama.cpp splits it across the {} "
                                 "slot{}, and each must hold a prompt and its output ({} + {} "
                                 "tokens of this workload), rounded up to {}",
                                 *seqs.value, *seqs.value == 1 ? "" : "s", o.input_len, o.output_len, *ctx.value);
      } else {
        ctx.reason = seqs.value ? "give each of the --parallel slots room for a prompt and its "
                                  "output: -c = slots x (prompt + output tokens)"
                                : "depends on --parallel, which has no recommendation";
      }
      out.push_back(ctx);
      out.push_back({"--batch-size", tokens.value,
                     say(tokens.reason) + (tokens.value ? "; -b for short: the most tokens one "
                                                          "llama_decode() call takes"
                                                        : "")});
      Recommendation ub{"--ubatch-size", std::nullopt, ""};
      if (tokens.value) {
        ub.value = std::min<int64_t>(*tokens.value, 512);
        ub.reason = fmt::format("-ub for short: the physical batch (at most --batch-size); a "
                                "prompt is computed {} tokens at a time, so larger speeds prefill "
                                "and smaller keeps the other slots' ITL steady (default 512)",
                                *ub.value);
      } else {
        ub.reason = say(tokens.reason);
      }
      out.push_back(ub);
      break;
    }
    case servermetrics::ServerKind::kSglang:
      out.push_back({"--max-running-requests", seqs.value,
                     say(seqs.reason) + "; with requests queueing behind shared prefixes, "
                                        "--schedule-policy lpm (the default) serves them first, "
                                        "fcfs keeps arrival order"});
      out.push_back({"--chunked-prefill-size", tokens.value, say(tokens.reason)});
      break;
    case servermetrics::ServerKind::kTgi: {
      // TGI caps the running batch by tokens, not by a count of sequences.
      Recommendation total{"--max-batch-total-tokens", std::nullopt, ""};
      if (seqs.value && per_request > 0) {
        total.value = context_for(*seqs.value);
        total.reason = fmt::format("a batch of {} requests of {} + {} tokens ({}): {}",
                                   *seqs.value, o.input_len, o.output_len, *total.value,
                                   say(seqs.reason));
      } else {
        total.reason = say(seqs.reason) +
                       (seqs.value ? fmt::format("; TGI caps the batch by tokens: give {} x (prompt "
                                                 "+ output tokens)", *seqs.value)
                                   : "");
      }
      out.push_back(total);
      out.push_back({"--max-batch-prefill-tokens", tokens.value, say(tokens.reason)});
      double top = 0;
      for (const SweepStep& s : r.steps) top = std::max(top, s.load);
      Recommendation conc{"--max-concurrent-requests", std::nullopt, ""};
      if (!o.rate_mode && top > 0) {
        conc.value = int64_t(std::ceil(top));
        conc.reason = fmt::format("the router refuses requests past it (HTTP 429): keep it at or "
                                  "above the concurrency you send ({} here)", *conc.value);
      } else {
        conc.reason = "the router refuses requests past it (HTTP 429): keep it above the requests "
                      "in flight";
      }
      out.push_back(conc);
      break;
    }
    case servermetrics::ServerKind::kVllm:
    case servermetrics::ServerKind::kUnknown:
      return;
  }
  r.recommendations = std::move(out);
}

}  // namespace

void AnalyzeSweep(const SweepOptions& o, SweepResult& r) {
  r.knee_index.reset();
  r.knee_confirmed_by.reset();
  r.knee_steps.clear();
  r.elasticity.clear();
  r.recommendations.clear();
  std::vector<stats::SweepPoint> pts;
  const SweepStep* base = nullptr;  // the lowest step the engine's time is known for
  for (size_t i = 0; i < r.steps.size(); ++i) {
    SweepStep& s = r.steps[i];
    ClassifyStep(s, o.rate_mode);
    if (base != nullptr) ClassifyFrontEnd(s, *base, o.rate_mode ? "req/s" : "concurrent");
    if (base == nullptr && EngineMs(s) && s.mean_e2el_ms) base = &s;
    auto p99 = s.KneeP99Ms(o.knee_latency);
    if (!p99 || s.completed == 0 || s.error_rate() > o.max_error_rate) continue;
    stats::SweepPoint p;
    p.concurrency = s.load;
    p.p99_latency_ns = std::max<int64_t>(1, MsToNs(*p99));
    p.tokens_per_s = s.output_tokens_per_s;
    p.goodput_per_s = s.goodput;
    pts.push_back(p);
    r.knee_steps.push_back(i);
  }
  // A knee is a bend between steps: one step has none (a sweep cut short after its first step
  // said "past the knee latency grows faster" of tokens/s 158 -> 158).
  if (pts.size() >= 2) {
    auto k = stats::FindKnee(pts, stats::KneeOptions{o.min_elasticity});
    if (k.ok()) {
      r.knee_index = r.knee_steps[k->knee_index];
      r.knee_reached = k->reached;
      if (k->confirmed_by) r.knee_confirmed_by = r.knee_steps[*k->confirmed_by];
      r.elasticity = k->elasticity;
      auto b = stats::RefineBracket(pts, *k);
      r.bracket_lo = b.lo_concurrency;
      r.bracket_hi = b.hi_concurrency;
    }
    if (auto g = stats::MaxGoodput(pts)) r.max_goodput = r.knee_steps[*g];
  }
  r.highest_meeting_slo.reset();
  if (o.slo.any()) {
    for (size_t i = 0; i < r.steps.size(); ++i)
      if (r.steps[i].slo_met.value_or(false)) r.highest_meeting_slo = i;
  }

  // Step-time fit t = a + b * batch over the steps where nothing queued or spilled (least
  // squares over (batch, server mean ITL)).
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i : r.knee_steps) {
    const SweepStep& s = r.steps[i];
    auto t = s.server.step_time_ms();
    const std::optional<double> batch = BatchOf(s, o.rate_mode);
    if (!t || !batch || s.bend == Bend::kQueueing || s.bend == Bend::kKvCache) continue;
    double x = *batch;
    n += 1, sx += x, sy += *t, sxx += x * x, sxy += x * *t;
  }
  r.step_base_ms.reset();
  r.step_per_seq_ms.reset();
  if (n >= 2 && n * sxx - sx * sx > 0) {
    double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double a = (sy - b * sx) / n;
    r.step_base_ms = a;
    r.step_per_seq_ms = b;
  }
  // The server's own limit: the running plateau while requests queued.
  r.server_max_num_seqs.reset();
  for (const SweepStep& s : r.steps) {
    if (s.bend == Bend::kQueueing && s.server.max_running && *s.server.max_running < s.load)
      r.server_max_num_seqs = std::max(r.server_max_num_seqs.value_or(0),
                                       int(std::lround(*s.server.max_running)));
  }

  const char* unit = o.rate_mode ? "req/s" : "concurrent";
  Recommendation seqs{"--max-num-seqs", std::nullopt, ""};
  Recommendation tokens{"--max-num-batched-tokens", std::nullopt, ""};
  r.knee_bend = Bend::kNone;
  r.knee_explanation.clear();
  r.low_load_regime.clear();
  r.high_load_regime.clear();
  if (!r.knee_index) {
    r.knee_reached = false;
    if (pts.size() == 1) {
      r.knee_explanation = fmt::format(
          "one step measured ({} {}): a knee is a bend between steps and needs two or more",
          r.steps[r.knee_steps.front()].load, unit);
      seqs.reason = o.slo.any() && !r.highest_meeting_slo
                        ? fmt::format("no step met the SLO (the lowest, {} {}, missed it): no batch "
                                      "size meets it on this server", r.steps.front().load, unit)
                        : "one step measured: no knee, nothing to recommend";
    } else {
      seqs.reason = "no step completed requests within the error budget; nothing to recommend";
    }
    tokens.reason = seqs.reason;
    r.recommendations = {seqs, tokens};
    SpeakServerDialect(o, r);
    return;
  }
  const SweepStep& knee = r.steps[*r.knee_index];
  // The step past the knee says which resource bends. The server's queue and KV metrics are
  // hard evidence and compute is what remains without them, so when the step that confirmed
  // the knee shows queueing or KV pressure and the one in between does not, the true knee lies
  // between them (noise put the reported one a step early) and that is what bends.
  const SweepStep* past = nullptr;
  for (size_t i : r.knee_steps)
    if (i > *r.knee_index) { past = &r.steps[i]; break; }
  auto hard = [](Bend b) { return b == Bend::kQueueing || b == Bend::kKvCache; };
  if (past && !hard(past->bend) && r.knee_confirmed_by &&
      hard(r.steps[*r.knee_confirmed_by].bend))
    past = &r.steps[*r.knee_confirmed_by];
  auto lat = [&](const SweepStep& s) {
    auto v = s.KneeP99Ms(o.knee_latency);
    return v ? fmt::format("{:.1f} ms", *v) : std::string("n/a");
  };
  std::string kl(KneeLatencyName(o.knee_latency));
  std::optional<double> compute_knee;
  if (r.step_base_ms && r.step_per_seq_ms && *r.step_per_seq_ms > 0 && *r.step_base_ms > 0)
    compute_knee = *r.step_base_ms / *r.step_per_seq_ms;
  if (!r.knee_reached) {
    r.knee_explanation = fmt::format(
        "no knee up to {} {}: each step still bought at least {:.2g}% more tokens/s per 1% of "
        "p99 {}; raise the top of the range", knee.load, unit, o.min_elasticity, kl);
  } else if (past) {
    r.knee_bend = past->bend;
    std::string what;
    switch (past->bend) {
      case Bend::kQueueing:
        what = fmt::format("queueing past the server's batch limit: running plateaued at {} "
                           "while requests waited",
                           past->server.max_running ? fmt::format("{:.0f}", *past->server.max_running) : "n/a");
        break;
      case Bend::kKvCache: what = "KV cache pressure"; break;
      case Bend::kCompute: {
        what = "compute: each engine step takes longer as the batch grows";
        // With the step times measured: from the lowest step to the one past the knee.
        const SweepStep& lo = r.steps[r.knee_steps.front()];
        auto t0 = lo.server.step_time_ms(), t1 = past->server.step_time_ms();
        if (t0 && t1 && &lo != past) {
          what += fmt::format(" (engine step {:.2f} ms at {} {} -> {:.2f} ms at {} {})", *t0,
                              lo.load, unit, *t1, past->load, unit);
        }
        if (!o.rate_mode && past->server.max_running &&
            *past->server.max_running >= past->load - 0.5) {
          what += fmt::format(", not the server's batch limit: it ran all {} requests at once",
                              FormatCount(past->load));
        }
        break;
      }
      case Bend::kFrontEnd:
        what = "outside the engine: requests wait in front of it (API server, proxy or network), "
               "not for a batch";
        break;
      case Bend::kNone: what = "server metrics not available to say which resource"; break;
    }
    r.knee_explanation = fmt::format(
        "knee at {} {}: from {} to {} {}, tokens/s went {:.0f} -> {:.0f} ({:+.0f}%) while p99 {} "
        "went {} -> {}. Bends: {}{}",
        knee.load, unit, knee.load, past->load, unit, knee.output_tokens_per_s,
        past->output_tokens_per_s,
        knee.output_tokens_per_s > 0 ? 100 * (past->output_tokens_per_s / knee.output_tokens_per_s - 1) : 0,
        kl, lat(knee), lat(*past), what,
        past->bend_evidence.empty() ? ""
                                    : fmt::format("; at {} {}: {}", past->load, unit, past->bend_evidence));
  }

  // --max-num-seqs.
  const std::optional<double> knee_batch_known = BatchOf(knee, o.rate_mode);
  const double knee_batch = knee_batch_known.value_or(0);
  if (!knee_batch_known && (r.knee_reached || o.slo.any())) {
    seqs.reason = "a request rate is no batch size, and the server's metrics gave no running-requests "
                  "gauge (vllm:num_requests_running) to turn it into one: sweep --concurrency, or "
                  "give --metrics-url";
  } else if (r.knee_bend == Bend::kFrontEnd) {
    seqs.reason = "the engine is not what bends (its own time grew less than half as much as the "
                  "client's latency), so a batch limit would not help: look at the front end (latdoc "
                  "net for the path, latdoc doctor for the API server's CPU)";
  } else if (r.knee_bend == Bend::kQueueing && r.server_max_num_seqs) {
    int limit = *r.server_max_num_seqs;
    std::optional<double> kv_fit;
    if (knee.server.max_kv_cache_usage && *knee.server.max_kv_cache_usage > 0)
      kv_fit = 0.9 * knee_batch / *knee.server.max_kv_cache_usage;
    double cand = compute_knee.value_or(double(limit));
    if (kv_fit) cand = std::min(cand, *kv_fit);
    if (cand > 1.1 * limit) {
      seqs.value = int64_t(std::floor(cand + 1e-6));
      seqs.reason = fmt::format(
          "the knee is the server's own limit (running plateaued at {} while requests queued), not "
          "the GPU: the step time fits {:.2f} ms + {:.3f} ms x batch, so batches up to ~{:.0f} "
          "still amortise the fixed cost{}; raise it to {} and sweep again",
          limit, r.step_base_ms.value_or(0), r.step_per_seq_ms.value_or(0),
          compute_knee.value_or(cand),
          kv_fit ? fmt::format(", and the KV cache ({:.0f}% used at batch {:.0f}) fits ~{:.0f}",
                               *knee.server.max_kv_cache_usage * 100, knee_batch, *kv_fit)
                 : "",
          *seqs.value);
    } else {
      seqs.value = limit;
      seqs.reason = fmt::format(
          "keep {}: requests queue past it, and a larger batch would not pay (step-time knee "
          "~{}, KV fit ~{})", limit,
          compute_knee ? fmt::format("{:.0f}", *compute_knee) : "n/a",
          kv_fit ? fmt::format("{:.0f}", *kv_fit) : "n/a");
    }
  } else if (r.knee_bend == Bend::kKvCache) {
    seqs.value = int64_t(std::max(1.0, std::floor(knee_batch)));
    seqs.reason = fmt::format(
        "KV cache fills and requests are preempted past a batch of {:.0f}; cap the batch there "
        "(or give the KV cache more memory: --gpu-memory-utilization, a smaller --max-model-len)",
        knee_batch);
  } else if (r.knee_reached) {
    double pick = knee_batch;
    std::string why = fmt::format(
        "past a batch of {:.0f} the p99 {} grows faster than tokens/s", knee_batch, kl);
    if (o.goal == SweepGoal::kThroughput) {
      if (r.max_goodput) {
        pick = BatchOf(r.steps[*r.max_goodput], o.rate_mode).value_or(knee_batch);
        why = fmt::format("goal throughput: goodput peaks at {:.0f} concurrent", pick);
      } else {
        double best = 0;
        for (size_t i : r.knee_steps) best = std::max(best, r.steps[i].output_tokens_per_s);
        for (size_t i : r.knee_steps) {
          if (r.steps[i].output_tokens_per_s >= 0.95 * best) {
            pick = BatchOf(r.steps[i], o.rate_mode).value_or(knee_batch);
            break;
          }
        }
        why = fmt::format("goal throughput: {:.0f} reaches 95% of the highest tokens/s ({:.0f})",
                          pick, best);
      }
    }
    seqs.value = int64_t(std::max(1.0, std::floor(pick)));
    seqs.reason = why + (compute_knee ? fmt::format(" (step time {:.2f} ms + {:.3f} ms x batch: "
                                                    "the per-sequence cost equals the fixed cost "
                                                    "at ~{:.0f})",
                                                    *r.step_base_ms, *r.step_per_seq_ms, *compute_knee)
                                      : "");
  } else if (o.slo.any() && r.highest_meeting_slo &&
             BatchOf(r.steps[*r.highest_meeting_slo], o.rate_mode)) {
    seqs.value = int64_t(std::max(1.0, std::floor(*BatchOf(r.steps[*r.highest_meeting_slo], o.rate_mode))));
    seqs.reason = fmt::format("the SLO breaks before the knee: {} is the highest {} meeting it",
                              *seqs.value, o.rate_mode ? "batch" : "concurrency");
  } else if (o.slo.any()) {
    seqs.reason = fmt::format("no step met the SLO (the lowest, {} {}, missed it): no batch size "
                              "meets it on this server", r.steps.front().load, unit);
  } else {
    seqs.reason = fmt::format("the knee was not reached up to {} {}: no limit to recommend yet; "
                              "sweep a wider range", knee.load, unit);
  }
  if (seqs.value && o.slo.any()) {
    if (!r.highest_meeting_slo) {
      seqs.reason += "; no step met the SLO, so no batch size meets it on this server";
    } else {
      const double slo_batch = BatchOf(r.steps[*r.highest_meeting_slo], o.rate_mode).value_or(knee_batch);
      if (slo_batch < double(*seqs.value)) {
        seqs.value = int64_t(std::max(1.0, std::floor(slo_batch)));
        seqs.reason += fmt::format("; capped at {} by the SLO (the highest step meeting it)",
                                   *seqs.value);
      }
    }
  }

  // --max-num-batched-tokens: the token budget per step = the decode tokens of a full batch
  // plus the prefill chunk mixed into the same step. A prefill token costs p ms; with a
  // latency goal the chunk is sized so that a step carrying it is at most twice the knee's
  // step time (ITL of running requests at most doubles while a prompt prefills); with a
  // throughput goal, whole prompts of four arrivals fit in one step.
  if (seqs.value) {
    const SweepStep& first = r.steps[r.knee_steps.front()];
    std::optional<double> p_ms;
    auto pre = first.server.prefill_mean_ms();
    auto st = first.server.step_time_ms();
    if (pre && st && o.input_len > 0 && *pre > *st) p_ms = (*pre - *st) / o.input_len;
    double batch = double(*seqs.value);
    auto knee_step = knee.server.step_time_ms();
    double chunk;
    std::string why;
    if (o.goal == SweepGoal::kLatency && p_ms && knee_step && *p_ms > 0) {
      chunk = *knee_step / *p_ms;
      if (o.input_len > 0) chunk = std::min(chunk, 4.0 * o.input_len);
      why = fmt::format("{:.0f} decode tokens of a full batch + a prefill chunk of ~{:.0f} tokens: "
                        "a prompt token costs ~{:.3f} ms, so the chunk adds at most the {:.2f} ms "
                        "step time at the knee (ITL at most doubles while a prompt prefills)",
                        batch, chunk, *p_ms, *knee_step);
    } else {
      chunk = std::max(2048.0, 4.0 * std::max(1, o.input_len));
      why = fmt::format("{:.0f} decode tokens of a full batch + {:.0f} prefill tokens (whole "
                        "prompts of {} tokens admitted in one step, for TTFT and throughput)",
                        batch, chunk, o.input_len);
    }
    int64_t v = std::max<int64_t>(RoundUpTo(batch + chunk, 256), int64_t(batch));
    if (o.input_len > 0 && !o.slo.any() && o.goal == SweepGoal::kThroughput)
      v = std::max<int64_t>(v, 8192);
    tokens.value = v;
    tokens.reason = why + fmt::format(", rounded up to {}", v);
  } else {
    tokens.reason = "depends on --max-num-seqs, which has no recommendation";
  }
  r.recommendations = {seqs, tokens};

  // The two regimes, with this server's numbers.
  const SweepStep& lo = r.steps[r.knee_steps.front()];
  auto itl = [](const SweepStep& s) {
    auto v = s.server.step_time_ms() ? s.server.step_time_ms() : s.median_itl_ms;
    return v ? fmt::format("{:.2f} ms", *v) : std::string("n/a");
  };
  r.low_load_regime = fmt::format(
      "low load ({} {}): batches stay small, p99 TTFT {} and ITL {}; keep batches small for "
      "response time",
      lo.load, unit, lo.p99_ttft_ms ? fmt::format("{:.1f} ms", *lo.p99_ttft_ms) : "n/a", itl(lo));
  r.high_load_regime = fmt::format(
      "high load (up to the knee at {} {}): larger batches amortise the fixed step cost{}: "
      "tokens/s {:.0f} -> {:.0f} (x{:.1f}) while ITL went {} -> {}; past the knee latency grows "
      "faster than throughput",
      knee.load, unit,
      r.step_base_ms ? fmt::format(" ({:.2f} ms per step + {:.3f} ms per sequence)",
                                   *r.step_base_ms, r.step_per_seq_ms.value_or(0))
                     : "",
      lo.output_tokens_per_s, knee.output_tokens_per_s,
      lo.output_tokens_per_s > 0 ? knee.output_tokens_per_s / lo.output_tokens_per_s : 0, itl(lo),
      itl(knee));
  SpeakServerDialect(o, r);
}

namespace {

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

// Plan: the ladder (stopping early), then refinement rounds around the knee. Every measured
// step goes into r.steps in ascending load; AnalyzeSweep runs after each so the stop rules see
// the current knee.
StatusOr<SweepResult> RunSweep(StepRunner& runner, const SweepOptions& o,
                               std::function<void(const SweepStep&)> on_step) {
  RETURN_IF_ERROR(ValidateSweepOptions(o));
  SweepResult r;
  int steps_run = 0;
  const char* unit = o.rate_mode ? "req/s" : "concurrent";
  auto measure = [&](double load, const char* phase) -> StatusOr<bool> {
    StatusOr<SweepStep> measured = MeasureStep(runner, load, o);
    if (!measured.ok()) {
      // The server went away mid-sweep (killed, restarted, network gone): the steps done are
      // kept and written, marked partial with the reason, as after Ctrl-C. Before any step
      // was measured the error stands.
      if (r.steps.empty()) return measured.status();
      r.partial = true;
      r.partial_reason = fmt::format("stopped at {} {}: {}", load, unit, measured.status().message());
      return false;
    }
    SweepStep s = std::move(*measured);
    s.phase = phase;
    ++steps_run;
    r.requests_spent += s.spent;
    // A suspected host stall is measured once more, and the better measurement kept: a real
    // fall (or a second stall) stays, a passing one does not bend the curve.
    if (!o.rate_mode && !s.interrupted && s.completed > 0 && s.failed == 0) {
      ClassifyStep(s, o.rate_mode);
      const SweepStep* lower = s.bend == Bend::kKvCache ? nullptr : ThroughputFellUnder(r.steps, s);
      if (lower) {
        ++steps_run;  // the second measurement counts against --max-steps
        StatusOr<SweepStep> again = MeasureStep(runner, load, o);
        if (!again.ok()) {
          // The server went away: keep the first measurement and stop, marked partial.
          s.remeasured = fmt::format("{:.0f} output tokens/s, under {:.0f}% of the {:.0f} at {} {}; "
                                     "measuring it again failed: {}", s.output_tokens_per_s,
                                     100 * kStallThroughputShare, lower->output_tokens_per_s,
                                     lower->load, unit, again.status().message());
          if (on_step) on_step(s);
          InsertStep(r.steps, std::move(s));
          AnalyzeSweep(o, r);
          r.partial = true;
          r.partial_reason = fmt::format("stopped at {} {} (measuring it again): {}", load, unit,
                                         again.status().message());
          return false;
        }
        r.requests_spent += again->spent;
        const uint64_t spent = s.spent + again->spent;
        const bool again_interrupted = again->interrupted;
        // The better measurement, as long as it is clean: the first had no failures.
        const bool keep_again = !again_interrupted && again->failed == 0 &&
                                again->output_tokens_per_s > s.output_tokens_per_s;
        const std::string note = fmt::format(
            "{:.0f} output tokens/s, under {:.0f}% of the {:.0f} at {} {} with {} (a stall of "
            "the client's host?): measured again, {:.0f} tokens/s{}; kept the {}",
            s.output_tokens_per_s, 100 * kStallThroughputShare, lower->output_tokens_per_s,
            lower->load, unit, s.server.available ? "no KV pressure" : "KV pressure unknown (no /metrics)",
            again->output_tokens_per_s,
            again->failed > 0 ? fmt::format(" and {} failed", again->failed) : std::string(),
            keep_again ? "second" : "first");
        if (keep_again) s = std::move(*again);
        s.phase = phase;
        s.spent = spent;
        s.remeasured = note;
        s.interrupted = s.interrupted || again_interrupted;
      }
    }
    bool interrupted = s.interrupted;
    if (s.spent > 0) {
      if (on_step) on_step(s);
      InsertStep(r.steps, std::move(s));
    }
    if (interrupted) {
      r.partial = true;
      r.partial_reason = "interrupted";
      return false;
    }
    AnalyzeSweep(o, r);
    return true;
  };

  bool go_on = true;
  std::optional<double> stopped_past_knee_at;  // the ladder step that was clearly past the knee
  std::vector<double> ladder = LadderLevels(o);
  for (size_t li = 0; li < ladder.size() && go_on; ++li) {
    if (steps_run >= o.max_steps) {
      r.stop_reason = fmt::format("--max-steps {} reached", o.max_steps);
      break;
    }
    double load = ladder[li];
    ASSIGN_OR_RETURN(go_on, measure(load, "ladder"));
    if (!go_on) break;
    const SweepStep* s = nullptr;
    for (const auto& x : r.steps)
      if (SameLoad(x.load, load)) s = &x;
    if (!s) continue;
    if (s->error_rate() > o.max_error_rate) {
      if (li == 0 || s->completed == 0) {
        bool any_ok = false;
        for (const auto& x : r.steps) any_ok = any_ok || x.completed > 0;
        if (!any_ok) {
          return Unavailable(fmt::format(
              "every request failed at {} {} ({} of {}; {}): the server cannot be swept",
              load, unit, s->failed, s->requests, s->first_error));
        }
      }
      r.stop_reason = fmt::format("errors climbed: {:.1f}% of requests failed at {} {} (over "
                                  "--max-error-rate {:.1f}%; {})",
                                  100 * s->error_rate(), load, unit, 100 * o.max_error_rate,
                                  s->first_error);
      go_on = false;
      break;
    }
    if (s->slo_met && !*s->slo_met) {
      r.stop_reason = fmt::format("SLO broken at {} {}", load, unit);
      break;
    }
    if (r.knee_reached && r.knee_index) {
      const SweepStep& k = r.steps[*r.knee_index];
      size_t past = 0;
      for (const auto& x : r.steps) past += x.load > k.load;
      bool clearly = past >= 2 || KneeConfirmed(r);
      if (clearly && s->load > k.load) {
        stopped_past_knee_at = s->load;  // the reason is written once the knee is final
        break;
      }
    }
    if (li + 1 == ladder.size()) r.stop_reason = fmt::format("top of the range ({} {})", load, unit);
  }

  // Refinement: geometric midpoints around the knee until both halves are within refine_ratio.
  // The SLO boundary is refined the same way: between the highest step meeting the SLO and the
  // next step, which misses it.
  while (!r.partial && r.knee_index && steps_run < o.max_steps) {
    std::vector<stats::SweepPoint> pts;
    size_t knee_pos = 0;
    for (size_t j = 0; j < r.knee_steps.size(); ++j) {
      const SweepStep& s = r.steps[r.knee_steps[j]];
      stats::SweepPoint p;
      p.concurrency = s.load;
      p.p99_latency_ns = 1;
      pts.push_back(p);
      if (r.knee_steps[j] == *r.knee_index) knee_pos = j;
    }
    stats::KneeResult k;
    k.knee_index = knee_pos;
    k.reached = r.knee_reached;
    std::vector<double> candidates;
    if (r.knee_reached) candidates = stats::RefineProbes(pts, k, o.refine_ratio);
    if (r.highest_meeting_slo && *r.highest_meeting_slo + 1 < r.steps.size()) {
      double a = r.steps[*r.highest_meeting_slo].load, b = r.steps[*r.highest_meeting_slo + 1].load;
      if (b / a > o.refine_ratio) candidates.push_back(std::sqrt(a * b));
    }
    std::vector<double> probes;
    for (double p : candidates) {
      double v = RoundLoad(p, o.rate_mode);
      if (v < o.lo || v > o.hi || Measured(r.steps, v)) continue;
      if (std::find(probes.begin(), probes.end(), v) == probes.end()) probes.push_back(v);
    }
    if (probes.empty()) break;
    for (double v : probes) {
      if (steps_run >= o.max_steps) break;
      ASSIGN_OR_RETURN(bool cont, measure(v, "refine"));
      if (!cont) break;
    }
  }
  AnalyzeSweep(o, r);
  r.model = runner.model();
  // Refinement moves the knee (16 on the ladder, 19 refined): the reason names the final one,
  // so every line of the output gives the same knee.
  if (stopped_past_knee_at) {
    r.stop_reason =
        r.knee_index && r.knee_reached
            ? fmt::format("clearly past the knee at {} {} (the ladder stopped at {} {})",
                          r.steps[*r.knee_index].load, unit, *stopped_past_knee_at, unit)
            : fmt::format("the ladder stopped at {} {}, past the knee it had then", *stopped_past_knee_at,
                          unit);
  }
  return r;
}

}  // namespace latdoc::loadgen
