// The terminal summary of a bench result, in the shape of vllm bench serve's, part by part,
// rendered from its LoadFacts (never from the JSON).
#include <tuple>
#include <utility>

#include <fmt/core.h>

#include "base/strings.h"
#include "base/units.h"
#include "loadgen/results_internal.h"
#include "servermetrics/server_dialect.h"
#include "servermetrics/server_snapshot.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen::results_internal {
namespace {

// One "label ... value" line of the summary, 52 characters wide.
void Line(std::string& t, std::string_view label, const std::string& v) {
  t += fmt::format("{:<40}{:>12}\n", label, v);
}
std::string Num2(double v) { return FormatFixed(v, 2); }  // never "-0.00"

// "12.34 ms" or "n/a".
std::string Ms2(std::optional<double> v) {
  return v ? FormatFixed(*v, 2) + " ms" : std::string("n/a");
}

// The TTFT split's lines (results_server.cc made it), or why there is none.
std::string BreakdownText(const ServerFacts& srv, bool client_ttft_measured) {
  const servermetrics::ServerKind kind =
      servermetrics::ServerKindFromId(srv.server_kind.value_or(""));
  const bool vllm_like =
      kind == servermetrics::ServerKind::kVllm || kind == servermetrics::ServerKind::kUnknown;
  if (srv.server_restarted.value_or(false)) {
    return "Server restarted during the run (its counters went down): server figures cover only "
           "the time since, and TTFT is not split\n";
  }
  if (!srv.ttft_breakdown) {
    if (!client_ttft_measured || vllm_like) return "";
    // Nothing of TTFT measured: what the server's metrics lack (servermetrics::MeanTtftParts
    // says so from its kind alone when no part was measured).
    return fmt::format("TTFT split: not measurable on {} ({})\n",
                       servermetrics::ServerKindLabel(kind),
                       servermetrics::MeanTtftParts(kind, {}, std::nullopt).not_measurable);
  }
  const TtftSplit& b = *srv.ttft_breakdown;
  const double client_queue_ms = b.client_queue_ms.value_or(0);
  const std::string client_queue =
      client_queue_ms >= 0.005 ? "client queue " + Ms2(client_queue_ms) + " + " : "";
  if (!b.not_measurable) {
    return fmt::format(
        "TTFT breakdown (mean): client {} = {}queue {} + prefill {} + other server {} + "
        "network and front end {}\n",
        Ms2(b.client_ttft_ms), client_queue, Ms2(b.queue_ms), Ms2(b.prefill_ms),
        Ms2(b.server_other_ms), Ms2(b.network_and_front_end_ms));
  }
  // SGLang, TGI, llama.cpp: the parts measured, then the rest.
  std::string text =
      fmt::format("TTFT breakdown (mean, {}): client {} = {}", servermetrics::ServerKindLabel(kind),
                  Ms2(b.client_ttft_ms), client_queue);
  if (b.queue_ms) text += "queue " + Ms2(b.queue_ms) + " + ";
  if (b.prefill_ms) text += "prefill " + Ms2(b.prefill_ms) + " + ";
  if (b.server_ttft_ms) {
    text += fmt::format("other server {} + network and front end {}", Ms2(b.server_other_ms),
                        Ms2(b.network_and_front_end_ms));
  } else {
    text += fmt::format("rest {} ({}network, front end and the first decode step: not split)",
                        Ms2(b.unsplit_ms), b.queue_ms ? "" : "server queue, ");
  }
  std::string lines = text + "\n";
  if (!b.not_measurable->empty()) lines += "  " + *b.not_measurable + "\n";
  return lines;
}

}  // namespace

std::string SummaryHeaderText(const BenchRun& run, const BenchOptions& o, const LoadFacts& f,
                              const servermetrics::ServerIdentity& identity) {
  std::string t = fmt::format("{:=^52}\n", " Serving Benchmark Result ");
  const uint64_t cancelled = f.cancelled.value_or(0);
  if (run.partial) {
    t += fmt::format("PARTIAL: {}{}\n", run.partial_reason,
                     cancelled == 0 ? std::string()
                                    : fmt::format("; {} stream{} cut by the stop (cancelled: TTFT and ITL "
                                                  "kept, not completed)", cancelled, cancelled == 1 ? "" : "s"));
  }
  // The server as its /metrics named it (a merge of shards passes the shards' metrics in).
  const std::string server_name = f.server.metrics_available ? f.server.server.value_or("") : "";
  std::string server_label = ServerLabel(o.url, server_name);
  if (identity.kind != servermetrics::ServerKind::kUnknown && server_name.empty()) {
    server_label += fmt::format(" ({}, from its {})", servermetrics::ServerKindLabel(identity.kind),
                                ToTerminalText(identity.evidence));
  }
  t += fmt::format("Model: {}\nServer: {}\n", run.model.empty() ? "n/a" : ToTerminalText(run.model), server_label);
  return t;
}

