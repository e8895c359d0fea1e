#include "attribution/attribute.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "attribution/attribution_json.h"
#include "base/clock.h"
#include "rules/attribution_rules.h"

namespace latdoc::attribution {
namespace {

constexpr int64_t kMs = kNsPerMs;

// `n` streams decoding from 0 to 1 s, a token every 10 ms, except that the engine pauses
// during each of `pauses` ([start, end)): no token arrives inside, all arrive at its end.
Timeline Steady(int n, const std::vector<std::pair<int64_t, int64_t>>& pauses) {
  Timeline t;
  t.start_ns = 0;
  t.end_ns = 1000 * kMs;
  for (int k = 0; k < n; ++k) {
    StreamSeries s;
    s.index = k;
    s.sent_ns = 0;
    s.prompt_tokens = 16;
    int64_t at = 5 * kMs;
    while (at <= 1000 * kMs) {
      for (auto [a, b] : pauses)
        if (at > a && at < b) at = b;
      s.token_ns.push_back(at);
      at += 10 * kMs;
    }
    s.first_token_ns = s.token_ns.front();
    t.streams.push_back(std::move(s));
  }
  return t;
}

// Host samples every 10 ms with the log file growing `base_bytes` per sample and a burst of
// `burst_bytes` at each time in `bursts`.
std::vector<HostPoint> LogSamples(int64_t base_bytes, std::vector<int64_t> bursts, int64_t burst_bytes) {
  std::vector<HostPoint> out;
  int64_t bytes = 0;
  for (int64_t t = 0; t <= 1000 * kMs; t += 10 * kMs) {
    bytes += base_bytes;
    for (int64_t b : bursts)
      if (b > t - 10 * kMs && b <= t) bytes += burst_bytes;
    HostPoint p;
    p.t_ns = t;
    p.log_bytes = bytes;
    out.push_back(p);
  }
  return out;
}

TEST(AttributeTest, CleanRunHasNoStall) {
  Timeline t = Steady(8, {});
  t.host = LogSamples(100, {}, 0);
  Attribution a = Attribute(t);
  EXPECT_EQ(a.median_gap_ns, 10 * kMs);
  EXPECT_TRUE(a.stalls.empty());
  EXPECT_TRUE(rules::EvaluateAttributionRules(a, t).empty());
}

// A log burst in one pause and a long prefill released at the end of another: each pause gets
// its own cause and no other.
TEST(AttributeTest, TellsLogStallFromPrefillInterference) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}, {700 * kMs, 800 * kMs}});
  t.host = LogSamples(100, {402 * kMs}, 8192);
  StreamSeries fresh;  // a long prompt whose prefill was the step that ended at 800 ms
  fresh.index = 99;
  fresh.sent_ns = 690 * kMs;
  fresh.prompt_tokens = 4000;
  fresh.token_ns = {800 * kMs + kMs / 2, 810 * kMs};
  fresh.first_token_ns = fresh.token_ns.front();
  t.streams.push_back(fresh);
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kLog});
  EXPECT_EQ(a.stalls[0].streams, 8);
  EXPECT_EQ(a.stalls[1].causes, std::vector<Cause>{Cause::kPrefill});
  EXPECT_EQ(a.stalls[1].evidence.prefill_tokens, 4000);
  EXPECT_EQ(a.unexplained, 0);
  // The long prompt's own TTFT (110.5 ms against a median of 5 ms) is a spike in that stall.
  EXPECT_EQ(a.median_ttft_ns, 5 * kMs);
  EXPECT_EQ(a.ttft_spikes, 1);
  EXPECT_EQ(a.ttft_spikes_in_stalls, 1);
  ASSERT_EQ(a.causes.size(), 2u);
  EXPECT_EQ(a.causes[1].cause, Cause::kPrefill);
  EXPECT_EQ(a.causes[1].ttft_spikes, 1);
  EXPECT_EQ(a.causes[0].ttft_spikes, 0);
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].id, "attribution.log");
  EXPECT_EQ(fs[0].severity, rules::Severity::kWarn);
  EXPECT_EQ(fs[1].id, "attribution.prefill");
}

