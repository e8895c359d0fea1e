// The terminal summary of a bench result, in the shape of vllm bench serve's, part by part.
#include <cctype>
#include <utility>

#include <fmt/core.h>

#include "base/json_text.h"
#include "base/strings.h"
#include "base/units.h"
#include "loadgen/results_internal.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen::results_internal {
namespace {

using nlohmann::ordered_json;

// One "label ... value" line of the summary, 52 characters wide.
void Line(std::string& t, std::string_view label, const std::string& v) {
  t += fmt::format("{:<40}{:>12}\n", label, v);
}
std::string Num2(double v) { return FormatFixed(v, 2); }  // never "-0.00"

}  // namespace

std::string SummaryHeaderText(const BenchRun& run, const BenchOptions& o, uint64_t cancelled,
                              const ordered_json& srv, const servermetrics::ServerIdentity& identity) {
  std::string t = fmt::format("{:=^52}\n", " Serving Benchmark Result ");
  if (run.partial) {
    t += fmt::format("PARTIAL: {}{}\n", run.partial_reason,
                     cancelled == 0 ? std::string()
                                    : fmt::format("; {} stream{} cut by the stop (cancelled: TTFT and ITL "
                                                  "kept, not completed)", cancelled, cancelled == 1 ? "" : "s"));
  }
  // The server as its /metrics named it (a merge of shards passes the shards' metrics in).
  const bool metrics_shown = srv.value("metrics_available", false);
  const std::string server_name = metrics_shown && srv.contains("server") && srv["server"].is_string()
                                      ? srv["server"].get<std::string>() : "";
  std::string server_label = ServerLabel(o.url, server_name);
  if (identity.kind != servermetrics::ServerKind::kUnknown && server_name.empty()) {
    server_label += fmt::format(" ({}, from its {})", servermetrics::ServerKindLabel(identity.kind),
                                ToTerminalText(identity.evidence));
  }
  t += fmt::format("Model: {}\nServer: {}\n", run.model.empty() ? "n/a" : ToTerminalText(run.model), server_label);
  return t;
}

std::string CountsText(const RunTally& tally, double dur_s, bool slo) {
  std::string t;
  Line(t, "Successful requests:", std::to_string(tally.completed));
  Line(t, "Failed requests:", std::to_string(tally.failed));
  for (const auto& [k, v] : tally.failures) Line(t, fmt::format("  {}:", k), std::to_string(v));
  if (tally.not_sent > 0) Line(t, "Not sent (stopped first):", std::to_string(tally.not_sent));
  Line(t, "Benchmark duration (s):", Num2(dur_s));
  Line(t, "Total input tokens:", std::to_string(tally.in_tokens));
  Line(t, "Total generated tokens:", std::to_string(tally.out_tokens));
  Line(t, "Request throughput (req/s):", Num2(double(tally.completed) / dur_s));
  if (slo) Line(t, "Request goodput (req/s):", Num2(double(tally.good) / dur_s));
  Line(t, "Output token throughput (tok/s):", Num2(double(tally.out_tokens) / dur_s));
  Line(t, "Total token throughput (tok/s):", Num2(double(tally.in_tokens + tally.out_tokens) / dur_s));
  return t;
}

std::string LatencyText(const ordered_json& j, const BenchOptions& o) {
  std::string t;
  auto jnum = [&](const std::string& key) {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? std::string("n/a") : Num2(it->get<double>());
  };
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
    Line(t, fmt::format("Mean {} (ms):", up), jnum("mean_" + std::string(key) + "_ms"));
    Line(t, fmt::format("Median {} (ms):", up), jnum("median_" + std::string(key) + "_ms"));
    for (double p : text_percentiles) {
      const std::string word = stats::PercentileWord(p);
      Line(t, fmt::format("P{} {} (ms):", word, up), jnum("p" + word + "_" + std::string(key) + "_ms"));
    }
  }
  return t;
}

std::string ServerMetricsText(const ordered_json& srv, const std::string& breakdown_text) {
  if (!srv.value("metrics_available", false)) {
    const std::string why = srv.contains("error") && srv["error"].is_string() ? srv["error"].get<std::string>() : "";
    return fmt::format("Server metrics: not available{}\n", why.empty() ? "" : " (" + why + ")");
  }
  std::string t = fmt::format("{:-^52}\n", " Server (/metrics) ");
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
    Line(t, label, v.is_null() ? "n/a" : count ? FormatCount(v.get<double>()) : Num2(v.get<double>()));
  }
  return t + breakdown_text;
}

std::string TokenCountsText(const RunTally& tally) {
  std::string t = fmt::format("{:-^52}\n", " Token counts ");
  for (const auto& [k, v] : tally.methods) Line(t, fmt::format("Counted by {}:", k), std::to_string(v));
  Line(t, "Usage disagreed with chunks:", std::to_string(tally.mismatches));
  return t;
}

}  // namespace latdoc::loadgen::results_internal
