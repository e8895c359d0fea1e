// The sweep against an analytical closed-loop server whose true knee is known: a
// continuous-batching engine with max_num_seqs M, step time a + b x batch and N output tokens
// per request. Requests beyond M wait whole "waves" of N steps. Its knee (stats/knee.h):
//  - compute: tokens/s = batch / t and p99 ~ t give elasticity a / (b x batch), 1 at a / b;
//  - queueing: past M tokens/s is flat and p99 grows, elasticity 0: the knee is M
// so the true knee is min(M, a / b).
#include "loadgen/sweep.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loadgen/sweep_report.h"
#include "report/svg_chart.h"
#include "rules/sweep_rules.h"

namespace latdoc::loadgen {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The sweep as `latdoc sweep` runs it: RunSweep, then the rules' advice (rules/sweep_rules.h).
StatusOr<SweepResult> SweepAdvised(StepRunner& runner, const SweepOptions& o,
                                   std::function<void(const SweepStep&)> on_step = nullptr) {
  StatusOr<SweepResult> r = RunSweep(runner, o, std::move(on_step));
  if (r.ok()) rules::AddSweepAdvice(o, *r);
  return r;
}

void AnalyseAdvised(const SweepOptions& o, SweepResult& r) {
  AnalyzeSweep(o, r);
  rules::AddSweepAdvice(o, r);
}

struct Model {
  int max_num_seqs = 48;
  double a_ms = 6, b_ms = 0.08;
  int output_tokens = 32;
  double kv_tokens_capacity = 1e9;   // KV usage = batch x ctx / capacity
  int ctx_tokens = 64;
  double fail_from = 1e9;            // loads >= this fail `fail_rate` of requests
  double fail_rate = 0;
  int interrupt_after_rounds = -1;   // reports Ctrl-C in this round
  int unreachable_after_rounds = -1; // later rounds fail: the server went away
  double noise = 0.0;                // relative, deterministic, first round of a step only
  bool noise_every_round = false;
  // A stall of the client's host: the first `stall_measurements` measurements of each step with
  // a load in [stall_lo, stall_hi] run `stall_factor` times slower (every stream at once).
  double stall_lo = -1, stall_hi = -1;
  int stall_measurements = 1;
  double stall_factor = 2;
  bool server_gone_on_second_look = false;  // the second measurement of a stalled step fails
  double fail_second_look_rate = 0;         // ... or has this share of failures
  bool gauges = true;                       // running/waiting/KV gauges exposed
  bool waiting_reads_zero = false;          // the waiting gauge always sampled at 0
  double front_end_ms = 0;                  // a serial front end: each request holds it this long
  std::string server;                       // whose /metrics names ("llamacpp"); "" unknown
};

class FakeRunner : public StepRunner {
 public:
  explicit FakeRunner(Model m) : m_(m) {}

  StatusOr<RoundResult> RunRound(double load, int n) override {
    if (gone_ || (m_.unreachable_after_rounds >= 0 && rounds_ >= m_.unreachable_after_rounds))
      return Unavailable("http://x: connect http://x: Connection refused");
    ++rounds_;
    requests_ += n;
    RoundResult r;
    int c = int(load);
    double batch = std::min(c, m_.max_num_seqs);
    // KV pressure: beyond capacity the engine preempts and recomputes (extra step time).
    double kv = batch * m_.ctx_tokens / m_.kv_tokens_capacity;
    double t_ms = m_.a_ms + m_.b_ms * batch;
    if (kv > 1) t_ms *= kv * kv;  // recompute after preemption: much slower
    const double host = stalled_ ? m_.stall_factor : 1.0;  // what the client sees
    double wave_ms = m_.output_tokens * t_ms;
    bool first_round_of_step = load != last_load_;
    last_load_ = load;
    int64_t total_wait_ns = 0;
    for (int i = 0; i < n; ++i) {
      RequestSample s;
      const double fail_rate = second_look_ ? m_.fail_second_look_rate : m_.fail_rate;
      if ((load >= m_.fail_from || second_look_) && std::fmod(i * 0.6180339887, 1.0) < fail_rate) {
        s.ok = false;
        s.failure = "http_status";
        s.error = "HTTP 500: boom";
        r.requests.push_back(s);
        continue;
      }
      int slot = i % c;
      int waves = slot / m_.max_num_seqs;
      double jitter = 1 + (first_round_of_step || m_.noise_every_round ? m_.noise : 0) *
                              std::sin((i + 7 * rounds_) * 1.7);
      s.ok = true;
      const double front_ms = c * m_.front_end_ms;  // queued behind every other request there
      s.ttft_ns = int64_t((waves * wave_ms + t_ms + front_ms) * 1e6 * jitter * host);
      s.e2el_ns = int64_t(((waves + 1) * wave_ms + front_ms) * 1e6 * jitter * host);
      s.tpot_ns = int64_t(t_ms * 1e6 * host);
      s.output_tokens = m_.output_tokens;
      total_wait_ns += int64_t(waves * wave_ms * 1e6);
      for (int k = 1; k < m_.output_tokens; ++k) r.itl_ns.push_back(int64_t(t_ms * 1e6 * host));
      r.requests.push_back(s);
    }
    // Steady state: the engine completes `batch` requests per wave.
    r.dur_ns = int64_t((double(n) / batch * wave_ms + n * m_.front_end_ms) * 1e6 * host);
    ServerStepMetrics& sm = r.server;
    sm.available = true;
    sm.server = m_.server;
    if (m_.gauges) {
      sm.max_running = batch;
      sm.max_waiting = m_.waiting_reads_zero ? 0 : std::max(0, c - m_.max_num_seqs);
      sm.max_kv_cache_usage = std::min(1.0, kv);
    }
    sm.preemptions = kv > 1 ? double(n) : 0;
    sm.queue_sum_s = double(total_wait_ns) / 1e9 + n * t_ms / 2e3;
    sm.queue_count = n;
    sm.prefill_sum_s = n * (t_ms + 0.06 * 32) / 1e3;  // 32-token prompts at 0.06 ms per token
    sm.prefill_count = n;
    sm.decode_sum_s = n * (m_.output_tokens - 1) * t_ms / 1e3;
    sm.decode_count = n;
    sm.itl_sum_s = double(r.itl_ns.size()) * t_ms / 1e3;
    sm.itl_count = double(r.itl_ns.size());
    r.interrupted = m_.interrupt_after_rounds >= 0 && rounds_ > m_.interrupt_after_rounds;
    interrupted_ = interrupted_ || r.interrupted;
    return r;
  }
  bool interrupted() const override { return interrupted_; }
  void StartStep(double load) override {
    const bool in_range = load >= m_.stall_lo && load <= m_.stall_hi;
    const int nth = measurements_[load]++;
    stalled_ = in_range && nth < m_.stall_measurements;
    second_look_ = in_range && nth == 1;
    gone_ = gone_ || (second_look_ && m_.server_gone_on_second_look);
  }