// One slow stream is not a server-wide pause.
TEST(AttributeTest, OneSlowStreamIsNotAStall) {
  Timeline t = Steady(8, {});
  Timeline slow = Steady(1, {{300 * kMs, 450 * kMs}});
  t.streams[0] = slow.streams[0];
  EXPECT_TRUE(Attribute(t).stalls.empty());
  EXPECT_TRUE(Attribute(t).stream_stalls.empty());  // nothing explains it
}

// A preemption at one stream's stall's start explains that stream's stall (the preempted stream
// waits while the others decode on); the other streams have none.
TEST(AttributeTest, PreemptionExplainsASingleStreamStall) {
  Timeline t = Steady(8, {});
  Timeline slow = Steady(1, {{300 * kMs, 450 * kMs}});
  t.streams[0] = slow.streams[0];
  for (int64_t at = 0; at <= 1000 * kMs; at += 100 * kMs)
    t.server.push_back({at, 8.0, 0.0, 0.9, at >= 400 * kMs ? 1.0 : 0.0});
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.stalls.empty());
  ASSERT_EQ(a.stream_stalls.size(), 1u);
  EXPECT_EQ(a.stream_stalls[0].start_ns, 295 * kMs);
  EXPECT_EQ(a.stream_stalls[0].causes, std::vector<Cause>{Cause::kPreemption});
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "attribution.preemption");
  EXPECT_NE(fs[0].title.find("1 single-stream stall began at one"), std::string::npos) << fs[0].title;
}

// A cause present everywhere (a log that always grows this fast) is background, not a cause.
TEST(AttributeTest, CauseEverywhereIsBackground) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  t.host = LogSamples(5000, {}, 0);
  Attribution a = Attribute(t);
  ASSERT_EQ(a.causes.size(), 1u);
  EXPECT_GT(a.causes[0].baseline_windows, 10);
  EXPECT_EQ(a.causes[0].baseline_present, a.causes[0].baseline_windows);
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, rules::Severity::kInfo);
  EXPECT_NE(fs[0].title.find("background, not a proven cause"), std::string::npos) << fs[0].title;
}

// A server thread sampled every 20 ms from 0 to 1 s: on a CPU `share` of the time, and
// `busy_share` of it inside each window of `busy`.
ServerThread ThreadAt(int64_t tid, const std::string& comm, double share,
                      const std::vector<std::pair<int64_t, int64_t>>& busy = {}, double busy_share = 1.0) {
  ServerThread th;
  th.pid = 10;
  th.tid = tid;
  th.comm = comm;
  int64_t cpu = 0;
  for (int64_t at = 0; at <= 1000 * kMs; at += 20 * kMs) {
    bool in = std::any_of(busy.begin(), busy.end(), [&](auto w) { return at > w.first && at <= w.second; });
    if (at > 0) cpu += int64_t((in ? busy_share : share) * 20 * kMs);
    th.cpu.push_back({at, cpu});
  }
  return th;
}

// Host samples every 10 ms, the run queue on every second one: `procs_running` (the sampler's
// own thread included), `busy_running` inside `busy`.
std::vector<HostPoint> RunQueueSamples(int64_t procs_running, std::pair<int64_t, int64_t> busy = {0, -1},
                                       int64_t busy_running = 0) {
  std::vector<HostPoint> out = LogSamples(100, {}, 0);
  for (size_t i = 0; i < out.size(); i += 2)
    out[i].procs_running = out[i].t_ns >= busy.first && out[i].t_ns <= busy.second ? busy_running : procs_running;
  return out;
}

// One server thread on a CPU for the whole of one pause (and 30% of the time elsewhere): that
// pause is host_cpu, the evidence names the thread; the other pause, with every thread at its
// usual share, is not.
TEST(AttributeTest, AServerThreadAt100PercentIsNamed) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}, {700 * kMs, 800 * kMs}});
  t.host = RunQueueSamples(2);
  t.server_cpu.pid = 10;
  t.server_cpu.online_cpus = 4;
  t.server_cpu.threads = {ThreadAt(11, "uvicorn", 0.1), ThreadAt(12, "EngineCore", 0.3, {{400 * kMs, 520 * kMs}})};
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.have_threads);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kHostCpu});
  const StallEvidence& e = a.stalls[0].evidence;
  ASSERT_TRUE(e.thread_busy_share.has_value());
  EXPECT_NEAR(*e.thread_busy_share, 1.0, 0.01);
  EXPECT_EQ(e.thread_comm, "EngineCore");
  EXPECT_EQ(e.thread_tid, 12);
  EXPECT_NEAR(*a.stalls[1].evidence.thread_busy_share, 0.3, 0.01);
  EXPECT_TRUE(a.stalls[1].causes.empty());
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].id, "attribution.host_cpu");
  bool named = false;
  for (const auto& ev : fs[0].evidence)
    named |= ev.text.find("busiest server thread EngineCore (tid 12) 100% of a CPU; run queue 1.0 on 4 CPUs") !=
             std::string::npos;
  EXPECT_TRUE(named);
}

