#include "logs/vllm_stats.h"

#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

TEST(VllmStatsTest, V1LineOfV010) {
  auto st = ParseVllmV1Stats(
      "Engine 000: Avg prompt throughput: 1510.3 tokens/s, Avg generation throughput: 220.1 "
      "tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 87.5%, Prefix cache hit "
      "rate: 41.2%");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->engine, 0);
  EXPECT_FALSE(st->v0);
  EXPECT_DOUBLE_EQ(st->prompt_tps, 1510.3);
  EXPECT_DOUBLE_EQ(st->gen_tps, 220.1);
  EXPECT_EQ(st->running, 12);
  EXPECT_EQ(st->waiting, 3);
  EXPECT_DOUBLE_EQ(st->kv_pct, 87.5);
  EXPECT_EQ(st->prefix_hit_pct, 41.2);
  EXPECT_FALSE(st->preemptions);
}

TEST(VllmStatsTest, V1LineOfV012WithPreemptionsAndNewParts) {
  auto st = ParseVllmV1Stats(
      "Engine 002: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 55.0 tokens/s, "
      "Running: 64 reqs, Waiting: 10 reqs, Preemptions: 7, GPU KV cache usage: 99.9%, Prefix "
      "cache hit rate: 0.0%, Corrupted: 0 reqs, MM cache hit rate: 12.0%");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->engine, 2);
  EXPECT_EQ(st->preemptions, 7);
  EXPECT_DOUBLE_EQ(st->kv_pct, 99.9);
  // The parts around the new ones: counts before Preemptions, the prefix rate before the MM one.
  EXPECT_EQ(st->running, 64);
  EXPECT_EQ(st->waiting, 10);
  EXPECT_DOUBLE_EQ(st->gen_tps, 55.0);
  EXPECT_EQ(st->prefix_hit_pct, 0.0);
}

TEST(VllmStatsTest, AggregatedEngines) {
  auto st = ParseVllmV1Stats(
      "4 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 "
      "tokens/s, Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%, Prefix cache hit "
      "rate: 6.0%");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->engine, -1);
  EXPECT_EQ(st->waiting, 4);
}

TEST(VllmStatsTest, V0Line) {
  auto st = ParseVllmV0Stats(
      "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 23.4 tokens/s, Running: 1 "
      "reqs, Swapped: 2 reqs, Pending: 5 reqs, GPU KV cache usage: 0.3%, CPU KV cache usage: "
      "1.5%.");
  ASSERT_TRUE(st);
  EXPECT_TRUE(st->v0);
  EXPECT_EQ(st->waiting, 5);
  EXPECT_EQ(st->swapped, 2);
  EXPECT_EQ(st->cpu_kv_pct, 1.5);
  EXPECT_FALSE(st->prefix_hit_pct);
  EXPECT_EQ(ParseVllmV0PrefixHitRate("Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%"), 12.5);
  EXPECT_FALSE(ParseVllmV0PrefixHitRate("Prefix cache hit rate: 12.50%"));
}

TEST(VllmStatsTest, EarlyV1LineWithoutAnEngineIsNotV0) {
  // vLLM ~0.8 V1 (v1/metrics/loggers.py): no "Engine 000:", Waiting rather than Pending.
  auto st = ParseVllmV0Stats(
      "Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 3 "
      "reqs, Waiting: 0 reqs, GPU KV cache usage: 12.0%, Prefix cache hit rate: 30.0%");
  ASSERT_TRUE(st);
  EXPECT_FALSE(st->v0);
  EXPECT_EQ(st->running, 3);
  EXPECT_EQ(st->prefix_hit_pct, 30.0);
}

TEST(VllmStatsTest, MalformedOrIncompleteLinesAreRejected) {
  // Missing GPU KV cache usage.
  EXPECT_FALSE(ParseVllmV1Stats("Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
                                "throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs"));
  EXPECT_FALSE(ParseVllmV1Stats("Engine 000: Avg prompt throughput: abc tokens/s, Running: x reqs"));
  EXPECT_FALSE(ParseVllmV1Stats("Engine started."));
  EXPECT_FALSE(ParseVllmV1Stats("Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
                                "throughput: 2.0 tokens/s, Running: -1 reqs, Waiting: 0 reqs, GPU "
                                "KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"));
  EXPECT_FALSE(ParseVllmV0Stats("Avg prompt throughput: 1.0 tokens/s"));
}

}  // namespace
}  // namespace latdoc::logs