  int64_t requests() const { return requests_; }

 private:
  Model m_;
  int rounds_ = 0;
  int64_t requests_ = 0;
  double last_load_ = -1;
  bool interrupted_ = false;
  std::map<double, int> measurements_;  // per load
  bool stalled_ = false;                // this measurement runs slow
  bool second_look_ = false;            // this is a stalled step's second measurement
  bool gone_ = false;                   // the server went away
};

SweepOptions Opts(double lo = 1, double hi = 1024) {
  SweepOptions o;
  o.lo = lo;
  o.hi = hi;
  o.input_len = 32;
  return o;
}

double KneeLoad(const SweepResult& r) { return r.steps.at(r.knee_index.value()).load; }

size_t CountOf(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(SweepTest, LadderIsGeometricAndEndsAtTheTop) {
  EXPECT_THAT(LadderLevels(Opts(1, 100)), ::testing::ElementsAre(1, 2, 4, 8, 16, 32, 64, 100));
  EXPECT_THAT(LadderLevels(Opts(3, 24)), ::testing::ElementsAre(3, 6, 12, 24));
  SweepOptions r = Opts(0.5, 4);
  r.rate_mode = true;
  EXPECT_THAT(LadderLevels(r), ::testing::ElementsAre(0.5, 1, 2, 4));
}

// The knee is within 10% of the true one for queueing-bound and compute-bound servers.
TEST(SweepTest, KneeWithinTenPercentOfTruth) {
  struct Case { int m; double a, b; double truth; Bend bend; };
  for (Case c : {Case{16, 6, 0.08, 16, Bend::kQueueing}, Case{48, 6, 0.08, 48, Bend::kQueueing},
                 Case{100, 6, 0.08, 6 / 0.08, Bend::kCompute},
                 Case{1024, 4, 0.2, 4 / 0.2, Bend::kCompute}}) {
    Model m;
    m.max_num_seqs = c.m;
    m.a_ms = c.a;
    m.b_ms = c.b;
    FakeRunner fake(m);
    auto r = SweepAdvised(fake, Opts());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->knee_index);
    EXPECT_TRUE(r->knee_reached);
    EXPECT_NEAR(KneeLoad(*r), c.truth, 0.10 * c.truth) << "M=" << c.m << " a/b=" << c.a / c.b << "\n" << SweepCsv(*r, Opts());
    EXPECT_EQ(r->knee_bend, c.bend) << "M=" << c.m;
    EXPECT_FALSE(r->partial);
    EXPECT_EQ(fake.requests(), int64_t(r->requests_spent));
  }
}

// A stall of the client's host halves every stream's speed during the first measurement of the
// steps between 40 and 47 concurrent (M = 48). Measured once, the stall bends the curve there
// (the knee lands under 40); each such step is measured again, the better measurement is kept,
// and the knee is the true one. A fall that repeats is real and stays; a KV-cache fall is the
// server's own and is not measured again.
TEST(SweepTest, HostStallIsMeasuredAgainAndDoesNotMoveTheKnee) {
  Model m;
  m.max_num_seqs = 48;
  m.stall_lo = 40;
  m.stall_hi = 47;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(KneeLoad(*r), 48, 4.8) << SweepCsv(*r, Opts());
  EXPECT_EQ(fake.requests(), int64_t(r->requests_spent));
  int remeasured = 0;
  for (const auto& s : r->steps) {
    if (s.load < 40 || s.load > 47) {
      EXPECT_EQ(s.remeasured, "") << s.load;
      continue;
    }
    ++remeasured;
    EXPECT_THAT(s.remeasured, HasSubstr("measured again"));
    EXPECT_THAT(s.remeasured, HasSubstr("kept the second"));
    EXPECT_THAT(SweepJson(*r, Opts(), {}).dump(), HasSubstr("\"remeasured\""));
  }
  EXPECT_GE(remeasured, 1) << SweepCsv(*r, Opts());

  // Without the second look the same stall puts the knee early: the test's stall is one.
  Model always = m;
  always.stall_measurements = 2;
  FakeRunner slow(always);
  auto s = SweepAdvised(slow, Opts());
  ASSERT_TRUE(s.ok());
  EXPECT_LT(KneeLoad(*s), 40) << SweepCsv(*s, Opts());
  for (const auto& x : s->steps) {
    if (!x.remeasured.empty()) {
      EXPECT_THAT(x.remeasured, HasSubstr("kept the first"));
    }
  }

  // A faster second measurement with failures is not kept: the first was clean.
  Model flaky = m;
  flaky.fail_second_look_rate = 0.05;
  FakeRunner flaky_runner(flaky);
  auto fl = SweepAdvised(flaky_runner, Opts());
  ASSERT_TRUE(fl.ok());
  int kept_first = 0;
  for (const auto& x : fl->steps) {
    if (x.remeasured.empty()) continue;
    EXPECT_THAT(x.remeasured, HasSubstr("failed; kept the first"));
    EXPECT_EQ(x.failed, 0u);
    ++kept_first;
  }
  EXPECT_GE(kept_first, 1);

  // The server gone during the second look: the first measurement is kept and the sweep
  // stops, marked partial with the reason.
  Model gone = m;
  gone.server_gone_on_second_look = true;
  FakeRunner gone_runner(gone);
  auto g = SweepAdvised(gone_runner, Opts());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE(g->partial);
  EXPECT_THAT(g->partial_reason, HasSubstr("(measuring it again): http://x: connect"));
  bool kept = false;
  for (const auto& x : g->steps) {
    if (x.load >= 40 && x.load <= 47) {
      kept = true;
      EXPECT_THAT(x.remeasured, HasSubstr("measuring it again failed"));
    }
  }
  EXPECT_TRUE(kept) << SweepCsv(*g, Opts());
  EXPECT_EQ(gone_runner.requests(), int64_t(g->requests_spent));

  Model kv;
  kv.max_num_seqs = 1024;
  kv.kv_tokens_capacity = 24 * 64;
  FakeRunner thrash(kv);
  auto k = SweepAdvised(thrash, Opts());
  ASSERT_TRUE(k.ok());
  for (const auto& x : k->steps) EXPECT_EQ(x.remeasured, "") << x.load;
}

// Queueing past the server's own limit while the step time says larger batches still pay:
// raise --max-num-seqs to the step-time knee a / b.
TEST(SweepTest, RecommendsRaisingMaxNumSeqsWhenQueueingBeforeComputeKnee) {
  Model m;
  m.max_num_seqs = 16;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->server_max_num_seqs, 16);
  ASSERT_TRUE(r->step_base_ms && r->step_per_seq_ms);
  EXPECT_NEAR(*r->step_base_ms, 6, 0.01);
  EXPECT_NEAR(*r->step_per_seq_ms, 0.08, 0.001);
  ASSERT_EQ(r->recommendations.size(), 2u);
  EXPECT_EQ(r->recommendations[0].flag, "--max-num-seqs");
  EXPECT_EQ(r->recommendations[0].value, 75);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("running plateaued at 16"));
  EXPECT_EQ(r->recommendations[1].flag, "--max-num-batched-tokens");
  ASSERT_TRUE(r->recommendations[1].value);
  EXPECT_EQ(*r->recommendations[1].value % 256, 0);
  EXPECT_GE(*r->recommendations[1].value, 75);
  EXPECT_THAT(r->knee_explanation, HasSubstr("queueing past the server's batch limit"));
  EXPECT_THAT(r->low_load_regime, HasSubstr("low load (1 concurrent)"));
  EXPECT_THAT(r->high_load_regime, HasSubstr("6.00 ms per step + 0.080 ms per sequence"));
}