// Busy 85% of the pause is under thread_busy_share (90%), and without schedstat's wait the
// runnable rule does not apply: not named.
TEST(AttributeTest, AThreadUnderTheBusyShareIsNotNamed) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  t.host = RunQueueSamples(2);
  t.server_cpu.online_cpus = 4;
  t.server_cpu.threads = {ThreadAt(12, "EngineCore", 0.3, {{400 * kMs, 520 * kMs}}, 0.85)};
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_NEAR(*a.stalls[0].evidence.thread_busy_share, 0.85, 0.01);
  EXPECT_TRUE(a.stalls[0].causes.empty());
}

// RunnableShare: a wait counts only for a thread on a CPU at least 25% of the window, capped at
// the rest of it.
TEST(AttributeTest, RunnableShareCountsTheWaitOfAThreadThatRan) {
  const Thresholds th;
  EXPECT_DOUBLE_EQ(RunnableShare(0.5, 0.3, th), 0.8);
  EXPECT_DOUBLE_EQ(RunnableShare(0.5, 0.9, th), 1.0);      // capped
  EXPECT_DOUBLE_EQ(RunnableShare(0.01, 1.46, th), 0.01);   // asleep: a wait credited late
  EXPECT_DOUBLE_EQ(RunnableShare(0.5, std::nullopt, th), 0.5);  // no schedstat
}

// A thread that spins on a crowded host is on a CPU only part of the time and waits on a run
// queue for the rest (schedstat's second field): runnable 95% of the pause (50% on a CPU, 45%
// waiting) is host_cpu; the same 50% on a CPU without the wait (asleep) is not.
TEST(AttributeTest, AThreadRunnableForThePauseIsNamedThoughOffACpuPartOfIt) {
  for (const bool waiting : {true, false}) {
    Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
    t.host = RunQueueSamples(2);
    t.server_cpu.online_cpus = 2;
    ServerThread th = ThreadAt(12, "sim", 0.3, {{400 * kMs, 520 * kMs}}, 0.5);
    int64_t wait = 0;
    for (size_t i = 0; i < th.cpu.size(); ++i) {
      const int64_t at = th.cpu[i].t_ns;
      if (waiting && i > 0 && at > 400 * kMs && at <= 520 * kMs) wait += int64_t(0.45 * 20 * kMs);
      th.cpu[i].wait_ns = wait;
    }
    t.server_cpu.threads = {th};
    Attribution a = Attribute(t);
    ASSERT_EQ(a.stalls.size(), 1u);
    const StallEvidence& e = a.stalls[0].evidence;
    EXPECT_NEAR(*e.thread_busy_share, 0.5, 0.01);
    ASSERT_TRUE(e.thread_wait_share.has_value());
    EXPECT_NEAR(*e.thread_wait_share, waiting ? 0.45 : 0.0, 0.01);
    EXPECT_EQ(a.stalls[0].causes, waiting ? std::vector<Cause>{Cause::kHostCpu} : std::vector<Cause>{})
        << "waiting=" << waiting;
    if (waiting) {
      std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
      ASSERT_FALSE(fs.empty());
      bool named = false;
      for (const auto& ev : fs[0].evidence)
        named |= ev.text.find("busiest server thread sim (tid 12) 50% of a CPU (+45% waiting for one)") !=
                 std::string::npos;
      EXPECT_TRUE(named);
    }
  }
}

