// ServerSnapshot: one scrape of an inference server's /metrics, mapped from the server's own
// metric names (metric_names.h) onto one set of fields, summed over label sets (engines,
// finish reasons) for one model or for all; fractions (KV cache usage) take the largest. Delta() of two snapshots gives what happened
// between the scrapes: counter increases, and per-histogram count, sum, mean and quantiles.
//
// Units are the servers': latency histograms in seconds (field names end in _s), token
// histograms in tokens, gauges as fractions (kv_cache_usage_fraction, 0..1) or counts.
// A metric the server does not expose is nullopt, never 0.
// Pure data and functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "servermetrics/prometheus_parser.h"

namespace latdoc::servermetrics {

// A Prometheus histogram: cumulative counts by upper bound ("le"), ascending; the last bound
// is +Inf when the server exposes it (it should).
struct HistogramData {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;
  double sum = 0;
  double count = 0;
};

// Which inference server answers. Its /metrics names say it (BuildSnapshot); without them,
// servermetrics/server_dialect.h reads it from /v1/models, a response header or a command line.
enum class ServerKind { kUnknown, kVllm, kLlamaCpp, kSglang, kTgi };

struct ServerSnapshot {
  std::string server;                    // "vllm", "llamacpp", ... ; "" when none matched
  ServerKind kind = ServerKind::kUnknown;  // the same server as `server`, as an enum
  std::vector<std::string> model_names;  // values of the model label seen on the page
  uint64_t bad_line_count = 0;           // from the parser

  // Gauges: the value at scrape time.
  std::optional<double> requests_running;
  std::optional<double> requests_waiting;
  std::optional<double> kv_cache_usage_fraction;  // the fullest engine's

  // Counters: cumulative since the server started.
  std::optional<double> preemptions_total;
  std::optional<double> prompt_tokens_total;
  std::optional<double> generation_tokens_total;
  std::optional<double> request_success_total;
  std::map<std::string, double> request_success_by_reason;  // vLLM finished_reason
  std::optional<double> prefix_cache_queries_total;         // tokens
  std::optional<double> prefix_cache_hits_total;            // tokens (llama.cpp: reused from a slot's cache)
  // Speculative decoding (vLLM V1, vllm/v1/spec_decode/metrics.py): drafts verified, draft
  // tokens proposed, draft tokens accepted.
  std::optional<double> spec_decode_drafts_total, spec_decode_draft_tokens_total,
      spec_decode_accepted_tokens_total;
  std::optional<double> prompt_seconds_total;               // llama.cpp: time in prompt processing
  std::optional<double> generation_seconds_total;           // llama.cpp: time in generation
  std::optional<double> engine_steps_total;                 // llama.cpp n_decode_total

  // Histograms.
  std::optional<HistogramData> ttft_s;           // server-side time to first token
  std::optional<HistogramData> itl_s;            // inter-token latency (per engine step)
  std::optional<HistogramData> e2e_s;            // request latency
  std::optional<HistogramData> queue_s;          // waiting for the scheduler
  std::optional<HistogramData> prefill_s;
  std::optional<HistogramData> decode_s;
  std::optional<HistogramData> inference_s;      // prefill + decode
  std::optional<HistogramData> request_tpot_s;   // mean time per output token, per request
  std::optional<HistogramData> iteration_tokens; // tokens per engine step
};

// Maps `page` onto a snapshot. Samples whose model label differs from `model_name` are left
// out; samples without a model label (llama.cpp) are kept. An empty `model_name` keeps all, and
// so does one that no sample carries on a page of one model (an alias or a LoRA adapter of it).
ServerSnapshot BuildSnapshot(const PrometheusPage& page, std::string_view model_name = {});

// Parses and maps a page in one call.
ServerSnapshot SnapshotFromText(std::string_view text, std::string_view model_name = {});

// A histogram's change between two scrapes.
struct HistogramDelta {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative_counts;
  double count = 0;
  double sum = 0;

  // sum / count; nullopt when nothing was observed.
  std::optional<double> mean() const;
  // Prometheus's histogram_quantile(q) over these buckets: linear interpolation inside the
  // bucket that holds rank q*count (the first bucket from 0); a rank in the +Inf bucket gives
  // the largest finite bound. nullopt when nothing was observed, q is outside [0, 1], or
  // there is no +Inf bucket.
  std::optional<double> Quantile(double q) const;
};

struct SnapshotDelta {
  // Counter increases (after - before; `after` alone when the counter went down, i.e. the
  // server restarted, which sets counter_reset). nullopt when `after` lacks the counter.
  std::optional<double> preemptions;
  std::optional<double> prompt_tokens;
  std::optional<double> generation_tokens;
  std::optional<double> request_success;
  std::map<std::string, double> request_success_by_reason;
  std::optional<double> prefix_cache_queries;
  std::optional<double> prefix_cache_hits;
  std::optional<double> prompt_seconds;
  std::optional<double> generation_seconds;
  std::optional<double> engine_steps;

  std::optional<HistogramDelta> ttft_s;
  std::optional<HistogramDelta> itl_s;
  std::optional<HistogramDelta> e2e_s;
  std::optional<HistogramDelta> queue_s;
  std::optional<HistogramDelta> prefill_s;
  std::optional<HistogramDelta> decode_s;
  std::optional<HistogramDelta> inference_s;
  std::optional<HistogramDelta> request_tpot_s;
  std::optional<HistogramDelta> iteration_tokens;

  bool counter_reset = false;
};

SnapshotDelta Delta(const ServerSnapshot& before, const ServerSnapshot& after);

}  // namespace latdoc::servermetrics
