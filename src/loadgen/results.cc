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
#include "loadgen/results_internal.h"
#include "loadgen/validation.h"
#include "servermetrics/metric_names.h"
#include "servermetrics/server_dialect.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;
using results_internal::CountsText;
using results_internal::LatencyText;
using results_internal::RunTally;
using results_internal::ServerMetricsText;
using results_internal::SummarizeServer;
using results_internal::SummaryHeaderText;
using results_internal::TokenCountsText;

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

// The statistics of `metric` over `ns`. `o`: the metrics and percentiles the user chose
// (--percentile-metrics, --metric-percentiles; nullopt when `metric` is not among them); null
// for latdoc's own statistics, which always have the default ones.
std::optional<LatencyStats> StatsOf(std::string_view metric, const std::vector<int64_t>& ns,
                                    const BenchOptions* o = nullptr) {
  if (o && !o->summary_metrics.empty() &&
      std::find(o->summary_metrics.begin(), o->summary_metrics.end(), metric) == o->summary_metrics.end())
    return std::nullopt;
  const std::span<const double> percentiles = !o || o->summary_percentiles.empty()
                                                  ? stats::kDefaultPercentiles
                                                  : std::span<const double>(o->summary_percentiles);
  // VllmStatKeys' order: mean, median, std, the percentiles asked, max.
  const std::vector<stats::VllmStat> st = stats::VllmStatKeys(metric, ns, percentiles);
  LatencyStats s;
  s.mean_ms = st[0].value_ms;
  s.median_ms = st[1].value_ms;
  s.std_ms = st[2].value_ms;
  for (size_t i = 0; i < percentiles.size(); ++i)
    s.percentiles.push_back({percentiles[i], st[3 + i].value_ms});
  s.max_ms = st.back().value_ms;
  return s;
}

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