// The same server as RecommendsRaisingMaxNumSeqsWhenQueueingBeforeComputeKnee, when /metrics
// names it llama.cpp, SGLang or TGI: the same numbers in that server's flags, and no vLLM flag.
TEST(SweepTest, RecommendationsInTheServersOwnFlags) {
  Model m;
  m.max_num_seqs = 16;
  SweepOptions o = Opts();
  o.output_len = 32;
  auto flags = [](const SweepResult& r) {
    std::vector<std::string> f;
    for (const auto& rec : r.recommendations) f.push_back(rec.flag);
    return f;
  };
  auto no_vllm = [](const SweepResult& r) {
    for (const auto& rec : r.recommendations) EXPECT_THAT(rec.reason, Not(HasSubstr("--max-num"))) << rec.flag;
    EXPECT_THAT(r.knee_explanation, Not(HasSubstr("--max-num")));
  };

  m.server = "llamacpp";
  FakeRunner llama(m);
  auto l = SweepAdvised(llama, o);
  ASSERT_TRUE(l.ok());
  EXPECT_THAT(flags(*l), ::testing::ElementsAre("--parallel", "--ctx-size", "--batch-size", "--ubatch-size"));
  EXPECT_EQ(l->recommendations[0].value, 75);
  EXPECT_THAT(l->recommendations[0].reason, HasSubstr("running plateaued at 16"));
  EXPECT_THAT(l->recommendations[0].reason, HasSubstr("Keep continuous batching on"));
  EXPECT_EQ(l->recommendations[1].value, 4864);  // 75 slots x (32 + 32) = 4800, rounded up to 256s
  EXPECT_THAT(l->recommendations[1].reason, HasSubstr("splits it across the 75 slots"));
  ASSERT_TRUE(l->recommendations[2].value);
  EXPECT_EQ(*l->recommendations[2].value % 256, 0);
  EXPECT_EQ(l->recommendations[3].value, std::min<int64_t>(*l->recommendations[2].value, 512));
  no_vllm(*l);

  m.server = "sglang";
  FakeRunner sglang(m);
  auto s = SweepAdvised(sglang, o);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(flags(*s), ::testing::ElementsAre("--max-running-requests", "--chunked-prefill-size"));
  EXPECT_EQ(s->recommendations[0].value, 75);
  EXPECT_THAT(s->recommendations[0].reason, HasSubstr("--schedule-policy lpm"));
  EXPECT_EQ(s->recommendations[1].value, l->recommendations[2].value);
  no_vllm(*s);

  m.server = "tgi";
  FakeRunner tgi(m);
  auto t = SweepAdvised(tgi, o);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(flags(*t), ::testing::ElementsAre("--max-batch-total-tokens", "--max-batch-prefill-tokens",
                                                "--max-concurrent-requests"));
  EXPECT_EQ(t->recommendations[0].value, 4864);
  EXPECT_EQ(t->recommendations[1].value, l->recommendations[2].value);
  double top = 0;
  for (const auto& st : t->steps) top = std::max(top, st.load);
  EXPECT_EQ(t->recommendations[2].value, int64_t(std::ceil(top)));
  no_vllm(*t);
}

