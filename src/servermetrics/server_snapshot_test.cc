#include "servermetrics/server_snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/file_util.h"

namespace latdoc::servermetrics {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

std::string Fixture(const std::string& name) {
  auto text = ReadFileToString("tests/data/servermetrics/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : std::string();
}

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ServerSnapshotTest, VllmPageSumsEnginesAndReasons) {
  ServerSnapshot s = SnapshotFromText(Fixture("vllm_v1_after.prom"));
  EXPECT_EQ(s.server, "vllm");
  EXPECT_THAT(s.model_names, ElementsAre("meta-llama/Llama-3.1-8B-Instruct"));
  EXPECT_EQ(s.bad_line_count, 0u);
  EXPECT_EQ(s.requests_running, 12);            // 7 + 5
  EXPECT_EQ(s.requests_waiting, 3);             // 2 + 1
  EXPECT_EQ(s.kv_cache_usage_fraction, 0.42);   // the fuller of 0.42 and 0.38
  EXPECT_EQ(s.preemptions_total, 3);
  EXPECT_EQ(s.prompt_tokens_total, 51200);
  EXPECT_EQ(s.generation_tokens_total, 6400);
  EXPECT_EQ(s.request_success_total, 50);
  EXPECT_THAT(s.request_success_by_reason,
              ElementsAre(Pair("abort", 1), Pair("length", 48), Pair("stop", 1)));
  EXPECT_EQ(s.prefix_cache_queries_total, 51200);
  EXPECT_EQ(s.prefix_cache_hits_total, 2048);
  EXPECT_FALSE(s.prompt_seconds_total.has_value());  // llama.cpp only

  ASSERT_TRUE(s.ttft_s.has_value());
  ASSERT_EQ(s.ttft_s->upper_bounds.size(), 23u);
  EXPECT_EQ(s.ttft_s->upper_bounds.front(), 0.001);
  EXPECT_EQ(s.ttft_s->upper_bounds.back(), kInf);
  EXPECT_EQ(s.ttft_s->cumulative_counts[4], 30);  // le=0.04: 16 + 14
  EXPECT_EQ(s.ttft_s->count, 50);
  EXPECT_DOUBLE_EQ(s.ttft_s->sum, 1.85);
  for (auto* h : {&s.itl_s, &s.e2e_s, &s.queue_s, &s.prefill_s, &s.decode_s, &s.inference_s,
                  &s.request_tpot_s, &s.iteration_tokens}) {
    EXPECT_TRUE(h->has_value());
  }
  EXPECT_EQ(s.iteration_tokens->count, 3382 + 3124);
}

// Expected numbers worked by hand from make_vllm_pages.py (engines summed):
//   TTFT cumulative, le 0.01/0.02/0.04/0.06/0.08: before 2/5/10/10/10, after 2/9/30/48/50
//     -> delta 0/4/20/38/40, count 40, sum 1.85-0.25 = 1.6, mean 0.04
//     p50: rank 20 in (0.02,0.04], 16 of 16 -> 0.04
//     p90: rank 36 in (0.04,0.06] holding 18, 16th -> 0.04 + 0.02*16/18
//     p99: rank 39.6 in (0.06,0.08] holding 2, 1.6th -> 0.06 + 0.02*0.8 = 0.076
//   Queue, le 0.3/0.5/0.8/1.0: before 10/10/10/10, after 30/40/48/50 -> 20/30/38/40,
//     sum 12.0-0.5 = 11.5; p50: rank 20 in [0,0.3] holding 20 -> 0.3;
//     p90: rank 36 in (0.5,0.8] holding 8, 6th -> 0.5 + 0.3*6/8 = 0.725
//   Decode, le 2.0/2.5/5.0: before 10/10/10, after 18/38/50 -> 8/28/40, sum 118-15 = 103;
//     p50: rank 20 in (2.0,2.5] holding 20, 12th -> 2.3;
//     p99: rank 39.6 in (2.5,5.0] holding 12, 11.6th -> 2.5 + 2.5*11.6/12
TEST(ServerSnapshotTest, DeltaMatchesHandComputedNumbers) {
  ServerSnapshot before = SnapshotFromText(Fixture("vllm_v1_before.prom"));
  ServerSnapshot after = SnapshotFromText(Fixture("vllm_v1_after.prom"));
  SnapshotDelta d = Delta(before, after);
  EXPECT_FALSE(d.counter_reset);
  EXPECT_EQ(d.request_success, 40);
  EXPECT_THAT(d.request_success_by_reason,
              ElementsAre(Pair("abort", 1), Pair("length", 38), Pair("stop", 1)));
  EXPECT_EQ(d.prompt_tokens, 40960);
  EXPECT_EQ(d.generation_tokens, 5120);
  EXPECT_EQ(d.preemptions, 3);
  EXPECT_EQ(d.prefix_cache_hits, 2048);
  EXPECT_EQ(d.prefix_cache_queries, 40960);

  ASSERT_TRUE(d.ttft_s.has_value());
  EXPECT_EQ(d.ttft_s->count, 40);
  EXPECT_NEAR(d.ttft_s->sum, 1.6, 1e-12);
  EXPECT_NEAR(*d.ttft_s->mean(), 0.04, 1e-12);
  EXPECT_THAT(std::vector<double>(d.ttft_s->cumulative_counts.begin() + 2,
                                  d.ttft_s->cumulative_counts.begin() + 7),
              ElementsAre(0, 4, 20, 38, 40));
  EXPECT_NEAR(*d.ttft_s->Quantile(0.5), 0.04, 1e-12);
  EXPECT_NEAR(*d.ttft_s->Quantile(0.9), 0.04 + 0.02 * 16 / 18, 1e-12);
  EXPECT_NEAR(*d.ttft_s->Quantile(0.99), 0.076, 1e-12);

  ASSERT_TRUE(d.queue_s.has_value());
  EXPECT_EQ(d.queue_s->count, 40);
  EXPECT_NEAR(d.queue_s->sum, 11.5, 1e-12);
  EXPECT_NEAR(*d.queue_s->Quantile(0.5), 0.3, 1e-12);
  EXPECT_NEAR(*d.queue_s->Quantile(0.9), 0.725, 1e-12);

  ASSERT_TRUE(d.decode_s.has_value());
  EXPECT_EQ(d.decode_s->count, 40);
  EXPECT_NEAR(d.decode_s->sum, 103, 1e-9);
  EXPECT_NEAR(*d.decode_s->mean(), 2.575, 1e-12);
  EXPECT_NEAR(*d.decode_s->Quantile(0.5), 2.3, 1e-12);
  EXPECT_NEAR(*d.decode_s->Quantile(0.99), 2.5 + 2.5 * 11.6 / 12, 1e-12);
}

TEST(ServerSnapshotTest, ModelFilter) {
  const char kPage[] =
      "vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 2.0\n"
      "vllm:num_requests_running{engine=\"0\",model_name=\"b\"} 5.0\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"a\"} 100.0\n";
  ServerSnapshot all = SnapshotFromText(kPage);
  EXPECT_EQ(all.requests_running, 7);
  EXPECT_THAT(all.model_names, ElementsAre("a", "b"));
  ServerSnapshot b = SnapshotFromText(kPage, "b");
  EXPECT_EQ(b.requests_running, 5);
  EXPECT_FALSE(b.prompt_tokens_total.has_value());  // model b has none: not 0
  EXPECT_THAT(b.model_names, ElementsAre("a", "b"));
  // "c" on a page of two engines: which serves it is unknown, so nothing is kept.
  ServerSnapshot none = SnapshotFromText(kPage, "c");
  EXPECT_FALSE(none.requests_running.has_value());
  // On a page of one model, "c" is an alias or a LoRA adapter of it (vLLM labels series with
  // the first served name only): its series are the engine's.
  const char kOneModel[] =
      "vllm:num_requests_running{engine=\"0\",model_name=\"a\"} 2.0\n"
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"a\"} 100.0\n";
  ServerSnapshot alias = SnapshotFromText(kOneModel, "c");
  EXPECT_EQ(alias.requests_running, 2);
  EXPECT_EQ(alias.prompt_tokens_total, 100);
  EXPECT_THAT(alias.model_names, ElementsAre("a"));
}

TEST(ServerSnapshotTest, PreferredNamesWinOverDeprecatedOnes) {
  const char kOld[] =
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
      "vllm:time_per_output_token_seconds_bucket{le=\"0.01\",model_name=\"m\"} 1.0\n"
      "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4.0\n"
      "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 4.0\n"
      "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.2\n";
  ServerSnapshot old = SnapshotFromText(kOld);
  EXPECT_EQ(old.kv_cache_usage_fraction, 0.5);
  ASSERT_TRUE(old.itl_s.has_value());
  EXPECT_EQ(old.itl_s->count, 4);

  const std::string both = std::string(kOld) +
                           "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.25\n"
                           "vllm:inter_token_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 9.0\n"
                           "vllm:inter_token_latency_seconds_count{model_name=\"m\"} 9.0\n";
  ServerSnapshot s = SnapshotFromText(both);
  EXPECT_EQ(s.kv_cache_usage_fraction, 0.25);
  EXPECT_EQ(s.itl_s->count, 9);  // not 4, not 13
}

TEST(ServerSnapshotTest, LlamaCppPage) {
  ServerSnapshot s = SnapshotFromText(Fixture("llamacpp_metrics.prom"));
  EXPECT_EQ(s.server, "llamacpp");
  EXPECT_TRUE(s.model_names.empty());
  EXPECT_EQ(s.requests_running, 3);
  EXPECT_EQ(s.requests_waiting, 5);
  EXPECT_EQ(s.kv_cache_usage_fraction, 0.255859);
  EXPECT_EQ(s.prompt_tokens_total, 6886);
  EXPECT_EQ(s.generation_tokens_total, 3469);
  EXPECT_EQ(s.prompt_seconds_total, 2.90363);
  EXPECT_EQ(s.generation_seconds_total, 35.4427);
  EXPECT_EQ(s.engine_steps_total, 1203);
  EXPECT_FALSE(s.ttft_s.has_value());
  EXPECT_FALSE(s.preemptions_total.has_value());
  // A model filter does not drop llama.cpp's unlabelled series.
  EXPECT_EQ(SnapshotFromText(Fixture("llamacpp_metrics.prom"), "x").requests_running, 3);
}

TEST(ServerSnapshotTest, NanGaugeIsNotReportedAndUnknownServerIsEmpty) {
  ServerSnapshot s = SnapshotFromText("llamacpp:kv_cache_usage_ratio nan\n"
                                      "llamacpp:requests_processing 0\n");
  EXPECT_FALSE(s.kv_cache_usage_fraction.has_value());
  EXPECT_EQ(s.requests_running, 0);
  ServerSnapshot other = SnapshotFromText("go_goroutines 12\n");
  EXPECT_EQ(other.server, "");
  EXPECT_FALSE(other.requests_running.has_value());
}

TEST(ServerSnapshotTest, CounterResetUsesTheNewValue) {
  ServerSnapshot before, after;
  before.prompt_tokens_total = 1000;
  after.prompt_tokens_total = 30;  // the server restarted
  after.generation_tokens_total = 7;  // new counter: counts from 0
  SnapshotDelta d = Delta(before, after);
  EXPECT_TRUE(d.counter_reset);
  EXPECT_EQ(d.prompt_tokens, 30);
  EXPECT_EQ(d.generation_tokens, 7);
  EXPECT_FALSE(d.preemptions.has_value());
  EXPECT_FALSE(d.ttft_s.has_value());
}

// A restart between scrapes after which more, faster requests were served: no count and no
// bucket went down, but the sum did. The delta is the new histogram, not a negative mean.
TEST(ServerSnapshotTest, HistogramWhoseSumWentDownWasReset) {
  ServerSnapshot before, after;
  before.ttft_s = HistogramData{{0.1, 5, kInf}, {0, 10, 10}, 20.0, 10};
  after.ttft_s = HistogramData{{0.1, 5, kInf}, {40, 40, 40}, 2.0, 40};
  SnapshotDelta d = Delta(before, after);
  EXPECT_TRUE(d.counter_reset);
  ASSERT_TRUE(d.ttft_s.has_value());
  EXPECT_EQ(d.ttft_s->count, 40);
  EXPECT_EQ(d.ttft_s->sum, 2.0);
  EXPECT_EQ(d.ttft_s->cumulative_counts, (std::vector<double>{40, 40, 40}));
}

TEST(HistogramDeltaTest, QuantileEdgeCases) {
  HistogramDelta h;
  h.upper_bounds = {0.1, 0.2, kInf};
  h.cumulative_counts = {0, 0, 0};
  EXPECT_FALSE(h.Quantile(0.5).has_value());  // nothing observed
  EXPECT_FALSE(h.mean().has_value());
  h.cumulative_counts = {10, 10, 20};
  h.count = 20;
  EXPECT_NEAR(*h.Quantile(0.25), 0.05, 1e-12);  // inside the first bucket, from 0
  EXPECT_EQ(*h.Quantile(0.9), 0.2);             // in the +Inf bucket: the largest finite bound
  EXPECT_FALSE(h.Quantile(1.5).has_value());
  EXPECT_FALSE(h.Quantile(-0.1).has_value());
  h.upper_bounds = {0.1, 0.2, 0.3};  // no +Inf bucket
  EXPECT_FALSE(h.Quantile(0.5).has_value());
}

}  // namespace
}  // namespace latdoc::servermetrics

