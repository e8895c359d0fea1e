#include "whatif/virtual_run.h"

#include <gtest/gtest.h>

namespace latdoc::whatif {
namespace {

sim::EngineConfig Simple() {
  sim::EngineConfig e;
  e.step_base_ms = 5;
  e.step_decode_seq_us = 100;
  e.step_prefill_token_us = 10;
  e.step_context_token_ns = 0;
  return e;
}

// One client: the prompt's step is base + input x prefill cost, every later step base + one
// decoding sequence; TTFT adds the front delay. Exact, in model time.
TEST(VirtualRunTest, OneClientFollowsTheStepModelExactly) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.workload = {100, 10, 0, 1};
  o.load = 1;
  o.round_requests = 5;
  o.front_ms = 1;
  auto m = VirtualRun(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->completed, 5);
  EXPECT_NEAR(m->median_ttft_ms, 1 + 5 + 100 * 0.010, 1e-6);
  EXPECT_NEAR(m->p99_ttft_ms, 7, 1e-6);
  EXPECT_NEAR(m->median_itl_ms, 5.1, 1e-6);
  EXPECT_NEAR(m->median_tpot_ms, 5.1, 1e-6);
  const double e2el = 7 + 9 * 5.1;
  EXPECT_NEAR(m->median_e2el_ms, e2el, 1e-6);
  EXPECT_NEAR(m->output_throughput, 10 / (e2el / 1e3), 1e-6);
  EXPECT_EQ(m->max_running, 1);
}

// Clients beyond max_num_seqs wait: the running batch never exceeds the limit, and the
// queue shows in TTFT.
TEST(VirtualRunTest, MaxNumSeqsCapsTheBatchAndQueues) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.workload = {100, 20, 0, 1};
  o.load = 8;
  o.round_requests = 64;
  auto free_run = VirtualRun(o);
  o.engine.max_num_seqs = 2;
  auto capped = VirtualRun(o);
  ASSERT_TRUE(free_run.ok() && capped.ok());
  EXPECT_EQ(free_run->max_running, 8);
  EXPECT_EQ(capped->max_running, 2);
  EXPECT_GT(capped->median_ttft_ms, 2 * free_run->median_ttft_ms);
  EXPECT_LT(capped->output_throughput, free_run->output_throughput);
}

TEST(VirtualRunTest, SameSeedSameResult) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.workload = {200, 30, 0.5, 42};
  o.rate_mode = true;
  o.load = 20;
  o.round_requests = 100;
  auto a = VirtualRun(o), b = VirtualRun(o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->p99_ttft_ms, b->p99_ttft_ms);
  EXPECT_EQ(a->output_throughput, b->output_throughput);
  EXPECT_EQ(a->completed, 100);
}

// A duration bounds the run instead of a request count: no request is sent after it.
TEST(VirtualRunTest, DurationBoundsTheRun) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.workload = {100, 10, 0, 1};
  o.load = 4;
  o.duration_s = 2;
  auto m = VirtualRun(o);
  ASSERT_TRUE(m.ok());
  EXPECT_GE(m->duration_s, 2.0);
  EXPECT_LT(m->duration_s, 2.2);
  EXPECT_GT(m->completed, 100);
}

TEST(VirtualRunTest, RequestLargerThanTheCacheIsAnError) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.engine.num_gpu_blocks_override = 4;
  o.workload = {100, 10, 0, 1};
  auto m = VirtualRun(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "a request of up to 110 tokens needs 7 KV blocks; the cache has 4");
}

TEST(VirtualRunTest, PromptOverTheBudgetWithoutChunkedPrefillIsAnError) {
  VirtualRunOptions o;
  o.engine = Simple();
  o.engine.enable_chunked_prefill = false;
  o.engine.max_num_batched_tokens = 64;
  o.workload = {100, 10, 0, 1};
  auto m = VirtualRun(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "without chunked prefill a prompt of up to 100 tokens never fits max-num-batched-tokens 64");
}

}  // namespace
}  // namespace latdoc::whatif