// The waiting gauge is one instant per scrape; a 0 read there does not hide a queue the
// queue-time histogram shows.
TEST(SweepTest, WaitingGaugeAtZeroDoesNotHideQueueing) {
  Model m;
  m.max_num_seqs = 16;
  m.waiting_reads_zero = true;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->knee_bend, Bend::kQueueing);
  EXPECT_EQ(r->server_max_num_seqs, 16);
  EXPECT_EQ(r->recommendations[0].value, 75);
}

// A request rate is no batch size: without the running gauge, rate mode recommends none
// (it said --max-num-seqs 1, "past a batch of 0").
TEST(SweepTest, RateModeWithoutRunningGaugeRecommendsNoBatch) {
  Model m;
  m.gauges = false;
  FakeRunner fake(m);
  SweepOptions o = Opts();
  o.rate_mode = true;
  auto r = SweepAdvised(fake, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->knee_reached);
  EXPECT_FALSE(r->recommendations[0].value);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("a request rate is no batch size"));
  EXPECT_FALSE(r->recommendations[1].value);
  // With the gauge, the batch is what ran.
  Model g;
  FakeRunner with(g);
  auto w = SweepAdvised(with, o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->recommendations[0].value);
  EXPECT_LE(*w->recommendations[0].value, 48);
}

// Gauges are read only from scrapes made while a request was in flight: the idle scrapes
// around a short round read 0 running.
TEST(SweepTest, GaugesComeFromScrapesDuringTheRound) {
  BenchRun run;
  run.metrics_available = true;
  for (int i = 0; i < 2; ++i) {
    RequestRecord rec;
    rec.outcome = Outcome::kOk;
    rec.scheduled_ns = rec.sent_ns = 100;
    rec.first_token_ns = 120;
    rec.last_token_ns = rec.end_ns = 200;
    rec.output_tokens = 2;
    run.records.push_back(rec);
  }
  auto sample = [](int64_t t, double running, double waiting) {
    ServerSample s;
    s.t_ns = t;
    s.running = running;
    s.waiting = waiting;
    s.kv_cache_usage = running / 10;
    return s;
  };
  run.timeline = {sample(50, 0, 0), sample(250, 0, 0)};
  RoundResult idle = RoundFromRun(run);
  EXPECT_TRUE(idle.server.available);
  EXPECT_FALSE(idle.server.max_running);
  EXPECT_FALSE(idle.server.max_waiting);
  EXPECT_FALSE(idle.server.max_kv_cache_usage);
  run.timeline = {sample(50, 0, 0), sample(150, 2, 1), sample(250, 0, 0)};
  RoundResult busy = RoundFromRun(run);
  EXPECT_EQ(busy.server.max_running, 2);
  EXPECT_EQ(busy.server.max_waiting, 1);
  EXPECT_DOUBLE_EQ(busy.server.max_kv_cache_usage.value_or(0), 0.2);
}

