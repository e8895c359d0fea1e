#include "rules/load_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using loadgen::LatencyStats;
using loadgen::LoadFacts;

const Finding* Find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

// Sets the percentile `percent` of `s` to `ms`.
void SetP(LatencyStats& s, double percent, double ms) {
  for (auto& p : s.percentiles)
    if (p.percent == percent) {
      p.ms = ms;
      return;
    }
  s.percentiles.push_back({percent, ms});
}

LatencyStats Stats(std::optional<double> mean, std::optional<double> median,
                   std::optional<double> p99) {
  LatencyStats s;
  s.mean_ms = mean;
  s.median_ms = median;
  if (p99) SetP(s, 99, *p99);
  return s;
}

// A bench result as `latdoc bench` measures it, healthy.
LoadFacts Healthy() {
  LoadFacts f;
  f.max_concurrency = 32;
  f.completed = 200;
  f.failed = 0;
  f.e2el = Stats(1000, std::nullopt, std::nullopt);
  f.total_output_tokens = 20200;
  f.ttft = Stats(42, 40, 60);
  f.itl = Stats(10, 10, 14);
  loadgen::ServerFacts& s = f.server;
  s.metrics_available = true;
  s.queue_mean_ms = 2;
  s.prefill_mean_ms = 30;
  s.preemptions = 0;
  s.max_kv_cache_usage = 0.4;
  s.max_running = 32;
  s.max_waiting = 0;
  loadgen::TtftSplit b;
  b.client_ttft_ms = 42;
  b.server_ttft_ms = 40;
  b.queue_ms = 2;
  b.prefill_ms = 30;
  b.network_and_front_end_ms = 2;
  s.ttft_breakdown = b;
  return f;
}

LoadFacts Baseline() {
  LoadFacts f;
  f.itl = Stats(std::nullopt, 8, std::nullopt);
  return f;
}

std::vector<Finding> Evaluate(const LoadFacts& base, const LoadFacts& load) {
  return EvaluateLoadRules(&base, &load);
}

TEST(LoadRulesTest, HealthyRunFiresNothing) {
  auto fs = Evaluate(Baseline(), Healthy());
  for (const auto& f : fs) EXPECT_LE(f.severity, Severity::kOk) << f.id << ": " << f.title;
  // Judged and passed, not skipped (a misread server_metrics would skip them all).
  for (const char* id : {"load.queueing", "load.kv_pressure", "load.network_front_end", "load.failures"}) {
    const auto* f = Find(fs, id);
    ASSERT_NE(f, nullptr) << id;
    EXPECT_EQ(f->severity, Severity::kOk) << id << ": " << f->title;
  }
}

// The healthy run at concurrency 32 with requests queued 300 ms of a 400 ms TTFT, while at most
// `running` ran and `waiting` waited.
LoadFacts Queued(double running, double waiting) {
  LoadFacts j = Healthy();
  j.server.queue_mean_ms = 300;
  j.server.max_running = running;
  j.server.max_waiting = waiting;
  j.server.ttft_breakdown->client_ttft_ms = 400;
  return j;
}

// The same queueing on SGLang: the advice names SGLang's flags, never vLLM's.
TEST(LoadRulesTest, AdviceInTheServersOwnFlags) {
  LoadFacts j = Queued(16, 16);
  j.server.server = "sglang";
  auto fs = Evaluate(Baseline(), j);
  auto f = Find(fs, "load.queueing");
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->advice, ::testing::HasSubstr("Raise `--max-running-requests` (and `--chunked-prefill-size`)"));
  for (const auto& g : fs) EXPECT_THAT(g.advice, ::testing::Not(::testing::HasSubstr("--max-num-"))) << g.id;
}

// llama.cpp times no queue: the check says so instead of blaming /metrics, and the ITL-growth
// advice caps the batch with llama.cpp's --parallel.
TEST(LoadRulesTest, LlamaCppQueueIsNotMeasurableAndAdviceSaysParallel) {
  LoadFacts j = Healthy();
  j.server = {};
  j.server.metrics_available = true;
  j.server.server = "llamacpp";
  j.server.prefill_mean_ms = 3;
  j.server.max_running = 4;
  j.server.max_waiting = 0;
  j.server.ttft_breakdown = loadgen::TtftSplit{};
  j.server.ttft_breakdown->client_ttft_ms = 42;
  j.server.ttft_breakdown->prefill_ms = 3;
  j.server.ttft_breakdown->unsplit_ms = 39;
  j.itl->median_ms = 40;
  auto fs = Evaluate(Baseline(), j);
  auto q = Find(fs, "load.queueing");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->severity, Severity::kSkip);
  EXPECT_EQ(q->title, "not checked: queue time is not measurable on llama.cpp (it exposes only a "
                      "gauge of deferred requests)");
  auto g = Find(fs, "load.itl_growth");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->severity, Severity::kWarn);
  EXPECT_THAT(g->advice, ::testing::HasSubstr("cap the batch with `--parallel` (`-np`) at the knee"));
}