// More runnable tasks than online CPUs in a pause, twice the run's usual queue: host_cpu. A
// queue as long all the time (the host's steady state) names nothing.
TEST(AttributeTest, ARunQueueOverTheCpusIsNamed) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}, {700 * kMs, 800 * kMs}});
  t.host = RunQueueSamples(2, {400 * kMs, 520 * kMs}, 7);
  t.server_cpu.online_cpus = 2;
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kHostCpu});
  EXPECT_GT(*a.stalls[0].evidence.run_queue, 2.0);
  EXPECT_TRUE(a.stalls[1].causes.empty());
  EXPECT_NEAR(*a.stalls[1].evidence.run_queue, 1.0, 1e-9);  // procs_running less the sampler

  t.host = RunQueueSamples(7);
  a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_NEAR(*a.run_queue_mean, 6.0, 1e-9);
  EXPECT_TRUE(a.stalls[0].causes.empty());
  EXPECT_TRUE(a.stalls[1].causes.empty());
}

// `n` streams decoding from 0 to 1 s, a token every 10 ms, but every `slow_step` ms inside
// [lo, hi): gaps too short to be stalls, a rate far under the run's.
Timeline Slowed(int n, int64_t lo, int64_t hi, int64_t slow_step, int64_t end = 1000 * kMs) {
  Timeline t;
  t.end_ns = 1000 * kMs;
  for (int k = 0; k < n; ++k) {
    StreamSeries s;
    s.index = k;
    s.sent_ns = 0;
    for (int64_t at = 5 * kMs; at <= (k % 4 ? end : 1000 * kMs);)
    {
      s.token_ns.push_back(at);
      at += at >= lo && at < hi ? slow_step * kMs : 10 * kMs;
    }
    s.first_token_ns = s.token_ns.front();
    t.streams.push_back(std::move(s));
  }
  return t;
}

// A stall empties its bins of tokens: the dip over them is the stall's, with its causes, and
// is counted for the stall only.
TEST(AttributeTest, ADipOverAStallIsTheStalls) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  t.host = LogSamples(100, {402 * kMs}, 8192);
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  ASSERT_EQ(a.dips.size(), 1u);
  const Dip& d = a.dips[0];
  EXPECT_EQ(d.start_ns, 405 * kMs);  // bins of 100 ms from the first token (5 ms)
  EXPECT_EQ(d.end_ns, 505 * kMs);
  EXPECT_EQ(d.rate_tok_s, 0);
  EXPECT_EQ(d.median_tok_s, 800);  // 8 streams, a token every 10 ms
  EXPECT_EQ(d.live_streams, 8);
  EXPECT_EQ(d.stall, 0);
  EXPECT_EQ(d.causes, std::vector<Cause>{Cause::kLog});
  ASSERT_EQ(a.causes.size(), 1u);
  EXPECT_EQ(a.causes[0].stalls, 1);
  EXPECT_EQ(a.causes[0].dips, 0);
  nlohmann::ordered_json j = AttributionJson(a, t, Thresholds{});
  ASSERT_EQ(j["dips"].size(), 1u);
  EXPECT_EQ(j["dips"][0]["at_s"], 0.405);
  EXPECT_EQ(j["dips"][0]["dur_ms"], 100.0);
  EXPECT_EQ(j["dips"][0]["rate_vs_median"], 0.0);
  EXPECT_EQ(j["dips"][0]["stall"], 0);
  EXPECT_EQ(j["dips"][0]["causes"], nlohmann::ordered_json::array({"log"}));
  EXPECT_EQ(j["thresholds"]["dip_rate_share"], 0.5);
}