// A knee the engine does not explain (its queue + prefill + decode under half of what the
// client waited) is the front end's: no batch limit is recommended (it said "compute" and
// advised a smaller --max-num-seqs).
TEST(SweepTest, FrontEndBoundKneeRecommendsNoBatchLimit) {
  Model m;
  m.max_num_seqs = 1024;
  m.b_ms = 0.01;
  m.front_end_ms = 2;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->knee_reached);
  EXPECT_EQ(r->knee_bend, Bend::kFrontEnd) << r->knee_explanation;
  EXPECT_THAT(r->knee_explanation, HasSubstr("outside the engine"));
  EXPECT_THAT(r->knee_explanation, HasSubstr("since 1 concurrent, the client's mean E2EL grew"));
  EXPECT_FALSE(r->recommendations[0].value);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("the engine is not what bends"));
  // The same server without the front end bends on compute, with a recommendation.
  m.front_end_ms = 0;
  m.b_ms = 0.2;
  FakeRunner plain(m);
  auto p = SweepAdvised(plain, Opts());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->knee_bend, Bend::kCompute);
  EXPECT_TRUE(p->recommendations[0].value);
}

TEST(SweepTest, ComputeKneeRecommendsTheKneeBatch) {
  Model m;
  m.max_num_seqs = 1024;
  m.a_ms = 4;
  m.b_ms = 0.2;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->recommendations[0].value);
  EXPECT_NEAR(double(*r->recommendations[0].value), 20, 2);
  EXPECT_FALSE(r->server_max_num_seqs);
}

TEST(SweepTest, KvPressureIsNamed) {
  Model m;
  m.max_num_seqs = 1024;
  m.kv_tokens_capacity = 24 * 64;  // KV full past a batch of 24
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->knee_bend, Bend::kKvCache);
  EXPECT_NEAR(KneeLoad(*r), 24, 2.4);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("KV cache fills"));
}

// The ladder stops one step past a sharp knee instead of climbing to 1024.
TEST(SweepTest, StopsClimbingOncePastTheKnee) {
  Model m;
  m.max_num_seqs = 16;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_LE(r->steps.back().load, 64);
  EXPECT_THAT(r->stop_reason, HasSubstr("clearly past the knee at 16"));
  for (const auto& s : r->steps) {
    if (s.phase == "refine") {
      EXPECT_GT(s.load, 4) << "refinement only around the knee";
    }
  }
}

TEST(SweepTest, StopsWhenErrorsClimb) {
  Model m;
  m.fail_from = 8;
  m.fail_rate = 0.5;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps.back().load, 8);
  EXPECT_THAT(r->stop_reason, HasSubstr("errors climbed"));
  EXPECT_THAT(r->stop_reason, HasSubstr("HTTP 500: boom"));
  // The failing step is shown but not used for the knee.
  EXPECT_LT(KneeLoad(*r), 8);
}

TEST(SweepTest, EveryRequestFailingIsAnError) {
  Model m;
  m.fail_from = 0;
  m.fail_rate = 1.1;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message(),
            "every request failed at 1 concurrent (32 of 32; http_status: HTTP 500: boom): the "
            "server cannot be swept");
}

TEST(SweepTest, RangeWithOnePointIsRejected) {
  FakeRunner fake(Model{});
  auto r = SweepAdvised(fake, Opts(8, 8));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "--concurrency 8:8: a sweep needs a range with at least two points (lo < hi); for one "
            "load level use `latdoc bench`");
  EXPECT_EQ(fake.requests(), 0);
}

TEST(SweepTest, RangesAndSlosMustBeFinite) {
  FakeRunner fake(Model{});
  SweepOptions o = Opts(1, INFINITY);
  o.rate_mode = true;
  auto r = SweepAdvised(fake, o);
  EXPECT_EQ(r.status().message(), "--request-rate 1:inf: the range must be finite");
  EXPECT_EQ(fake.requests(), 0);
  EXPECT_EQ(ParseSlo("ttft:nan").status().message(), "--slo: 'ttft:nan': expected a finite number above 0");
  EXPECT_EQ(ParseSlo("e2el:inf").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSlo("ttft:100,percent:150").status().message(),
            "--slo: 'percent:150': a percent of requests is at most 100");
  ASSERT_TRUE(ParseSlo("ttft:100,percent:100").ok());
  // A percent alone judged nothing, silently.
  EXPECT_EQ(ParseSlo("percent:95").status().message(),
            "--slo: 'percent' needs a bound to meet (ttft:MS, tpot:MS or e2el:MS)");
  EXPECT_TRUE(ParseSlo("").ok());
}

TEST(SweepTest, SloNothingMeetsStopsAtTheFirstStep) {
  FakeRunner fake(Model{});
  SweepOptions o = Opts();
  o.slo.ttft_ms = 1;  // the first token takes at least one 6 ms step
  auto r = SweepAdvised(fake, o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->highest_meeting_slo);
  EXPECT_THAT(r->stop_reason, HasSubstr("SLO broken at 1 concurrent"));
  EXPECT_EQ(r->steps.size(), 1u);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("no step met the SLO"));
}

TEST(SweepTest, SloCapsTheRecommendation) {
  Model m;
  m.max_num_seqs = 1024;
  m.a_ms = 4;
  m.b_ms = 0.2;
  FakeRunner fake(m);
  SweepOptions o = Opts();
  o.slo.tpot_ms = 4 + 0.2 * 12;  // met up to a batch of 12
  auto r = SweepAdvised(fake, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->highest_meeting_slo);
  EXPECT_LE(r->steps[*r->highest_meeting_slo].load, 12);
  ASSERT_TRUE(r->recommendations[0].value);
  EXPECT_LE(*r->recommendations[0].value, 12);
  EXPECT_THAT(r->recommendations[0].reason, HasSubstr("the SLO breaks before the knee"));
  // The SLO boundary was refined between the ladder's 8 (met) and 16 (missed).
  EXPECT_EQ(r->steps[*r->highest_meeting_slo].load, 12);
}