TEST(LoadRulesTest, QueueingPastTheBatchLimit) {
  auto fs = Evaluate(Baseline(), Queued(16, 16));  // the batch limit, under 32 concurrent
  auto f = Find(fs, "load.queueing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->title, "queueing is 75% of TTFT at concurrency 32 (300.0 of 400.0 ms)");
  EXPECT_DOUBLE_EQ(*f->latency_share, 0.3);  // 300 ms of a 1000 ms mean E2EL
  EXPECT_THAT(f->advice, ::testing::HasSubstr("Raise `--max-num-seqs`"));
}

// Requests that waited while the batch reached the whole concurrency did not wait for a slot:
// the advice must not be to raise --max-num-seqs.
TEST(LoadRulesTest, QueueingWithABatchThatNeverFilledIsNotABatchLimit) {
  auto fs = Evaluate(Baseline(), Queued(32, 6));
  auto f = Find(fs, "load.queueing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_DOUBLE_EQ(*f->latency_share, 0.3);
  EXPECT_THAT(f->advice, ::testing::HasSubstr("not a batch-slot limit"));
  EXPECT_THAT(f->advice, ::testing::HasSubstr("raise `--max-num-batched-tokens`"));
  EXPECT_THAT(f->advice, ::testing::Not(::testing::HasSubstr("Raise `--max-num-seqs`")));
}

// A few long stalls (two 200 ms pauses of the whole batch) stay under the p99 of all gaps but
// cost a third of the decode time: a fail. The queueing they caused (requests arriving during
// a stall wait for it; the batch never filled) is theirs: load.itl_stalls carries its share
// and ranks first, load.queueing points to it.
TEST(LoadRulesTest, RareLongStallsUnderTheP99AndTheQueueTheyCause) {
  LoadFacts j = Healthy();
  j.itl->median_ms = 3.64;
  SetP(*j.itl, 99, 6.2);  // 1.7x the median: the p99 alone sees nothing
  SetP(*j.itl, 99.9, 203.7);
  j.itl->mean_ms = 5.82;
  j.total_output_tokens = 6400;  // 32 per request
  j.e2el->mean_ms = 300;
  auto fs = Evaluate(Baseline(), j);
  const Finding* st = Find(fs, "load.itl_stalls");
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(st->severity, Severity::kFail);
  EXPECT_EQ(st->title, "decode stalls: 37% of the decode time is spent in gaps up to 203.7 ms (median 3.6 ms)");
  EXPECT_NEAR(*st->latency_share, (5.82 - 3.64) * 31 / 300, 1e-9);
  // A milder tail (p99.9 still a spike, 15-30% of the decode time): a warning.
  j.itl->mean_ms = 4.6;
  EXPECT_EQ(Find(Evaluate(Baseline(), j), "load.itl_stalls")->severity, Severity::kWarn);
  // No spikes: a wide but smooth spread is not a stall.
  SetP(*j.itl, 99.9, 8);
  EXPECT_EQ(Find(Evaluate(Baseline(), j), "load.itl_stalls")->severity, Severity::kOk);
  // Too few gaps to tell stalls from one slow gap: one 16-token canary (15 gaps, one of them
  // 200 ms) is not judged by the time share, only by its p99 (the rule's first way: a warning).
  LoadFacts canary = j;
  canary.completed = 1;
  canary.total_output_tokens = 16;
  canary.itl->mean_ms = 5.82;
  SetP(*canary.itl, 99.9, 203.7);
  EXPECT_EQ(Find(Evaluate(Baseline(), canary), "load.itl_stalls")->severity, Severity::kOk);
  SetP(*canary.itl, 99, 203.7);
  EXPECT_EQ(Find(Evaluate(Baseline(), canary), "load.itl_stalls")->severity, Severity::kWarn);

  SetP(*j.itl, 99.9, 203.7);
  j.itl->mean_ms = 5.82;
  j.server.queue_mean_ms = 100;
  j.server.max_waiting = 10;
  j.server.ttft_breakdown->client_ttft_ms = 120;
  fs = Evaluate(Baseline(), j);
  st = Find(fs, "load.itl_stalls");
  const Finding* q = Find(fs, "load.queueing");
  EXPECT_EQ(q->severity, Severity::kFail);
  EXPECT_FALSE(q->latency_share);
  EXPECT_THAT(q->title, ::testing::EndsWith(", during decode stalls (see load.itl_stalls)"));
  EXPECT_THAT(q->advice, ::testing::HasSubstr("The engine stalled and admitted them late"));
  EXPECT_EQ(st->severity, Severity::kFail);
  EXPECT_NEAR(*st->latency_share, ((5.82 - 3.64) * 31 + 100) / 300, 1e-9);
  EXPECT_THAT(st->title, ::testing::EndsWith("; requests queued 100.0 ms behind them"));
  RankFindings(fs);
  EXPECT_EQ(fs.front().id, "load.itl_stalls");
}

TEST(LoadRulesTest, PreemptionsAreKvPressure) {
  LoadFacts j = Healthy();
  j.server.preemptions = 12;
  auto fs = Evaluate(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.kv_pressure")->severity, Severity::kFail);
  j.server.preemptions = 0;
  j.server.max_kv_cache_usage = 0.97;
  fs = Evaluate(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.kv_pressure")->severity, Severity::kWarn);
}

TEST(LoadRulesTest, StallsGrowthNetworkAndFailures) {
  LoadFacts j = Healthy();
  SetP(*j.itl, 99, 60);
  j.itl->median_ms = 20;
  j.failed = 5;
  j.failures = {{"http_status", 3}, {"reset", 2}};
  j.server.ttft_breakdown->network_and_front_end_ms = 20;
  auto fs = Evaluate(Baseline(), j);
  EXPECT_EQ(Find(fs, "load.itl_stalls")->severity, Severity::kWarn);
  EXPECT_EQ(Find(fs, "load.itl_growth")->severity, Severity::kWarn);
  EXPECT_EQ(Find(fs, "load.network_front_end")->severity, Severity::kWarn);
  const Finding* f = Find(fs, "load.failures");
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_EQ(f->title, "5 of 205 requests failed at concurrency 32 (3 http_status, 2 reset)");
}

TEST(LoadRulesTest, MissingInputsAreSkips) {
  LoadFacts j = Healthy();
  j.server = {};
  auto fs = EvaluateLoadRules(nullptr, &j);
  EXPECT_EQ(Find(fs, "load.queueing")->severity, Severity::kSkip);
  EXPECT_EQ(Find(fs, "load.itl_growth")->severity, Severity::kSkip);
  auto none = EvaluateLoadRules(nullptr, nullptr);
  EXPECT_EQ(none.front().severity, Severity::kSkip);
}

// Queueing while the KV cache is full is the KV cache's doing: kv_pressure carries the queue's
// share of the latency (so it ranks first), and the queueing finding points to it.
TEST(LoadRulesTest, QueueingForKvBlocksIsKvPressure) {
  LoadFacts j = Healthy();
  j.server.queue_mean_ms = 300;
  j.server.max_waiting = 20;
  j.server.max_running = 12;
  j.server.preemptions = 24;
  j.server.max_kv_cache_usage = 1.0;
  j.server.ttft_breakdown->client_ttft_ms = 400;
  auto fs = Evaluate(Baseline(), j);
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
  j.server.preemptions = 0;
  j.server.max_kv_cache_usage = 0.98;
  fs = Evaluate(Baseline(), j);
  kv = Find(fs, "load.kv_pressure");
  EXPECT_EQ(kv->severity, Severity::kFail);
  EXPECT_EQ(kv->title, "KV cache 98% full at concurrency 32: requests queue 300.0 ms on average "
                       "for KV blocks");
  EXPECT_DOUBLE_EQ(*kv->latency_share, 0.3);
}

}  // namespace
// Problems first, by the share of latency they explain (then severity); then info, ok and skip.
// A passed check carries a share (the part of TTFT that was fine) but explains nothing to
// change, so it never ranks above a failure.
TEST(RankFindingsTest, ProblemsBeforePassedChecksWhateverTheirShare) {
  auto f = [](std::string id, Severity s, std::optional<double> share) {
    Finding x;
    x.id = std::move(id);
    x.severity = s;
    x.latency_share = share;
    return x;
  };
  std::vector<Finding> fs = {f("a.ok", Severity::kOk, 0.9),       f("b.skip", Severity::kSkip, {}),
                             f("c.fail", Severity::kFail, {}),     f("d.info", Severity::kInfo, 0.5),
                             f("e.warn", Severity::kWarn, 0.01),  f("f.fail", Severity::kFail, 0.2),
                             f("g.warn", Severity::kWarn, {})};
  RankFindings(fs);
  std::vector<std::string> ids;
  for (const Finding& x : fs) ids.push_back(x.id);
  EXPECT_THAT(ids, ::testing::ElementsAre("f.fail", "e.warn", "c.fail", "g.warn", "d.info", "a.ok",
                                          "b.skip"));
}

}  // namespace latdoc::rules