// Tokens every 30 ms for 200 ms: no gap is a stall's, but the rate is a third of the median: a
// dip, tested with the stalls' rules (a major-fault burst there: swap) and explained by it.
TEST(AttributeTest, ADipWithoutAStallIsAttributedOnItsOwn) {
  Timeline t = Slowed(8, 600 * kMs, 800 * kMs, 30);
  t.host = LogSamples(100, {}, 0);
  for (HostPoint& p : t.host) p.major_faults = p.t_ns >= 700 * kMs ? 500 : 0;
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.stalls.empty());
  ASSERT_EQ(a.dips.size(), 1u);
  const Dip& d = a.dips[0];
  EXPECT_EQ(d.stall, -1);
  EXPECT_LE(d.start_ns, 605 * kMs);
  EXPECT_GE(d.end_ns, 705 * kMs);
  EXPECT_LT(d.rate_tok_s, 0.5 * d.median_tok_s);
  EXPECT_EQ(d.causes, std::vector<Cause>{Cause::kSwap});
  ASSERT_EQ(a.causes.size(), 1u);
  EXPECT_EQ(a.causes[0].cause, Cause::kSwap);
  EXPECT_EQ(a.causes[0].dips, 1);
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "attribution.swap");
  EXPECT_EQ(fs[0].title, "1 throughput dip in the output token rate coincides with the host swapping or "
                        "faulting pages in");
  EXPECT_EQ(fs[0].severity, rules::Severity::kInfo);
  bool example = false;
  for (const auto& ev : fs[0].evidence)
    example |= ev.name == "example_1" && ev.text.rfind("at +0.605 s: a throughput dip of 200 ms, ", 0) == 0;
  EXPECT_TRUE(example);

  t.host = LogSamples(100, {}, 0);  // nothing on the timeline: unexplained
  a = Attribute(t);
  ASSERT_EQ(a.dips.size(), 1u);
  EXPECT_TRUE(a.dips[0].causes.empty());
  EXPECT_EQ(a.unexplained_dips, 1);
}

// Six of the eight streams end at 600 ms: the rate falls to a quarter with them, which is no dip.
TEST(AttributeTest, FewerStreamsDecodingIsNoDip) {
  Timeline t = Slowed(8, 0, 0, 10, 600 * kMs);
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.stalls.empty());
  EXPECT_TRUE(a.dips.empty());
}

// attribution.series: the log's growth per 100 ms bin as KiB/s (from the host samples), and the
// GPU kernel time per bin, a kernel across a bin edge split between the two bins.
TEST(AttributeTest, SeriesHaveTheLogWriteRateAndTheGpuKernelTime) {
  Timeline t = Steady(2, {});
  nlohmann::ordered_json s = AttributionJson(Attribute(t), t, Thresholds{})["series"];
  EXPECT_FALSE(s.contains("log_write_kib_s"));  // not sampled
  EXPECT_FALSE(s.contains("gpu_kernel_ms"));    // no trace placed
  t.host = LogSamples(0, {150 * kMs}, 2048);    // 2 KiB written in the bin [100, 200) ms
  t.have_gpu = true;
  t.gpu_names = {{"gemm", 10 * kMs, 5}};
  t.gpu = {{50 * kMs, 60 * kMs, 0}, {190 * kMs, 230 * kMs, 0}};
  s = AttributionJson(Attribute(t), t, Thresholds{})["series"];
  ASSERT_EQ(s["t_s"].size(), 11u);
  ASSERT_EQ(s["log_write_kib_s"].size(), 11u);
  EXPECT_EQ(s["log_write_kib_s"][0], 0.0);
  EXPECT_EQ(s["log_write_kib_s"][1], 20.0);  // 2 KiB in 0.1 s
  EXPECT_EQ(s["log_write_kib_s"][2], 0.0);
  ASSERT_EQ(s["gpu_kernel_ms"].size(), 11u);
  EXPECT_EQ(s["gpu_kernel_ms"][0], 10.0);
  EXPECT_EQ(s["gpu_kernel_ms"][1], 10.0);
  EXPECT_EQ(s["gpu_kernel_ms"][2], 30.0);
  EXPECT_EQ(s["gpu_kernel_ms"][3], 0.0);
}

