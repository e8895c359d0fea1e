#include "rules/load_rules.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "servermetrics/server_dialect.h"

namespace latdoc::rules {
namespace {

using loadgen::LoadFacts;
using loadgen::ServerFacts;
using loadgen::TtftSplit;

// A rule's "ok" branch is written `!(fires)`, so that a NaN never fires a rule.

Evidence Ev(std::string name, std::optional<double> v, std::string unit, std::string text = "") {
  return Evidence{std::move(name), v, std::move(unit), std::move(text)};
}

Finding Make(std::string id, Severity sev, std::string title, std::vector<Evidence> ev,
             std::string advice, std::optional<double> share = std::nullopt) {
  Finding f;
  f.id = std::move(id);
  f.layer = Layer::kLoad;
  f.severity = sev;
  f.title = std::move(title);
  f.evidence = std::move(ev);
  f.advice = std::move(advice);
  f.latency_share = share;
  return f;
}

Finding Skip(std::string id, std::string why) {
  return Make(std::move(id), Severity::kSkip, "not checked: " + why, {Ev("reason", {}, "", why)}, "");
}

// "12" or "n/a".
std::string Count(std::optional<double> v) { return v ? fmt::format("{:.0f}", *v) : "n/a"; }

std::optional<double> OptD(const std::optional<int64_t>& v) {
  return v ? std::optional<double>(double(*v)) : std::nullopt;
}
template <typename F>
std::optional<double> StatOf(const std::optional<loadgen::LatencyStats>& s, F get) {
  return s ? get(*s) : std::nullopt;
}

// What the rules read from the target load's facts, looked up once. `load` must outlive the view.
struct LoadView {
  explicit LoadView(const LoadFacts& load_facts) : load(load_facts), srv(load.server) {}

  const LoadFacts& load;
  const ServerFacts& srv;  // "server_metrics"
  const std::optional<TtftSplit>& bd = srv.ttft_breakdown;

  std::optional<double> conc = OptD(load.max_concurrency);
  std::string at = conc ? fmt::format(" at concurrency {:.0f}", *conc) : "";
  double completed = double(load.completed), failed = double(load.failed);
  double sent = completed + failed;

  std::optional<double> e2el = StatOf(load.e2el, [](const auto& s) { return s.mean_ms; });
  double out_tokens = double(load.total_output_tokens);
  double tokens_per_req = completed > 0 ? out_tokens / completed : 0;
  std::optional<double> client_ttft =
      bd ? std::optional<double>(bd->client_ttft_ms)
         : StatOf(load.ttft, [](const auto& s) { return s.mean_ms; });
  std::optional<double> queue = srv.queue_mean_ms;
  std::optional<double> prefill = srv.prefill_mean_ms;
  std::optional<double> net = bd ? bd->network_and_front_end_ms : std::nullopt;
  bool have_server = srv.metrics_available;

  // KV-bound: the cache filled (usage at the threshold, or requests preempted), so requests
  // that wait, wait for KV blocks rather than for a batch slot. The queue time is then the KV
  // cache's doing: load.kv_pressure carries its latency share and load.queueing points there.
  std::optional<double> preempt = srv.preemptions;
  std::optional<double> kv = srv.max_kv_cache_usage;

  std::optional<double> itl_p50 = StatOf(load.itl, [](const auto& s) { return s.median_ms; });
  std::optional<double> itl_p99 = StatOf(load.itl, [](const auto& s) { return s.p99_ms(); });
  std::optional<double> itl_mean = StatOf(load.itl, [](const auto& s) { return s.mean_ms; });
  std::optional<double> itl_p999 = StatOf(load.itl, [](const auto& s) { return s.At(99.9); });
  double itl_samples = std::max(0.0, out_tokens - completed);

  // Requests that waited although the batch never filled (it reached the client's whole
  // concurrency) did not wait for a batch slot: the engine admitted them late.
  std::optional<double> max_running = srv.max_running;
  bool batch_never_full = max_running && conc && *max_running >= *conc - 0.5;

  // The advice is written in vLLM's flags; the server's own replace them at the end.
  servermetrics::ServerKind kind = servermetrics::ServerKindFromId(srv.server.value_or(""));

