#include "sim/engine.h"

#include <map>

#include <gtest/gtest.h>

namespace latdoc::sim {
namespace {

struct Timing {
  int64_t arrival_ns = 0, first_token_ns = -1, end_ns = -1;
  int tokens = 0;
  FinishReason finish = FinishReason::kNone;
};

// Drives an engine on a virtual clock: `concurrency` clients each send a request, wait for it to
// finish and send the next, until `total` requests were sent. Returns each request's timing.
std::map<uint64_t, Timing> RunClosedLoop(Engine& e, int concurrency, int total, int prompt,
                                         int max_tokens) {
  std::map<uint64_t, Timing> t;
  int64_t now = 0;
  uint64_t next_id = 1;
  auto send = [&] {
    uint64_t id = next_id++;
    e.Add({id, prompt, max_tokens, 0});
    t[id].arrival_ns = now;
  };
  for (int i = 0; i < concurrency && int(next_id) <= total; ++i) send();
  while (e.has_work()) {
    StepPlan p = e.BeginStep(now);
    now += p.dur_ns;
    StepOutput out;
    e.FinishStep(&out);
    for (const TokenEvent& ev : out.events) {
      Timing& r = t[ev.id];
      r.tokens += ev.new_tokens;
      if (ev.first) r.first_token_ns = now;
      if (ev.finish != FinishReason::kNone) {
        r.end_ns = now;
        r.finish = ev.finish;
        if (int(next_id) <= total) send();
      }
    }
  }
  return t;
}

double MeanTtftMs(const std::map<uint64_t, Timing>& t) {
  double sum = 0;
  for (auto& [id, r] : t) sum += double(r.first_token_ns - r.arrival_ns) / 1e6;
  return sum / double(t.size());
}

EngineConfig Small() {
  EngineConfig c;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 512;
  c.num_gpu_blocks_override = 10000;
  return c;
}

TEST(EngineTest, AdmitsAtMostMaxNumSeqs) {
  Engine e(Small());
  for (uint64_t i = 1; i <= 20; ++i) e.Add({i, 10, 5, 0});
  StepPlan p = e.BeginStep(0);
  EXPECT_EQ(p.num_running, 8);
  EXPECT_EQ(p.num_waiting, 12);
  EXPECT_EQ(p.prefill_tokens, 80);
}

TEST(EngineTest, TokenBudgetBoundsAdmission) {
  EngineConfig c = Small();
  c.max_num_batched_tokens = 25;
  Engine e(c);
  for (uint64_t i = 1; i <= 4; ++i) e.Add({i, 10, 5, 0});
  StepPlan p = e.BeginStep(0);
  // 10 + 10 + a 5-token chunk of the third prompt.
  EXPECT_EQ(p.prefill_tokens, 25);
  EXPECT_EQ(p.num_running, 3);
}

TEST(EngineTest, ChunkedPrefillSpreadsALongPromptOverSteps) {
  EngineConfig c = Small();
  c.max_num_batched_tokens = 100;
  Engine e(c);
  e.Add({1, 250, 3, 0});
  std::vector<int> prefill;
  int first_at = -1;
  for (int step = 1; e.has_work(); ++step) {
    StepPlan p = e.BeginStep(0);
    prefill.push_back(p.prefill_tokens);
    StepOutput out;
    e.FinishStep(&out);
    for (auto& ev : out.events) if (ev.first) first_at = step;
  }
  EXPECT_EQ(first_at, 3);
  EXPECT_EQ(prefill, (std::vector<int>{100, 100, 50, 0, 0}));
}

TEST(EngineTest, WithoutChunkedPrefillALongPromptBlocksTheQueue) {
  EngineConfig c = Small();
  c.max_num_batched_tokens = 100;
  c.enable_chunked_prefill = false;
  Engine e(c);
  e.Add({1, 60, 3, 0});
  e.Add({2, 60, 3, 0});
  StepPlan p = e.BeginStep(0);
  EXPECT_EQ(p.num_running, 1);
  EXPECT_EQ(p.prefill_tokens, 60);
}

TEST(EngineTest, StepTimeFollowsTheWorkInTheStep) {
  EngineConfig c = Small();
  c.step_base_ms = 5;
  c.step_prefill_token_us = 100;
  c.step_decode_seq_us = 200;
  c.step_context_token_ns = 0;
  Engine e(c);
  e.Add({1, 30, 10, 0});
  e.Add({2, 20, 10, 0});
  EXPECT_EQ(e.BeginStep(0).dur_ns, 10'000'000);  // 5 ms + 50 prompt tokens x 0.1 ms
  StepOutput out;
  e.FinishStep(&out);
  EXPECT_EQ(e.BeginStep(0).dur_ns, 5'400'000);   // 5 ms + 2 decoding sequences x 0.2 ms
}

TEST(EngineTest, EveryRequestGetsExactlyItsTokens) {
  Engine e(Small());
  auto t = RunClosedLoop(e, 16, 64, 40, 17);
  ASSERT_EQ(t.size(), 64u);
  for (auto& [id, r] : t) {
    EXPECT_EQ(r.tokens, 17) << id;
    EXPECT_EQ(r.finish, FinishReason::kLength);
  }
  EXPECT_EQ(e.free_blocks(), e.total_blocks());
}

TEST(EngineTest, StopsAtEos) {
  Engine e(Small());
  e.Add({1, 10, 100, 7});
  int tokens = 0;
  FinishReason fin = FinishReason::kNone;
  while (e.has_work()) {
    e.BeginStep(0);
    StepOutput out;
    e.FinishStep(&out);
    for (auto& ev : out.events) { tokens += ev.new_tokens; fin = ev.finish; }
  }
  EXPECT_EQ(tokens, 7);
  EXPECT_EQ(fin, FinishReason::kStop);
}

TEST(EngineTest, KvPressurePreemptsTheNewestAndStillCompletesEverything) {
  EngineConfig c = Small();
  c.max_num_seqs = 16;
  c.block_size = 16;
  c.num_gpu_blocks_override = 40;  // 640 tokens of KV for 16 requests of 64 + 64
  Engine e(c);
  auto t = RunClosedLoop(e, 16, 32, 64, 64);
  EXPECT_GT(e.preemptions_total(), 0u);
  for (auto& [id, r] : t) EXPECT_EQ(r.tokens, 64) << id;
  EXPECT_EQ(e.free_blocks(), e.total_blocks());
}

TEST(EngineTest, PreemptionVictimIsTheNewestRunningRequest) {
  EngineConfig c = Small();
  c.block_size = 4;
  c.num_gpu_blocks_override = 6;  // 24 tokens
  Engine e(c);
  e.Add({1, 8, 20, 0});
  e.Add({2, 8, 20, 0});
  StepOutput out;
  std::vector<uint64_t> preempted;
  for (int i = 0; i < 40 && e.has_work(); ++i) {
    e.BeginStep(0);
    e.FinishStep(&out);
    preempted.insert(preempted.end(), out.preempted.begin(), out.preempted.end());
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted.front(), 2u);
}

// vLLM's allocate_slots reserves cdiv(num_computed + num_new, block_size) blocks: a step holds
// KV for the tokens computed so far and those it computes, not for the token it samples.
TEST(EngineTest, KvBlocksCoverComputedAndScheduledTokensOnly) {
  EngineConfig c = Small();
  c.block_size = 16;
  Engine e(c);
  e.Add({1, 15, 40, 0});
  // Step 0 computes the 15 prompt tokens; step i > 0 the token sampled in step i - 1.
  for (int i = 0; e.has_work(); ++i) {
    e.BeginStep(0);
    EXPECT_EQ(e.total_blocks() - e.free_blocks(), (15 + i + 15) / 16) << "step " << i;
    StepOutput out;
    e.FinishStep(&out);
  }
}

TEST(EngineTest, AbortFreesBlocks) {
  Engine e(Small());
  e.Add({1, 100, 10, 0});
  e.BeginStep(0);
  StepOutput out;
  e.FinishStep(&out);
  EXPECT_LT(e.free_blocks(), e.total_blocks());
  e.Abort(1);
  EXPECT_EQ(e.free_blocks(), e.total_blocks());
  EXPECT_FALSE(e.has_work());
}

// The knee emerges: past max_num_seqs, requests queue and TTFT climbs far above its value at
// half the limit.
TEST(EngineTest, TtftKneeEmergesPastMaxNumSeqs) {
  EngineConfig c;
  c.max_num_seqs = 32;
  Engine low(c), high(c);
  double ttft_half = MeanTtftMs(RunClosedLoop(low, 16, 400, 256, 128));
  double ttft_double = MeanTtftMs(RunClosedLoop(high, 64, 400, 256, 128));
  EXPECT_GT(ttft_double, 5 * ttft_half) << ttft_half << " vs " << ttft_double;
}

TEST(EngineTest, SpecTokensEmitSeveralTokensPerStep) {
  EngineConfig c = Small();
  c.spec_tokens = 3;
  Engine e(c);
  e.Add({1, 10, 10, 0});
  std::vector<int> per_step;
  while (e.has_work()) {
    e.BeginStep(0);
    StepOutput out;
    e.FinishStep(&out);
    for (auto& ev : out.events) per_step.push_back(ev.new_tokens);
  }
  EXPECT_EQ(per_step, (std::vector<int>{1, 3, 3, 3}));
}

// Contract: a prefix-cache hit skips its tokens' prefill: a 100-token prompt with 96 cached
// computes 4 in its first step and samples its first token there; a hit is capped below the
// prompt (the last token is always computed).
TEST(EngineTest, CachedTokensSkipPrefill) {
  EngineConfig c = Small();
  Engine e(c);
  e.Add({1, 100, 2, 0, 96});
  StepPlan p = e.BeginStep(0);
  EXPECT_EQ(p.prefill_tokens, 4);
  StepOutput out;
  e.FinishStep(&out);
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_TRUE(out.events[0].first);
  Engine all(c);
  all.Add({2, 100, 2, 0, 100});
  EXPECT_EQ(all.BeginStep(0).prefill_tokens, 1);
}

// Contract: with K drafts a step, all accepted (p = 1) a decode step yields K + 1 tokens, none
// accepted (p = 0) one; the counters count drafts, draft tokens and accepted tokens (fewer
// drafts near max_tokens).
TEST(EngineTest, SpecDecodingAcceptance) {
  for (const double p : {1.0, 0.0}) {
    EngineConfig c = Small();
    c.spec_draft_tokens = 3;
    c.spec_accept_rate = p;
    Engine e(c);
    e.Add({1, 10, 10, 0});
    std::vector<int> per_step;
    while (e.has_work()) {
      e.BeginStep(0);
      StepOutput out;
      e.FinishStep(&out);
      for (auto& ev : out.events) per_step.push_back(ev.new_tokens);
    }
    if (p == 1.0) {
      EXPECT_EQ(per_step, (std::vector<int>{1, 4, 4, 1}));  // 9 left: 4, 4, then 1 (no draft)
      EXPECT_EQ(e.spec_drafts(), 2u);
      EXPECT_EQ(e.spec_draft_tokens(), 6u);
      EXPECT_EQ(e.spec_accepted_tokens(), 6u);
    } else {
      EXPECT_EQ(per_step, (std::vector<int>(10, 1)));
      EXPECT_EQ(e.spec_accepted_tokens(), 0u);
      EXPECT_GT(e.spec_drafts(), 0u);
    }
  }
}

TEST(EngineTest, PathologiesLengthenSteps) {
  EngineConfig c = Small();
  c.step_context_token_ns = 0;
  EngineConfig slow = c;
  slow.slow_kernel_factor = 3;
  slow.slow_kernel_every = 2;
  EngineConfig logs = c;
  logs.log_stall_every_steps = 3;
  logs.log_stall_ms = 40;
  EngineConfig gil = c;
  gil.host_overhead_per_seq_us = 1000;
  EngineConfig swap = c;
  swap.swap_stall_every_s = 1;
  swap.swap_stall_ms = 200;
  auto durations = [](EngineConfig cfg, int64_t step_gap_ns) {
    Engine e(cfg);
    for (uint64_t i = 1; i <= 4; ++i) e.Add({i, 1, 100, 0});
    std::vector<int64_t> d;
    int64_t now = 0;
    for (int i = 0; i < 6; ++i) {
      d.push_back(e.BeginStep(now).dur_ns);
      StepOutput out;
      e.FinishStep(&out);
      now += step_gap_ns;
    }
    return d;
  };
  auto base = durations(c, 0);
  auto s = durations(slow, 0);
  EXPECT_EQ(s[1], base[1] * 3);
  EXPECT_EQ(s[2], base[2]);
  auto l = durations(logs, 0);
  EXPECT_EQ(l[2] - base[2], 40'000'000);
  EXPECT_EQ(l[1], base[1]);
  auto g = durations(gil, 0);
  EXPECT_EQ(g[1] - base[1], 4'000'000);  // 4 running x 1 ms
  auto w = durations(swap, 600'000'000);  // steps start every 0.6 s
  int stalls = 0;
  for (size_t i = 0; i < w.size(); ++i) stalls += (w[i] - base[i]) == 200'000'000;
  EXPECT_EQ(stalls, 3);  // at 1.2 s, 2.4 s, 3.0 s
}

// A CPU stall lengthens every N-th step by its length and says so (the driver spins that long).
// With log stalls too, the one due the longest starts first, and one of another kind than the
// last waits kStepsBetweenInjectedStalls steps after it: no step has both, none come closer.
TEST(EngineTest, CpuStallsLengthenStepsAndKeepApartFromLogStalls) {
  EngineConfig c = Small();
  c.step_context_token_ns = 0;
  auto plans = [](EngineConfig cfg) {
    Engine e(cfg);
    for (uint64_t i = 1; i <= 4; ++i) e.Add({i, 1, 100, 0});
    std::vector<StepPlan> p;
    for (int i = 0; i < 48; ++i) {
      p.push_back(e.BeginStep(0));
      StepOutput out;
      e.FinishStep(&out);
    }
    return p;
  };
  const auto base = plans(c);
  EngineConfig cpu = c;
  cpu.cpu_stall_every_steps = 4;
  cpu.cpu_stall_ms = 30;
  const auto p = plans(cpu);
  for (size_t i = 0; i < p.size(); ++i) {
    const bool stalled = (i + 1) % 4 == 0;  // steps 4, 8, 12
    EXPECT_EQ(p[i].cpu_stall_ns, stalled ? 30'000'000 : 0) << "step " << i + 1;
    EXPECT_EQ(p[i].dur_ns - base[i].dur_ns, stalled ? 30'000'000 : 0) << "step " << i + 1;
  }
  EngineConfig both = cpu;
  both.cpu_stall_every_steps = 10;
  both.log_stall_every_steps = 16;
  both.log_stall_ms = 40;
  const auto q = plans(both);
  std::vector<int> cpu_steps, log_steps;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i].cpu_stall_ns > 0) cpu_steps.push_back(int(i + 1));
    if (q[i].log_stall) log_steps.push_back(int(i + 1));
  }
  // cpu 10; log due 16, waits for 22; cpu due 20 waits behind it, starts at 34 (22 + 12); cpu
  // due 30 was already pending (one pending per kind); log due 32 starts at 46 (34 + 12); cpu
  // due 40 waits.
  EXPECT_EQ(log_steps, (std::vector<int>{22, 46}));
  EXPECT_EQ(cpu_steps, (std::vector<int>{10, 34}));
}

}  // namespace
}  // namespace latdoc::sim