namespace {

// TallyRecords' two kinds of request: failed (or cut by a stop) and completed (judged on --slo).
void AddFailed(const RequestRecord& r, RunTally& t) {
  ++t.failed;
  ++t.failures[std::string(OutcomeName(r.outcome))];
  if (t.first_errors.size() < 5) {
    // "cancelled", not "cancelled: cancelled": the error adds nothing when it is the name.
    const std::string_view name = OutcomeName(r.outcome);
    t.first_errors.push_back(r.error.empty() || r.error == name ? std::string(name)
                                                                : fmt::format("{}: {}", name, r.error));
  }
  if (r.outcome == Outcome::kCancelled && r.first_token_ns >= 0) {
    // Cut by the stop after its first token: its TTFT and inter-token latencies were
    // measured all the same; its E2EL and TPOT were not (the stream did not end).
    t.ttfts.push_back(r.first_token_ns - r.scheduled_ns);
    AddItls(r, t.itls);
  }
}

void AddCompleted(const RequestRecord& r, const SloSpec& slo, RunTally& t) {
  ++t.completed;
  ++t.methods[std::string(TokenMethodName(r.method))];
  t.mismatches += r.count_mismatch;
  t.in_tokens += r.prompt_tokens;
  t.out_tokens += r.output_tokens;
  int64_t start = r.scheduled_ns;  // open loop: latency from the scheduled time
  int64_t ttft = r.first_token_ns - start;
  int64_t e2el = r.last_token_ns - start;
  t.ttfts.push_back(ttft);
  t.e2els.push_back(e2el);
  if (r.sent_ns >= 0) t.queue_ns.push_back(r.sent_ns - r.scheduled_ns);
  std::optional<int64_t> tpot;
  if (r.output_tokens > 1) {
    tpot = (e2el - ttft) / (r.output_tokens - 1);
    t.tpots.push_back(*tpot);
  }
  AddItls(r, t.itls);
  bool ok = true;
  // A TTFT SLO is judged on the first visible answer token (docs/workloads.md): a reasoning
  // model's first reasoning token is not an answer; a stream with no answer misses it.
  // (A record that says nothing of its kinds, e.g. read back from a shard, is all answer.)
  const int64_t answer_ns = r.first_answer_ns >= 0 ? r.first_answer_ns
                            : r.reasoning_tokens > 0 ? -1 : r.first_token_ns;
  if (slo.ttft_ms && (answer_ns < 0 || NsToMs(answer_ns - start) > *slo.ttft_ms)) ok = false;
  if (slo.tpot_ms && NsToMs(tpot.value_or(0)) > *slo.tpot_ms) ok = false;
  if (slo.e2el_ms && NsToMs(e2el) > *slo.e2el_ms) ok = false;
  t.good += ok;
}

RunTally TallyRecords(const BenchRun& run, const SloSpec& slo) {
  RunTally t;
  for (const RequestRecord& r : run.records) {
    if (r.outcome == Outcome::kCancelled && r.sent_ns < 0) ++t.not_sent;
    else if (r.outcome != Outcome::kOk) AddFailed(r, t);
    else AddCompleted(r, slo, t);
  }
  return t;
}

// The run as `vllm bench serve` writes it: what was asked, counts and rates.
void PutCountsAndRates(LoadFacts& f, const BenchRun& run, const BenchOptions& o, const SloSpec& slo,
                       const RunTally& t, double dur_s) {
  char date[32];
  time_t now = ::time(nullptr);
  tm lt;
  localtime_r(&now, &lt);
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", &lt);
  f.date = date;
  f.endpoint_type = o.endpoint == Endpoint::kChat ? "openai-chat" : "openai";
  f.backend = !o.backend.empty()              ? o.backend
              : o.endpoint == Endpoint::kChat ? "openai-chat"
                                              : "openai";
  f.model_id = run.model;
  f.num_prompts = run.records.size();
  // As vLLM writes it: "inf" for every request at once (or a closed loop).
  f.request_rate = o.request_rate > 0 && std::isfinite(o.request_rate) ? o.request_rate : INFINITY;
  f.burstiness = o.burstiness;
  if (o.request_rate <= 0)
    f.max_concurrency = o.concurrency;
  else if (o.max_concurrency > 0)
    f.max_concurrency = o.max_concurrency;
  f.duration_s = dur_s;
  f.completed = t.completed;
  f.failed = t.failed;
  f.total_input_tokens = t.in_tokens;
  f.total_output_tokens = t.out_tokens;
  f.request_throughput = double(t.completed) / dur_s;
  if (slo.any()) f.request_goodput = double(t.good) / dur_s;
  f.output_throughput = double(t.out_tokens) / dur_s;
  f.total_token_throughput = double(t.in_tokens + t.out_tokens) / dur_s;
  f.max_concurrent_requests = run.max_in_flight;
}

// The latency statistics in vLLM's keys, and the per-request samples.
void PutLatencyStats(LoadFacts& f, const RunTally& t, const BenchOptions& o) {
  f.ttft = StatsOf("ttft", t.ttfts, &o);
  f.tpot = StatsOf("tpot", t.tpots, &o);
  f.itl = StatsOf("itl", t.itls, &o);
  f.e2el = StatsOf("e2el", t.e2els, &o);
  // Per-request samples of the ok requests (ms, to the microsecond), so `latdoc compare` can
  // judge noise by bootstrap rather than by thresholds.
  auto samples = [](const std::vector<int64_t>& v) {
    std::vector<double> a;
    a.reserve(v.size());
    for (int64_t ns : v) a.push_back(std::round(double(ns) / 1e3) / 1e3);
    return a;
  };
  f.per_request = PerRequestSamples{samples(t.ttfts), samples(t.tpots), samples(t.e2els)};
}

// The failures by reason, the first error said of the server (not a stop's) among the samples.
FailureTally TallyRunFailures(const RunTally& t, uint64_t sent) {
  FailureTally tally = TallyFailures(t.failures, sent);
  for (const std::string& e : t.first_errors) {
    if (IsCancelledSample(e)) continue;
    tally.first_error = e;
    break;
  }
  return tally;
}

// latdoc's additions: what was sent, how it failed, how tokens were counted, connections.
void PutRunAccounting(LoadFacts& f, const BenchRun& run, const BenchOptions& o, const RunTally& t,
                      uint64_t sent, const FailureTally& failures) {
  f.partial = run.partial;
  if (run.partial) f.partial_reason = run.partial_reason;
  f.sent = sent;
  f.not_sent = t.not_sent;
  // Of `failed`: streams in flight that the stop (a signal) cut; not the server's failures.
  f.cancelled = failures.cancelled;
  f.failures = t.failures;
  f.errors_sample = t.first_errors;
  f.token_count_method = t.methods;
  f.token_count_mismatches = t.mismatches;
  if (o.request_rate > 0) f.client_queue = StatsOf("client_queue", t.queue_ns);
  f.warmup_requests = run.warmup_requests;
  f.connections_opened = run.connections_opened;
}

TcpFacts Tcp(const http::TcpTotals& t) {
  TcpFacts f;
  f.connections = t.connections;
  f.segs_out = t.segs_out;
  f.retrans_segs = t.retrans_segs;
  f.retrans_share = t.retrans_share;
  f.rcv_ooo_packets = t.rcv_ooo_packets;
  f.srtt_max_ms = t.srtt_max_ms;
  f.pmtu_min_bytes = t.pmtu_min_bytes;
  f.snd_mss_min_bytes = t.snd_mss_min_bytes;
  f.worst_ca_state = t.worst_ca_state;
  return f;
}

ServerKindFacts ServerKind(const servermetrics::ServerIdentity& identity) {
  ServerKindFacts k;
  k.id = servermetrics::ServerKindId(identity.kind);
  if (identity.kind != servermetrics::ServerKind::kUnknown)
    k.name = servermetrics::ServerKindLabel(identity.kind);
  k.evidence = identity.evidence;
  return k;
}

// The SLO and --max-error-rate verdicts, into `out` and its facts. Judged on the requests whose
// end the server decided: those cut by a stop are left out.
void JudgeRun(BenchSummary& out, const ResultOptions& ro, uint64_t good) {
  LoadFacts& f = out.facts;
  const uint64_t decided = out.failures.requests;
  if (ro.slo.any()) {
    double good_pct = decided ? 100.0 * double(good) / double(decided) : 0;
    out.slo_missed = good_pct < ro.slo.percent;
    f.slo = SloResult{good_pct, ro.slo.percent, !out.slo_missed};
    if (out.slo_missed) out.problems.push_back(SloMissText(ro.slo, good_pct));
  }
  f.error_rate = out.failures.rate();
  f.max_error_rate = ro.max_error_rate;
  if (ro.max_error_rate) {
    out.error_rate_missed = out.failures.rate() > *ro.max_error_rate;
    if (out.error_rate_missed) out.problems.push_back(ErrorRateMissText(out.failures.rate(), *ro.max_error_rate));
  }
  f.problems = out.problems;
}

}  // namespace