namespace latdoc::servermetrics {
namespace {

// Written from sglang/srt/metrics/collector.py (names, labels); not captured.
TEST(ServerSnapshotTest, SglangTable) {
  const char kPage[] =
      "sglang:num_running_reqs{model_name=\"m\"} 162.0\n"
      "sglang:num_queue_reqs{model_name=\"m\"} 2826.0\n"
      "sglang:token_usage{model_name=\"m\"} 0.28\n"
      "sglang:num_retracted_requests_total{model_name=\"m\"} 4.0\n"
      "sglang:prompt_tokens_total{model_name=\"m\"} 8.128902e+06\n"
      "sglang:generation_tokens_total{model_name=\"m\"} 7.557572e+06\n"
      "sglang:time_to_first_token_seconds_sum{model_name=\"m\"} 30.0\n"
      "sglang:time_to_first_token_seconds_bucket{le=\"0.1\",model_name=\"m\"} 5.0\n"
      "sglang:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 10.0\n"
      "sglang:time_to_first_token_seconds_count{model_name=\"m\"} 10.0\n";
  ServerSnapshot s = SnapshotFromText(kPage);
  EXPECT_EQ(s.server, "sglang");
  EXPECT_EQ(s.requests_running, 162);
  EXPECT_EQ(s.requests_waiting, 2826);
  EXPECT_EQ(s.kv_cache_usage_fraction, 0.28);
  EXPECT_EQ(s.preemptions_total, 4);
  EXPECT_EQ(s.prompt_tokens_total, 8128902);
  ASSERT_TRUE(s.ttft_s.has_value());
  EXPECT_EQ(s.ttft_s->count, 10);
  EXPECT_THAT(s.ttft_s->cumulative_counts, ElementsAre(5, 10));
}

// Written from TGI's metrics reference (names; counters without _total); not captured.
TEST(ServerSnapshotTest, TgiTable) {
  const char kPage[] =
      "# TYPE tgi_queue_size gauge\n"
      "tgi_queue_size 5\n"
      "tgi_batch_current_size 8\n"
      "tgi_request_success 250\n"
      "tgi_request_input_length_sum 32000\n"
      "tgi_request_input_length_count 250\n"
      "tgi_request_generated_tokens_sum 64000\n"
      "tgi_request_queue_duration_bucket{le=\"0.05\"} 200\n"
      "tgi_request_queue_duration_bucket{le=\"+Inf\"} 250\n"
      "tgi_request_queue_duration_sum 9.5\n"
      "tgi_request_queue_duration_count 250\n";
  ServerSnapshot s = SnapshotFromText(kPage);
  EXPECT_EQ(s.server, "tgi");
  EXPECT_EQ(s.requests_running, 8);
  EXPECT_EQ(s.requests_waiting, 5);
  EXPECT_EQ(s.request_success_total, 250);
  EXPECT_EQ(s.prompt_tokens_total, 32000);
  EXPECT_EQ(s.generation_tokens_total, 64000);
  ASSERT_TRUE(s.queue_s.has_value());
  EXPECT_EQ(s.queue_s->count, 250);
  EXPECT_FALSE(s.kv_cache_usage_fraction.has_value());
}

}  // namespace
}  // namespace latdoc::servermetrics