std::string CountsText(const LoadFacts& f, bool slo) {
  std::string t;
  auto num = [](const std::optional<double>& v) { return v ? Num2(*v) : std::string("n/a"); };
  Line(t, "Successful requests:", std::to_string(f.completed));
  Line(t, "Failed requests:", std::to_string(f.failed));
  for (const auto& [k, v] : f.failures) Line(t, fmt::format("  {}:", k), std::to_string(v));
  if (f.not_sent.value_or(0) > 0) Line(t, "Not sent (stopped first):", std::to_string(*f.not_sent));
  Line(t, "Benchmark duration (s):", num(f.duration_s));
  Line(t, "Total input tokens:", std::to_string(f.total_input_tokens));
  Line(t, "Total generated tokens:", std::to_string(f.total_output_tokens));
  Line(t, "Request throughput (req/s):", num(f.request_throughput));
  if (slo) Line(t, "Request goodput (req/s):", num(f.request_goodput));
  Line(t, "Output token throughput (tok/s):", num(f.output_throughput));
  Line(t, "Total token throughput (tok/s):", num(f.total_token_throughput));
  return t;
}

std::string LatencyText(const LoadFacts& f, const BenchOptions& o) {
  std::string t;
  auto num = [](const std::optional<double>& v) { return v ? Num2(*v) : std::string("n/a"); };
  const std::vector<double> text_percentiles =
      o.summary_percentiles.empty() ? std::vector<double>{99} : o.summary_percentiles;
  for (auto [title, up, stats] :
       {std::tuple{"Time to First Token", "TTFT", &f.ttft},
        std::tuple{"Time per Output Token (excl. 1st token)", "TPOT", &f.tpot},
        std::tuple{"Inter-token Latency", "ITL", &f.itl},
        std::tuple{"End-to-end Latency", "E2EL", &f.e2el}}) {
    if (!*stats) continue;  // not in --percentile-metrics
    t += fmt::format("{:-^52}\n", std::string(" ") + title + " ");
    Line(t, fmt::format("Mean {} (ms):", up), num((*stats)->mean_ms));
    Line(t, fmt::format("Median {} (ms):", up), num((*stats)->median_ms));
    for (double p : text_percentiles)
      Line(t, fmt::format("P{} {} (ms):", stats::PercentileWord(p), up), num((*stats)->At(p)));
  }
  return t;
}

std::string ServerMetricsText(const ServerFacts& srv, bool with_breakdown,
                              bool client_ttft_measured) {
  if (!srv.metrics_available) {
    const std::string why = srv.error.value_or("");
    return fmt::format("Server metrics: not available{}\n", why.empty() ? "" : " (" + why + ")");
  }
  std::string t = fmt::format("{:-^52}\n", " Server (/metrics) ");
  // Preemptions and waiting requests are counts: "0", not "0.00".
  auto line = [&t](const char* label, const std::optional<double>& v, bool count) {
    Line(t, label, !v ? "n/a" : count ? FormatCount(*v) : Num2(*v));
  };
  line("Server mean TTFT (ms):", srv.ttft_mean_ms, false);
  line("Server mean queue time (ms):", srv.queue_mean_ms, false);
  line("Server mean prefill time (ms):", srv.prefill_mean_ms, false);
  line("Server mean ITL (ms):", srv.itl_mean_ms, false);
  line("Preemptions:", srv.preemptions, true);
  line("Max waiting requests:", srv.max_waiting, true);
  line("Max KV cache usage (0-1):", srv.max_kv_cache_usage, false);
  return with_breakdown ? t + BreakdownText(srv, client_ttft_measured) : t;
}

std::string TokenCountsText(const LoadFacts& f) {
  std::string t = fmt::format("{:-^52}\n", " Token counts ");
  for (const auto& [k, v] : f.token_count_method)
    Line(t, fmt::format("Counted by {}:", k), std::to_string(v));
  Line(t, "Usage disagreed with chunks:", std::to_string(f.token_count_mismatches));
  return t;
}

}  // namespace latdoc::loadgen::results_internal