TEST(SweepTest, InterruptKeepsTheStepsDoneMarkedPartial) {
  Model m;
  m.interrupt_after_rounds = 6;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->partial);
  EXPECT_EQ(r->partial_reason, "interrupted");
  ASSERT_FALSE(r->steps.empty());
  EXPECT_TRUE(r->steps.back().interrupted);
  auto j = SweepJson(*r, Opts(), SweepContext{"http://x", "d"});
  EXPECT_EQ(j["partial"], true);
}

// The server dies mid-sweep (found by tests/e2e/reliability_test.cc killing `latdoc sim`: the
// sweep exited with the connect error and wrote nothing): the steps done are kept, marked
// partial with the reason.
TEST(SweepTest, ServerGoneMidSweepKeepsTheStepsDoneMarkedPartial) {
  Model m;
  m.unreachable_after_rounds = 7;
  FakeRunner fake(m);
  auto r = SweepAdvised(fake, Opts());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->partial);
  EXPECT_THAT(r->partial_reason, HasSubstr("Connection refused"));
  ASSERT_FALSE(r->steps.empty());
  auto j = SweepJson(*r, Opts(), SweepContext{"http://x", "d"});
  EXPECT_EQ(j["partial"], true);
  // Before any step was measured, an unreachable server is still an error.
  Model gone;
  gone.unreachable_after_rounds = 0;
  FakeRunner none(gone);
  EXPECT_EQ(SweepAdvised(none, Opts()).status().code(), StatusCode::kUnavailable);
}

// A step whose first round disagrees with its second is measured again until it settles.
TEST(SweepTest, UnstableStepRunsMoreRounds) {
  Model m;
  m.noise = 0.5;
  FakeRunner fake(m);
  SweepOptions o = Opts(1, 2);
  auto s = MeasureStep(fake, 4, o);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->rounds, 2);
  EXPECT_TRUE(s->stable);
  Model quiet;
  FakeRunner fake2(quiet);
  auto q = MeasureStep(fake2, 4, o);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->rounds, 2);
  EXPECT_EQ(q->requests, 32u);
  EXPECT_TRUE(q->stable);
}

TEST(SweepTest, StepsCapAtMaxRequests) {
  Model m;
  m.noise = 0.9;
  m.noise_every_round = true;
  FakeRunner fake(m);
  SweepOptions o = Opts(1, 2);
  o.stable_tolerance = 1e-9;
  o.max_requests = 64;
  auto s = MeasureStep(fake, 2, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->spent, 64u);
  EXPECT_EQ(s->requests, 32u) << "statistics over the last 32 (the window)";
  EXPECT_FALSE(s->stable);
}

// Cost: the adaptive sweep spends at most a third of what an 8-step fixed ladder (1..128, each
// step at the adaptive sweep's per-step cap) spends, with a knee within 10% instead of 2x.
TEST(SweepTest, CostIsUnderAThirdOfAFixedLadder) {
  for (int mns : {16, 48}) {
    Model m;
    m.max_num_seqs = mns;
    FakeRunner fake(m);
    auto r = SweepAdvised(fake, Opts());
    ASSERT_TRUE(r.ok());
    int64_t fixed = 0;
    for (int c = 1; c <= 128; c *= 2) fixed += std::max(400, 8 * c);
    EXPECT_LE(3 * int64_t(r->requests_spent), fixed) << "M=" << mns << " spent " << r->requests_spent;
  }
}

