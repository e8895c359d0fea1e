// The /metrics block of a bench result: the server's figures from the deltas of its counters
// and histograms over the run, its timeline, and the split of the client's TTFT into the parts
// the server's metrics measure and an inferred rest (network and front end).
#include <algorithm>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/units.h"
#include "loadgen/results_internal.h"
#include "servermetrics/server_snapshot.h"

namespace latdoc::loadgen::results_internal {
namespace {

std::optional<double> Ms(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return *seconds * 1e3;
}

// The server's figures from the /metrics deltas `d`, and the maxima of its timeline.
void PutServerFigures(ServerFacts& srv, const BenchRun& run, const servermetrics::SnapshotDelta& d,
                      const servermetrics::TtftParts& parts) {
  auto mean_ms = [](const std::optional<servermetrics::HistogramDelta>& h) {
    return h ? Ms(h->mean()) : std::nullopt;
  };
  auto q_ms = [](const std::optional<servermetrics::HistogramDelta>& h, double q) {
    return h ? Ms(h->Quantile(q)) : std::nullopt;
  };
  const servermetrics::ServerKind kind = run.after.kind;
  srv.server_kind = std::string(servermetrics::ServerKindId(kind));
  srv.ttft_mean_ms = Ms(parts.server_ttft_s);
  srv.ttft_p50_ms = q_ms(d.ttft_s, 0.5);
  srv.ttft_p99_ms = q_ms(d.ttft_s, 0.99);
  srv.queue_mean_ms = Ms(parts.queue_s);
  srv.prefill_mean_ms = Ms(parts.prefill_s);
  srv.decode_mean_ms = mean_ms(d.decode_s);
  std::optional<double> itl_ms = mean_ms(d.itl_s);
  if (!itl_ms && kind == servermetrics::ServerKind::kLlamaCpp && d.generation_seconds &&
      d.generation_tokens && *d.generation_tokens > 0) {
    // llama.cpp sums each request's generation time: per token, a slot's step time.
    itl_ms = *d.generation_seconds / *d.generation_tokens * 1e3;
  }
  srv.itl_mean_ms = itl_ms;
  srv.e2e_mean_ms = mean_ms(d.e2e_s);
  // A counter or histogram that went down between the first and the last scrape: the server
  // restarted during the run, and its figures cover only the time since.
  srv.server_restarted = d.counter_reset;
  srv.preemptions = d.preemptions;
  srv.requests_finished = d.request_success;
  for (const auto& s : run.timeline) {
    if (s.running) srv.max_running = std::max(srv.max_running.value_or(0), *s.running);
    if (s.waiting) srv.max_waiting = std::max(srv.max_waiting.value_or(0), *s.waiting);
    if (s.kv_cache_usage)
      srv.max_kv_cache_usage = std::max(srv.max_kv_cache_usage.value_or(0), *s.kv_cache_usage);
  }
}

std::vector<TimelinePoint> Timeline(const BenchRun& run) {
  std::vector<TimelinePoint> tl;
  for (const auto& s : run.timeline)
    tl.push_back({NsToSec(s.t_ns - run.start_ns), s.running, s.waiting, s.kv_cache_usage});
  return tl;
}

// What the TTFT split is made of: the client's means over the run and the server's parts, ms.
struct TtftSplitInputs {
  double client_ttft_ms = 0, client_queue_ms = 0;
  std::optional<double> server_ttft_ms, queue_ms, prefill_ms;
};

// vLLM (or an unknown server read in vLLM's names): every part measured but the network and
// front end.
TtftSplit VllmTtftSplit(const TtftSplitInputs& in) {
  TtftSplit b;
  b.client_ttft_ms = in.client_ttft_ms;
  b.client_queue_ms = in.client_queue_ms;
  b.server_ttft_ms = *in.server_ttft_ms;
  b.queue_ms = in.queue_ms;
  b.prefill_ms = in.prefill_ms;
  b.network_and_front_end_ms = in.client_ttft_ms - in.client_queue_ms - *in.server_ttft_ms;
  if (in.queue_ms && in.prefill_ms)
    b.server_other_ms = *in.server_ttft_ms - *in.queue_ms - *in.prefill_ms;
  b.note =
      "means over the run; client queue = sent - scheduled (open loop, measured); queue "
      "and prefill from the server's histograms (measured); network and front end = "
      "client TTFT - client queue - server TTFT (inferred)";
  return b;
}

// SGLang, TGI, llama.cpp: the parts their metrics measure, and one inferred rest.
TtftSplit PartialTtftSplit(const TtftSplitInputs& in, servermetrics::ServerKind kind,
                           const std::string& not_measurable) {
  TtftSplit b;
  b.client_ttft_ms = in.client_ttft_ms;
  b.client_queue_ms = in.client_queue_ms;
  b.server_ttft_ms = in.server_ttft_ms;
  b.queue_ms = in.queue_ms;
  b.prefill_ms = in.prefill_ms;
  if (in.server_ttft_ms) {
    b.network_and_front_end_ms = in.client_ttft_ms - in.client_queue_ms - *in.server_ttft_ms;
    b.server_other_ms = *in.server_ttft_ms - in.queue_ms.value_or(0) - in.prefill_ms.value_or(0);
  } else {
    // No server TTFT: what the metrics do not time stays one inferred rest.
    b.unsplit_ms = in.client_ttft_ms - in.client_queue_ms - in.queue_ms.value_or(0) -
                   in.prefill_ms.value_or(0);
  }
  b.not_measurable = not_measurable;
  b.note = fmt::format(
      "means over the run; measured parts from {}'s /metrics; the rest "
      "inferred (client TTFT - client queue - measured parts)",
      servermetrics::ServerKindLabel(kind));
  return b;
}

}  // namespace

ServerFacts SummarizeServer(const BenchRun& run, const RunTally& t) {
  ServerFacts srv;
  srv.metrics_available = run.metrics_available;
  std::optional<double> mean_client_ttft_ms, mean_client_queue_ms;
  if (!t.ttfts.empty()) {
    double s = 0, q = 0;
    for (int64_t ns : t.ttfts) s += double(ns);
    for (int64_t ns : t.queue_ns) q += double(ns);
    mean_client_ttft_ms = s / double(t.ttfts.size()) / 1e6;
    mean_client_queue_ms = q / double(t.queue_ns.size()) / 1e6;
  }
  if (!run.metrics_available) {
    if (!run.metrics_error.empty()) srv.error = run.metrics_error;
    return srv;
  }
  srv.server = run.after.server;
  auto d = servermetrics::Delta(run.before, run.after);
  // What of TTFT this server's metrics measure (servermetrics/server_dialect.h): llama.cpp's
  // prefill is its summed prompt time over the requests that got a first token here.
  const servermetrics::ServerKind kind = run.after.kind;
  const servermetrics::TtftParts parts = servermetrics::MeanTtftParts(kind, d, double(t.ttfts.size()));
  PutServerFigures(srv, run, d, parts);
  srv.timeline = Timeline(run);
  TtftSplitInputs in;
  if (mean_client_ttft_ms) in = {*mean_client_ttft_ms, *mean_client_queue_ms, {}, {}, {}};
  in.server_ttft_ms = Ms(parts.server_ttft_s);
  in.queue_ms = Ms(parts.queue_s);
  in.prefill_ms = Ms(parts.prefill_s);
  const bool vllm_like = kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown;
  // After a restart the client's TTFT covers the whole run, the server's only the time since:
  // their difference would be no network time at all, so nothing is split.
  if (d.counter_reset) return srv;
  if (mean_client_ttft_ms && in.server_ttft_ms && vllm_like) {
    srv.ttft_breakdown = VllmTtftSplit(in);
  } else if (mean_client_ttft_ms && !vllm_like &&
             (in.server_ttft_ms || in.queue_ms || in.prefill_ms)) {
    srv.ttft_breakdown = PartialTtftSplit(in, kind, parts.not_measurable);
  }
  return srv;
}

}  // namespace latdoc::loadgen::results_internal