// attribution.series under --local: the output token rate per bin; PSI growth over the time
// between samples, in percent; the run queue less the sampler; the busiest server thread's CPU
// in percent of one CPU. Without host samples or threads, only the token rate.
TEST(AttributeTest, SeriesHaveTheTokenRateHostCpuAndPsi) {
  Timeline t = Steady(2, {});
  nlohmann::ordered_json s = AttributionJson(Attribute(t), t, Thresholds{})["series"];
  ASSERT_EQ(s["output_tok_s"].size(), 11u);
  EXPECT_EQ(s["output_tok_s"][0], 200.0);  // 2 streams x 10 tokens in 0.1 s
  EXPECT_EQ(s["output_tok_s"][10], 0.0);
  for (const char* k : {"psi_cpu_pct", "psi_memory_pct", "psi_io_pct", "run_queue", "thread_busy_pct"})
    EXPECT_FALSE(s.contains(k)) << k;
  t.host = RunQueueSamples(3);  // procs_running 3 on every second sample: 2 less the sampler
  int64_t psi = 0;
  for (HostPoint& p : t.host) {
    if (p.t_ns >= 100 * kMs && p.t_ns < 200 * kMs) psi += 5000;  // 5 ms of each 10 ms up to it
    p.psi_memory_some_us = psi;
  }
  t.server_cpu.threads = {ThreadAt(11, "idle", 0.1), ThreadAt(12, "busy", 0.3, {{400 * kMs, 520 * kMs}})};
  s = AttributionJson(Attribute(t), t, Thresholds{})["series"];
  EXPECT_FALSE(s.contains("psi_cpu_pct"));  // never read
  ASSERT_EQ(s["psi_memory_pct"].size(), 11u);
  EXPECT_EQ(s["psi_memory_pct"][0], 0.0);
  EXPECT_EQ(s["psi_memory_pct"][1], 50.0);
  EXPECT_EQ(s["psi_memory_pct"][2], 0.0);
  ASSERT_EQ(s["run_queue"].size(), 11u);
  EXPECT_EQ(s["run_queue"][3], 2.0);
  ASSERT_EQ(s["thread_busy_pct"].size(), 11u);
  EXPECT_NEAR(s["thread_busy_pct"][0].get<double>(), 30.0, 1e-9);  // the busier of the two
  EXPECT_NEAR(s["thread_busy_pct"][4].get<double>(), 86.0, 1e-9);  // 4 of its 5 intervals at 100%
  EXPECT_NEAR(s["thread_busy_pct"][7].get<double>(), 30.0, 1e-9);
}

// A GPU trace of 9 ms kernels every 10 ms, none launched inside `idle` ([start, end)).
void GpuEvery10Ms(Timeline* t, std::pair<int64_t, int64_t> idle) {
  t->have_gpu = true;
  t->gpu_names = {{"gemm", 9 * kMs, 100}};
  for (int64_t at = 0; at + 9 * kMs <= 1000 * kMs; at += 10 * kMs)
    if (at + 9 * kMs <= idle.first || at >= idle.second) t->gpu.push_back({at, at + 9 * kMs, 0});
}

// A pause whose kernels are all usual and the GPU idle through it, with no host cause on the
// timeline: host_gap, with the GPU's busy share as evidence. The same pause with the log file
// growing in it is the log's, not a host gap; one where the GPU stayed busy is not a host gap;
// without a trace covering it (none after), nothing is said of the GPU.
TEST(AttributeTest, AnIdleGpuInsideAPauseIsAHostGap) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  GpuEvery10Ms(&t, {400 * kMs, 510 * kMs});
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kHostGap});
  ASSERT_TRUE(a.stalls[0].evidence.gpu_busy_share.has_value());
  EXPECT_LT(*a.stalls[0].evidence.gpu_busy_share, 0.2);
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs[0].id, "attribution.host_gap");
  EXPECT_EQ(fs[0].layer, rules::Layer::kKernel);

  Timeline logged = t;
  logged.host = LogSamples(100, {450 * kMs}, 8192);
  a = Attribute(logged);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kLog});

  Timeline busy = Steady(8, {{400 * kMs, 520 * kMs}});
  GpuEvery10Ms(&busy, {0, 0});
  a = Attribute(busy);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_GT(*a.stalls[0].evidence.gpu_busy_share, 0.8);
  EXPECT_TRUE(a.stalls[0].causes.empty());

  Timeline cut = Steady(8, {{400 * kMs, 520 * kMs}});
  GpuEvery10Ms(&cut, {400 * kMs, 2000 * kMs});
  a = Attribute(cut);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_FALSE(a.stalls[0].evidence.gpu_busy_share.has_value());
  EXPECT_TRUE(a.stalls[0].causes.empty());
}

// No layer shows anything: the stall is reported unexplained.
TEST(AttributeTest, NothingOnTheTimelineIsUnexplained) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_TRUE(a.stalls[0].causes.empty());
  EXPECT_EQ(a.unexplained, 1);
  std::vector<rules::Finding> fs = rules::EvaluateAttributionRules(a, t);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].id, "attribution.unexplained");
}