// The chart: one polyline per series with points, the knee as a dashed vertical at its x,
// text escaped, a series without points kept in the legend as n/a; identical input, identical
// bytes.
TEST(SvgChartTest, SeriesMarkersAndEscaping) {
  report::LineChart c;
  c.title = "a < b & c";
  c.log_x = true;
  c.series = {{"p99 TTFT (ms)", "#d62728", false, {{1, 10}, {2, 12}, {4, 40}}},
              {"tokens/s", "#1f77b4", true, {{1, 100}, {2, 190}, {4, 200}}},
              {"p99 ITL (ms)", "#ff7f0e", false, {}}};
  c.markers = {{2, "knee 2"}};
  std::string svg = report::RenderSvg(c);
  EXPECT_EQ(svg, report::RenderSvg(c));
  EXPECT_THAT(svg, HasSubstr(">a &lt; b &amp; c</text>"));
  EXPECT_EQ(CountOf(svg, "<polyline"), 2u);
  EXPECT_EQ(CountOf(svg, "<circle"), 6u);
  EXPECT_THAT(svg, HasSubstr("p99 ITL (ms) (n/a)"));
  // Log x from 1 to 4 over the 592 px plot starting at 64: x=2 sits in the middle (360).
  EXPECT_THAT(svg, HasSubstr("<line x1=\"360.0\" y1=\"56.0\" x2=\"360.0\" y2=\"352.0\" "
                             "stroke=\"#000000\" stroke-dasharray=\"5,4\"/>"));
  EXPECT_THAT(svg, HasSubstr(">knee 2</text>"));
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(SweepReportTest, CsvAndJsonCarryEveryStep) {
  Model m;
  m.max_num_seqs = 16;
  FakeRunner fake(m);
  SweepOptions o = Opts();
  auto r = SweepAdvised(fake, o);
  ASSERT_TRUE(r.ok());
  std::string csv = SweepCsv(*r, o);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "concurrency,phase,requests,completed,failed,stable,p99_ttft_ms,p99_tpot_ms,p99_itl_ms,"
            "p99_e2el_ms,output_throughput,request_goodput,slo_met,max_running,max_waiting,"
            "max_kv_cache_usage,preemptions,queue_mean_ms,prefill_mean_ms,decode_mean_ms,"
            "step_time_ms,bend,knee");
  EXPECT_EQ(size_t(std::count(csv.begin(), csv.end(), '\n')), r->steps.size() + 1);
  // One row is the knee; the goodput column is empty (no SLO), not 0.
  EXPECT_THAT(csv, HasSubstr("\n16,ladder,32,32,0,1,"));
  auto j = SweepJson(*r, o, SweepContext{"http://127.0.0.1:1", "20260101-000000"});
  EXPECT_EQ(j["schema"], "latdoc.sweep/1");
  EXPECT_EQ(j["knee"]["concurrency"], 16);
  EXPECT_EQ(j["knee"]["bend"], "queueing");
  EXPECT_EQ(j["steps"].size(), r->steps.size());
  EXPECT_TRUE(j["steps"][0]["request_goodput"].is_null());
  EXPECT_TRUE(j["highest_meeting_slo"].is_null());
  EXPECT_EQ(j["recommendations"]["max_num_seqs"]["value"], 75);
  EXPECT_FALSE(j["partial"].get<bool>());
  EXPECT_EQ(j["requests_spent"], r->requests_spent);
  for (const char* k : {"p99_ttft_ms", "p99_itl_ms", "output_throughput", "server_metrics", "bend"})
    EXPECT_TRUE(j["steps"][0].contains(k)) << k;
}

// Steps as the default `latdoc sim` gave them (sweep --concurrency 1:64; max_num_seqs 1024):
// the engine ran every request offered (running = the concurrency), the waiting gauge stayed 0,
// and the queue-time histogram said ~18 ms, 2.5 engine steps: prompts wait for the step in
// progress, which carries other prompts' prefill. Load, p99 E2EL ms, output tokens/s, mean
// queue ms, engine step ms.
SweepResult DefaultSimSteps() {
  const double rows[][5] = {{1, 408.8, 158.0, 0.01, 6.1},    {2, 431.2, 297.0, 13.2, 6.3},
                            {4, 524.0, 534.4, 17.0, 6.6},    {8, 557.6, 921.7, 17.9, 6.9},
                            {16, 718.9, 1424.0, 19.2, 7.4},  {17, 739.1, 1471.1, 19.8, 7.5},
                            {18, 761.0, 1514.4, 18.8, 7.6},  {19, 781.3, 1554.4, 19.2, 7.7},
                            {21, 824.8, 1632.0, 19.8, 7.9},  {23, 862.3, 1705.7, 20.0, 8.1},
                            {32, 1051.7, 1947.9, 19.9, 8.9}};
  SweepResult r;
  for (const auto& row : rows) {
    SweepStep s;
    s.load = row[0];
    s.phase = "ladder";
    s.requests = s.completed = s.spent = 32;
    s.p99_e2el_ms = row[1];
    s.p99_ttft_ms = row[1] / 4;
    s.output_tokens_per_s = row[2];
    s.server.available = true;
    s.server.max_running = row[0];
    s.server.max_waiting = 0;
    s.server.max_kv_cache_usage = 0.01;
    s.server.preemptions = 0;
    s.server.queue_sum_s = row[3] / 1e3;
    s.server.queue_count = 1;
    s.server.itl_sum_s = row[4] / 1e3;
    s.server.itl_count = 1;
    r.steps.push_back(s);
  }
  return r;
}

// Nothing waited and the engine ran as many requests as were offered: the bend is the engine
// step growing with the batch, and the explanation says so. It said "queueing past the server's
// batch limit: running plateaued at 20 while requests waited (... up to 0 waiting while 20
// ran)" on a server whose limit was 1024.
TEST(SweepTest, NoBatchLimitBlamedWhenTheEngineRanEveryRequest) {
  SweepOptions o = Opts(1, 64);
  SweepResult r = DefaultSimSteps();
  AnalyseAdvised(o, r);
  ASSERT_TRUE(r.knee_index);
  for (const SweepStep& s : r.steps) {
    EXPECT_EQ(s.bend, Bend::kCompute) << s.load << ": " << s.bend_evidence;
    if (s.load >= 2) {
      EXPECT_THAT(s.bend_evidence, HasSubstr(fmt::format(
          "no batch limit bound: {} running of {} offered, 0 seen waiting; the mean queue time ",
          s.load, s.load)));
    }
  }
  EXPECT_EQ(r.knee_bend, Bend::kCompute);
  EXPECT_FALSE(r.server_max_num_seqs);
  EXPECT_THAT(r.knee_explanation, Not(HasSubstr("past the server's batch limit")));
  EXPECT_THAT(r.knee_explanation, Not(HasSubstr("plateaued")));
  const SweepStep& knee = r.steps[*r.knee_index];
  EXPECT_THAT(r.knee_explanation, HasSubstr("Bends: compute: each engine step takes longer as the batch grows "
                                            "(engine step 6.10 ms at 1 concurrent -> "));
  EXPECT_THAT(r.knee_explanation, HasSubstr(fmt::format(
      ", not the server's batch limit: it ran all {} requests at once", r.steps[*r.knee_index + 1].load)));
  EXPECT_THAT(r.recommendations[0].reason, Not(HasSubstr("plateau")));
  EXPECT_EQ(r.recommendations[0].value, int64_t(knee.load));
}

