#include "rules/load_rules.h"

#include <algorithm>
#include <optional>

#include <fmt/core.h>

#include "servermetrics/server_dialect.h"

namespace latdoc::rules {
namespace {

using nlohmann::ordered_json;

std::optional<double> Num(const ordered_json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

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

}  // namespace

std::vector<Finding> EvaluateLoadRules(const ordered_json& base, const ordered_json& load,
                                       const LoadRuleOptions& o) {
  std::vector<Finding> out;
  if (!load.is_object()) {
    out.push_back(Skip("load.all", "no load test ran"));
    return out;
  }
  const ordered_json empty = ordered_json::object();
  const ordered_json& srv = load.contains("server_metrics") ? load["server_metrics"] : empty;
  const ordered_json& bd = srv.contains("ttft_breakdown") ? srv["ttft_breakdown"] : empty;
  auto conc = Num(load, "max_concurrency");
  std::string at = conc ? fmt::format(" at concurrency {:.0f}", *conc) : "";

  // load.failures
  double completed = Num(load, "completed").value_or(0), failed = Num(load, "failed").value_or(0);
  double sent = completed + failed;
  if (failed > 0) {
    std::vector<Evidence> ev = {Ev("failed", failed, ""), Ev("sent", sent, "")};
    std::string reasons;
    bool overload = false, broken = false, slow = false, bad_output = false;
    if (load.contains("failures") && load["failures"].is_object()) {
      for (const auto& [k, v] : load["failures"].items()) {
        ev.push_back(Ev("failed_" + k, v.get<double>(), ""));
        reasons += (reasons.empty() ? "" : ", ") + fmt::format("{} {}", v.get<int>(), k);
        overload |= k == "http_status";
        broken |= k == "reset" || k == "cut_short" || k == "stream_error";
        slow |= k == "timeout";
        bad_output |= k == "invalid_output";
      }
    }
    if (load.contains("errors_sample") && load["errors_sample"].is_array() &&
        !load["errors_sample"].empty())
      ev.push_back(Ev("first_error", {}, "", load["errors_sample"][0].get<std::string>()));
    std::string advice;
    if (overload) advice += "HTTP errors (429/503 mean overload or a rate limit): lower the offered load, add replicas, or raise the gateway's limits. ";
    if (broken) advice += "Streams reset or cut short: check the server log for crashes or OOM (`latdoc logs`), and proxy or load-balancer idle and response timeouts. ";
    if (slow) advice += "Timeouts: the server is saturated or stalled; `latdoc sweep` shows the load it sustains. ";
    if (bad_output)
      advice += "Invalid output: the model emitted bytes that are not valid UTF-8 and the server "
                "ended those streams with an error event; the model's tokens, not the serving path "
                "(a random-weight or byte-level model cut at max_tokens; llama.cpp builds since "
                "ggml-org/llama.cpp#9210 send U+FFFD instead). ";
    out.push_back(Make("load.failures",
                       failed / std::max(1.0, sent) > o.failure_fail_rate ? Severity::kFail : Severity::kWarn,
                       fmt::format("{:.0f} of {:.0f} requests failed{} ({})", failed, sent, at, reasons),
                       ev, advice));
  } else {
    out.push_back(Make("load.failures", Severity::kOk, "no request failed", {Ev("sent", sent, "")}, ""));
  }

  // Every latency share is a share of the mean end-to-end latency, so findings about TTFT and
  // about ITL rank on one scale.
  auto e2el = Num(load, "mean_e2el_ms");
  auto out_tokens = Num(load, "total_output_tokens");
  double tokens_per_req = out_tokens && completed > 0 ? *out_tokens / completed : 0;
  auto of_e2el = [&](double ms) -> std::optional<double> {
    if (!e2el || *e2el <= 0) return std::nullopt;
    return std::clamp(ms / *e2el, 0.0, 1.0);
  };
  auto client_ttft = Num(bd, "client_ttft_ms");
  if (!client_ttft) client_ttft = Num(load, "mean_ttft_ms");
  auto queue = Num(srv, "queue_mean_ms");
  auto prefill = Num(srv, "prefill_mean_ms");
  auto net = Num(bd, "network_and_front_end_ms");
  bool have_server = srv.value("metrics_available", false);

  // KV-bound: the cache filled (usage at the threshold, or requests preempted), so requests
  // that wait, wait for KV blocks rather than for a batch slot. The queue time is then the KV
  // cache's doing: load.kv_pressure carries its latency share and load.queueing points there.
  auto preempt = Num(srv, "preemptions");
  auto kv = Num(srv, "max_kv_cache_usage");
  const bool kv_bound = have_server && (kv.value_or(0) >= o.kv_usage_warn || preempt.value_or(0) > 0);
  std::optional<double> kv_queue_ms;
  Severity kv_queue_severity = Severity::kOk;

  // Decode stalls: every running sequence waits at once (a log write, swapping, a slow kernel),
  // so a stall shows as inter-token gaps far above the median. A rare long stall can stay under
  // the p99 of all gaps yet cost a large part of the decode time, so it is judged two ways: the
  // p99 over the median, and the time above the median step (mean - median, a share of the
  // mean ITL) when the longest gaps (p99.9) are spikes. The second way needs enough gaps that
  // a spiking p99.9 is several stalls, not one slow gap (a canary's 15 gaps, say).
  auto itl_p50 = Num(load, "median_itl_ms"), itl_p99 = Num(load, "p99_itl_ms");
  auto itl_mean = Num(load, "mean_itl_ms"), itl_p999 = Num(load, "p99.9_itl_ms");
  const double itl_samples = out_tokens ? std::max(0.0, *out_tokens - completed) : 0;
  std::optional<double> stall_share;  // of the decode time
  bool stalls = false;
  Severity stall_severity = Severity::kOk;
  if (itl_p50 && itl_p99 && *itl_p50 > 0) {
    const double tail = std::max(*itl_p99, itl_p999.value_or(0));
    const bool spikes = itl_samples >= o.itl_stall_min_gaps && tail >= o.itl_spike_ratio * *itl_p50 &&
                        tail >= o.itl_spike_min_ms;
    if (itl_mean && *itl_mean > 0) stall_share = std::max(0.0, *itl_mean - *itl_p50) / *itl_mean;
    if (spikes && stall_share.value_or(0) >= o.itl_stall_share_fail) {
      stall_severity = Severity::kFail;
    } else if ((*itl_p99 >= o.itl_spike_ratio * *itl_p50 && *itl_p99 >= o.itl_spike_min_ms) ||
               (spikes && stall_share.value_or(0) >= o.itl_stall_share_warn)) {
      stall_severity = Severity::kWarn;
    }
    stalls = stall_severity >= Severity::kWarn;
  }
  // Requests that waited although the batch never filled (it reached the client's whole
  // concurrency) did not wait for a batch slot: the engine admitted them late.
  auto max_running = Num(srv, "max_running");
  const bool batch_never_full = max_running && conc && *max_running >= *conc - 0.5;
  std::optional<double> stall_queue_ms;

  // load.queueing
  // The advice below is written in vLLM's flags; the server's own replace them at the end.
  const servermetrics::ServerKind kind = servermetrics::ServerKindFromId(
      srv.contains("server") && srv["server"].is_string() ? srv["server"].get<std::string>() : "");
  if (!have_server || !queue || !client_ttft) {
    const bool unmeasurable = have_server && (kind == servermetrics::ServerKind::kLlamaCpp);
    out.push_back(Skip("load.queueing",
                       unmeasurable ? fmt::format("queue time is not measurable on {} (it exposes "
                                                  "only a gauge of deferred requests)",
                                                  servermetrics::ServerKindLabel(kind))
                                    : "the server's /metrics gave no queue time"));
  } else {
    double share = *queue / std::max(1e-9, *client_ttft);
    auto running = Num(srv, "max_running"), waiting = Num(srv, "max_waiting");
    std::vector<Evidence> ev = {Ev("queue_mean", *queue, "ms"), Ev("client_ttft_mean", *client_ttft, "ms"),
                                Ev("queue_share_of_ttft", share * 100, "%"),
                                Ev("max_running", running, ""), Ev("max_waiting", waiting, "")};
    if (share >= o.queue_share_warn && *queue >= o.queue_min_ms) {
      auto kv_max = Num(srv, "max_kv_cache_usage");
      std::string advice;
      if (kv_bound) {
        advice = fmt::format(
            "Requests wait because the KV cache is full ({}{}): the batch is limited by KV memory "
            "({} running at most), not by `--max-num-seqs`. Give the cache more room "
            "(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`), "
            "add replicas, or lower the client concurrency.",
            kv_max ? fmt::format("{:.0f}%", *kv_max * 100) : "usage n/a",
            preempt.value_or(0) > 0 ? fmt::format(", {:.0f} preemptions", *preempt) : "",
            running ? fmt::format("{:.0f}", *running) : "n/a");
      } else {
        advice = fmt::format(
            "Requests wait for a batch slot: the server ran at most {} sequences while {} waited, "
            "with KV cache to spare ({}). Raise `--max-num-seqs` (and `--max-num-batched-tokens`), "
            "or add replicas; `latdoc sweep --url ...` finds the concurrency where latency climbs.",
            running ? fmt::format("{:.0f}", *running) : "n/a",
            waiting ? fmt::format("{:.0f}", *waiting) : "n/a",
            kv_max ? fmt::format("max usage {:.0f}%", *kv_max * 100) : "usage n/a");
      }
      const Severity queue_severity = share >= o.queue_share_fail ? Severity::kFail : Severity::kWarn;
      // Without KV pressure and with a batch that never filled, the queue is the stalls' doing
      // when there were stalls (load.itl_stalls carries its share), else the prefill budget's.
      const bool stall_bound = !kv_bound && batch_never_full && stalls;
      if (!kv_bound && batch_never_full) {
        advice = fmt::format(
            "Requests waited although the batch never filled (up to {} running, the client's "
            "whole concurrency): not a batch-slot limit, so raising `--max-num-seqs` will not help. "
            "{}",
            running ? fmt::format("{:.0f}", *running) : "n/a",
            stalls ? "The engine stalled and admitted them late: see load.itl_stalls."
                   : "The prefill token budget admits them late: raise `--max-num-batched-tokens`, "
                     "or look for stalls in the engine loop (`latdoc logs`, `latdoc trace`).");
      }
      if (kv_bound) {
        kv_queue_ms = *queue;
        kv_queue_severity = queue_severity;
      }
      if (stall_bound) {
        stall_queue_ms = *queue;
        stall_severity = std::max(stall_severity, queue_severity);
      }
      out.push_back(Make("load.queueing", queue_severity,
                         fmt::format("queueing is {:.0f}% of TTFT{} ({:.1f} of {:.1f} ms){}", share * 100, at,
                                     *queue, *client_ttft,
                                     kv_bound      ? ", waiting for KV cache (see load.kv_pressure)"
                                     : stall_bound ? ", during decode stalls (see load.itl_stalls)"
                                                   : ""),
                         ev, advice, kv_bound || stall_bound ? std::nullopt : of_e2el(*queue)));
    } else {
      out.push_back(Make("load.queueing", Severity::kOk,
                         fmt::format("queueing is {:.0f}% of TTFT", share * 100), ev, "", of_e2el(*queue)));
    }
  }

  // load.kv_pressure
  if (!have_server || (!preempt && !kv)) {
    out.push_back(Skip("load.kv_pressure", "the server's /metrics gave no KV cache usage or preemptions"));
  } else {
    std::vector<Evidence> ev = {Ev("preemptions", preempt, ""),
                                Ev("max_kv_cache_usage", kv ? std::optional<double>(*kv * 100) : std::nullopt, "%")};
    if (kv_queue_ms) ev.push_back(Ev("queue_waiting_for_kv_mean", *kv_queue_ms, "ms"));
    if (preempt.value_or(0) > 0 || kv.value_or(0) >= o.kv_usage_warn) {
      // As severe as the queueing it causes: that is what the user waits for.
      Severity sev = preempt.value_or(0) > 0 ? Severity::kFail : Severity::kWarn;
      sev = std::max(sev, kv_queue_severity);
      out.push_back(Make(
          "load.kv_pressure", sev,
          preempt.value_or(0) > 0
              ? fmt::format("{:.0f} preemptions{}: the KV cache ran out and requests were recomputed", *preempt, at)
              : kv_queue_ms
                    ? fmt::format("KV cache {:.0f}% full{}: requests queue {:.1f} ms on average for KV blocks",
                                  kv.value_or(0) * 100, at, *kv_queue_ms)
                    : fmt::format("KV cache {:.0f}% full{}", kv.value_or(0) * 100, at),
          ev,
          "Lower `--max-num-seqs` so the running batch fits the KV cache, or give the cache more room: "
          "`--gpu-memory-utilization 0.95`, a shorter `--max-model-len`, `--kv-cache-dtype fp8`, or more "
          "GPUs (`--tensor-parallel-size`).",
          // The queueing it caused (load.queueing), on the mean-E2EL scale.
          kv_queue_ms ? of_e2el(*kv_queue_ms) : std::nullopt));
    } else {
      out.push_back(Make("load.kv_pressure", Severity::kOk, "no preemption; KV cache has room", ev, ""));
    }
  }

  // load.prefill_heavy
  if (have_server && prefill && client_ttft) {
    double share = *prefill / std::max(1e-9, *client_ttft);
    std::vector<Evidence> ev = {Ev("prefill_mean", *prefill, "ms"), Ev("prefill_share_of_ttft", share * 100, "%")};
    if (share >= o.prefill_share_warn && *prefill >= o.prefill_min_ms) {
      out.push_back(Make("load.prefill_heavy", Severity::kWarn,
                         fmt::format("prefill is {:.0f}% of TTFT ({:.1f} ms)", share * 100, *prefill), ev,
                         "Long prompts dominate TTFT: keep prefix caching on (`--enable-prefix-caching`) and "
                         "share prompt prefixes, shorten prompts, or split prefill and decode across instances.",
                         of_e2el(*prefill)));
    } else {
      out.push_back(Make("load.prefill_heavy", Severity::kOk,
                         fmt::format("prefill is {:.0f}% of TTFT", share * 100), ev, "", of_e2el(*prefill)));
    }
  }

  // load.network_front_end
  if (net && client_ttft) {
    double share = *net / std::max(1e-9, *client_ttft);
    std::vector<Evidence> ev = {Ev("network_and_front_end", *net, "ms"), Ev("share_of_ttft", share * 100, "%")};
    if (*net >= o.network_min_ms && share >= o.network_share_warn) {
      out.push_back(Make("load.network_front_end", Severity::kWarn,
                         fmt::format("{:.1f} ms of TTFT ({:.0f}%) is spent outside the engine: network, "
                                     "proxies, TLS or the API front end", *net, share * 100),
                         ev,
                         "Measure the path with `latdoc net --url ...` (RTT, keep-alive, TLS, gateway); "
                         "if the network is fast, the API server front end is busy: try "
                         "`--api-server-count 2` and keep `--disable-log-requests`.",
                         of_e2el(*net)));
    } else {
      out.push_back(Make("load.network_front_end", Severity::kOk,
                         fmt::format("network and front end add {:.1f} ms", *net), ev, "", of_e2el(*net)));
    }
  }

  // load.itl_stalls
  if (itl_p50 && itl_p99 && *itl_p50 > 0) {
    double ratio = *itl_p99 / *itl_p50;
    std::vector<Evidence> ev = {Ev("median_itl", *itl_p50, "ms"), Ev("p99_itl", *itl_p99, "ms"),
                                Ev("p99_over_median", ratio, "x"), Ev("p99.9_itl", itl_p999, "ms"),
                                Ev("stall_share_of_decode", stall_share ? std::optional<double>(*stall_share * 100)
                                                                        : std::nullopt, "%")};
    if (stall_queue_ms) ev.push_back(Ev("queue_during_stalls_mean", *stall_queue_ms, "ms"));
    if (stalls) {
      // What the stalls add: mean ITL above the median over every token, and the queueing they
      // caused (load.queueing), on the mean-E2EL scale.
      double added_ms = itl_mean ? std::max(0.0, *itl_mean - *itl_p50) * std::max(0.0, tokens_per_req - 1) : 0;
      added_ms += stall_queue_ms.value_or(0);
      std::string title =
          ratio >= o.itl_spike_ratio
              ? fmt::format("decode stalls: p99 inter-token latency {:.1f} ms is {:.1f}x the median", *itl_p99, ratio)
              : fmt::format("decode stalls: {:.0f}% of the decode time is spent in gaps up to {:.1f} ms "
                            "(median {:.1f} ms)",
                            stall_share.value_or(0) * 100, std::max(*itl_p99, itl_p999.value_or(0)), *itl_p50);
      if (stall_queue_ms) title += fmt::format("; requests queued {:.1f} ms behind them", *stall_queue_ms);
      out.push_back(Make("load.itl_stalls", stall_severity, std::move(title), ev,
                         "Something pauses the decode loop now and then: synchronous log writes (drop "
                         "`--enable-log-requests`, `--disable-uvicorn-access-log`, `VLLM_LOGGING_LEVEL=INFO`), "
                         "preemptions or swapping, or long prefill chunks interleaved with decode (lower "
                         "`--max-num-batched-tokens`). `latdoc logs` and `latdoc trace` show which.",
                         added_ms > 0 ? of_e2el(added_ms) : std::nullopt));
    } else {
      out.push_back(Make("load.itl_stalls", Severity::kOk,
                         fmt::format("p99 ITL is {:.1f}x the median", ratio), ev, ""));
    }
  }

  // load.itl_growth
  auto base_itl = Num(base, "median_itl_ms");
  if (base_itl && itl_p50 && *base_itl > 0) {
    double ratio = *itl_p50 / *base_itl;
    std::vector<Evidence> ev = {Ev("median_itl_baseline", *base_itl, "ms"), Ev("median_itl_load", *itl_p50, "ms"),
                                Ev("growth", ratio, "x"), Ev("max_running", Num(srv, "max_running"), "")};
    if (ratio >= o.itl_growth_ratio) {
      out.push_back(Make("load.itl_growth", Severity::kWarn,
                         fmt::format("inter-token latency grows {:.1f}x under load ({:.1f} -> {:.1f} ms)",
                                     ratio, *base_itl, *itl_p50),
                         ev,
                         "Each engine step slows as the batch grows. If a server thread sits at 100% CPU "
                         "(`latdoc doctor --local`), the scheduler is host-bound (Python/GIL): try "
                         "`--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`); if the "
                         "GPU is busy, cap the batch with `--max-num-seqs` at the knee `latdoc sweep` finds.",
                         of_e2el((*itl_p50 - *base_itl) * std::max(0.0, tokens_per_req - 1))));
    } else {
      out.push_back(Make("load.itl_growth", Severity::kOk,
                         fmt::format("ITL grows {:.1f}x under load", ratio), ev, ""));
    }
  } else {
    out.push_back(Skip("load.itl_growth", "no low-load baseline"));
  }

  // load.ttft_tail
  auto ttft_p50 = Num(load, "median_ttft_ms"), ttft_p99 = Num(load, "p99_ttft_ms");
  if (ttft_p50 && ttft_p99 && *ttft_p50 > 0) {
    double ratio = *ttft_p99 / *ttft_p50;
    std::vector<Evidence> ev = {Ev("median_ttft", *ttft_p50, "ms"), Ev("p99_ttft", *ttft_p99, "ms")};
    out.push_back(Make("load.ttft_tail", ratio >= o.ttft_tail_ratio ? Severity::kWarn : Severity::kOk,
                       fmt::format("p99 TTFT is {:.1f}x the median ({:.1f} vs {:.1f} ms)", ratio, *ttft_p99, *ttft_p50),
                       ev,
                       ratio >= o.ttft_tail_ratio
                           ? "A few requests wait much longer than most: bursts of arrivals, queueing behind "
                             "long prompts, or stalls. Smooth the arrivals, bound prompt length, or lower "
                             "`--max-num-batched-tokens` so one long prefill does not hold the batch."
                           : ""));
  }

  // load.slo
  if (load.contains("slo") && load["slo"].is_object()) {
    bool met = load["slo"].value("met", true);
    out.push_back(Make("load.slo", met ? Severity::kOk : Severity::kFail,
                       fmt::format("{:.1f}% of requests met the SLO (target {:.0f}%)",
                                   load["slo"].value("good_percent", 0.0), load["slo"].value("target_percent", 99.0)),
                       {Ev("good_percent", load["slo"].value("good_percent", 0.0), "%")},
                       met ? "" : "Fix the findings above first; then `latdoc sweep --slo ...` gives the highest concurrency that meets it."));
  }
  for (Finding& f : out) f.advice = servermetrics::InServerFlags(kind, std::move(f.advice));
  return out;
}

}  // namespace latdoc::rules
