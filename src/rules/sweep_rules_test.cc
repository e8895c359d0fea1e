// The sweep's rules on hand-built facts: the exact advice per bend at the knee (the server's
// batch limit known or not, compute, front end), without a knee, capped by an SLO, in
// llama.cpp's flags; and load.sweep_knee's severities.
#include "rules/sweep_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::rules {
namespace {

using loadgen::Bend;
using loadgen::Recommendation;
using loadgen::SweepFacts;
using loadgen::SweepStep;

// A closed-loop step at `load` concurrent with `tok_s` output tokens/s and an engine step of
// `step_ms` (the server's mean ITL).
SweepStep Step(double load, double tok_s, double step_ms) {
  SweepStep s;
  s.load = load;
  s.completed = s.requests = 64;
  s.output_tokens_per_s = tok_s;
  s.p99_ttft_ms = 20 * load;
  s.p99_e2el_ms = 100 * load;
  s.server.available = true;
  s.server.itl_sum_s = step_ms / 1e3;
  s.server.itl_count = 1;
  return s;
}

// Six steps 1..32; the knee at 16 (index 4), reached, bending by compute; a prompt of 100
// tokens costs 20 ms of prefill over the 10 ms step at 1 concurrent (0.2 ms a token).
SweepFacts KneeAt16() {
  SweepFacts f;
  f.input_len = 100;
  f.output_len = 50;
  double load = 1;
  for (double tok : {100.0, 190.0, 360.0, 680.0, 1200.0, 1250.0}) {
    f.steps.push_back(Step(load, tok, 10 + (load >= 16 ? 2 : 0)));
    load *= 2;
  }
  f.steps[0].server.prefill_sum_s = 0.030;
  f.steps[0].server.prefill_count = 1;
  f.knee_index = 4;
  f.knee_reached = true;
  f.knee_steps = {0, 1, 2, 3, 4, 5};
  f.knee_bend = Bend::kCompute;
  return f;
}

TEST(SweepRulesTest, ComputeKneeAdvisesTheKneeBatchAndItsTokenBudget) {
  SweepAdvice a = AdviseSweep(KneeAt16());
  ASSERT_EQ(a.recommendations.size(), 2u);
  EXPECT_EQ(a.recommendations[0].flag, "--max-num-seqs");
  EXPECT_EQ(a.recommendations[0].value, 16);
  EXPECT_EQ(a.recommendations[0].reason, "past a batch of 16 the p99 e2el grows faster than tokens/s");
  EXPECT_EQ(a.recommendations[1].flag, "--max-num-batched-tokens");
  // 16 decode tokens + a chunk of 12 ms / 0.2 ms = 60 prompt tokens, rounded up to 256.
  EXPECT_EQ(a.recommendations[1].value, 256);
  EXPECT_EQ(a.recommendations[1].reason,
            "16 decode tokens of a full batch + a prefill chunk of ~60 tokens: a prompt token costs "
            "~0.200 ms, so the chunk adds at most the 12.00 ms step time at the knee (ITL at most "
            "doubles while a prompt prefills), rounded up to 256");
  EXPECT_EQ(a.low_load_regime,
            "low load (1 concurrent): batches stay small, p99 TTFT 20.0 ms and ITL 10.00 ms; keep "
            "batches small for response time");
  EXPECT_EQ(a.high_load_regime,
            "high load (up to the knee at 16 concurrent): larger batches amortise the fixed step "
            "cost: tokens/s 100 -> 1200 (x12.0) while ITL went 10.00 ms -> 12.00 ms; past the knee "
            "latency grows faster than throughput");
}

TEST(SweepRulesTest, ServerLimitKnownIsRaisedWhenALargerBatchPays) {
  SweepFacts f = KneeAt16();
  f.knee_bend = Bend::kQueueing;
  f.server_max_num_seqs = 16;
  f.step_base_ms = 6;
  f.step_per_seq_ms = 0.08;  // the per-sequence cost equals the fixed cost at 75
  f.steps[4].server.max_running = 16;
  f.steps[4].server.max_kv_cache_usage = 0.2;  // 0.9 x 16 / 0.2 = 72 fit
  Recommendation seqs = AdviseSweep(f).recommendations.at(0);
  EXPECT_EQ(seqs.value, 72);
  EXPECT_EQ(seqs.reason,
            "the knee is the server's own limit (running plateaued at 16 while requests queued), "
            "not the GPU: the step time fits 6.00 ms + 0.080 ms x batch, so batches up to ~75 still "
            "amortise the fixed cost, and the KV cache (20% used at batch 16) fits ~72; raise it to "
            "72 and sweep again");

  f.steps[4].server.max_kv_cache_usage = 0.9;  // 16 fit: a larger batch would not pay
  seqs = AdviseSweep(f).recommendations.at(0);
  EXPECT_EQ(seqs.value, 16);
  EXPECT_EQ(seqs.reason, "keep 16: requests queue past it, and a larger batch would not pay "
                         "(step-time knee ~75, KV fit ~16)");
}

TEST(SweepRulesTest, ServerLimitUnknownAdvisesTheKneeBatch) {
  SweepFacts f = KneeAt16();
  f.knee_bend = Bend::kQueueing;  // queued, but no running plateau seen: the limit is unknown
  f.step_base_ms = 6;
  f.step_per_seq_ms = 0.08;
  Recommendation seqs = AdviseSweep(f).recommendations.at(0);
  EXPECT_EQ(seqs.value, 16);
  EXPECT_EQ(seqs.reason,
            "past a batch of 16 the p99 e2el grows faster than tokens/s (step time 6.00 ms + "
            "0.080 ms x batch: the per-sequence cost equals the fixed cost at ~75)");
}

TEST(SweepRulesTest, FrontEndKneeAdvisesNoBatchLimit) {
  SweepFacts f = KneeAt16();
  f.knee_bend = Bend::kFrontEnd;
  SweepAdvice a = AdviseSweep(f);
  EXPECT_FALSE(a.recommendations.at(0).value);
  EXPECT_EQ(a.recommendations[0].reason,
            "the engine is not what bends (its own time grew less than half as much as the "
            "client's latency), so a batch limit would not help: look at the front end (latdoc "
            "net for the path, latdoc doctor for the API server's CPU)");
  EXPECT_FALSE(a.recommendations.at(1).value);
  EXPECT_EQ(a.recommendations[1].reason, "depends on --max-num-seqs, which has no recommendation");
}

TEST(SweepRulesTest, NoKneeRecommendsNothingAndSaysWhy) {
  SweepFacts f = KneeAt16();
  f.knee_index.reset();
  f.knee_reached = false;
  f.knee_steps = {0};
  SweepAdvice a = AdviseSweep(f);
  ASSERT_EQ(a.recommendations.size(), 2u);
  for (const auto& rec : a.recommendations) {
    EXPECT_FALSE(rec.value) << rec.flag;
    EXPECT_EQ(rec.reason, "one step measured: no knee, nothing to recommend") << rec.flag;
  }
  EXPECT_EQ(a.low_load_regime, "");
  EXPECT_EQ(a.high_load_regime, "");

  f.knee_steps.clear();
  EXPECT_EQ(AdviseSweep(f).recommendations.at(0).reason,
            "no step completed requests within the error budget; nothing to recommend");

  // A knee not reached up to the top of the range.
  f = KneeAt16();
  f.knee_index = 5;
  f.knee_reached = false;
  f.knee_bend = Bend::kNone;
  EXPECT_FALSE(AdviseSweep(f).recommendations.at(0).value);
  EXPECT_EQ(AdviseSweep(f).recommendations.at(0).reason,
            "the knee was not reached up to 32 concurrent: no limit to recommend yet; sweep a wider "
            "range");
}

TEST(SweepRulesTest, SloCapsTheBatchAtTheHighestStepMeetingIt) {
  SweepFacts f = KneeAt16();
  f.slo_given = true;
  f.highest_meeting_slo = 2;  // 4 concurrent
  Recommendation seqs = AdviseSweep(f).recommendations.at(0);
  EXPECT_EQ(seqs.value, 4);
  EXPECT_EQ(seqs.reason, "past a batch of 16 the p99 e2el grows faster than tokens/s; capped at 4 "
                         "by the SLO (the highest step meeting it)");
  f.highest_meeting_slo.reset();
  seqs = AdviseSweep(f).recommendations.at(0);
  EXPECT_EQ(seqs.value, 16);
  EXPECT_EQ(seqs.reason, "past a batch of 16 the p99 e2el grows faster than tokens/s; no step met "
                         "the SLO, so no batch size meets it on this server");
}

TEST(SweepRulesTest, LlamaCppAdviceIsInItsOwnFlags) {
  SweepFacts f = KneeAt16();
  f.server = "llamacpp";
  SweepAdvice a = AdviseSweep(f);
  std::vector<std::string> flags;
  for (const auto& rec : a.recommendations) flags.push_back(rec.flag);
  EXPECT_EQ(flags, (std::vector<std::string>{"--parallel", "--ctx-size", "--batch-size", "--ubatch-size"}));
  EXPECT_EQ(a.recommendations[0].value, 16);
  EXPECT_EQ(a.recommendations[1].value, 2560);  // 16 slots x (100 + 50) tokens, rounded up to 256s
  EXPECT_EQ(a.recommendations[2].value, 256);
  EXPECT_EQ(a.recommendations[3].value, 256);
}

loadgen::SweepResult KneeResult(double knee, bool reached) {
  loadgen::SweepResult r;
  for (double load : {8.0, knee, 2 * knee}) r.steps.push_back(Step(load, 100 * load, 10));
  r.knee_index = 1;
  r.knee_reached = reached;
  r.knee_explanation = "knee at 16 concurrent";
  r.recommendations = {{"--max-num-seqs", 16, ""}, {"--max-num-batched-tokens", 2048, ""}};
  return r;
}

TEST(SweepKneeFindingTest, TargetPastTheKneeWarnsWithTheSweepsFlags) {
  Finding f = SweepKneeFinding(KneeResult(16, true), 32, 256);
  EXPECT_EQ(f.id, "load.sweep_knee");
  EXPECT_EQ(f.layer, Layer::kLoad);
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_EQ(f.title, "the target load (32 concurrent) is past the latency knee at 16: latency grows "
                     "there with little more throughput");
  EXPECT_EQ(f.advice, "--max-num-seqs 16 --max-num-batched-tokens 2048 (the sweep's recommendation)");
  ASSERT_EQ(f.evidence.size(), 3u);
  EXPECT_EQ(f.evidence[0].name, "knee_concurrency");
  EXPECT_EQ(f.evidence[0].value, 16);
  EXPECT_EQ(f.evidence[1].value, 32);
  EXPECT_EQ(f.evidence[2].text, "knee at 16 concurrent");

  loadgen::SweepResult bare = KneeResult(16, true);
  for (auto& rec : bare.recommendations) rec.value.reset();
  EXPECT_EQ(SweepKneeFinding(bare, 32, 256).advice, "Keep concurrency near 16 per replica.");
}

TEST(SweepKneeFindingTest, TargetWithinAStepOfTheKneeIsOk) {
  // 10% over the knee is within a step of it (the knee is judged on steps about 10% apart).
  Finding f = SweepKneeFinding(KneeResult(20, true), 22, 256);
  EXPECT_EQ(f.severity, Severity::kOk);
  EXPECT_EQ(f.title, "latency knee at 20 concurrent requests; the target load (22) is at or below it");
  EXPECT_EQ(f.advice, "");
  EXPECT_EQ(SweepKneeFinding(KneeResult(20, true), 23, 256).severity, Severity::kWarn);
}

TEST(SweepKneeFindingTest, NoKneeIsInfoWithTheStopReason) {
  loadgen::SweepResult r = KneeResult(16, false);
  r.stop_reason = "top of the range (256 concurrent)";
  Finding f = SweepKneeFinding(r, 32, 256);
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_EQ(f.title, "no latency knee up to 256 concurrent requests (top of the range (256 concurrent))");
  EXPECT_TRUE(f.evidence.empty());
  r.stop_reason.clear();
  EXPECT_EQ(SweepKneeFinding(r, 32, 256).title, "no latency knee up to 256 concurrent requests");
}

}  // namespace
}  // namespace latdoc::rules
