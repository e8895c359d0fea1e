#include "rules/workload_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using ::testing::HasSubstr;

// Three turns of 4 sessions: prompts grow 100 -> 300 tokens, 60% of them resent overall.
MultiTurnFacts Growing() {
  MultiTurnFacts f;
  f.turns = {{1, 10.0, 100, 0, 4}, {2, 20.0, 200, 150, 4}, {3, 30.0, 300, 210, 4}};
  return f;  // resent (0 + 150 + 210) / (100 + 200 + 300) = 60%
}

// Contract: a cache that hit less than half the resent share is named, with the four
// remedies, the hit rate and the history prefilled again.
TEST(WorkloadRules, PrefixCacheMissesNamedWithAdvice) {
  MultiTurnFacts f = Growing();
  f.cache_queries = 2400;
  f.cache_hits = 0;
  auto out = MultiTurnFindings(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "load.prefix_cache_misses");
  EXPECT_EQ(out[0].severity, Severity::kWarn);
  EXPECT_EQ(out[0].title,
            "Prefix-cache misses: the sessions resent 60% of their prompt tokens but the server's "
            "prefix cache hit 0.0%; about 1440 tokens of history were prefilled again (TTFT turn 1 "
            "10.0 ms -> turn 3 30.0 ms)");
  for (const char* flag : {"--enable-prefix-caching", "--gpu-memory-utilization", "session affinity",
                           "--max-num-batched-tokens"})
    EXPECT_THAT(out[0].advice, HasSubstr(flag));
  ASSERT_TRUE(out[0].latency_share);
  EXPECT_NEAR(*out[0].latency_share, 2.0 / 3.0, 1e-9);
}

// Contract: a cache that hit what it could is not blamed; TTFT growth is then queueing or
// prefill compute, whichever the server's means say is larger.
TEST(WorkloadRules, GrowthWithAWorkingCacheIsQueueingOrPrefill) {
  MultiTurnFacts f = Growing();
  f.cache_queries = 2400;
  f.cache_hits = 1300;  // 54% of 60% resendable
  f.queue_mean_ms = 12;
  f.prefill_mean_ms = 3;
  auto out = MultiTurnFindings(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].id, "load.ttft_grows_across_turns");
  EXPECT_EQ(out[0].severity, Severity::kInfo);
  EXPECT_THAT(out[0].title, HasSubstr("TTFT grows 3.0x across turns"));
  EXPECT_THAT(out[0].title, HasSubstr("mostly queueing"));
  f.prefill_mean_ms = 20;
  EXPECT_THAT(MultiTurnFindings(f)[0].title, HasSubstr("mostly prefill compute"));
}

// Contract: without cache counters a growth is a warning that says misses cannot be ruled out;
// flat TTFT with a working cache, or a single turn, gives nothing.
TEST(WorkloadRules, UnknownCacheFlatTtftAndOneTurn) {
  MultiTurnFacts f = Growing();
  auto out = MultiTurnFindings(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].severity, Severity::kWarn);
  EXPECT_THAT(out[0].title, HasSubstr("misses cannot be ruled out"));

  f.cache_queries = 2400;
  f.cache_hits = 1400;
  for (auto& t : f.turns) t.mean_ttft_ms = 10;
  EXPECT_TRUE(MultiTurnFindings(f).empty());

  MultiTurnFacts one;
  one.turns = {{1, 10.0, 100, 0, 4}};
  one.cache_queries = 400;
  one.cache_hits = 0;
  EXPECT_TRUE(MultiTurnFindings(one).empty());
}

}  // namespace
}  // namespace latdoc::rules
