// The simulator's /metrics: vLLM V1's Prometheus names, types, labels and buckets
// (vllm-project/vllm vllm/v1/metrics/loggers.py, ~v0.10 @005a810bc4, with the ~v0.12 renames),
// rendered in the text exposition format. Values are measured in wall-clock time as the simulator runs.
// Not thread-safe: owned by the simulator's loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace latdoc::sim {

// A Prometheus histogram with fixed upper bounds.
class PromHistogram {
 public:
  explicit PromHistogram(std::vector<double> bounds);
  void Observe(double v);
  // Appends `name_bucket{labels,le=...}`, `name_sum`, `name_count` lines.
  void Render(const std::string& name, const std::string& labels, std::string* out) const;
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct SimMetrics {
  explicit SimMetrics(int max_model_len);

  // Gauges, set each step.
  int running = 0;
  int waiting = 0;
  double kv_usage = 0;  // fraction 0..1
  // Counters.
  uint64_t preemptions = 0;
  uint64_t prompt_tokens = 0;
  uint64_t generation_tokens = 0;
  // Prefix cache: tokens looked up (every prompt's, when prefilled) and found. The sim caches
  // nothing, so every lookup misses, as the stats line's 0.0% says.
  uint64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
  uint64_t success_stop = 0, success_length = 0, success_abort = 0;
  // Speculative decoding (rendered when spec_decode is true): vLLM V1's counters
  // (vllm/v1/spec_decode/metrics.py, SpecDecodingProm).
  bool spec_decode = false;
  uint64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
  // Histograms (seconds unless named otherwise).
  PromHistogram ttft, itl, tpot_request, e2e, queue, inference, prefill, decode;
  PromHistogram iteration_tokens, request_prompt_tokens, request_generation_tokens;
  // latdoc's own: how late each step ended against its schedule.
  PromHistogram step_overrun;

  std::string Render(const std::string& model_name) const;
};

}  // namespace latdoc::sim
