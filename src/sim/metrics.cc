#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "servermetrics/prometheus_parser.h"

namespace latdoc::sim {
namespace {

// Buckets from vllm/v1/metrics/loggers.py (≈v0.10-0.12).
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                         0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                         7.5,  10.0,  20.0, 40.0,  80.0};
const std::vector<double> kRequestLatencyBuckets = {
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
const std::vector<double> kIterationTokenBuckets = {1,   8,    16,   32,   64,   128,  256,
                                                    512, 1024, 2048, 4096, 8192, 16384};
const std::vector<double> kOverrunBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                             0.005,  0.01,    0.025,  0.05,  0.1};

// build_1_2_5_buckets(max_value): 1, 2, 5, 10, 20, 50, ... up to max_value.
std::vector<double> Buckets125(int max_value) {
  std::vector<double> b;
  for (double m = 1;; m *= 10) {
    for (double f : {1.0, 2.0, 5.0}) {
      if (m * f > max_value) return b;
      b.push_back(m * f);
    }
  }
}

std::string Le(double v) {
  // prometheus_client formats bounds as Python floats: 1.0, 0.001, 2560.0.
  std::string s = fmt::format("{}", v);
  if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
  return s;
}

std::string Num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::string s = fmt::format("{}", v);
  if (s.find('.') == std::string::npos && s.find('e') == std::string::npos) s += ".0";
  return s;
}

}  // namespace

PromHistogram::PromHistogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void PromHistogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++counts_[i];
  ++count_;
  sum_ += v;
}

void PromHistogram::Render(const std::string& name, const std::string& labels,
                           std::string* out) const {
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    *out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, Le(bounds_[i]), Num(double(cum)));
  }
  cum += counts_.back();
  *out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, Num(double(cum)));
  *out += fmt::format("{}_count{{{}}} {}\n", name, labels, Num(double(count_)));
  *out += fmt::format("{}_sum{{{}}} {}\n", name, labels, Num(sum_));
}

SimMetrics::SimMetrics(int max_model_len)
    : ttft(kTtftBuckets),
      itl(kItlBuckets),
      tpot_request(kItlBuckets),
      e2e(kRequestLatencyBuckets),
      queue(kRequestLatencyBuckets),
      inference(kRequestLatencyBuckets),
      prefill(kRequestLatencyBuckets),
      decode(kRequestLatencyBuckets),
      iteration_tokens(kIterationTokenBuckets),
      request_prompt_tokens(Buckets125(max_model_len)),
      request_generation_tokens(Buckets125(max_model_len)),
      step_overrun(kOverrunBuckets) {}

std::string SimMetrics::Render(const std::string& model_name) const {
  std::string out;
  out.reserve(32 * 1024);
  const std::string labels =
      fmt::format("engine=\"0\",model_name=\"{}\"", servermetrics::EscapeLabelValue(model_name));
  auto gauge = [&](const char* name, const char* help, double v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{}{{{}}} {}\n", name, help, name, name,
                       labels, Num(v));
  };
  auto counter = [&](const char* name, const char* help, double v) {
    out += fmt::format("# HELP {}_total {}\n# TYPE {}_total counter\n{}_total{{{}}} {}\n", name,
                       help, name, name, labels, Num(v));
  };
  auto hist = [&](const char* name, const char* help, const PromHistogram& h) {
    out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
    h.Render(name, labels, &out);
  };
  gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running);
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kv_usage);
  counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
          double(preemptions));
  counter("vllm:prompt_tokens", "Number of prefill tokens processed.", double(prompt_tokens));
  counter("vllm:generation_tokens", "Number of generation tokens processed.",
          double(generation_tokens));
  counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
          double(prefix_cache_queries));
  counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
          double(prefix_cache_hits));
  if (spec_decode) {
    counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", double(spec_drafts));
    counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", double(spec_draft_tokens));
    counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
            double(spec_accepted_tokens));
  }
  out += "# HELP vllm:request_success_total Count of successfully processed requests.\n"
         "# TYPE vllm:request_success_total counter\n";
  for (auto [reason, v] : {std::pair{"abort", success_abort}, std::pair{"length", success_length},
                           std::pair{"stop", success_stop}}) {
    out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {}\n", labels,
                       reason, Num(double(v)));
  }
  hist("vllm:request_prompt_tokens", "Number of prefill tokens processed.", request_prompt_tokens);
  hist("vllm:request_generation_tokens", "Number of generation tokens processed.",
       request_generation_tokens);
  hist("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.",
       iteration_tokens);
  hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft);
  hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl);
  hist("vllm:request_time_per_output_token_seconds",
       "Histogram of time_per_output_token_seconds per request.", tpot_request);
  hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e);
  hist("vllm:request_queue_time_seconds",
       "Histogram of time spent in WAITING phase for request.", queue);
  hist("vllm:request_inference_time_seconds",
       "Histogram of time spent in RUNNING phase for request.", inference);
  hist("vllm:request_prefill_time_seconds",
       "Histogram of time spent in PREFILL phase for request.", prefill);
  hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.",
       decode);
  hist("latdoc_sim:step_overrun_seconds",
       "How late each engine step ended against its schedule (simulator health).", step_overrun);
  return out;
}

}  // namespace latdoc::sim