// A major-fault burst in the pause (swap) and a preemption counter step around another (KV):
// each named, and neither where it did not happen.
TEST(AttributeTest, NamesSwapAndPreemptionFromTheirCounters) {
  Timeline t = Steady(8, {{300 * kMs, 420 * kMs}, {700 * kMs, 800 * kMs}});
  for (int64_t at = 0; at <= 1000 * kMs; at += 10 * kMs) {
    HostPoint p;
    p.t_ns = at;
    p.swap_in_pages = 0;
    p.major_faults = at > 310 * kMs ? 500 : 0;  // 500 faults between 310 and 320 ms
    p.psi_memory_some_us = 0;
    t.host.push_back(p);
  }
  for (int64_t at = 0; at <= 1000 * kMs; at += 100 * kMs)
    t.server.push_back({at, 8.0, 0.0, 0.5, at >= 800 * kMs ? 1.0 : 0.0});
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kSwap});
  EXPECT_EQ(a.stalls[0].evidence.major_faults, 500);
  EXPECT_EQ(a.stalls[1].causes, std::vector<Cause>{Cause::kPreemption});
}

// The client's saturated load thread is named only where the server shows nothing.
TEST(AttributeTest, SaturatedClientIsNamedOnlyWithoutAServerCause) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  t.client_saturated = true;
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kClient});
  t.host = LogSamples(100, {402 * kMs}, 8192);
  a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kLog});
}

// GPU kernels of a trace on the client clock: a 4 ms "gemm" at the start of every 10 ms step,
// except that the step starting at `slow_at` runs a gemm of `slow_ms`; medians as
// PlaceGpuTraces computes them (over the whole trace).
std::vector<GpuKernel> GemmSteps(int64_t slow_at, int64_t slow_ms) {  // name 0: "gemm"
  std::vector<GpuKernel> out;
  for (int64_t t = 0; t < 1000 * kMs; t += 10 * kMs) {
    if (t > slow_at && t < slow_at + slow_ms * kMs) continue;  // the slow kernel's step
    const int64_t dur = t == slow_at ? slow_ms * kMs : 4 * kMs;
    out.push_back({t, t + dur, 0});
  }
  return out;
}

// The slow_kernel rule: a kernel in the window >= 3x its name's median and >= 2 ms over it
// names the stall it overlaps, with the kernel and its duration as evidence; the pause with no
// such kernel stays unexplained.
TEST(AttributeTest, NamesTheSlowKernelOfAStall) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}, {700 * kMs, 800 * kMs}});
  t.gpu = GemmSteps(400 * kMs, 115);
  t.gpu_names = {{"gemm", 4 * kMs, int64_t(t.gpu.size())}};
  t.have_gpu = true;
  Attribution a = Attribute(t);
  EXPECT_TRUE(a.have_gpu);
  ASSERT_EQ(a.stalls.size(), 2u);
  EXPECT_EQ(a.stalls[0].causes, std::vector<Cause>{Cause::kSlowKernel});
  EXPECT_EQ(a.stalls[0].evidence.kernel_name, "gemm");
  EXPECT_EQ(a.stalls[0].evidence.kernel_dur_ns, 115 * kMs);
  EXPECT_EQ(a.stalls[0].evidence.kernel_median_ns, 4 * kMs);
  EXPECT_TRUE(a.stalls[1].causes.empty());
  EXPECT_EQ(a.unexplained, 1);
  auto fs = rules::EvaluateAttributionRules(a, t);
  bool found = false;
  for (const rules::Finding& f : fs)
    if (f.id == "attribution.slow_kernel") {
      found = true;
      std::string text = f.title;
      for (const auto& e : f.evidence) text += "\n" + e.text;
      EXPECT_NE(text.find("GPU kernel gemm ran 115.0 ms (its median 4.00 ms; 100% of the window's "
                          "kernel time over their medians)"), std::string::npos) << text;
    }
  EXPECT_TRUE(found);
}

// Below the factor, or a name seen too rarely for a median, is no slow kernel.
TEST(AttributeTest, SlowKernelNeedsFactorAndEnoughKernelsOfItsName) {
  const std::vector<std::pair<int64_t, int64_t>> pause = {{400 * kMs, 520 * kMs}};
  Timeline under = Steady(8, pause);
  under.gpu = GemmSteps(400 * kMs, 11);  // 2.75x the median
  under.gpu_names = {{"gemm", 4 * kMs, 90}};
  under.have_gpu = true;
  Attribution a = Attribute(under);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_TRUE(a.stalls[0].causes.empty());
  EXPECT_EQ(a.stalls[0].evidence.kernel_dur_ns, 11 * kMs);

  Timeline rare = Steady(8, pause);
  rare.gpu = GemmSteps(400 * kMs, 115);
  rare.gpu_names = {{"gemm", 4 * kMs, 4}};
  rare.have_gpu = true;
  a = Attribute(rare);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_TRUE(a.stalls[0].causes.empty());
}

