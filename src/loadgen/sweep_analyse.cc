// The sweep's analysis (AnalyzeSweep): bends per step, the knee over the steps, the SLO and
// goodput marks, the step-time fit, the server's batch limit, and the knee explained in the
// words of the server the steps' /metrics named. The advice is not made here: it is the rules'
// (rules/sweep_rules.h), read from SweepFactsOf.
#include "loadgen/sweep_analyse.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/units.h"
#include "loadgen/sweep_facts.h"
#include "servermetrics/server_dialect.h"
#include "stats/knee.h"

namespace latdoc::loadgen {

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

namespace {

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

}  // namespace

std::optional<double> BatchOf(const SweepStep& s, bool rate_mode) {
  if (s.server.max_running) {
    return std::max(1.0, rate_mode ? *s.server.max_running : std::min(s.load, *s.server.max_running));
  }
  if (rate_mode) return std::nullopt;
  return s.load;
}

int64_t RoundUpTo(double v, int64_t m) { return int64_t(std::ceil(v / double(m))) * m; }

namespace {

const char* UnitOf(const SweepOptions& o) { return o.rate_mode ? "req/s" : "concurrent"; }

// Bends per step (kFrontEnd against the lowest step whose engine time is known), and the
// points the knee is judged on: the steps with the knee latency, completions and an error
// rate within the budget (their indexes into r.knee_steps).
std::vector<stats::SweepPoint> ClassifySteps(const SweepOptions& o, SweepResult& r) {
  std::vector<stats::SweepPoint> pts;
  const SweepStep* base = nullptr;  // the lowest step the engine's time is known for
  for (size_t i = 0; i < r.steps.size(); ++i) {
    SweepStep& s = r.steps[i];
    ClassifyStep(s, o.rate_mode);
    if (base != nullptr) ClassifyFrontEnd(s, *base, UnitOf(o));
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
  return pts;
}

// The knee, its bracket and the goodput peak over `pts`; the highest step meeting the SLO.
void FindKneeOf(const SweepOptions& o, const std::vector<stats::SweepPoint>& pts, SweepResult& r) {
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
}

// Step-time fit t = a + b * batch over the steps where nothing queued or spilled (least
// squares over (batch, server mean ITL)); and the server's own limit: the running plateau
// while requests queued.
void FitStepTime(const SweepOptions& o, SweepResult& r) {
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
  r.server_max_num_seqs.reset();
  for (const SweepStep& s : r.steps) {
    if (s.bend == Bend::kQueueing && s.server.max_running && *s.server.max_running < s.load)
      r.server_max_num_seqs = std::max(r.server_max_num_seqs.value_or(0),
                                       int(std::lround(*s.server.max_running)));
  }
}

// The step past the knee says which resource bends. The server's queue and KV metrics are
// hard evidence and compute is what remains without them, so when the step that confirmed
// the knee shows queueing or KV pressure and the one in between does not, the true knee lies
// between them (noise put the reported one a step early) and that is what bends.
const SweepStep* StepPastKnee(const SweepResult& r) {
  const SweepStep* past = nullptr;
  for (size_t i : r.knee_steps)
    if (i > *r.knee_index) { past = &r.steps[i]; break; }
  auto hard = [](Bend b) { return b == Bend::kQueueing || b == Bend::kKvCache; };
  if (past && !hard(past->bend) && r.knee_confirmed_by &&
      hard(r.steps[*r.knee_confirmed_by].bend))
    past = &r.steps[*r.knee_confirmed_by];
  return past;
}

// What bends at `past`, in words.
std::string WhatBends(const SweepOptions& o, const SweepResult& r, const SweepStep& past) {
  const char* unit = UnitOf(o);
  std::string what;
  switch (past.bend) {
    case Bend::kQueueing:
      what = fmt::format("queueing past the server's batch limit: running plateaued at {} "
                         "while requests waited",
                         past.server.max_running ? fmt::format("{:.0f}", *past.server.max_running) : "n/a");
      break;
    case Bend::kKvCache: what = "KV cache pressure"; break;
    case Bend::kCompute: {
      what = "compute: each engine step takes longer as the batch grows";
      // With the step times measured: from the lowest step to the one past the knee.
      const SweepStep& lo = r.steps[r.knee_steps.front()];
      auto t0 = lo.server.step_time_ms(), t1 = past.server.step_time_ms();
      if (t0 && t1 && &lo != &past) {
        what += fmt::format(" (engine step {:.2f} ms at {} {} -> {:.2f} ms at {} {})", *t0,
                            lo.load, unit, *t1, past.load, unit);
      }
      if (!o.rate_mode && past.server.max_running &&
          *past.server.max_running >= past.load - 0.5) {
        what += fmt::format(", not the server's batch limit: it ran all {} requests at once",
                            FormatCount(past.load));
      }
      break;
    }
    case Bend::kFrontEnd:
      what = "outside the engine: requests wait in front of it (API server, proxy or network), "
             "not for a batch";
      break;
    case Bend::kNone: what = "server metrics not available to say which resource"; break;
  }
  return what;
}

// r.knee_bend and r.knee_explanation, with a knee found.
void ExplainKnee(const SweepOptions& o, SweepResult& r) {
  const char* unit = UnitOf(o);
  const SweepStep& knee = r.steps[*r.knee_index];
  const std::string kl(KneeLatencyName(o.knee_latency));
  if (!r.knee_reached) {
    r.knee_explanation = fmt::format(
        "no knee up to {} {}: each step still bought at least {:.2g}% more tokens/s per 1% of "
        "p99 {}; raise the top of the range", knee.load, unit, o.min_elasticity, kl);
    return;
  }
  const SweepStep* past = StepPastKnee(r);
  if (!past) return;
  r.knee_bend = past->bend;
  auto lat = [&](const SweepStep& s) {
    auto v = s.KneeP99Ms(o.knee_latency);
    return v ? fmt::format("{:.1f} ms", *v) : std::string("n/a");
  };
  r.knee_explanation = fmt::format(
      "knee at {} {}: from {} to {} {}, tokens/s went {:.0f} -> {:.0f} ({:+.0f}%) while p99 {} "
      "went {} -> {}. Bends: {}{}",
      knee.load, unit, knee.load, past->load, unit, knee.output_tokens_per_s,
      past->output_tokens_per_s,
      knee.output_tokens_per_s > 0 ? 100 * (past->output_tokens_per_s / knee.output_tokens_per_s - 1) : 0,
      kl, lat(knee), lat(*past), WhatBends(o, r, *past),
      past->bend_evidence.empty() ? ""
                                  : fmt::format("; at {} {}: {}", past->load, unit, past->bend_evidence));
}

// The server the steps' /metrics named (its id), or "".
std::string ServerOf(const SweepResult& r) {
  for (const SweepStep& s : r.steps)
    if (!s.server.server.empty()) return s.server.server;
  return "";
}

// The knee's explanation in the words of the server the steps' /metrics named.
void SpeakServerDialect(SweepResult& r) {
  const std::string id = ServerOf(r);
  if (id.empty()) return;
  const servermetrics::ServerKind kind = servermetrics::ServerKindFromId(id);
  if (kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown) return;
  r.knee_explanation = servermetrics::InServerFlags(kind, r.knee_explanation);
}

}  // namespace

// Plan: bends per step; the knee over the steps with an acceptable error rate; a step-time fit
// over the steps where nothing queued; then the knee explained.
void AnalyzeSweep(const SweepOptions& o, SweepResult& r) {
  r.knee_index.reset();
  r.knee_confirmed_by.reset();
  r.knee_steps.clear();
  r.elasticity.clear();
  r.recommendations.clear();
  r.knee_bend = Bend::kNone;
  r.knee_explanation.clear();
  r.low_load_regime.clear();
  r.high_load_regime.clear();
  const std::vector<stats::SweepPoint> pts = ClassifySteps(o, r);
  FindKneeOf(o, pts, r);
  FitStepTime(o, r);
  if (!r.knee_index) {
    r.knee_reached = false;
    if (pts.size() == 1) {
      r.knee_explanation = fmt::format(
          "one step measured ({} {}): a knee is a bend between steps and needs two or more",
          r.steps[r.knee_steps.front()].load, UnitOf(o));
    }
  } else {
    ExplainKnee(o, r);
  }
  SpeakServerDialect(r);
}

SweepFacts SweepFactsOf(const SweepOptions& o, const SweepResult& r) {
  SweepFacts f;
  f.rate_mode = o.rate_mode;
  f.goal = o.goal;
  f.slo_given = o.slo.any();
  f.knee_latency = o.knee_latency;
  f.input_len = o.input_len;
  f.output_len = o.output_len;
  f.server = ServerOf(r);
  f.steps = r.steps;
  f.knee_index = r.knee_index;
  f.knee_reached = r.knee_reached;
  f.knee_steps = r.knee_steps;
  f.knee_bend = r.knee_bend;
  f.highest_meeting_slo = r.highest_meeting_slo;
  f.max_goodput = r.max_goodput;
  f.server_max_num_seqs = r.server_max_num_seqs;
  f.step_base_ms = r.step_base_ms;
  f.step_per_seq_ms = r.step_per_seq_ms;
  return f;
}

}  // namespace latdoc::loadgen
