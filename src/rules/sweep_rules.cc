#include "rules/sweep_rules.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/core.h>

#include "servermetrics/server_dialect.h"

namespace latdoc::rules {
namespace {

using loadgen::BatchOf;
using loadgen::Bend;
using loadgen::Recommendation;
using loadgen::RoundUpTo;
using loadgen::SweepFacts;
using loadgen::SweepGoal;
using loadgen::SweepStep;

const char* Unit(const SweepFacts& f) { return f.rate_mode ? "req/s" : "concurrent"; }

// What the advice at a knee reads: the knee's step, the batch it ran, and where the step-time
// fit a + b x batch says the per-sequence cost equals the fixed cost (a / b).
struct AtKnee {
  const SweepStep& knee;
  std::optional<double> batch;  // BatchOf the knee's step
  std::optional<double> compute_knee;
  std::string latency;          // the knee latency's name ("e2el")
};

AtKnee AtKneeOf(const SweepFacts& f) {
  const SweepStep& knee = f.steps[*f.knee_index];
  std::optional<double> compute_knee;
  if (f.step_base_ms && f.step_per_seq_ms && *f.step_per_seq_ms > 0 && *f.step_base_ms > 0)
    compute_knee = *f.step_base_ms / *f.step_per_seq_ms;
  return AtKnee{knee, BatchOf(knee, f.rate_mode), compute_knee,
                std::string(loadgen::KneeLatencyName(f.knee_latency))};
}

// No knee: one usable step (a knee is a bend between steps), or none.
std::string NoKneeReason(const SweepFacts& f) {
  if (f.knee_steps.size() != 1) {
    return "no step completed requests within the error budget; nothing to recommend";
  }
  return f.slo_given && !f.highest_meeting_slo
             ? fmt::format("no step met the SLO (the lowest, {} {}, missed it): no batch "
                           "size meets it on this server", f.steps.front().load, Unit(f))
             : "one step measured: no knee, nothing to recommend";
}

// The knee is the server's own batch limit (requests queued past a running plateau): raise it
// when the step-time fit and the KV cache say a larger batch still pays, else keep it.
void SeqsAtServerLimit(const SweepFacts& f, const AtKnee& k, Recommendation& seqs) {
  const int limit = *f.server_max_num_seqs;
  const double knee_batch = k.batch.value_or(0);
  const auto& kv = k.knee.server.max_kv_cache_usage;
  std::optional<double> kv_fit;
  if (kv && *kv > 0) kv_fit = 0.9 * knee_batch / *kv;
  double cand = k.compute_knee.value_or(double(limit));
  if (kv_fit) cand = std::min(cand, *kv_fit);
  if (cand > 1.1 * limit) {
    seqs.value = int64_t(std::floor(cand + 1e-6));
    seqs.reason = fmt::format(
        "the knee is the server's own limit (running plateaued at {} while requests queued), not "
        "the GPU: the step time fits {:.2f} ms + {:.3f} ms x batch, so batches up to ~{:.0f} "
        "still amortise the fixed cost{}; raise it to {} and sweep again",
        limit, f.step_base_ms.value_or(0), f.step_per_seq_ms.value_or(0),
        k.compute_knee.value_or(cand),
        kv_fit ? fmt::format(", and the KV cache ({:.0f}% used at batch {:.0f}) fits ~{:.0f}",
                             *kv * 100, knee_batch, *kv_fit)
               : "",
        *seqs.value);
  } else {
    seqs.value = limit;
    seqs.reason = fmt::format(
        "keep {}: requests queue past it, and a larger batch would not pay (step-time knee "
        "~{}, KV fit ~{})", limit,
        k.compute_knee ? fmt::format("{:.0f}", *k.compute_knee) : "n/a",
        kv_fit ? fmt::format("{:.0f}", *kv_fit) : "n/a");
  }
}

// Compute bends at the knee: its batch; with goal throughput, where goodput peaks, else the
// lowest step reaching 95% of the highest tokens/s.
void SeqsAtComputeKnee(const SweepFacts& f, const AtKnee& k, Recommendation& seqs) {
  const double knee_batch = k.batch.value_or(0);
  double pick = knee_batch;
  std::string why = fmt::format(
      "past a batch of {:.0f} the p99 {} grows faster than tokens/s", knee_batch, k.latency);
  if (f.goal == SweepGoal::kThroughput) {
    if (f.max_goodput) {
      pick = BatchOf(f.steps[*f.max_goodput], f.rate_mode).value_or(knee_batch);
      why = fmt::format("goal throughput: goodput peaks at {:.0f} concurrent", pick);
    } else {
      double best = 0;
      for (size_t i : f.knee_steps) best = std::max(best, f.steps[i].output_tokens_per_s);
      for (size_t i : f.knee_steps) {
        if (f.steps[i].output_tokens_per_s >= 0.95 * best) {
          pick = BatchOf(f.steps[i], f.rate_mode).value_or(knee_batch);
          break;
        }
      }
      why = fmt::format("goal throughput: {:.0f} reaches 95% of the highest tokens/s ({:.0f})",
                        pick, best);
    }
  }
  seqs.value = int64_t(std::max(1.0, std::floor(pick)));
  seqs.reason = why + (k.compute_knee ? fmt::format(" (step time {:.2f} ms + {:.3f} ms x batch: "
                                                    "the per-sequence cost equals the fixed cost "
                                                    "at ~{:.0f})",
                                                    *f.step_base_ms, *f.step_per_seq_ms, *k.compute_knee)
                                      : "");
}

// --max-num-seqs at a knee (reached or not), by what bends there.
Recommendation SeqsAtKnee(const SweepFacts& f, const AtKnee& k) {
  Recommendation seqs{"--max-num-seqs", std::nullopt, ""};
  const char* unit = Unit(f);
  const std::optional<double> slo_batch =
      f.highest_meeting_slo ? BatchOf(f.steps[*f.highest_meeting_slo], f.rate_mode) : std::nullopt;
  if (!k.batch && (f.knee_reached || f.slo_given)) {
    seqs.reason = "a request rate is no batch size, and the server's metrics gave no running-requests "
                  "gauge (vllm:num_requests_running) to turn it into one: sweep --concurrency, or "
                  "give --metrics-url";
  } else if (f.knee_bend == Bend::kFrontEnd) {
    seqs.reason = "the engine is not what bends (its own time grew less than half as much as the "
                  "client's latency), so a batch limit would not help: look at the front end (latdoc "
                  "net for the path, latdoc doctor for the API server's CPU)";
  } else if (f.knee_bend == Bend::kQueueing && f.server_max_num_seqs) {
    SeqsAtServerLimit(f, k, seqs);
  } else if (f.knee_bend == Bend::kKvCache) {
    const double knee_batch = k.batch.value_or(0);
    seqs.value = int64_t(std::max(1.0, std::floor(knee_batch)));
    seqs.reason = fmt::format(
        "KV cache fills and requests are preempted past a batch of {:.0f}; cap the batch there "
        "(or give the KV cache more memory: --gpu-memory-utilization, a smaller --max-model-len)",
        knee_batch);
  } else if (f.knee_reached) {
    SeqsAtComputeKnee(f, k, seqs);
  } else if (f.slo_given && slo_batch) {
    seqs.value = int64_t(std::max(1.0, std::floor(*slo_batch)));
    seqs.reason = fmt::format("the SLO breaks before the knee: {} is the highest {} meeting it",
                              *seqs.value, f.rate_mode ? "batch" : "concurrency");
  } else if (f.slo_given) {
    seqs.reason = fmt::format("no step met the SLO (the lowest, {} {}, missed it): no batch size "
                              "meets it on this server", f.steps.front().load, unit);
  } else {
    seqs.reason = fmt::format("the knee was not reached up to {} {}: no limit to recommend yet; "
                              "sweep a wider range", k.knee.load, unit);
  }
  return seqs;
}

// An SLO caps every pick at the highest step meeting it (or says none does).
void CapBySlo(const SweepFacts& f, const AtKnee& k, Recommendation& seqs) {
  if (!seqs.value || !f.slo_given) return;
  if (!f.highest_meeting_slo) {
    seqs.reason += "; no step met the SLO, so no batch size meets it on this server";
    return;
  }
  const double slo_batch =
      BatchOf(f.steps[*f.highest_meeting_slo], f.rate_mode).value_or(k.batch.value_or(0));
  if (slo_batch < double(*seqs.value)) {
    seqs.value = int64_t(std::max(1.0, std::floor(slo_batch)));
    seqs.reason += fmt::format("; capped at {} by the SLO (the highest step meeting it)", *seqs.value);
  }
}

// --max-num-batched-tokens: the token budget per step = the decode tokens of a full batch
// plus the prefill chunk mixed into the same step. A prefill token costs p ms; with a
// latency goal the chunk is sized so that a step carrying it is at most twice the knee's
// step time (ITL of running requests at most doubles while a prompt prefills); with a
// throughput goal, whole prompts of four arrivals fit in one step.
Recommendation TokenBudget(const SweepFacts& f, const AtKnee& k, const Recommendation& seqs) {
  Recommendation tokens{"--max-num-batched-tokens", std::nullopt, ""};
  if (!seqs.value) {
    tokens.reason = "depends on --max-num-seqs, which has no recommendation";
    return tokens;
  }
  const SweepStep& first = f.steps[f.knee_steps.front()];
  std::optional<double> p_ms;
  auto pre = first.server.prefill_mean_ms();
  auto st = first.server.step_time_ms();
  if (pre && st && f.input_len > 0 && *pre > *st) p_ms = (*pre - *st) / f.input_len;
  double batch = double(*seqs.value);
  auto knee_step = k.knee.server.step_time_ms();
  double chunk;
  std::string why;
  if (f.goal == SweepGoal::kLatency && p_ms && knee_step && *p_ms > 0) {
    chunk = *knee_step / *p_ms;
    if (f.input_len > 0) chunk = std::min(chunk, 4.0 * f.input_len);
    why = fmt::format("{:.0f} decode tokens of a full batch + a prefill chunk of ~{:.0f} tokens: "
                      "a prompt token costs ~{:.3f} ms, so the chunk adds at most the {:.2f} ms "
                      "step time at the knee (ITL at most doubles while a prompt prefills)",
                      batch, chunk, *p_ms, *knee_step);
  } else {
    chunk = std::max(2048.0, 4.0 * std::max(1, f.input_len));
    why = fmt::format("{:.0f} decode tokens of a full batch + {:.0f} prefill tokens (whole "
                      "prompts of {} tokens admitted in one step, for TTFT and throughput)",
                      batch, chunk, f.input_len);
  }
  int64_t v = std::max<int64_t>(RoundUpTo(batch + chunk, 256), int64_t(batch));
  if (f.input_len > 0 && !f.slo_given && f.goal == SweepGoal::kThroughput)
    v = std::max<int64_t>(v, 8192);
  tokens.value = v;
  tokens.reason = why + fmt::format(", rounded up to {}", v);
  return tokens;
}

// The two regimes, with this server's numbers.
void Regimes(const SweepFacts& f, const AtKnee& k, SweepAdvice& a) {
  const char* unit = Unit(f);
  const SweepStep& lo = f.steps[f.knee_steps.front()];
  const SweepStep& knee = k.knee;
  auto itl = [](const SweepStep& s) {
    auto v = s.server.step_time_ms() ? s.server.step_time_ms() : s.median_itl_ms;
    return v ? fmt::format("{:.2f} ms", *v) : std::string("n/a");
  };
  a.low_load_regime = fmt::format(
      "low load ({} {}): batches stay small, p99 TTFT {} and ITL {}; keep batches small for "
      "response time",
      lo.load, unit, lo.p99_ttft_ms ? fmt::format("{:.1f} ms", *lo.p99_ttft_ms) : "n/a", itl(lo));
  a.high_load_regime = fmt::format(
      "high load (up to the knee at {} {}): larger batches amortise the fixed step cost{}: "
      "tokens/s {:.0f} -> {:.0f} (x{:.1f}) while ITL went {} -> {}; past the knee latency grows "
      "faster than throughput",
      knee.load, unit,
      f.step_base_ms ? fmt::format(" ({:.2f} ms per step + {:.3f} ms per sequence)",
                                   *f.step_base_ms, f.step_per_seq_ms.value_or(0))
                     : "",
      lo.output_tokens_per_s, knee.output_tokens_per_s,
      lo.output_tokens_per_s > 0 ? knee.output_tokens_per_s / lo.output_tokens_per_s : 0, itl(lo),
      itl(knee));
}

// ---- The advice in the flags of the server the steps' /metrics named ----

// Tokens a request holds in its context: prompt + output, when both are known (else 0).
int PerRequestTokens(const SweepFacts& f) {
  return f.input_len > 0 && f.output_len > 0 ? f.input_len + f.output_len : 0;
}

std::vector<Recommendation> LlamaCppFlags(const SweepFacts& f, const Recommendation& seqs,
                                          const Recommendation& tokens) {
  auto say = [](std::string t) {
    return servermetrics::InServerFlags(servermetrics::ServerKind::kLlamaCpp, std::move(t));
  };
  const int per_request = PerRequestTokens(f);
  std::vector<Recommendation> out;
  out.push_back({"--parallel", seqs.value,
                 say(seqs.reason) + "; -np for short. Keep continuous batching on (the default; "
                                    "--no-cont-batching serves one batch at a time)"});
  Recommendation ctx{"--ctx-size", std::nullopt, ""};
  if (seqs.value && per_request > 0) {
    ctx.value = RoundUpTo(double(*seqs.value) * per_request, 256);
    ctx.reason = fmt::format("-c for short; at least this: llama.cpp splits it across the {} "
                             "slot{}, and each must hold a prompt and its output ({} + {} "
                             "tokens of this workload), rounded up to {}",
                             *seqs.value, *seqs.value == 1 ? "" : "s", f.input_len, f.output_len, *ctx.value);
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
  return out;
}

std::vector<Recommendation> SglangFlags(const Recommendation& seqs, const Recommendation& tokens) {
  auto say = [](std::string t) {
    return servermetrics::InServerFlags(servermetrics::ServerKind::kSglang, std::move(t));
  };
  return {{"--max-running-requests", seqs.value,
           say(seqs.reason) + "; with requests queueing behind shared prefixes, "
                              "--schedule-policy lpm (the default) serves them first, "
                              "fcfs keeps arrival order"},
          {"--chunked-prefill-size", tokens.value, say(tokens.reason)}};
}

// TGI caps the running batch by tokens, not by a count of sequences.
std::vector<Recommendation> TgiFlags(const SweepFacts& f, const Recommendation& seqs,
                                     const Recommendation& tokens) {
  auto say = [](std::string t) {
    return servermetrics::InServerFlags(servermetrics::ServerKind::kTgi, std::move(t));
  };
  const int per_request = PerRequestTokens(f);
  std::vector<Recommendation> out;
  Recommendation total{"--max-batch-total-tokens", std::nullopt, ""};
  if (seqs.value && per_request > 0) {
    total.value = RoundUpTo(double(*seqs.value) * per_request, 256);
    total.reason = fmt::format("a batch of {} requests of {} + {} tokens ({}): {}",
                               *seqs.value, f.input_len, f.output_len, *total.value,
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
  for (const SweepStep& s : f.steps) top = std::max(top, s.load);
  Recommendation conc{"--max-concurrent-requests", std::nullopt, ""};
  if (!f.rate_mode && top > 0) {
    conc.value = int64_t(std::ceil(top));
    conc.reason = fmt::format("the router refuses requests past it (HTTP 429): keep it at or "
                              "above the concurrency you send ({} here)", *conc.value);
  } else {
    conc.reason = "the router refuses requests past it (HTTP 429): keep it above the requests "
                  "in flight";
  }
  out.push_back(conc);
  return out;
}

// The advice (in vLLM's terms) in the flags of the server the steps' /metrics named, and every
// text in its words. vLLM, or no server named: as it is.
void SpeakServerDialect(const SweepFacts& f, SweepAdvice& a) {
  const servermetrics::ServerKind kind = servermetrics::ServerKindFromId(f.server);
  if (f.server.empty() || kind == servermetrics::ServerKind::kVllm ||
      kind == servermetrics::ServerKind::kUnknown)
    return;
  for (std::string* t : {&a.low_load_regime, &a.high_load_regime})
    *t = servermetrics::InServerFlags(kind, *t);
  if (a.recommendations.size() != 2) return;
  const Recommendation seqs = a.recommendations[0], tokens = a.recommendations[1];
  switch (kind) {
    case servermetrics::ServerKind::kLlamaCpp: a.recommendations = LlamaCppFlags(f, seqs, tokens); break;
    case servermetrics::ServerKind::kSglang: a.recommendations = SglangFlags(seqs, tokens); break;
    case servermetrics::ServerKind::kTgi: a.recommendations = TgiFlags(f, seqs, tokens); break;
    case servermetrics::ServerKind::kVllm:
    case servermetrics::ServerKind::kUnknown: break;
  }
}

}  // namespace

SweepAdvice AdviseSweep(const SweepFacts& f) {
  SweepAdvice a;
  if (!f.knee_index) {
    const std::string why = NoKneeReason(f);
    a.recommendations = {{"--max-num-seqs", std::nullopt, why},
                         {"--max-num-batched-tokens", std::nullopt, why}};
    SpeakServerDialect(f, a);
    return a;
  }
  const AtKnee k = AtKneeOf(f);
  Recommendation seqs = SeqsAtKnee(f, k);
  CapBySlo(f, k, seqs);
  Recommendation tokens = TokenBudget(f, k, seqs);
  a.recommendations = {seqs, tokens};
  Regimes(f, k, a);
  SpeakServerDialect(f, a);
  return a;
}

void AddSweepAdvice(const loadgen::SweepOptions& o, loadgen::SweepResult& r) {
  SweepAdvice a = AdviseSweep(loadgen::SweepFactsOf(o, r));
  r.recommendations = std::move(a.recommendations);
  r.low_load_regime = std::move(a.low_load_regime);
  r.high_load_regime = std::move(a.high_load_regime);
}

Finding SweepKneeFinding(const loadgen::SweepResult& r, int target_concurrency, int sweep_max) {
  Finding f;
  f.id = "load.sweep_knee";
  f.layer = Layer::kLoad;
  f.severity = Severity::kInfo;
  if (!r.knee_index || !r.knee_reached) {
    f.title = fmt::format("no latency knee up to {} concurrent requests{}", sweep_max,
                          r.stop_reason.empty() ? "" : " (" + r.stop_reason + ")");
    return f;
  }
  const double knee = r.steps[*r.knee_index].load;
  f.evidence.push_back({"knee_concurrency", knee, "", ""});
  f.evidence.push_back({"target_concurrency", double(target_concurrency), "", ""});
  if (!r.knee_explanation.empty()) f.evidence.push_back({"why", std::nullopt, "", r.knee_explanation});
  std::string flags;
  for (const Recommendation& rec : r.recommendations)
    if (rec.value) flags += fmt::format("{}{} {}", flags.empty() ? "" : " ", rec.flag, *rec.value);
  // The knee is judged on steps about 10% apart: a target within a step of it is at it.
  if (target_concurrency > knee * 1.1) {
    f.severity = Severity::kWarn;
    f.title = fmt::format("the target load ({} concurrent) is past the latency knee at {:g}: "
                          "latency grows there with little more throughput", target_concurrency, knee);
    f.advice = flags.empty() ? fmt::format("Keep concurrency near {:g} per replica.", knee)
                             : fmt::format("{} (the sweep's recommendation)", flags);
  } else {
    f.severity = Severity::kOk;
    f.title = fmt::format("latency knee at {:g} concurrent requests; the target load ({}) is "
                          "at or below it", knee, target_concurrency);
  }
  return f;
}

}  // namespace latdoc::rules