BenchSummary SummarizeRun(const BenchRun& run, const BenchOptions& o, const ResultOptions& ro) {
  BenchSummary out;
  const RunTally tally = TallyRecords(run, ro.slo);
  const double dur_s = std::max(1e-9, NsToSec(run.end_ns - run.start_ns));

  // The facts, in the order of the JSON: vLLM's, then latdoc's additions.
  LoadFacts& f = out.facts;
  PutCountsAndRates(f, run, o, ro.slo, tally, dur_s);
  PutLatencyStats(f, tally, o);
  const uint64_t sent = run.records.size() - tally.not_sent;
  out.failures = TallyRunFailures(tally, sent);
  PutRunAccounting(f, run, o, tally, sent, out.failures);
  if (run.tcp.connections > 0) f.tcp = Tcp(run.tcp);
  f.client_cpu_s = run.client_cpu_s;
  f.client_threads = run.thread_load.size();
  f.client_load = ClientLoadFactsOf(run.thread_load);
  f.start_mono_ns = run.start_ns;  // CLOCK_MONOTONIC at the start: aligns --save-requests times

  // Which server answered, and how latdoc knows.
  const servermetrics::ServerIdentity identity = servermetrics::IdentifyServer(
      run.metrics_available ? run.after.kind : servermetrics::ServerKind::kUnknown, run.owned_by);
  f.server_kind = ServerKind(identity);

  // Server-side attribution from the /metrics deltas (or a merge's, as it is, without its split).
  f.server = ro.server_metrics ? *ro.server_metrics : SummarizeServer(run, tally);
  JudgeRun(out, ro, tally.good);
  // Whether the run measured what it was asked to (loadgen/validation.h).
  const Validation validation = ValidateRun(run, o);
  f.validation = validation.Json();
  out.json = ToJson(f);

  std::string& t = out.text;
  t += SummaryHeaderText(run, o, f, identity);
  t += CountsText(f, ro.slo.any());
  t += LatencyText(f, o);
  t += TokenCountsText(f);
  t += ServerMetricsText(f.server, /*with_breakdown=*/!ro.server_metrics, !tally.ttfts.empty());
  for (const auto& e : f.errors_sample) t += "  error: " + e + "\n";
  if (f.client_load && !f.client_load->per_thread.empty()) t += ClientLoadText(*f.client_load);
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

ClientLoadFacts ClientLoadFactsOf(const std::vector<ThreadLoad>& threads) {
  const ClientLoadSummary load = SummarizeClientLoad(threads);
  ClientLoadFacts c;
  c.cpu_s = load.cpu_s;
  c.events = load.events;
  if (load.cpu_s > 0) c.events_per_cpu_s = double(load.events) / load.cpu_s;
  c.reads = load.reads;
  c.late_reads = load.late_reads;
  if (load.reads) c.late_read_share = double(load.late_reads) / double(load.reads);
  c.late_read_ms = NsToMs(kLateReadNs);
  c.saturated_threads = load.saturated;
  for (const ThreadLoad& l : threads) {
    ThreadLoadFacts t;
    t.cpu_s = l.cpu_s;
    t.wall_s = l.wall_s;
    t.busy = l.busy();
    t.events = l.events;
    if (l.cpu_s > 0) t.events_per_cpu_s = double(l.events) / l.cpu_s;
    t.reads = l.reads;
    t.late_reads = l.late_reads;
    t.saturated = l.saturated();
    c.per_thread.push_back(t);
  }
  return c;
}

std::string ClientLoadText(const std::vector<ThreadLoad>& threads) {
  return ClientLoadText(ClientLoadFactsOf(threads));
}

std::string ClientLoadText(const ClientLoadFacts& c) {
  auto share = [](uint64_t part, uint64_t whole) {
    return whole ? FormatFixed(100.0 * double(part) / double(whole), 1) + "%" : std::string("n/a");
  };
  const size_t n = c.per_thread.size();
  std::string t = fmt::format(
      "Client: {} thread{}, {} CPU-s, {} events per CPU-s, {} of reads late (>{:g} ms)\n", n,
      n == 1 ? "" : "s", FormatFixed(c.cpu_s, 2),
      c.cpu_s > 0 ? FormatCount(std::round(double(c.events) / c.cpu_s)) : std::string("n/a"),
      share(c.late_reads, c.reads), c.late_read_ms);
  for (size_t i = 0; i < n; ++i) {
    const ThreadLoadFacts& l = c.per_thread[i];
    if (!l.saturated) continue;
    t += fmt::format(
        "warning: client thread {} of {} saturated ({}% busy, {} of its reads late): its "
        "timings are suspect; give --threads more cores or lower the load\n",
        i + 1, n, FormatFixed(100.0 * l.busy, 0), share(l.late_reads, l.reads));
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