// A bigger batch (a long prefill) makes every kernel of its step longer together: no one kernel
// holds 67% of the window's excess over the medians, so no slow_kernel.
TEST(AttributeTest, ALongStepWhoseKernelsAllGrewIsNoSlowKernel) {
  Timeline t = Steady(8, {{400 * kMs, 520 * kMs}});
  for (int64_t at = 0; at < 1000 * kMs; at += 10 * kMs) {
    if (at > 400 * kMs && at < 510 * kMs) continue;
    const bool big = at == 400 * kMs;
    t.gpu.push_back({at, at + (big ? 50 : 4) * kMs, 0});
    const int64_t n0 = at + (big ? 55 : 5) * kMs;
    t.gpu.push_back({n0, n0 + (big ? 45 : 1) * kMs, 1});
  }
  t.gpu_names = {{"gemm", 4 * kMs, 90}, {"norm", 1 * kMs, 90}};
  std::sort(t.gpu.begin(), t.gpu.end(), [](const GpuKernel& a, const GpuKernel& b) { return a.start_ns < b.start_ns; });
  t.have_gpu = true;
  Attribution a = Attribute(t);
  ASSERT_EQ(a.stalls.size(), 1u);
  EXPECT_TRUE(a.stalls[0].causes.empty());
  EXPECT_EQ(a.stalls[0].evidence.kernel_name, "gemm");
  EXPECT_NEAR(a.stalls[0].evidence.kernel_excess_share, 46.0 / 90.0, 1e-9);
}

// A vLLM line stamped with the client's local wall second lands at the middle of that second
// on the client's monotonic clock (+-0.5 s); an access line (no time) and a line outside the
// load are left out.
TEST(ReadLogEventsTest, MapsTheLogsLocalSecondsOntoTheClientsClock) {
  const LogClock clock{1'764'900'000'250'000'000, 5'000'000'000};  // wall .25 s into a second
  const time_t wall_s = static_cast<time_t>(clock.wall_ns / kNsPerSec);
  tm lt;
  localtime_r(&wall_s, &lt);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%m-%d %H:%M:%S", &lt);
  tm later = lt;
  later.tm_hour = (later.tm_hour + 2) % 24;  // hours away from the load
  char late_stamp[32];
  strftime(late_stamp, sizeof late_stamp, "%m-%d %H:%M:%S", &later);
  const std::string path = ::testing::TempDir() + "/attribution_log_" + std::to_string(::getpid());
  {
    std::ofstream f(path);
    f << "(APIServer pid=1) INFO " << stamp << " [loggers.py:123] Engine 000: Avg prompt throughput: "
         "1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
         "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n";
    f << "(APIServer pid=1) INFO:     127.0.0.1:5000 - \"POST /v1/completions HTTP/1.1\" 200 OK\n";
    f << "(APIServer pid=1) INFO " << late_stamp << " [loggers.py:123] Engine 000: Avg prompt "
         "throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, "
         "Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n";
  }
  Timeline t;
  t.start_ns = clock.mono_ns - kNsPerSec;
  t.end_ns = clock.mono_ns + kNsPerSec;
  ASSERT_TRUE(ReadLogEvents(path, clock, &t).ok());
  std::remove(path.c_str());
  ASSERT_EQ(t.log.size(), 1u);
  EXPECT_EQ(t.log[0].kind, LogKind::kStats);
  // The second began 0.25 s before clock.mono_ns; its middle is 0.25 s after.
  EXPECT_EQ(t.log[0].t_ns, clock.mono_ns + 250'000'000);
  EXPECT_EQ(t.log_uncertainty_ns, kNsPerSec / 2);
  Timeline missing;
  EXPECT_FALSE(ReadLogEvents(path + ".none", clock, &missing).ok());
}

}  // namespace
}  // namespace latdoc::attribution