  bool KvBound(const LoadRuleOptions& o) const {
    return have_server && (kv.value_or(0) >= o.kv_usage_warn || preempt.value_or(0) > 0);
  }

  // Every latency share is a share of the mean end-to-end latency, so findings about TTFT and
  // about ITL rank on one scale.
  std::optional<double> OfE2el(double ms) const {
    if (!e2el || *e2el <= 0) return std::nullopt;
    return std::clamp(ms / *e2el, 0.0, 1.0);
  }
};

// load.failures
Finding FailuresRule(const LoadView& v, const LoadRuleOptions& o) {
  if (!(v.failed > 0))
    return Make("load.failures", Severity::kOk, "no request failed", {Ev("sent", v.sent, "")}, "");
  std::vector<Evidence> ev = {Ev("failed", v.failed, ""), Ev("sent", v.sent, "")};
  std::string reasons;
  bool overload = false, broken = false, slow = false, bad_output = false;
  for (const auto& [k, n] : v.load.failures) {
    ev.push_back(Ev("failed_" + k, double(n), ""));
    reasons += (reasons.empty() ? "" : ", ") + fmt::format("{} {}", n, k);
    overload |= k == "http_status";
    broken |= k == "reset" || k == "cut_short" || k == "stream_error";
    slow |= k == "timeout";
    bad_output |= k == "invalid_output";
  }
  if (!v.load.errors_sample.empty())
    ev.push_back(Ev("first_error", {}, "", v.load.errors_sample[0]));
  std::string advice;
  if (overload) advice += "HTTP errors (429/503 mean overload or a rate limit): lower the offered load, add replicas, or raise the gateway's limits. ";
  if (broken) advice += "Streams reset or cut short: check the server log for crashes or OOM (`latdoc logs`), and proxy or load-balancer idle and response timeouts. ";
  if (slow) advice += "Timeouts: the server is saturated or stalled; `latdoc sweep` shows the load it sustains. ";
  if (bad_output)
    advice += "Invalid output: the model emitted bytes that are not valid UTF-8 and the server "
              "ended those streams with an error event; the model's tokens, not the serving path "
              "(a random-weight or byte-level model cut at max_tokens; llama.cpp builds since "
              "ggml-org/llama.cpp#9210 send U+FFFD instead). ";
  return Make("load.failures",
              v.failed / std::max(1.0, v.sent) > o.failure_fail_rate ? Severity::kFail : Severity::kWarn,
              fmt::format("{:.0f} of {:.0f} requests failed{} ({})", v.failed, v.sent, v.at, reasons), ev,
              advice);
}

// Decode stalls: every running sequence waits at once (a log write, swapping, a slow kernel),
// so a stall shows as inter-token gaps far above the median. A rare long stall can stay under
// the p99 of all gaps yet cost a large part of the decode time, so it is judged two ways: the
// p99 over the median, and the time above the median step (mean - median, a share of the
// mean ITL) when the longest gaps (p99.9) are spikes. The second way needs enough gaps that
// a spiking p99.9 is several stalls, not one slow gap (a canary's 15 gaps, say).
struct StallVerdict {
  std::optional<double> share;  // of the decode time
  bool stalls = false;
  Severity severity = Severity::kOk;
};

StallVerdict JudgeStalls(const LoadView& v, const LoadRuleOptions& o) {
  StallVerdict s;
  if (!(v.itl_p50 && v.itl_p99 && *v.itl_p50 > 0)) return s;
  const double p50 = *v.itl_p50, p99 = *v.itl_p99;
  const double tail = std::max(p99, v.itl_p999.value_or(0));
  const bool spikes = v.itl_samples >= o.itl_stall_min_gaps && tail >= o.itl_spike_ratio * p50 &&
                      tail >= o.itl_spike_min_ms;
  if (v.itl_mean && *v.itl_mean > 0) s.share = std::max(0.0, *v.itl_mean - p50) / *v.itl_mean;
  if (spikes && s.share.value_or(0) >= o.itl_stall_share_fail) {
    s.severity = Severity::kFail;
  } else if ((p99 >= o.itl_spike_ratio * p50 && p99 >= o.itl_spike_min_ms) ||
             (spikes && s.share.value_or(0) >= o.itl_stall_share_warn)) {
    s.severity = Severity::kWarn;
  }
  s.stalls = s.severity >= Severity::kWarn;
  return s;
}

// load.queueing, and the queue time it hands to the rule that causes it: the KV cache's
// (load.kv_pressure) or the decode stalls' (load.itl_stalls), which then carry its share.
struct QueueingResult {
  Finding finding;
  std::optional<double> kv_queue_ms;
  Severity kv_queue_severity = Severity::kOk;
  std::optional<double> stall_queue_ms;  // set: raise the stalls' severity to stall_queue_severity
  Severity stall_queue_severity = Severity::kOk;
};

// The advice of a load.queueing that fires: why requests waited, in vLLM's flags.
std::string QueueAdvice(const LoadView& v, bool kv_bound, bool stalls) {
  if (!kv_bound && v.batch_never_full) {
    return fmt::format(
        "Requests waited although the batch never filled (up to {} running, the client's "
        "whole concurrency): not a batch-slot limit, so raising `--max-num-seqs` will not help. "
        "{}",
        Count(v.max_running),
        stalls ? "The engine stalled and admitted them late: see load.itl_stalls."
               : "The prefill token budget admits them late: raise `--max-num-batched-tokens`, "
                 "or look for stalls in the engine loop (`latdoc logs`, `latdoc trace`).");
  }
  if (kv_bound) {
    return fmt::format(
        "Requests wait because the KV cache is full ({}{}): the batch is limited by KV memory "
        "({} running at most), not by `--max-num-seqs`. Give the cache more room "
        "(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`), "
        "add replicas, or lower the client concurrency.",
        v.kv ? fmt::format("{:.0f}%", *v.kv * 100) : "usage n/a",
        v.preempt.value_or(0) > 0 ? fmt::format(", {:.0f} preemptions", *v.preempt) : "",
        Count(v.max_running));
  }
  return fmt::format(
      "Requests wait for a batch slot: the server ran at most {} sequences while {} waited, "
      "with KV cache to spare ({}). Raise `--max-num-seqs` (and `--max-num-batched-tokens`), "
      "or add replicas; `latdoc sweep --url ...` finds the concurrency where latency climbs.",
      Count(v.max_running), Count(v.srv.max_waiting),
      v.kv ? fmt::format("max usage {:.0f}%", *v.kv * 100) : "usage n/a");
}

QueueingResult QueueingRule(const LoadView& v, const LoadRuleOptions& o, const StallVerdict& stall) {
  QueueingResult r;
  if (!v.have_server || !v.queue || !v.client_ttft) {
    const bool unmeasurable = v.have_server && (v.kind == servermetrics::ServerKind::kLlamaCpp);
    r.finding = Skip("load.queueing",
                     unmeasurable ? fmt::format("queue time is not measurable on {} (it exposes "
                                                "only a gauge of deferred requests)",
                                                servermetrics::ServerKindLabel(v.kind))
                                  : "the server's /metrics gave no queue time");
    return r;
  }
  const double queue = *v.queue, client_ttft = *v.client_ttft;
  const double share = queue / std::max(1e-9, client_ttft);
  std::vector<Evidence> ev = {
      Ev("queue_mean", queue, "ms"), Ev("client_ttft_mean", client_ttft, "ms"),
      Ev("queue_share_of_ttft", share * 100, "%"), Ev("max_running", v.max_running, ""),
      Ev("max_waiting", v.srv.max_waiting, "")};
  if (!(share >= o.queue_share_warn && queue >= o.queue_min_ms)) {
    r.finding = Make("load.queueing", Severity::kOk, fmt::format("queueing is {:.0f}% of TTFT", share * 100), ev,
                     "", v.OfE2el(queue));
    return r;
  }
  const bool kv_bound = v.KvBound(o);
  const Severity queue_severity = share >= o.queue_share_fail ? Severity::kFail : Severity::kWarn;
  // Without KV pressure and with a batch that never filled, the queue is the stalls' doing
  // when there were stalls (load.itl_stalls carries its share), else the prefill budget's.
  const bool stall_bound = !kv_bound && v.batch_never_full && stall.stalls;
  if (kv_bound) {
    r.kv_queue_ms = queue;
    r.kv_queue_severity = queue_severity;
  }
  if (stall_bound) {
    r.stall_queue_ms = queue;
    r.stall_queue_severity = queue_severity;
  }
  r.finding = Make("load.queueing", queue_severity,
                   fmt::format("queueing is {:.0f}% of TTFT{} ({:.1f} of {:.1f} ms){}", share * 100, v.at, queue,
                               client_ttft,
                               kv_bound      ? ", waiting for KV cache (see load.kv_pressure)"
                               : stall_bound ? ", during decode stalls (see load.itl_stalls)"
                                             : ""),
                   ev, QueueAdvice(v, kv_bound, stall.stalls),
                   kv_bound || stall_bound ? std::nullopt : v.OfE2el(queue));
  return r;
}

// load.kv_pressure
Finding KvPressureRule(const LoadView& v, const LoadRuleOptions& o, const QueueingResult& q) {
  if (!v.have_server || (!v.preempt && !v.kv))
    return Skip("load.kv_pressure", "the server's /metrics gave no KV cache usage or preemptions");
  std::vector<Evidence> ev = {Ev("preemptions", v.preempt, ""),
                              Ev("max_kv_cache_usage", v.kv ? std::optional<double>(*v.kv * 100) : std::nullopt, "%")};
  if (q.kv_queue_ms) ev.push_back(Ev("queue_waiting_for_kv_mean", *q.kv_queue_ms, "ms"));
  const bool preempted = v.preempt.value_or(0) > 0;
  if (!(preempted || v.kv.value_or(0) >= o.kv_usage_warn))
    return Make("load.kv_pressure", Severity::kOk, "no preemption; KV cache has room", ev, "");
  // As severe as the queueing it causes: that is what the user waits for.
  const Severity sev = std::max(preempted ? Severity::kFail : Severity::kWarn, q.kv_queue_severity);
  const double kv_pct = v.kv.value_or(0) * 100;
  return Make(
      "load.kv_pressure", sev,
      preempted ? fmt::format("{:.0f} preemptions{}: the KV cache ran out and requests were recomputed", *v.preempt, v.at)
      : q.kv_queue_ms
          ? fmt::format("KV cache {:.0f}% full{}: requests queue {:.1f} ms on average for KV blocks", kv_pct, v.at,
                        *q.kv_queue_ms)
          : fmt::format("KV cache {:.0f}% full{}", kv_pct, v.at),
      ev,
      "Lower `--max-num-seqs` so the running batch fits the KV cache, or give the cache more room: "
      "`--gpu-memory-utilization 0.95`, a shorter `--max-model-len`, `--kv-cache-dtype fp8`, or more "
      "GPUs (`--tensor-parallel-size`).",
      // The queueing it caused (load.queueing), on the mean-E2EL scale.
      q.kv_queue_ms ? v.OfE2el(*q.kv_queue_ms) : std::nullopt);
}

// load.prefill_heavy
std::optional<Finding> PrefillHeavyRule(const LoadView& v, const LoadRuleOptions& o) {
  if (!v.have_server || !v.prefill || !v.client_ttft) return std::nullopt;
  const double prefill = *v.prefill, share = prefill / std::max(1e-9, *v.client_ttft);
  std::vector<Evidence> ev = {Ev("prefill_mean", prefill, "ms"), Ev("prefill_share_of_ttft", share * 100, "%")};
  if (!(share >= o.prefill_share_warn && prefill >= o.prefill_min_ms)) {
    return Make("load.prefill_heavy", Severity::kOk, fmt::format("prefill is {:.0f}% of TTFT", share * 100), ev, "",
                v.OfE2el(prefill));
  }
  return Make("load.prefill_heavy", Severity::kWarn,
              fmt::format("prefill is {:.0f}% of TTFT ({:.1f} ms)", share * 100, prefill), ev,
              "Long prompts dominate TTFT: keep prefix caching on (`--enable-prefix-caching`) and "
              "share prompt prefixes, shorten prompts, or split prefill and decode across instances.",
              v.OfE2el(prefill));
}

// load.network_front_end
std::optional<Finding> NetworkFrontEndRule(const LoadView& v, const LoadRuleOptions& o) {
  if (!v.net || !v.client_ttft) return std::nullopt;
  const double net = *v.net, share = net / std::max(1e-9, *v.client_ttft);
  std::vector<Evidence> ev = {Ev("network_and_front_end", net, "ms"), Ev("share_of_ttft", share * 100, "%")};
  if (!(net >= o.network_min_ms && share >= o.network_share_warn)) {
    return Make("load.network_front_end", Severity::kOk, fmt::format("network and front end add {:.1f} ms", net),
                ev, "", v.OfE2el(net));
  }
  return Make("load.network_front_end", Severity::kWarn,
              fmt::format("{:.1f} ms of TTFT ({:.0f}%) is spent outside the engine: network, "
                          "proxies, TLS or the API front end", net, share * 100),
              ev,
              "Measure the path with `latdoc net --url ...` (RTT, keep-alive, TLS, gateway); "
              "if the network is fast, the API server front end is busy: try "
              "`--api-server-count 2` and keep `--disable-log-requests`.",
              v.OfE2el(net));
}

// load.itl_stalls
std::optional<Finding> ItlStallsRule(const LoadView& v, const LoadRuleOptions& o, const StallVerdict& stall,
                                     const QueueingResult& q) {
  if (!(v.itl_p50 && v.itl_p99 && *v.itl_p50 > 0)) return std::nullopt;
  const double p50 = *v.itl_p50, p99 = *v.itl_p99, ratio = p99 / p50;
  std::vector<Evidence> ev = {Ev("median_itl", p50, "ms"), Ev("p99_itl", p99, "ms"),
                              Ev("p99_over_median", ratio, "x"), Ev("p99.9_itl", v.itl_p999, "ms"),
                              Ev("stall_share_of_decode",
                                 stall.share ? std::optional<double>(*stall.share * 100) : std::nullopt, "%")};
  if (q.stall_queue_ms) ev.push_back(Ev("queue_during_stalls_mean", *q.stall_queue_ms, "ms"));
  if (!stall.stalls)
    return Make("load.itl_stalls", Severity::kOk, fmt::format("p99 ITL is {:.1f}x the median", ratio), ev, "");
  // What the stalls add: mean ITL above the median over every token, and the queueing they
  // caused (load.queueing), on the mean-E2EL scale.
  double added_ms = v.itl_mean ? std::max(0.0, *v.itl_mean - p50) * std::max(0.0, v.tokens_per_req - 1) : 0;
  added_ms += q.stall_queue_ms.value_or(0);
  std::string title =
      ratio >= o.itl_spike_ratio
          ? fmt::format("decode stalls: p99 inter-token latency {:.1f} ms is {:.1f}x the median", p99, ratio)
          : fmt::format("decode stalls: {:.0f}% of the decode time is spent in gaps up to {:.1f} ms "
                        "(median {:.1f} ms)",
                        stall.share.value_or(0) * 100, std::max(p99, v.itl_p999.value_or(0)), p50);
  if (q.stall_queue_ms) title += fmt::format("; requests queued {:.1f} ms behind them", *q.stall_queue_ms);
  const Severity sev = q.stall_queue_ms ? std::max(stall.severity, q.stall_queue_severity) : stall.severity;
  return Make("load.itl_stalls", sev, std::move(title), ev,
              "Something pauses the decode loop now and then: synchronous log writes (drop "
              "`--enable-log-requests`, `--disable-uvicorn-access-log`, `VLLM_LOGGING_LEVEL=INFO`), "
              "preemptions or swapping, or long prefill chunks interleaved with decode (lower "
              "`--max-num-batched-tokens`). `latdoc logs` and `latdoc trace` show which.",
              added_ms > 0 ? v.OfE2el(added_ms) : std::nullopt);
}

// load.itl_growth: the target load's median ITL against the low-load baseline's.
Finding ItlGrowthRule(const LoadFacts* base, const LoadView& v, const LoadRuleOptions& o) {
  const std::optional<double> base_itl =
      base ? StatOf(base->itl, [](const auto& s) { return s.median_ms; }) : std::nullopt;
  if (!(base_itl && v.itl_p50 && *base_itl > 0)) return Skip("load.itl_growth", "no low-load baseline");
  const double ratio = *v.itl_p50 / *base_itl;
  std::vector<Evidence> ev = {Ev("median_itl_baseline", *base_itl, "ms"), Ev("median_itl_load", *v.itl_p50, "ms"),
                              Ev("growth", ratio, "x"), Ev("max_running", v.max_running, "")};
  if (!(ratio >= o.itl_growth_ratio))
    return Make("load.itl_growth", Severity::kOk, fmt::format("ITL grows {:.1f}x under load", ratio), ev, "");
  return Make("load.itl_growth", Severity::kWarn,
              fmt::format("inter-token latency grows {:.1f}x under load ({:.1f} -> {:.1f} ms)", ratio, *base_itl,
                          *v.itl_p50),
              ev,
              "Each engine step slows as the batch grows. If a server thread sits at 100% CPU "
              "(`latdoc doctor --local`), the scheduler is host-bound (Python/GIL): try "
              "`--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`); if the "
              "GPU is busy, cap the batch with `--max-num-seqs` at the knee `latdoc sweep` finds.",
              v.OfE2el((*v.itl_p50 - *base_itl) * std::max(0.0, v.tokens_per_req - 1)));
}

// load.ttft_tail
std::optional<Finding> TtftTailRule(const LoadView& v, const LoadRuleOptions& o) {
  const std::optional<double> ttft_p50 =
      StatOf(v.load.ttft, [](const auto& s) { return s.median_ms; });
  const std::optional<double> ttft_p99 =
      StatOf(v.load.ttft, [](const auto& s) { return s.p99_ms(); });
  if (!(ttft_p50 && ttft_p99 && *ttft_p50 > 0)) return std::nullopt;
  const double ratio = *ttft_p99 / *ttft_p50;
  std::vector<Evidence> ev = {Ev("median_ttft", *ttft_p50, "ms"), Ev("p99_ttft", *ttft_p99, "ms")};
  return Make("load.ttft_tail", ratio >= o.ttft_tail_ratio ? Severity::kWarn : Severity::kOk,
              fmt::format("p99 TTFT is {:.1f}x the median ({:.1f} vs {:.1f} ms)", ratio, *ttft_p99, *ttft_p50), ev,
              ratio >= o.ttft_tail_ratio
                  ? "A few requests wait much longer than most: bursts of arrivals, queueing behind "
                    "long prompts, or stalls. Smooth the arrivals, bound prompt length, or lower "
                    "`--max-num-batched-tokens` so one long prefill does not hold the batch."
                  : "");
}

// load.slo
std::optional<Finding> SloRule(const LoadView& v) {
  if (!v.load.slo) return std::nullopt;
  const loadgen::SloResult& slo = *v.load.slo;
  const bool met = slo.met;
  return Make("load.slo", met ? Severity::kOk : Severity::kFail,
              fmt::format("{:.1f}% of requests met the SLO (target {:.0f}%)", slo.good_percent,
                          slo.target_percent),
              {Ev("good_percent", slo.good_percent, "%")},
              met ? ""
                  : "Fix the findings above first; then `latdoc sweep --slo ...` gives the highest "
                    "concurrency that meets it.");
}

}  // namespace

std::vector<Finding> EvaluateLoadRules(const LoadFacts* base, const LoadFacts* load,
                                       const LoadRuleOptions& o) {
  std::vector<Finding> out;
  if (!load) {
    out.push_back(Skip("load.all", "no load test ran"));
    return out;
  }
  const LoadView v(*load);
  auto add = [&](std::optional<Finding> f) {
    if (f) out.push_back(std::move(*f));
  };
  // Stalls are judged before queueing (a queue behind stalls is theirs), and queueing before
  // the KV cache and the stalls, whose findings carry the queue time they caused.
  const StallVerdict stall = JudgeStalls(v, o);
  out.push_back(FailuresRule(v, o));
  QueueingResult queueing = QueueingRule(v, o, stall);
  out.push_back(std::move(queueing.finding));
  out.push_back(KvPressureRule(v, o, queueing));
  add(PrefillHeavyRule(v, o));
  add(NetworkFrontEndRule(v, o));
  add(ItlStallsRule(v, o, stall, queueing));
  out.push_back(ItlGrowthRule(base, v, o));
  add(TtftTailRule(v, o));
  add(SloRule(v));
  for (Finding& f : out) f.advice = servermetrics::InServerFlags(v.kind, std::move(f.advice));
  return out;
}

}  // namespace latdoc::rules
