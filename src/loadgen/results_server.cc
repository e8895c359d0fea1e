// The /metrics block of a bench result: the server's figures from the deltas of its counters
// and histograms over the run, its timeline, and the split of the client's TTFT into the parts
// the server's metrics measure and an inferred rest (network and front end).
#include <algorithm>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "base/units.h"
#include "loadgen/results_internal.h"
#include "servermetrics/server_snapshot.h"

namespace latdoc::loadgen::results_internal {
namespace {

using nlohmann::ordered_json;

std::optional<double> Ms(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return *seconds * 1e3;
}

// "12.34 ms" or "n/a".
std::string Ms2(std::optional<double> v) { return v ? FormatFixed(*v, 2) + " ms" : std::string("n/a"); }

// The server's figures from the /metrics deltas `d`, and the maxima of its timeline.
void PutServerFigures(ordered_json& srv, const BenchRun& run, const servermetrics::SnapshotDelta& d,
                      const servermetrics::TtftParts& parts) {
  auto mean_ms = [](const std::optional<servermetrics::HistogramDelta>& h) {
    return h ? Ms(h->mean()) : std::nullopt;
  };
  auto q_ms = [](const std::optional<servermetrics::HistogramDelta>& h, double q) {
    return h ? Ms(h->Quantile(q)) : std::nullopt;
  };
  const servermetrics::ServerKind kind = run.after.kind;
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
}

ordered_json TimelineJson(const BenchRun& run) {
  ordered_json tl = ordered_json::array();
  for (const auto& s : run.timeline) {
    tl.push_back({{"t_s", NsToSec(s.t_ns - run.start_ns)}, {"running", Opt(s.running)},
                  {"waiting", Opt(s.waiting)}, {"kv_cache_usage", Opt(s.kv_cache_usage)}});
  }
  return tl;
}

// What the TTFT split is made of: the client's means over the run and the server's parts, ms.
struct TtftSplitInputs {
  double client_ttft_ms = 0, client_queue_ms = 0;
  std::optional<double> server_ttft_ms, queue_ms, prefill_ms;
};

// vLLM (or an unknown server read in vLLM's names): every part measured but the network and
// front end. Returns the breakdown's text line; writes srv["ttft_breakdown"].
std::string VllmTtftSplit(ordered_json& srv, const TtftSplitInputs& in) {
  const double server_ttft = *in.server_ttft_ms;
  ordered_json b;
  b["client_ttft_ms"] = in.client_ttft_ms;
  b["client_queue_ms"] = in.client_queue_ms;
  b["server_ttft_ms"] = server_ttft;
  b["queue_ms"] = Opt(in.queue_ms);
  b["prefill_ms"] = Opt(in.prefill_ms);
  double net = in.client_ttft_ms - in.client_queue_ms - server_ttft;
  b["network_and_front_end_ms"] = net;
  std::optional<double> other;
  if (in.queue_ms && in.prefill_ms) other = server_ttft - *in.queue_ms - *in.prefill_ms;
  b["server_other_ms"] = Opt(other);
  b["note"] = "means over the run; client queue = sent - scheduled (open loop, measured); queue "
              "and prefill from the server's histograms (measured); network and front end = "
              "client TTFT - client queue - server TTFT (inferred)";
  srv["ttft_breakdown"] = b;
  const bool client_queued = in.client_queue_ms >= 0.005;
  return fmt::format(
      "TTFT breakdown (mean): client {} = {}queue {} + prefill {} + other server {} + "
      "network and front end {}\n",
      Ms2(in.client_ttft_ms), client_queued ? "client queue " + Ms2(in.client_queue_ms) + " + " : "",
      Ms2(in.queue_ms), Ms2(in.prefill_ms), Ms2(other), Ms2(net));
}

// SGLang, TGI, llama.cpp: the parts their metrics measure, and one inferred rest. Returns the
// breakdown's text lines; writes srv["ttft_breakdown"].
std::string PartialTtftSplit(ordered_json& srv, const TtftSplitInputs& in, servermetrics::ServerKind kind,
                             const std::string& not_measurable) {
  const std::string_view label = servermetrics::ServerKindLabel(kind);
  ordered_json b;
  b["client_ttft_ms"] = in.client_ttft_ms;
  b["client_queue_ms"] = in.client_queue_ms;
  b["server_ttft_ms"] = Opt(in.server_ttft_ms);
  b["queue_ms"] = Opt(in.queue_ms);
  b["prefill_ms"] = Opt(in.prefill_ms);
  std::string text = fmt::format("TTFT breakdown (mean, {}): client {} = ", label, Ms2(in.client_ttft_ms));
  if (in.client_queue_ms >= 0.005) text += "client queue " + Ms2(in.client_queue_ms) + " + ";
  if (in.queue_ms) text += "queue " + Ms2(in.queue_ms) + " + ";
  if (in.prefill_ms) text += "prefill " + Ms2(in.prefill_ms) + " + ";
  if (in.server_ttft_ms) {
    const double net = in.client_ttft_ms - in.client_queue_ms - *in.server_ttft_ms;
    const double other = *in.server_ttft_ms - in.queue_ms.value_or(0) - in.prefill_ms.value_or(0);
    b["network_and_front_end_ms"] = net;
    b["server_other_ms"] = other;
    text += fmt::format("other server {} + network and front end {}", Ms2(other), Ms2(net));
  } else {
    // No server TTFT: what the metrics do not time stays one inferred rest.
    const double rest = in.client_ttft_ms - in.client_queue_ms - in.queue_ms.value_or(0) - in.prefill_ms.value_or(0);
    b["network_and_front_end_ms"] = nullptr;
    b["server_other_ms"] = nullptr;
    b["unsplit_ms"] = rest;
    text += fmt::format("rest {} ({}network, front end and the first decode step: not split)", Ms2(rest),
                        in.queue_ms ? "" : "server queue, ");
  }
  b["not_measurable"] = not_measurable;
  b["note"] = fmt::format("means over the run; measured parts from {}'s /metrics; the rest "
                          "inferred (client TTFT - client queue - measured parts)", label);
  srv["ttft_breakdown"] = b;
  std::string lines = text + "\n";
  if (!not_measurable.empty()) lines += "  " + not_measurable + "\n";
  return lines;
}

}  // namespace

ServerSection SummarizeServer(const BenchRun& run, const RunTally& t) {
  ServerSection out;
  ordered_json& srv = out.json;
  srv["metrics_available"] = run.metrics_available;
  std::optional<double> mean_client_ttft_ms, mean_client_queue_ms;
  if (!t.ttfts.empty()) {
    double s = 0, q = 0;
    for (int64_t ns : t.ttfts) s += double(ns);
    for (int64_t ns : t.queue_ns) q += double(ns);
    mean_client_ttft_ms = s / double(t.ttfts.size()) / 1e6;
    mean_client_queue_ms = q / double(t.queue_ns.size()) / 1e6;
  }
  if (!run.metrics_available) {
    if (!run.metrics_error.empty()) srv["error"] = run.metrics_error;
    return out;
  }
  srv["server"] = run.after.server;
  auto d = servermetrics::Delta(run.before, run.after);
  // What of TTFT this server's metrics measure (servermetrics/server_dialect.h): llama.cpp's
  // prefill is its summed prompt time over the requests that got a first token here.
  const servermetrics::ServerKind kind = run.after.kind;
  const servermetrics::TtftParts parts = servermetrics::MeanTtftParts(kind, d, double(t.ttfts.size()));
  PutServerFigures(srv, run, d, parts);
  srv["timeline"] = TimelineJson(run);
  TtftSplitInputs in;
  if (mean_client_ttft_ms) in = {*mean_client_ttft_ms, *mean_client_queue_ms, {}, {}, {}};
  in.server_ttft_ms = Ms(parts.server_ttft_s);
  in.queue_ms = Ms(parts.queue_s);
  in.prefill_ms = Ms(parts.prefill_s);
  const bool vllm_like = kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown;
  if (d.counter_reset) {
    // The client's TTFT covers the whole run, the server's only the time since its restart:
    // their difference would be no network time at all.
    out.breakdown_text =
        "Server restarted during the run (its counters went down): server figures cover only "
        "the time since, and TTFT is not split\n";
  } else if (mean_client_ttft_ms && in.server_ttft_ms && vllm_like) {
    out.breakdown_text = VllmTtftSplit(srv, in);
  } else if (mean_client_ttft_ms && !vllm_like && (in.server_ttft_ms || in.queue_ms || in.prefill_ms)) {
    out.breakdown_text = PartialTtftSplit(srv, in, kind, parts.not_measurable);
  } else if (mean_client_ttft_ms && !vllm_like) {
    out.breakdown_text = fmt::format("TTFT split: not measurable on {} ({})\n",
                                     servermetrics::ServerKindLabel(kind), parts.not_measurable);
  }
  return out;
}

}  // namespace latdoc::loadgen::results_internal
