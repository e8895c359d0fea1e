#include "loadgen/results.h"

#include <cmath>
#include <ctime>
#include <map>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "base/units.h"
#include "base/secrets.h"
#include "http/client.h"
#include "servermetrics/metric_names.h"
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

void PutStats(ordered_json& j, std::string_view metric, const std::vector<int64_t>& ns) {
  for (const auto& st : stats::VllmStatKeys(metric, ns)) {
    if (st.value_ms) j[st.key] = *st.value_ms;
    else j[st.key] = nullptr;
  }
}

std::optional<double> Ms(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return *seconds * 1e3;
}

ordered_json Opt(std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

}  // namespace

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
    // A chunk of k tokens counts k inter-token latencies of gap / k.
    for (size_t i = 1; i < r.chunks.size(); ++i) {
      int64_t gap = r.chunks[i].first - r.chunks[i - 1].first;
      int k = std::max(1, r.chunks[i].second);
      for (int t = 0; t < k; ++t) itls.push_back(gap / k);
    }
    bool ok = true;
    if (ro.slo.ttft_ms && NsToMs(ttft) > *ro.slo.ttft_ms) ok = false;
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
  j["backend"] = o.endpoint == Endpoint::kChat ? "openai-chat" : "openai";
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
  PutStats(j, "ttft", ttfts);
  PutStats(j, "tpot", tpots);
  PutStats(j, "itl", itls);
  PutStats(j, "e2el", e2els);
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
  j["sent"] = sent;
  j["not_sent"] = not_sent;
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
  j["client_cpu_s"] = run.client_cpu_s;
  j["start_mono_ns"] = run.start_ns;  // CLOCK_MONOTONIC at the start: aligns --save-requests times

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
    srv["ttft_mean_ms"] = Opt(mean_ms(d.ttft_s));
    srv["ttft_p50_ms"] = Opt(q_ms(d.ttft_s, 0.5));
    srv["ttft_p99_ms"] = Opt(q_ms(d.ttft_s, 0.99));
    srv["queue_mean_ms"] = Opt(mean_ms(d.queue_s));
    srv["prefill_mean_ms"] = Opt(mean_ms(d.prefill_s));
    srv["decode_mean_ms"] = Opt(mean_ms(d.decode_s));
    srv["itl_mean_ms"] = Opt(mean_ms(d.itl_s));
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
    auto server_ttft = mean_ms(d.ttft_s);
    auto queue = mean_ms(d.queue_s);
    auto prefill = mean_ms(d.prefill_s);
    if (d.counter_reset) {
      // The client's TTFT covers the whole run, the server's only the time since its restart:
      // their difference would be no network time at all.
      breakdown_text =
          "Server restarted during the run (its counters went down): server figures cover only "
          "the time since, and TTFT is not split\n";
    } else if (mean_client_ttft_ms && server_ttft) {
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
      auto ms2 = [](std::optional<double> v) { return v ? FormatFixed(*v, 2) + " ms" : std::string("n/a"); };
      breakdown_text = fmt::format(
          "TTFT breakdown (mean): client {} = {}queue {} + prefill {} + other server {} + "
          "network and front end {}\n",
          ms2(*mean_client_ttft_ms),
          client_queued ? "client queue " + ms2(*mean_client_queue_ms) + " + " : "",
          ms2(queue), ms2(prefill), ms2(other), ms2(net));
    }
  } else if (!run.metrics_error.empty()) {
    srv["error"] = run.metrics_error;
  }
  j["server_metrics"] = srv;

  if (ro.slo.any()) {
    double good_pct = completed ? 100.0 * double(good) / double(sent) : 0;
    out.slo_missed = good_pct < ro.slo.percent;
    j["slo"] = {{"good_percent", good_pct}, {"target_percent", ro.slo.percent},
                {"met", !out.slo_missed}};
  }
  if (ro.max_error_rate) {
    double rate = sent == 0 ? 0 : double(failed) / double(sent);
    out.error_rate_missed = rate > *ro.max_error_rate;
    j["error_rate"] = rate;
  }

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
  if (run.partial) t += fmt::format("PARTIAL: {}\n", run.partial_reason);
  t += fmt::format("Model: {}\nServer: {}\n", run.model.empty() ? "n/a" : ToTerminalText(run.model),
                   ServerLabel(o.url, run.metrics_available ? run.after.server : ""));
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
  for (auto [title, key] : {std::pair{"Time to First Token", "ttft"},
                            std::pair{"Time per Output Token (excl. 1st token)", "tpot"},
                            std::pair{"Inter-token Latency", "itl"},
                            std::pair{"End-to-end Latency", "e2el"}}) {
    t += fmt::format("{:-^52}\n", std::string(" ") + title + " ");
    std::string up = key;
    for (char& c : up) c = char(std::toupper(static_cast<unsigned char>(c)));
    line(fmt::format("Mean {} (ms):", up), jnum(("mean_" + std::string(key) + "_ms").c_str()));
    line(fmt::format("Median {} (ms):", up), jnum(("median_" + std::string(key) + "_ms").c_str()));
    line(fmt::format("P99 {} (ms):", up), jnum(("p99_" + std::string(key) + "_ms").c_str()));
  }
  t += fmt::format("{:-^52}\n", " Token counts ");
  for (const auto& [k, v] : methods) line(fmt::format("Counted by {}:", k), std::to_string(v));
  line("Usage disagreed with chunks:", std::to_string(mismatches));
  if (run.metrics_available) {
    t += fmt::format("{:-^52}\n", " Server (/metrics) ");
    for (auto [label, key] : {std::pair{"Server mean TTFT (ms):", "ttft_mean_ms"},
                              std::pair{"Server mean queue time (ms):", "queue_mean_ms"},
                              std::pair{"Server mean prefill time (ms):", "prefill_mean_ms"},
                              std::pair{"Server mean ITL (ms):", "itl_mean_ms"},
                              std::pair{"Preemptions:", "preemptions"},
                              std::pair{"Max waiting requests:", "max_waiting"},
                              std::pair{"Max KV cache usage (0-1):", "max_kv_cache_usage"}}) {
      const auto& v = srv[key];
      // Preemptions and waiting requests are counts: "0", not "0.00".
      const bool count = std::string_view(key) == "preemptions" || std::string_view(key) == "max_waiting";
      line(label, v.is_null() ? "n/a" : count ? FormatCount(v.get<double>()) : num(v.get<double>()));
    }
    t += breakdown_text;
  } else {
    t += fmt::format("Server metrics: not available{}\n",
                     run.metrics_error.empty() ? "" : " (" + run.metrics_error + ")");
  }
  for (const auto& e : first_errors) t += "  error: " + e + "\n";
  t += std::string(52, '=') + "\n";
  return out;
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
