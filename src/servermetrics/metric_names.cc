// Sources:
//  vLLM: vllm/v1/metrics/loggers.py (V1, ~v0.8 to v0.13), summarised in
//        /work/shared/reference/vllm.md §4 (names, types, labels {model_name, engine},
//        finished_reason on request_success, deprecated gpu_cache_usage_perc and
//        time_per_output_token_seconds).
//  llama.cpp: tools/server/server.cpp (formerly examples/server/server.cpp), handle_metrics:
//        counters prompt_tokens_total, prompt_seconds_total, tokens_predicted_total,
//        tokens_predicted_seconds_total, n_decode_total; gauges requests_processing,
//        requests_deferred, kv_cache_usage_ratio (absent in some recent builds),
//        n_busy_slots_per_decode, prompt_tokens_seconds, predicted_tokens_seconds. All with the
//        "llamacpp:" prefix, no labels, no histograms.
#include "servermetrics/metric_names.h"

namespace latdoc::servermetrics {
namespace {

using S = ServerSnapshot;

constexpr ScalarName kVllmScalars[] = {
    {"vllm:num_requests_running", &S::requests_running},
    {"vllm:num_requests_waiting", &S::requests_waiting},
    // Fractions (0..1) despite the name; the older name until 0.9-0.11.
    {"vllm:kv_cache_usage_perc", &S::kv_cache_usage_fraction, Combine::kMax},
    {"vllm:gpu_cache_usage_perc", &S::kv_cache_usage_fraction, Combine::kMax},
    {"vllm:num_preemptions_total", &S::preemptions_total},
    {"vllm:prompt_tokens_total", &S::prompt_tokens_total},
    {"vllm:generation_tokens_total", &S::generation_tokens_total},
    {"vllm:request_success_total", &S::request_success_total, Combine::kSum, 1.0,
     "finished_reason"},
    {"vllm:prefix_cache_queries_total", &S::prefix_cache_queries_total},
    {"vllm:prefix_cache_hits_total", &S::prefix_cache_hits_total},
    // vllm:gpu_prefix_cache_{queries,hits}_total counted blocks before 0.9, not tokens: not
    // mapped, so no field mixes units.
};

constexpr HistogramName kVllmHistograms[] = {
    {"vllm:time_to_first_token_seconds", &S::ttft_s},
    {"vllm:inter_token_latency_seconds", &S::itl_s},
    {"vllm:time_per_output_token_seconds", &S::itl_s},  // the same thing before 0.11
    {"vllm:e2e_request_latency_seconds", &S::e2e_s},
    {"vllm:request_queue_time_seconds", &S::queue_s},
    {"vllm:request_prefill_time_seconds", &S::prefill_s},
    {"vllm:request_decode_time_seconds", &S::decode_s},
    {"vllm:request_inference_time_seconds", &S::inference_s},
    {"vllm:request_time_per_output_token_seconds", &S::request_tpot_s},
    {"vllm:iteration_tokens_total", &S::iteration_tokens},
};

constexpr ScalarName kLlamaCppScalars[] = {
    {"llamacpp:requests_processing", &S::requests_running},
    {"llamacpp:requests_deferred", &S::requests_waiting},
    {"llamacpp:kv_cache_usage_ratio", &S::kv_cache_usage_fraction, Combine::kMax},
    {"llamacpp:prompt_tokens_total", &S::prompt_tokens_total},
    {"llamacpp:tokens_predicted_total", &S::generation_tokens_total},
    {"llamacpp:prompt_seconds_total", &S::prompt_seconds_total},
    {"llamacpp:tokens_predicted_seconds_total", &S::generation_seconds_total},
    {"llamacpp:n_decode_total", &S::engine_steps_total},
};

constexpr ServerMetricTable kServers[] = {
    {"vllm", "vllm:", "model_name", kVllmScalars, kVllmHistograms},
    {"llamacpp", "llamacpp:", "", kLlamaCppScalars, {}},
};

}  // namespace

std::span<const ServerMetricTable> KnownServers() { return kServers; }

}  // namespace latdoc::servermetrics
