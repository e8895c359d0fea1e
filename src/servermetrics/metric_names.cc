// Sources:
//  vLLM: vllm-project/vllm vllm/v1/metrics/loggers.py (V1: ~v0.8 @a6f0308cfe, ~v0.10
//        @005a810bc4, ~v0.12/0.13): names, types, labels {model_name, engine},
//        finished_reason on request_success, deprecated gpu_cache_usage_perc (0.9) and
//        time_per_output_token_seconds (0.11, renamed inter_token_latency_seconds).
//  llama.cpp: tools/server/server.cpp (formerly examples/server/server.cpp), handle_metrics:
//        counters prompt_tokens_total, prompt_seconds_total, tokens_predicted_total,
//        tokens_predicted_seconds_total, n_decode_total; gauges requests_processing,
//        requests_deferred, kv_cache_usage_ratio (absent in some recent builds),
//        n_busy_slots_per_decode, prompt_tokens_seconds, predicted_tokens_seconds. All with the
//        "llamacpp:" prefix, no labels, no histograms.
//  SGLang: python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector gauges
//        num_running_reqs, num_queue_reqs, token_usage (fraction of the KV pool); counter
//        num_retracted_requests_total (SGLang's preemption); TokenizerMetricsCollector counters
//        prompt_tokens_total, generation_tokens_total, cached_tokens_total, num_requests_total
//        and histograms time_to_first_token_seconds, inter_token_latency_seconds (older:
//        time_per_output_token_seconds), e2e_request_latency_seconds; queue_time_seconds).
//        Labels include model_name.
//  TGI: text-generation-inference router metrics (docs "reference/metrics"): gauges
//        tgi_batch_current_size, tgi_queue_size; counter tgi_request_success (no _total);
//        histograms tgi_request_duration, tgi_request_queue_duration,
//        tgi_request_inference_duration, tgi_request_mean_time_per_token_duration (seconds),
//        tgi_request_input_length, tgi_request_generated_tokens (tokens; their _sum is the
//        token total). No model label.
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
    {"vllm:spec_decode_num_drafts_total", &S::spec_decode_drafts_total},
    {"vllm:spec_decode_num_draft_tokens_total", &S::spec_decode_draft_tokens_total},
    {"vllm:spec_decode_num_accepted_tokens_total", &S::spec_decode_accepted_tokens_total},
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
    // Prompt tokens a slot reused from its cache; prompt_tokens_total leaves them out, so the
    // two add up to the prompts' tokens (tools/server/server-task.cpp, to_metrics(), in the
    // release node-llama-cpp 3.22.1 bundles).
    {"llamacpp:prompt_tokens_cached_total", &S::prefix_cache_hits_total},
};

constexpr ScalarName kSglangScalars[] = {
    {"sglang:num_running_reqs", &S::requests_running},
    {"sglang:num_queue_reqs", &S::requests_waiting},
    {"sglang:token_usage", &S::kv_cache_usage_fraction, Combine::kMax},
    {"sglang:num_retracted_requests_total", &S::preemptions_total},
    {"sglang:prompt_tokens_total", &S::prompt_tokens_total},
    {"sglang:generation_tokens_total", &S::generation_tokens_total},
    {"sglang:num_requests_total", &S::request_success_total},  // finished requests
    {"sglang:cached_tokens_total", &S::prefix_cache_hits_total},
};

constexpr HistogramName kSglangHistograms[] = {
    {"sglang:time_to_first_token_seconds", &S::ttft_s},
    {"sglang:inter_token_latency_seconds", &S::itl_s},
    {"sglang:time_per_output_token_seconds", &S::itl_s},  // older name
    {"sglang:e2e_request_latency_seconds", &S::e2e_s},
    {"sglang:queue_time_seconds", &S::queue_s},
};

constexpr ScalarName kTgiScalars[] = {
    {"tgi_batch_current_size", &S::requests_running},
    {"tgi_queue_size", &S::requests_waiting},
    {"tgi_request_success", &S::request_success_total},
    {"tgi_request_input_length_sum", &S::prompt_tokens_total},
    {"tgi_request_generated_tokens_sum", &S::generation_tokens_total},
};

constexpr HistogramName kTgiHistograms[] = {
    {"tgi_request_duration", &S::e2e_s},
    {"tgi_request_queue_duration", &S::queue_s},
    {"tgi_request_inference_duration", &S::inference_s},
    {"tgi_request_mean_time_per_token_duration", &S::request_tpot_s},
};

constexpr ServerMetricTable kServers[] = {
    {"vllm", "vllm:", "model_name", kVllmScalars, kVllmHistograms},
    {"llamacpp", "llamacpp:", "", kLlamaCppScalars, {}},
    {"sglang", "sglang:", "model_name", kSglangScalars, kSglangHistograms},
    {"tgi", "tgi_", "", kTgiScalars, kTgiHistograms},
};

}  // namespace

std::span<const ServerMetricTable> KnownServers() { return kServers; }

std::string_view ServerKindName(std::string_view id) {
  if (id == "vllm") return "vLLM";
  if (id == "llamacpp") return "llama.cpp";
  if (id == "sglang") return "SGLang";
  if (id == "tgi") return "TGI";
  return id;
}

}  // namespace latdoc::servermetrics