// One knee in every line: the ladder stops "clearly past the knee" and refinement then moves
// it (16 on the ladder, 19 refined once); the stop reason, the Knee line, the explanation, the
// regimes and the chart all name the final one.
TEST(SweepTest, OneKneeNumberInEveryLine) {
  Model m;
  m.max_num_seqs = 1024;
  m.a_ms = 6;
  m.b_ms = 0.3;  // compute knee at a / b = 20, between ladder steps 16 and 32
  FakeRunner fake(m);
  SweepOptions o = Opts(1, 64);
  auto r = SweepAdvised(fake, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->knee_index);
  const std::string knee = fmt::format("{}", r->steps[*r->knee_index].load);
  const std::string text = r->stop_reason + "\n" + SweepSummaryText(*r, o);
  EXPECT_THAT(text, HasSubstr("Ladder stopped: clearly past the knee at " + knee + " concurrent"));
  EXPECT_THAT(text, HasSubstr("Knee: " + knee + " concurrent"));
  size_t mentions = 0;
  for (const std::string lead : {"knee at ", "Knee: ", "the knee at "}) {
    for (size_t at = text.find(lead); at != std::string::npos; at = text.find(lead, at + 1)) {
      const size_t from = at + lead.size();
      const std::string number = text.substr(from, text.find_first_not_of("0123456789.", from) - from);
      EXPECT_EQ(number, knee) << "at \"" << text.substr(at, 40) << "\" in\n" << text;
      ++mentions;
    }
  }
  EXPECT_GE(mentions, 4u) << text;
  EXPECT_THAT(SweepTable(*r, o), HasSubstr("  <- knee\n"));
}

// The terminal table lists the steps by load, not in the order they ran (1, 2, 4, 8, 16, 32,
// then refinement 11, 23, 13, ...), and marks the knee's row.
TEST(SweepReportTest, TableIsSortedByLoadWithTheKneeMarked) {
  Model m;
  m.max_num_seqs = 1024;
  m.b_ms = 0.3;
  FakeRunner fake(m);
  SweepOptions o = Opts(1, 64);
  std::vector<double> run_order;
  auto r = SweepAdvised(fake, o, [&](const SweepStep& s) { run_order.push_back(s.load); });
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(std::is_sorted(run_order.begin(), run_order.end()));  // refinement ran last
  const std::string table = SweepTable(*r, o);
  std::vector<double> rows;
  size_t marked = 0;
  for (size_t at = table.find('\n') + 1; at < table.size();) {
    const size_t end = table.find('\n', at);
    const std::string line = table.substr(at, end - at);
    rows.push_back(std::stod(line));
    if (line.find("<- knee") != std::string::npos) {
      ++marked;
      EXPECT_EQ(rows.back(), r->steps[*r->knee_index].load) << line;
    }
    at = end + 1;
  }
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end())) << table;
  EXPECT_EQ(rows.size(), run_order.size());
  EXPECT_EQ(marked, 1u) << table;
  EXPECT_EQ(SweepProgressLine(r->steps[0], 1, o).substr(0, 30), "step 1 (ladder): 1 concurrent,");
}

// A sweep cut short after its first step has no knee: it printed "high load (up to the knee at
// 1 concurrent) ... tokens/s 158 -> 158 (x1.0) ... past the knee latency grows faster".
TEST(SweepTest, OneStepClaimsNoKnee) {
  SweepOptions o = Opts(1, 64);
  SweepResult r = DefaultSimSteps();
  r.steps.resize(1);
  r.partial = true;
  r.partial_reason = "interrupted";
  AnalyseAdvised(o, r);
  EXPECT_FALSE(r.knee_index);
  EXPECT_FALSE(r.knee_reached);
  EXPECT_TRUE(r.low_load_regime.empty());
  EXPECT_TRUE(r.high_load_regime.empty());
  const std::string text = SweepSummaryText(r, o);
  EXPECT_THAT(text, HasSubstr("Knee: n/a (one step measured (1 concurrent): a knee is a bend between "
                              "steps and needs two or more)\n"));
  EXPECT_THAT(text, Not(HasSubstr("past the knee")));
  EXPECT_THAT(text, Not(HasSubstr("high load")));
  EXPECT_FALSE(r.recommendations.at(0).value);
  auto j = SweepJson(r, o, SweepContext{});
  EXPECT_TRUE(j["knee"].is_null());
}

}  // namespace
}  // namespace latdoc::loadgen
