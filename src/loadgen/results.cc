#include "loadgen/results.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <span>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "base/units.h"
#include "base/secrets.h"
#include "http/client.h"
#include "loadgen/validation.h"
#include "servermetrics/metric_names.h"
#include "servermetrics/server_dialect.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;

StatusOr<SloSpec> ParseSlo(std::string_view text) {
  SloSpec s;
  for (std::string_view part : Split(text, ',')) {
    part = Trim(part);
    if (part.empty()) continue;
    auto colon = part.find(':');
    if (colon == std::string_view::npos)
      return InvalidArgument(fmt::format("--slo: '{}': expected KEY:MS (ttft, tpot, e2el)", part));
    std::string key(Trim(part.substr(0, colon)));
    auto v = ParseDouble(part.substr(colon + 1));
    if (!v || !std::isfinite(*v) || *v <= 0) {
      return InvalidArgument(fmt::format("--slo: '{}': expected a finite number above 0", part));
    }
    if (key == "percent" && *v > 100) {
      return InvalidArgument(fmt::format("--slo: '{}': a percent of requests is at most 100", part));
    }
    if (key == "ttft") s.ttft_ms = *v;
    else if (key == "tpot") s.tpot_ms = *v;
    else if (key == "e2el") s.e2el_ms = *v;
    else if (key == "percent") s.percent = *v;
    else return InvalidArgument(fmt::format("--slo: unknown key '{}' (ttft, tpot, e2el, percent)", key));
  }
  // A share of requests with no bound to meet would judge nothing, silently.
  if (!s.any() && text.find("percent") != std::string_view::npos) {
    return InvalidArgument("--slo: 'percent' needs a bound to meet (ttft:MS, tpot:MS or e2el:MS)");
  }
  return s;
}

