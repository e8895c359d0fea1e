#include "rules/load_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using nlohmann::ordered_json;

const Finding* Find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

// A bench result shaped like `latdoc bench --json`, healthy.
ordered_json Healthy() {
  return ordered_json::parse(R"({
    "schema": "latdoc.bench/1", "max_concurrency": 32, "completed": 200, "failed": 0,
    "mean_e2el_ms": 1000, "total_output_tokens": 20200, "mean_itl_ms": 10,
    "median_ttft_ms": 40, "p99_ttft_ms": 60, "mean_ttft_ms": 42,
    "median_itl_ms": 10, "p99_itl_ms": 14,
    "server_metrics": {"metrics_available": true, "queue_mean_ms": 2, "prefill_mean_ms": 30,
      "preemptions": 0, "max_kv_cache_usage": 0.4, "max_running": 32, "max_waiting": 0,
      "ttft_breakdown": {"client_ttft_ms": 42, "server_ttft_ms": 40, "queue_ms": 2,
                         "prefill_ms": 30, "network_and_front_end_ms": 2}}})");
}

ordered_json Baseline() { return ordered_json::parse(R"({"median_itl_ms": 8})"); }

TEST(LoadRulesTest, HealthyRunFiresNothing) {
  auto fs = EvaluateLoadRules(Baseline(), Healthy());
  for (const auto& f : fs) EXPECT_LE(f.severity, Severity::kOk) << f.id << ": " << f.title;
  EXPECT_NE(Find(fs, "load.queueing"), nullptr);
}

TEST(LoadRulesTest, QueueingPastTheBatchLimit) {
  ordered_json j = Healthy();
  j["server_metrics"]["queue_mean_ms"] = 300;
  j["server_metrics"]["max_waiting"] = 90;
  j["server_metrics"]["ttft_breakdown"]["client_ttft_ms"] = 400;
  auto fs = EvaluateLoadRules(Baseline(), j);
  auto f = Find(fs, "load.queueing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->title, "queueing is 75% of TTFT at concurrency 32 (300.0 of 400.0 ms)");
  EXPECT_DOUBLE_EQ(*f->latency_share, 0.3);  // 300 ms of a 1000 ms mean E2EL
  EXPECT_THAT(f->advice, ::testing::HasSubstr("--max-num-seqs"));
}

TEST(LoadRulesTest, PreemptionsAreKvPressure) {
  ordered_json j = Healthy();
  j["server_metrics"]["preemptions"] = 12;
  auto fs = EvaluateLoadRules(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.kv_pressure")->severity, Severity::kFail);
  j["server_metrics"]["preemptions"] = 0;
  j["server_metrics"]["max_kv_cache_usage"] = 0.97;
  fs = EvaluateLoadRules(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.kv_pressure")->severity, Severity::kWarn);
}

TEST(LoadRulesTest, StallsGrowthNetworkAndFailures) {
  ordered_json j = Healthy();
  j["p99_itl_ms"] = 60;
  j["median_itl_ms"] = 20;
  j["failed"] = 5;
  j["failures"] = {{"http_status", 3}, {"reset", 2}};
  j["server_metrics"]["ttft_breakdown"]["network_and_front_end_ms"] = 20;
  auto fs = EvaluateLoadRules(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.itl_stalls")->severity, Severity::kWarn);
  EXPECT_EQ(Find(fs, "load.itl_growth")->severity, Severity::kWarn);
  EXPECT_EQ(Find(fs, "load.network_front_end")->severity, Severity::kWarn);
  const Finding* f = Find(fs, "load.failures");
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->title, "5 of 205 requests failed at concurrency 32 (3 http_status, 2 reset)");
}

TEST(LoadRulesTest, MissingInputsAreSkips) {
  ordered_json j = Healthy();
  j.erase("server_metrics");
  auto fs = EvaluateLoadRules(nullptr, j);
  EXPECT_EQ(Find(fs, "load.queueing")->severity, Severity::kSkip);
  EXPECT_EQ(Find(fs, "load.itl_growth")->severity, Severity::kSkip);
  auto none = EvaluateLoadRules(nullptr, nullptr);
  EXPECT_EQ(none.front().severity, Severity::kSkip);
}

// Queueing while the KV cache is full is the KV cache's doing: kv_pressure carries the queue's
// share of the latency (so it ranks first), and the queueing finding points to it.
TEST(LoadRulesTest, QueueingForKvBlocksIsKvPressure) {
  ordered_json j = Healthy();
  j["server_metrics"]["queue_mean_ms"] = 300;
  j["server_metrics"]["max_waiting"] = 20;
  j["server_metrics"]["max_running"] = 12;
  j["server_metrics"]["preemptions"] = 24;
  j["server_metrics"]["max_kv_cache_usage"] = 1.0;
  j["server_metrics"]["ttft_breakdown"]["client_ttft_ms"] = 400;
  auto fs = EvaluateLoadRules(Baseline(), j);
  const Finding* kv = Find(fs, "load.kv_pressure");
  const Finding* q = Find(fs, "load.queueing");
  ASSERT_NE(kv, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(kv->severity, Severity::kFail);
  EXPECT_DOUBLE_EQ(*kv->latency_share, 0.3);
  EXPECT_FALSE(q->latency_share);
  EXPECT_EQ(q->title, "queueing is 75% of TTFT at concurrency 32 (300.0 of 400.0 ms), waiting for "
                      "KV cache (see load.kv_pressure)");
  EXPECT_THAT(q->advice, ::testing::HasSubstr("KV cache is full (100%, 24 preemptions)"));
  RankFindings(fs);
  EXPECT_EQ(fs.front().id, "load.kv_pressure");

  // vLLM V1 admits a request only when its blocks are free: a full cache makes requests queue
  // without any preemption. Still the KV cache's doing, and as severe as the queueing.
  j["server_metrics"]["preemptions"] = 0;
  j["server_metrics"]["max_kv_cache_usage"] = 0.98;
  fs = EvaluateLoadRules(Baseline(), j);
  kv = Find(fs, "load.kv_pressure");
  EXPECT_EQ(kv->severity, Severity::kFail);
  EXPECT_EQ(kv->title, "KV cache 98% full at concurrency 32: requests queue 300.0 ms on average "
                       "for KV blocks");
  EXPECT_DOUBLE_EQ(*kv->latency_share, 0.3);
}

}  // namespace
}  // namespace latdoc::rules