namespace {

struct PerRequest {
  int64_t ttft_ns, e2el_ns;
  std::optional<int64_t> tpot_ns;
};

// `o`: the metrics and percentiles the user chose (--percentile-metrics, --metric-percentiles);
// null for latdoc's own statistics, which always have the default ones.
void PutStats(ordered_json& j, std::string_view metric, const std::vector<int64_t>& ns,
              const BenchOptions* o = nullptr) {
  if (o && !o->summary_metrics.empty() &&
      std::find(o->summary_metrics.begin(), o->summary_metrics.end(), metric) == o->summary_metrics.end())
    return;
  const std::span<const double> percentiles = !o || o->summary_percentiles.empty()
                                                  ? stats::kDefaultPercentiles
                                                  : std::span<const double>(o->summary_percentiles);
  for (const auto& st : stats::VllmStatKeys(metric, ns, percentiles)) {
    if (st.value_ms) j[st.key] = *st.value_ms;
    else j[st.key] = nullptr;
  }
}

std::optional<double> Ms(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return *seconds * 1e3;
}

ordered_json Opt(std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

// A chunk of k tokens counts k inter-token latencies of gap / k.
void AddItls(const RequestRecord& r, std::vector<int64_t>& itls) {
  for (size_t i = 1; i < r.chunks.size(); ++i) {
    int64_t gap = r.chunks[i].first - r.chunks[i - 1].first;
    int k = std::max(1, r.chunks[i].second);
    for (int t = 0; t < k; ++t) itls.push_back(gap / k);
  }
}

// A failure reason as the one-line report says it: "cut short", "HTTP error".
std::string ReasonWords(const std::string& outcome) {
  if (outcome == "http_status") return "HTTP error";
  std::string w = outcome;
  std::replace(w.begin(), w.end(), '_', ' ');
  return w;
}

// A percentage with one decimal, or as many more (up to 6) as it takes not to print
// `fraction` equal to `other` when they differ ("10.004% > 10%", not "10.0% > 10%").
std::string Percent(double fraction, double other) {
  std::string a;
  for (int digits = 1; digits <= 6; ++digits) {
    a = fmt::format("{:.{}f}", 100 * fraction, digits);
    if (fraction == other || a != fmt::format("{:.{}f}", 100 * other, digits)) break;
  }
  return a + "%";
}

}  // namespace

std::string SloMissText(const SloSpec& slo, double good_percent) {
  std::string bounds;
  auto add = [&](const char* key, const std::optional<double>& ms) {
    if (ms) bounds += fmt::format("{}{}<={:g} ms", bounds.empty() ? "" : ", ", key, *ms);
  };
  add("ttft", slo.ttft_ms);
  add("tpot", slo.tpot_ms);
  add("e2el", slo.e2el_ms);
  return fmt::format("SLO missed: {} of requests met {} (needed {:g}%)",
                     Percent(good_percent / 100, slo.percent / 100), bounds, slo.percent);
}

std::string FailureTally::Text(std::string_view noun) const {
  // The commonest reason first (then by name, for a stable line).
  std::vector<std::pair<std::string, uint64_t>> sorted(by_reason.begin(), by_reason.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string reasons;
  for (const auto& [k, n] : sorted)
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", n, ReasonWords(k));
  return fmt::format("{} of {} {} failed ({})", failed, requests, noun, reasons);
}

void FailureTally::Add(const FailureTally& o) {
  requests += o.requests;
  failed += o.failed;
  cancelled += o.cancelled;
  for (const auto& [k, n] : o.by_reason) by_reason[k] += n;
  if (first_error.empty()) first_error = o.first_error;
}

namespace {
// A stream cut by the stop is sampled as "cancelled" (or "cancelled: why"): the user's doing, so
// never the first error said of the server.
bool IsCancelledSample(std::string_view text) {
  const std::string_view cancelled = OutcomeName(Outcome::kCancelled);
  return text.substr(0, cancelled.size()) == cancelled &&
         (text.size() == cancelled.size() || text[cancelled.size()] == ':');
}
}  // namespace

FailureTally TallyFailures(const std::map<std::string, uint64_t>& failures, uint64_t sent) {
  FailureTally t;
  for (const auto& [k, n] : failures) {
    if (k == OutcomeName(Outcome::kCancelled)) {
      t.cancelled += n;
      continue;
    }
    t.failed += n;
    t.by_reason[k] += n;
  }
  t.requests = sent >= t.cancelled ? sent - t.cancelled : 0;
  return t;
}

FailureTally TallyFailures(const ordered_json& j) {
  std::map<std::string, uint64_t> failures;
  if (j.is_object() && j.contains("failures") && j["failures"].is_object()) {
    for (const auto& [k, v] : j["failures"].items())
      if (v.is_number_unsigned()) failures[k] = v.get<uint64_t>();
  }
  uint64_t sent = 0;
  if (j.is_object() && j.contains("sent") && j["sent"].is_number_unsigned()) sent = j["sent"].get<uint64_t>();
  FailureTally t = TallyFailures(failures, sent);
  if (j.is_object() && j.contains("errors_sample") && j["errors_sample"].is_array()) {
    for (const auto& e : j["errors_sample"]) {
      if (!e.is_string() || IsCancelledSample(e.get_ref<const std::string&>())) continue;
      t.first_error = e.get<std::string>();
      break;
    }
  }
  return t;
}

std::string ErrorRateMissText(double rate, double max_rate) {
  return fmt::format("error rate {} > --max-error-rate {:g}%", Percent(rate, max_rate), 100 * max_rate);
}

BenchSummary SummarizeRun(const BenchRun& run, const BenchOptions& o, const ResultOptions& ro) {
  BenchSummary out;
  std::vector<int64_t> ttfts, tpots, itls, e2els, queue_ns;
  std::map<std::string, uint64_t> failures;
  std::map<std::string, uint64_t> methods;
  uint64_t completed = 0, failed = 0, mismatches = 0, good = 0;
  // Requests still queued on this side when the run was stopped never reached the server: not
  // failures (they would trip --max-error-rate on every Ctrl-C), not sent.
  uint64_t not_sent = 0;
  int64_t in_tokens = 0, out_tokens = 0;
  std::vector<std::string> first_errors;
  for (const RequestRecord& r : run.records) {
    if (r.outcome == Outcome::kCancelled && r.sent_ns < 0) {
      ++not_sent;
      continue;
    }
    if (r.outcome != Outcome::kOk) {
      ++failed;
      ++failures[std::string(OutcomeName(r.outcome))];
      if (first_errors.size() < 5) {
        // "cancelled", not "cancelled: cancelled": the error adds nothing when it is the name.
        const std::string_view name = OutcomeName(r.outcome);
        first_errors.push_back(r.error.empty() || r.error == name ? std::string(name)
                                                                  : fmt::format("{}: {}", name, r.error));
      }
      if (r.outcome == Outcome::kCancelled && r.first_token_ns >= 0) {
        // Cut by the stop after its first token: its TTFT and inter-token latencies were
        // measured all the same; its E2EL and TPOT were not (the stream did not end).
        ttfts.push_back(r.first_token_ns - r.scheduled_ns);
        AddItls(r, itls);
      }
      continue;
    }
    ++completed;
    ++methods[std::string(TokenMethodName(r.method))];
    mismatches += r.count_mismatch;
    in_tokens += r.prompt_tokens;
    out_tokens += r.output_tokens;
    int64_t start = r.scheduled_ns;  // open loop: latency from the scheduled time
    int64_t ttft = r.first_token_ns - start;
    int64_t e2el = r.last_token_ns - start;
    ttfts.push_back(ttft);
    e2els.push_back(e2el);
    if (r.sent_ns >= 0) queue_ns.push_back(r.sent_ns - r.scheduled_ns);
    std::optional<int64_t> tpot;
    if (r.output_tokens > 1) {
      tpot = (e2el - ttft) / (r.output_tokens - 1);
      tpots.push_back(*tpot);
    }
    AddItls(r, itls);
    bool ok = true;
    // A TTFT SLO is judged on the first visible answer token (docs/workloads.md): a reasoning
    // model's first reasoning token is not an answer; a stream with no answer misses it.
    // (A record that says nothing of its kinds, e.g. read back from a shard, is all answer.)
    const int64_t answer_ns = r.first_answer_ns >= 0 ? r.first_answer_ns
                              : r.reasoning_tokens > 0 ? -1 : r.first_token_ns;
    if (ro.slo.ttft_ms && (answer_ns < 0 || NsToMs(answer_ns - start) > *ro.slo.ttft_ms)) ok = false;
    if (ro.slo.tpot_ms && NsToMs(tpot.value_or(0)) > *ro.slo.tpot_ms) ok = false;
    if (ro.slo.e2el_ms && NsToMs(e2el) > *ro.slo.e2el_ms) ok = false;
    good += ok;
  }
  double dur_s = std::max(1e-9, NsToSec(run.end_ns - run.start_ns));

  ordered_json& j = out.json;
  j["schema"] = "latdoc.bench/1";
  char date[32];
  time_t now = ::time(nullptr);
  tm lt;
  localtime_r(&now, &lt);
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", &lt);
  j["date"] = date;
  j["endpoint_type"] = o.endpoint == Endpoint::kChat ? "openai-chat" : "openai";
  j["backend"] = !o.backend.empty() ? o.backend : o.endpoint == Endpoint::kChat ? "openai-chat" : "openai";
  j["model_id"] = run.model;
  j["num_prompts"] = run.records.size();
  // As vLLM writes it: "inf" for every request at once (or a closed loop).
  if (o.request_rate > 0 && std::isfinite(o.request_rate)) j["request_rate"] = o.request_rate;
  else j["request_rate"] = "inf";
  j["burstiness"] = o.burstiness;
  j["max_concurrency"] = o.request_rate > 0 ? (o.max_concurrency > 0 ? ordered_json(o.max_concurrency) : ordered_json(nullptr))
                                            : ordered_json(o.concurrency);
  j["duration"] = dur_s;
  j["completed"] = completed;
  j["failed"] = failed;
  j["total_input_tokens"] = in_tokens;
  j["total_output_tokens"] = out_tokens;
  j["request_throughput"] = double(completed) / dur_s;
  if (ro.slo.any()) j["request_goodput"] = double(good) / dur_s; else j["request_goodput"] = nullptr;
  j["output_throughput"] = double(out_tokens) / dur_s;
  j["total_token_throughput"] = double(in_tokens + out_tokens) / dur_s;
  j["max_concurrent_requests"] = run.max_in_flight;
  PutStats(j, "ttft", ttfts, &o);
  PutStats(j, "tpot", tpots, &o);
  PutStats(j, "itl", itls, &o);
  PutStats(j, "e2el", e2els, &o);
  // Per-request samples of the ok requests (ms, to the microsecond), so `latdoc compare` can
  // judge noise by bootstrap rather than by thresholds.
  auto samples = [](const std::vector<int64_t>& v) {
    ordered_json a = ordered_json::array();
    for (int64_t ns : v) a.push_back(std::round(double(ns) / 1e3) / 1e3);
    return a;
  };
  j["per_request"] = {{"ttft_ms", samples(ttfts)}, {"tpot_ms", samples(tpots)},
                      {"e2el_ms", samples(e2els)}};
  // latdoc's additions.
  j["partial"] = run.partial;
  if (run.partial) j["partial_reason"] = run.partial_reason;
  const uint64_t sent = run.records.size() - not_sent;
  out.failures = TallyFailures(failures, sent);
  for (const std::string& e : first_errors) {
    if (IsCancelledSample(e)) continue;
    out.failures.first_error = e;
    break;
  }
  j["sent"] = sent;
  j["not_sent"] = not_sent;
  // Of `failed`: streams in flight that the stop (a signal) cut; not the server's failures.
  j["cancelled"] = out.failures.cancelled;
  j["failures"] = failures;
  j["errors_sample"] = first_errors;
  j["token_count_method"] = methods;
  j["token_count_mismatches"] = mismatches;
  if (o.request_rate > 0) {
    ordered_json q;
    PutStats(q, "client_queue", queue_ns);
    j["client_queue"] = q;
  }
  j["warmup_requests"] = run.warmup_requests;
  j["connections_opened"] = run.connections_opened;
  if (run.tcp.connections > 0) {
    const http::TcpTotals& t = run.tcp;
    ordered_json tj;
    tj["connections"] = t.connections;
    tj["segs_out"] = t.segs_out;
    tj["retrans_segs"] = t.retrans_segs;
    tj["retrans_share"] = t.retrans_share ? ordered_json(*t.retrans_share) : ordered_json(nullptr);
    tj["rcv_ooo_packets"] = t.rcv_ooo_packets;
    tj["srtt_max_ms"] = t.srtt_max_ms ? ordered_json(*t.srtt_max_ms) : ordered_json(nullptr);
    tj["pmtu_min_bytes"] = t.pmtu_min_bytes ? ordered_json(*t.pmtu_min_bytes) : ordered_json(nullptr);
    tj["snd_mss_min_bytes"] =
        t.snd_mss_min_bytes ? ordered_json(*t.snd_mss_min_bytes) : ordered_json(nullptr);
    tj["worst_ca_state"] = t.worst_ca_state;
    j["tcp"] = tj;
  }
  j["client_cpu_s"] = run.client_cpu_s;
  // The client's own load, per load thread: when a thread was saturated its reads waited for
  // it, and its timings are suspect.
  ClientLoadSummary load = SummarizeClientLoad(run.thread_load);
  j["client_threads"] = run.thread_load.size();
  {
    ordered_json cl;
    cl["cpu_s"] = load.cpu_s;
    cl["events"] = load.events;
    cl["events_per_cpu_s"] = load.cpu_s > 0 ? ordered_json(double(load.events) / load.cpu_s)
                                            : ordered_json(nullptr);
    cl["reads"] = load.reads;
    cl["late_reads"] = load.late_reads;
    cl["late_read_share"] = load.reads ? ordered_json(double(load.late_reads) / double(load.reads))
                                       : ordered_json(nullptr);
    cl["late_read_ms"] = NsToMs(kLateReadNs);
    cl["saturated_threads"] = load.saturated;
    ordered_json per = ordered_json::array();
    for (const ThreadLoad& l : run.thread_load) {
      per.push_back({{"cpu_s", l.cpu_s},
                     {"wall_s", l.wall_s},
                     {"busy", l.busy()},
                     {"events", l.events},
                     {"events_per_cpu_s", l.cpu_s > 0 ? ordered_json(double(l.events) / l.cpu_s)
                                                      : ordered_json(nullptr)},
                     {"reads", l.reads},
                     {"late_reads", l.late_reads},
                     {"saturated", l.saturated()}});
    }
    cl["per_thread"] = per;
    j["client_load"] = cl;
  }
  j["start_mono_ns"] = run.start_ns;  // CLOCK_MONOTONIC at the start: aligns --save-requests times

  // Which server answered, and how latdoc knows.
  const servermetrics::ServerIdentity identity = servermetrics::IdentifyServer(
      run.metrics_available ? run.after.kind : servermetrics::ServerKind::kUnknown, run.owned_by);
  j["server_kind"] = {{"id", servermetrics::ServerKindId(identity.kind)},
                      {"name", identity.kind == servermetrics::ServerKind::kUnknown
                                   ? ordered_json(nullptr)
                                   : ordered_json(servermetrics::ServerKindLabel(identity.kind))},
                      {"evidence", identity.evidence}};

  // Server-side attribution from the /metrics deltas.
  ordered_json srv;
  srv["metrics_available"] = run.metrics_available;
  std::optional<double> mean_client_ttft_ms, mean_client_queue_ms;
  if (!ttfts.empty()) {
    double s = 0, q = 0;
    for (int64_t t : ttfts) s += double(t);
    for (int64_t t : queue_ns) q += double(t);
    mean_client_ttft_ms = s / double(ttfts.size()) / 1e6;
    mean_client_queue_ms = q / double(queue_ns.size()) / 1e6;
  }
  std::string breakdown_text;
  if (run.metrics_available) {
    srv["server"] = run.after.server;
    auto d = servermetrics::Delta(run.before, run.after);
    auto mean_ms = [](const std::optional<servermetrics::HistogramDelta>& h) {
      return h ? Ms(h->mean()) : std::nullopt;
    };
    auto q_ms = [](const std::optional<servermetrics::HistogramDelta>& h, double q) {
      return h ? Ms(h->Quantile(q)) : std::nullopt;
    };
    // What of TTFT this server's metrics measure (servermetrics/server_dialect.h): llama.cpp's
    // prefill is its summed prompt time over the requests that got a first token here.
    const servermetrics::ServerKind kind = run.after.kind;
    const servermetrics::TtftParts parts =
        servermetrics::MeanTtftParts(kind, d, double(ttfts.size()));
    srv["server_kind"] = servermetrics::ServerKindId(kind);
    srv["ttft_mean_ms"] = Opt(Ms(parts.server_ttft_s));
    srv["ttft_p50_ms"] = Opt(q_ms(d.ttft_s, 0.5));
    srv["ttft_p99_ms"] = Opt(q_ms(d.ttft_s, 0.99));
    srv["queue_mean_ms"] = Opt(Ms(parts.queue_s));
    srv["prefill_mean_ms"] = Opt(Ms(parts.prefill_s));
    srv["decode_mean_ms"] = Opt(mean_ms(d.decode_s));
    std::optional<double> itl_ms = mean_ms(d.itl_s);
    if (!itl_ms && kind == servermetrics::ServerKind::kLlamaCpp && d.generation_seconds &&
        d.generation_tokens && *d.generation_tokens > 0) {
      // llama.cpp sums each request's generation time: per token, a slot's step time.
      itl_ms = *d.generation_seconds / *d.generation_tokens * 1e3;
    }
    srv["itl_mean_ms"] = Opt(itl_ms);
    srv["e2e_mean_ms"] = Opt(mean_ms(d.e2e_s));
    // A counter or histogram that went down between the first and the last scrape: the server
    // restarted during the run, and its figures cover only the time since.
    srv["server_restarted"] = d.counter_reset;
    srv["preemptions"] = Opt(d.preemptions);
    srv["requests_finished"] = Opt(d.request_success);
    std::optional<double> max_running, max_waiting, max_kv;
    for (const auto& s : run.timeline) {
      if (s.running) max_running = std::max(max_running.value_or(0), *s.running);
      if (s.waiting) max_waiting = std::max(max_waiting.value_or(0), *s.waiting);
      if (s.kv_cache_usage) max_kv = std::max(max_kv.value_or(0), *s.kv_cache_usage);
    }
    srv["max_running"] = Opt(max_running);
    srv["max_waiting"] = Opt(max_waiting);
    srv["max_kv_cache_usage"] = Opt(max_kv);
    ordered_json tl = ordered_json::array();
    for (const auto& s : run.timeline) {
      tl.push_back({{"t_s", NsToSec(s.t_ns - run.start_ns)}, {"running", Opt(s.running)},
                    {"waiting", Opt(s.waiting)}, {"kv_cache_usage", Opt(s.kv_cache_usage)}});
    }
    srv["timeline"] = tl;
    // TTFT = client queue (open loop: scheduled -> sent, measured) + queue + prefill (server,
    // measured) + network and front end (client - client queue - server, inferred).
    auto server_ttft = Ms(parts.server_ttft_s);
    auto queue = Ms(parts.queue_s);
    auto prefill = Ms(parts.prefill_s);
    auto ms2 = [](std::optional<double> v) { return v ? FormatFixed(*v, 2) + " ms" : std::string("n/a"); };
    const bool vllm_like =
        kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown;
    if (d.counter_reset) {
      // The client's TTFT covers the whole run, the server's only the time since its restart:
      // their difference would be no network time at all.
      breakdown_text =
          "Server restarted during the run (its counters went down): server figures cover only "
          "the time since, and TTFT is not split\n";
    } else if (mean_client_ttft_ms && server_ttft && vllm_like) {
      ordered_json b;
      b["client_ttft_ms"] = *mean_client_ttft_ms;
      b["client_queue_ms"] = *mean_client_queue_ms;
      b["server_ttft_ms"] = *server_ttft;
      b["queue_ms"] = Opt(queue);
      b["prefill_ms"] = Opt(prefill);
      double net = *mean_client_ttft_ms - *mean_client_queue_ms - *server_ttft;
      b["network_and_front_end_ms"] = net;
      std::optional<double> other;
      if (queue && prefill) other = *server_ttft - *queue - *prefill;
      b["server_other_ms"] = Opt(other);
      b["note"] = "means over the run; client queue = sent - scheduled (open loop, measured); queue "
                  "and prefill from the server's histograms (measured); network and front end = "
                  "client TTFT - client queue - server TTFT (inferred)";
      srv["ttft_breakdown"] = b;
      const bool client_queued = *mean_client_queue_ms >= 0.005;
      breakdown_text = fmt::format(
          "TTFT breakdown (mean): client {} = {}queue {} + prefill {} + other server {} + "
          "network and front end {}\n",
          ms2(*mean_client_ttft_ms),
          client_queued ? "client queue " + ms2(*mean_client_queue_ms) + " + " : "",
          ms2(queue), ms2(prefill), ms2(other), ms2(net));
    } else if (mean_client_ttft_ms && !vllm_like && (server_ttft || queue || prefill)) {
      // SGLang, TGI, llama.cpp: the parts their metrics measure, and one inferred rest.
      const std::string_view label = servermetrics::ServerKindLabel(kind);
      ordered_json b;
      b["client_ttft_ms"] = *mean_client_ttft_ms;
      b["client_queue_ms"] = *mean_client_queue_ms;
      b["server_ttft_ms"] = Opt(server_ttft);
      b["queue_ms"] = Opt(queue);
      b["prefill_ms"] = Opt(prefill);
      std::string text = fmt::format("TTFT breakdown (mean, {}): client {} = ", label,
                                     ms2(*mean_client_ttft_ms));
      if (*mean_client_queue_ms >= 0.005) text += "client queue " + ms2(*mean_client_queue_ms) + " + ";
      if (queue) text += "queue " + ms2(queue) + " + ";
      if (prefill) text += "prefill " + ms2(prefill) + " + ";
      if (server_ttft) {
        const double net = *mean_client_ttft_ms - *mean_client_queue_ms - *server_ttft;
        const double other = *server_ttft - queue.value_or(0) - prefill.value_or(0);
        b["network_and_front_end_ms"] = net;
        b["server_other_ms"] = other;
        text += fmt::format("other server {} + network and front end {}", ms2(other), ms2(net));
      } else {
        // No server TTFT: what the metrics do not time stays one inferred rest.
        const double rest =
            *mean_client_ttft_ms - *mean_client_queue_ms - queue.value_or(0) - prefill.value_or(0);
        b["network_and_front_end_ms"] = nullptr;
        b["server_other_ms"] = nullptr;
        b["unsplit_ms"] = rest;
        text += fmt::format("rest {} ({}network, front end and the first decode step: not split)",
                            ms2(rest), queue ? "" : "server queue, ");
      }
      b["not_measurable"] = parts.not_measurable;
      b["note"] = fmt::format("means over the run; measured parts from {}'s /metrics; the rest "
                              "inferred (client TTFT - client queue - measured parts)", label);
      srv["ttft_breakdown"] = b;
      breakdown_text = text + "\n";
      if (!parts.not_measurable.empty()) breakdown_text += "  " + parts.not_measurable + "\n";
    } else if (mean_client_ttft_ms && !vllm_like) {
      breakdown_text = fmt::format("TTFT split: not measurable on {} ({})\n",
                                   servermetrics::ServerKindLabel(kind), parts.not_measurable);
    }
  } else if (!run.metrics_error.empty()) {
    srv["error"] = run.metrics_error;
  }
  if (ro.server_metrics) {
    srv = *ro.server_metrics;
    breakdown_text.clear();
  }
  const bool metrics_shown = srv.value("metrics_available", false);
  j["server_metrics"] = srv;

  // Judged on the requests whose end the server decided: those cut by a stop are left out.
  const uint64_t decided = out.failures.requests;
  if (ro.slo.any()) {
    double good_pct = decided ? 100.0 * double(good) / double(decided) : 0;
    out.slo_missed = good_pct < ro.slo.percent;
    j["slo"] = {{"good_percent", good_pct}, {"target_percent", ro.slo.percent},
                {"met", !out.slo_missed}};
    if (out.slo_missed) out.problems.push_back(SloMissText(ro.slo, good_pct));
  }
  j["error_rate"] = out.failures.rate();
  j["max_error_rate"] = Opt(ro.max_error_rate);
  if (ro.max_error_rate) {
    out.error_rate_missed = out.failures.rate() > *ro.max_error_rate;
    if (out.error_rate_missed)
      out.problems.push_back(ErrorRateMissText(out.failures.rate(), *ro.max_error_rate));
  }
  j["problems"] = out.problems;
  // Whether the run measured what it was asked to (loadgen/validation.h).
  const Validation validation = ValidateRun(run, o);
  j["validation"] = validation.Json();

  // Terminal summary, in the shape of vllm bench serve's.
  std::string& t = out.text;
  auto line = [&](std::string_view label, const std::string& v) {
    t += fmt::format("{:<40}{:>12}\n", label, v);
  };
  auto num = [](double v, int p = 2) { return FormatFixed(v, p); };  // never "-0.00"
  auto jnum = [&](const char* key) {
    return j[key].is_null() ? std::string("n/a") : num(j[key].get<double>());
  };
  t += fmt::format("{:=^52}\n", " Serving Benchmark Result ");
  if (run.partial) {
    t += fmt::format("PARTIAL: {}{}\n", run.partial_reason,
                     out.failures.cancelled == 0
                         ? std::string()
                         : fmt::format("; {} stream{} cut by the stop (cancelled: TTFT and ITL "
                                       "kept, not completed)", out.failures.cancelled,
                                       out.failures.cancelled == 1 ? "" : "s"));
  }
  // The server as its /metrics named it (a merge of shards passes the shards' metrics in).
  const std::string server_name = metrics_shown && srv.contains("server") && srv["server"].is_string()
                                      ? srv["server"].get<std::string>() : "";
  std::string server_label = ServerLabel(o.url, server_name);
  if (identity.kind != servermetrics::ServerKind::kUnknown && server_name.empty()) {
    server_label += fmt::format(" ({}, from its {})", servermetrics::ServerKindLabel(identity.kind),
                                ToTerminalText(identity.evidence));
  }
  t += fmt::format("Model: {}\nServer: {}\n", run.model.empty() ? "n/a" : ToTerminalText(run.model),
                   server_label);
  line("Successful requests:", std::to_string(completed));
  line("Failed requests:", std::to_string(failed));
  for (const auto& [k, v] : failures) line(fmt::format("  {}:", k), std::to_string(v));
  if (not_sent > 0) line("Not sent (stopped first):", std::to_string(not_sent));
  line("Benchmark duration (s):", num(dur_s));
  line("Total input tokens:", std::to_string(in_tokens));
  line("Total generated tokens:", std::to_string(out_tokens));
  line("Request throughput (req/s):", num(double(completed) / dur_s));
  if (ro.slo.any()) line("Request goodput (req/s):", num(double(good) / dur_s));
  line("Output token throughput (tok/s):", num(double(out_tokens) / dur_s));
  line("Total token throughput (tok/s):", num(double(in_tokens + out_tokens) / dur_s));
  const std::vector<double> text_percentiles =
      o.summary_percentiles.empty() ? std::vector<double>{99} : o.summary_percentiles;
  for (auto [title, key] : {std::pair{"Time to First Token", "ttft"},
                            std::pair{"Time per Output Token (excl. 1st token)", "tpot"},
                            std::pair{"Inter-token Latency", "itl"},
                            std::pair{"End-to-end Latency", "e2el"}}) {
    if (!j.contains("mean_" + std::string(key) + "_ms")) continue;  // not in --percentile-metrics
    t += fmt::format("{:-^52}\n", std::string(" ") + title + " ");
    std::string up = key;
    for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
    line(fmt::format("Mean {} (ms):", up), jnum(("mean_" + std::string(key) + "_ms").c_str()));
    line(fmt::format("Median {} (ms):", up), jnum(("median_" + std::string(key) + "_ms").c_str()));
    for (double p : text_percentiles) {
      const std::string word = stats::PercentileWord(p);
      line(fmt::format("P{} {} (ms):", word, up), jnum(("p" + word + "_" + std::string(key) + "_ms").c_str()));
    }
  }
  t += fmt::format("{:-^52}\n", " Token counts ");
  for (const auto& [k, v] : methods) line(fmt::format("Counted by {}:", k), std::to_string(v));
  line("Usage disagreed with chunks:", std::to_string(mismatches));
  if (metrics_shown) {
    t += fmt::format("{:-^52}\n", " Server (/metrics) ");
    for (auto [label, key] : {std::pair{"Server mean TTFT (ms):", "ttft_mean_ms"},
                              std::pair{"Server mean queue time (ms):", "queue_mean_ms"},
                              std::pair{"Server mean prefill time (ms):", "prefill_mean_ms"},
                              std::pair{"Server mean ITL (ms):", "itl_mean_ms"},
                              std::pair{"Preemptions:", "preemptions"},
                              std::pair{"Max waiting requests:", "max_waiting"},
                              std::pair{"Max KV cache usage (0-1):", "max_kv_cache_usage"}}) {
      const auto& v = srv.contains(key) ? srv[key] : ordered_json();
      // Preemptions and waiting requests are counts: "0", not "0.00".
      const bool count = std::string_view(key) == "preemptions" || std::string_view(key) == "max_waiting";
      line(label, v.is_null() ? "n/a" : count ? FormatCount(v.get<double>()) : num(v.get<double>()));
    }
    t += breakdown_text;
  } else {
    const std::string why = srv.contains("error") && srv["error"].is_string() ? srv["error"].get<std::string>() : "";
    t += fmt::format("Server metrics: not available{}\n", why.empty() ? "" : " (" + why + ")");
  }
  for (const auto& e : first_errors) t += "  error: " + e + "\n";
  if (!run.thread_load.empty()) t += ClientLoadText(run.thread_load);
  t += validation.Text();
  t += std::string(52, '=') + "\n";
  return out;
}

ClientLoadSummary SummarizeClientLoad(const std::vector<ThreadLoad>& threads) {
  ClientLoadSummary s;
  for (const ThreadLoad& l : threads) {
    s.cpu_s += l.cpu_s;
    s.events += l.events;
    s.reads += l.reads;
    s.late_reads += l.late_reads;
    if (l.saturated()) ++s.saturated;
  }
  return s;
}

std::string ClientLoadText(const std::vector<ThreadLoad>& threads) {
  const ClientLoadSummary s = SummarizeClientLoad(threads);
  auto share = [](uint64_t part, uint64_t whole) {
    return whole ? FormatFixed(100.0 * double(part) / double(whole), 1) + "%" : std::string("n/a");
  };
  std::string t = fmt::format(
      "Client: {} thread{}, {} CPU-s, {} events per CPU-s, {} of reads late (>{:g} ms)\n",
      threads.size(), threads.size() == 1 ? "" : "s", FormatFixed(s.cpu_s, 2),
      s.cpu_s > 0 ? FormatCount(std::round(double(s.events) / s.cpu_s)) : std::string("n/a"),
      share(s.late_reads, s.reads), NsToMs(kLateReadNs));
  for (size_t i = 0; i < threads.size(); ++i) {
    const ThreadLoad& l = threads[i];
    if (!l.saturated()) continue;
    t += fmt::format(
        "warning: client thread {} of {} saturated ({}% busy, {} of its reads late): its "
        "timings are suspect; give --threads more cores or lower the load\n",
        i + 1, threads.size(), FormatFixed(100.0 * l.busy(), 0), share(l.late_reads, l.reads));
  }
  return t;
}

std::string ServerLabel(const std::string& url, const std::string& server_id) {
  auto u = http::ParseUrl(url);
  std::string out = u.ok() ? u->Origin() + u->base_path : RedactSecretsInText(url);
  if (!server_id.empty())
    out += fmt::format(" (its /metrics in {}'s names)", servermetrics::ServerKindName(server_id));
  return ToTerminalText(out);
}

std::string RequestsJsonl(const BenchRun& run) {
  std::string out;
  auto ms = [&](int64_t ns) -> ordered_json {
    if (ns < 0) return nullptr;
    return NsToMs(ns - run.start_ns);
  };
  for (const RequestRecord& r : run.records) {
    ordered_json j;
    j["index"] = r.index;
    j["status"] = OutcomeName(r.outcome);
    if (!r.error.empty()) j["error"] = r.error;
    j["http_status"] = r.http_status;
    j["scheduled_ms"] = ms(r.scheduled_ns);
    j["sent_ms"] = ms(r.sent_ns);
    j["connect_ms"] = ms(r.connect_ns);
    j["tls_ms"] = ms(r.tls_ns);
    j["first_byte_ms"] = ms(r.headers_ns);
    j["first_token_ms"] = ms(r.first_token_ns);
    j["last_token_ms"] = ms(r.last_token_ns);
    j["end_ms"] = ms(r.end_ns);
    j["reused_connection"] = r.reused_connection;
    j["prompt_tokens"] = r.prompt_tokens;
    j["output_tokens"] = r.output_tokens;
    j["token_count_method"] = TokenMethodName(r.method);
    ordered_json chunks = ordered_json::array();
    for (const auto& [t, k] : r.chunks) chunks.push_back({ms(t), k});
    j["chunks"] = chunks;
    out += JsonText(j);
    out += '\n';
  }
  return out;
}

}  // namespace latdoc::loadgen
