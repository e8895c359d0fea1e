#include "loadgen/results.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>

#include <fmt/core.h>

#include "loadgen/runner.h"

namespace latdoc::loadgen {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMs = 1'000'000;

// One histogram of `n` observations summing to `sum_s`, all in the last bucket.
servermetrics::HistogramData Hist(double n, double sum_s) {
  return servermetrics::HistogramData{{0.5, kInf}, {n, n}, sum_s, n};
}

// Open loop with --max-concurrency: two requests waited 30 ms in the client's own queue
// (scheduled -> sent) and got their first token 80 ms after they were due. The server says
// TTFT 50 ms (queue 10 + prefill 30 + 10 other). The 30 ms were the client's, not the network's:
// client TTFT 80 = client queue 30 + server TTFT 50 + network and front end 0.
TEST(SummarizeRunTest, ClientQueueIsNotCountedAsNetwork) {
  BenchRun run;
  run.model = "m";
  run.start_ns = 0;
  run.end_ns = 200 * kMs;
  for (int i = 0; i < 2; ++i) {
    RequestRecord r;
    r.index = static_cast<uint64_t>(i);
    r.outcome = Outcome::kOk;
    r.scheduled_ns = i * 10 * kMs;
    r.sent_ns = r.scheduled_ns + 30 * kMs;
    r.first_token_ns = r.scheduled_ns + 80 * kMs;
    r.last_token_ns = r.end_ns = r.scheduled_ns + 100 * kMs;
    r.output_tokens = 2;
    r.chunks = {{r.first_token_ns, 1}, {r.last_token_ns, 1}};
    run.records.push_back(r);
  }
  run.metrics_available = true;
  run.before.server = run.after.server = "vllm";
  run.before.ttft_s = Hist(0, 0);
  run.before.queue_s = Hist(0, 0);
  run.before.prefill_s = Hist(0, 0);
  run.after.ttft_s = Hist(2, 0.100);
  run.after.queue_s = Hist(2, 0.020);
  run.after.prefill_s = Hist(2, 0.060);
  BenchOptions options;
  options.request_rate = 10;
  options.max_concurrency = 1;
  const BenchSummary s = SummarizeRun(run, options, ResultOptions{});
  const auto& b = s.json["server_metrics"]["ttft_breakdown"];
  ASSERT_TRUE(b.is_object()) << s.json.dump(2);
  EXPECT_DOUBLE_EQ(b["client_ttft_ms"].get<double>(), 80);
  EXPECT_DOUBLE_EQ(b["client_queue_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(b["server_ttft_ms"].get<double>(), 50);
  EXPECT_NEAR(b["network_and_front_end_ms"].get<double>(), 0, 1e-9);
  EXPECT_NEAR(b["server_other_ms"].get<double>(), 10, 1e-9);
  EXPECT_NE(s.text.find("client 80.00 ms = client queue 30.00 ms + queue 10.00 ms + prefill 30.00 ms"),
            std::string::npos)
      << s.text;
}

// The server restarted between the first and the last scrape: its histograms start again from
// zero and cover only the time since. The client's TTFT covers the whole run, so no breakdown
// is made from the two (it would call the difference network time), and the run says why.
TEST(SummarizeRunTest, ServerRestartDuringTheRunIsShownAndTtftIsNotSplit) {
  BenchRun run;
  run.model = "m";
  run.start_ns = 0;
  run.end_ns = 200 * kMs;
  RequestRecord r;
  r.outcome = Outcome::kOk;
  r.scheduled_ns = r.sent_ns = 0;
  r.first_token_ns = 80 * kMs;
  r.last_token_ns = r.end_ns = 100 * kMs;
  r.output_tokens = 1;
  r.chunks = {{r.first_token_ns, 1}};
  run.records.push_back(r);
  run.metrics_available = true;
  run.before.server = run.after.server = "vllm";
  run.before.ttft_s = Hist(500, 40.0);  // before the restart
  run.after.ttft_s = Hist(1, 0.010);    // after it: one request, counted from zero
  const BenchSummary s = SummarizeRun(run, BenchOptions{}, ResultOptions{});
  const auto& srv = s.json["server_metrics"];
  EXPECT_EQ(srv["server_restarted"], true) << srv.dump(2);
  EXPECT_FALSE(srv.contains("ttft_breakdown")) << srv.dump(2);
  EXPECT_DOUBLE_EQ(srv["ttft_mean_ms"].get<double>(), 10);
  EXPECT_NE(s.text.find("Server restarted during the run"), std::string::npos) << s.text;

  run.before.ttft_s = Hist(0, 0);  // no restart: the same run is split
  const BenchSummary quiet = SummarizeRun(run, BenchOptions{}, ResultOptions{});
  EXPECT_EQ(quiet.json["server_metrics"]["server_restarted"], false);
  EXPECT_TRUE(quiet.json["server_metrics"].contains("ttft_breakdown"));
}

// A Ctrl-C cut two streams: one after three tokens, one before its first. Both count as
// cancelled (not completed, every request accounted for) and neither is a server failure; the
// one that got tokens keeps its TTFT and its inter-token latencies, not an E2EL or TPOT.
TEST(SummarizeRunTest, StreamsCutByTheStopKeepTheirTokenTimesAndAreNotServerFailures) {
  BenchRun run;
  run.model = "m";
  run.end_ns = 500 * kMs;
  run.partial = true;
  run.partial_reason = "interrupted by SIGINT";
  run.stop_signal = 2;
  RequestRecord ok;
  ok.outcome = Outcome::kOk;
  ok.scheduled_ns = ok.sent_ns = 0;
  ok.first_token_ns = 40 * kMs;
  ok.last_token_ns = ok.end_ns = 60 * kMs;
  ok.output_tokens = 2;
  ok.chunks = {{40 * kMs, 1}, {60 * kMs, 1}};
  RequestRecord cut;
  cut.outcome = Outcome::kCancelled;
  cut.error = "cancelled";
  cut.scheduled_ns = cut.sent_ns = 0;
  cut.first_token_ns = 30 * kMs;
  cut.last_token_ns = 50 * kMs;
  cut.end_ns = 400 * kMs;
  cut.chunks = {{30 * kMs, 1}, {40 * kMs, 1}, {50 * kMs, 1}};
  RequestRecord early = cut;
  early.first_token_ns = early.last_token_ns = -1;
  early.chunks.clear();
  RequestRecord reset;
  reset.outcome = Outcome::kReset;
  reset.error = "connection reset";
  reset.scheduled_ns = reset.sent_ns = 0;
  run.records = {ok, cut, early, reset};
  ResultOptions ro;
  ro.max_error_rate = 0.5;
  const BenchSummary s = SummarizeRun(run, BenchOptions{}, ro);
  EXPECT_EQ(s.json["completed"], 1);
  EXPECT_EQ(s.json["failed"], 3);
  EXPECT_EQ(s.json["cancelled"], 2);
  EXPECT_EQ(s.failures.requests, 2u);  // the two the server decided
  EXPECT_EQ(s.failures.failed, 1u);
  EXPECT_EQ(s.failures.Text(), "1 of 2 requests failed (1 reset)");
  EXPECT_EQ(s.failures.first_error, "reset: connection reset");
  EXPECT_DOUBLE_EQ(s.json["error_rate"].get<double>(), 0.5);
  EXPECT_FALSE(s.error_rate_missed);  // 50% is not above 50%
  EXPECT_DOUBLE_EQ(s.json["mean_ttft_ms"].get<double>(), 35);    // 40 and 30
  EXPECT_DOUBLE_EQ(s.json["mean_itl_ms"].get<double>(), 40.0 / 3);  // 20, 10, 10
  EXPECT_DOUBLE_EQ(s.json["mean_e2el_ms"].get<double>(), 60);    // the completed one only
  EXPECT_NE(s.text.find("PARTIAL: interrupted by SIGINT; 2 streams cut by the stop"), std::string::npos)
      << s.text;
}

TEST(FailureTallyTest, CountsByReasonCommonestFirstWithoutTheCancelled) {
  FailureTally t = TallyFailures({{"cut_short", 2}, {"reset", 10}, {"cancelled", 3}, {"http_status", 2}}, 403);
  EXPECT_EQ(t.requests, 400u);
  EXPECT_EQ(t.failed, 14u);
  EXPECT_EQ(t.cancelled, 3u);
  EXPECT_EQ(t.Text(), "14 of 400 requests failed (10 reset, 2 cut short, 2 HTTP error)");
  EXPECT_EQ(t.Text("canary requests"), "14 of 400 canary requests failed (10 reset, 2 cut short, 2 HTTP error)");
  FailureTally u = TallyFailures({{"connect", 1}}, 4);
  u.first_error = "connect: refused";
  t.Add(u);
  EXPECT_EQ(t.Text(), "15 of 404 requests failed (10 reset, 2 cut short, 2 HTTP error, 1 connect)");
  EXPECT_EQ(t.first_error, "connect: refused");
}

TEST(VerdictTextTest, SaysTheBoundTheMeasuredValueAndTheThreshold) {
  SloSpec slo;
  slo.ttft_ms = 100;
  slo.tpot_ms = 50;
  EXPECT_EQ(SloMissText(slo, 93.0), "SLO missed: 93.0% of requests met ttft<=100 ms, tpot<=50 ms (needed 99%)");
  slo.percent = 100;
  EXPECT_EQ(SloMissText(slo, 99.96), "SLO missed: 99.96% of requests met ttft<=100 ms, tpot<=50 ms (needed 100%)");
  EXPECT_EQ(ErrorRateMissText(0.46, 0.1), "error rate 46.0% > --max-error-rate 10%");
  EXPECT_EQ(ErrorRateMissText(0.004, 0), "error rate 0.4% > --max-error-rate 0%");
  EXPECT_EQ(ErrorRateMissText(0.10004, 0.1), "error rate 10.004% > --max-error-rate 10%");
}

// The terminal summary names the model and the server (URL without credentials, the metric
// names its /metrics answered in); counts print whole ("Preemptions: 0", "Max waiting requests:
// 1414"), and a part that is zero up to float noise (server TTFT - queue - prefill = -1.4e-17
// ms) prints "0.00", never "-0.00".
TEST(SummarizeRunTest, NamesModelAndServerAndPrintsCountsWhole) {
  BenchRun run;
  run.model = "latdoc-sim/llama-3-8b";
  run.start_ns = 0;
  run.end_ns = 200 * kMs;
  RequestRecord r;
  r.outcome = Outcome::kOk;
  r.scheduled_ns = r.sent_ns = 0;
  r.first_token_ns = 100 * kMs;
  r.last_token_ns = r.end_ns = 120 * kMs;
  r.output_tokens = 1;
  r.chunks = {{r.first_token_ns, 1}};
  run.records.push_back(r);
  RequestRecord c;  // a request cut by Ctrl-C: its error is its outcome's name
  c.outcome = Outcome::kCancelled;
  c.error = "cancelled";
  c.scheduled_ns = c.sent_ns = 0;
  run.records.push_back(c);
  run.metrics_available = true;
  run.before.server = run.after.server = "vllm";
  run.before.preemptions_total = run.after.preemptions_total = 7;
  run.before.ttft_s = Hist(0, 0);
  run.before.queue_s = Hist(0, 0);
  run.before.prefill_s = Hist(0, 0);
  run.after.ttft_s = Hist(1, 0.1);
  run.after.queue_s = Hist(1, 0.04);
  run.after.prefill_s = Hist(1, 0.06);
  run.timeline.push_back({10 * kMs, 40.0, 1414.0, 0.5, 7.0});
  BenchOptions options;
  options.url = "http://127.0.0.1:8000";
  const BenchSummary s = SummarizeRun(run, options, ResultOptions{});
  auto has = [&](const std::string& want) {
    EXPECT_NE(s.text.find(want), std::string::npos) << "want: " << want << "\n" << s.text;
  };
  has("Model: latdoc-sim/llama-3-8b\nServer: http://127.0.0.1:8000 (its /metrics in vLLM's names)\n");
  has(fmt::format("{:<40}{:>12}\n", "Preemptions:", "0"));
  has(fmt::format("{:<40}{:>12}\n", "Max waiting requests:", "1414"));
  has("other server 0.00 ms");
  EXPECT_EQ(s.text.find("-0.00"), std::string::npos) << s.text;
  EXPECT_EQ(s.json["errors_sample"], nlohmann::ordered_json({"cancelled"}));
}


// Records of `n` requests with varied outcomes, latencies and token counts (a fixed seed).
std::vector<RequestRecord> VariedRecords(int n) {
  std::mt19937_64 rng(7);
  std::vector<RequestRecord> out;
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.index = uint64_t(i);
    r.scheduled_ns = int64_t(i) * 3 * kMs + int64_t(rng() % 1000);
    r.sent_ns = r.scheduled_ns + int64_t(rng() % (2 * kMs));
    r.prompt_tokens = 10 + int(rng() % 50);
    r.requested_output_tokens = 8;
    if (rng() % 10 == 0) {
      r.outcome = rng() % 2 ? Outcome::kReset : Outcome::kHttpStatus;
      r.error = "failed";
      r.end_ns = r.sent_ns + 5 * kMs;
      out.push_back(r);
      continue;
    }
    r.outcome = Outcome::kOk;
    int64_t t = r.sent_ns + 20 * kMs + int64_t(rng() % (40 * kMs));
    r.first_token_ns = t;
    for (int k = 0; k < 8; ++k) {
      r.chunks.emplace_back(t, 1);
      t += 1 * kMs + int64_t(rng() % (9 * kMs));
    }
    r.last_token_ns = r.chunks.back().first;
    r.end_ns = r.last_token_ns + 100'000;
    r.output_tokens = 8;
    r.method = TokenMethod::kUsagePerChunk;
    out.push_back(r);
  }
  return out;
}

// The contract of --threads: the threads' records, merged, give exactly the summary that one
// thread with the same records gives (percentiles, counts, failures, per-request samples).
TEST(MergeThreadRunsTest, MergedThreadsSummarizeAsOneThread) {
  const std::vector<RequestRecord> records = VariedRecords(997);
  BenchRun one;
  one.model = "m";
  one.start_ns = 0;
  one.end_ns = 4 * 1000 * kMs;
  one.records = records;
  for (int threads : {2, 3, 8}) {
    std::vector<BenchRun> parts(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) {
      parts[size_t(i)].start_ns = one.start_ns;
      parts[size_t(i)].end_ns = one.end_ns - i;  // the last thread to finish ends the run
    }
    // Dealt round robin, each thread's records in its own order (as a worker keeps them).
    for (const RequestRecord& r : records) parts[r.index % uint64_t(threads)].records.push_back(r);
    BenchRun merged = MergeThreadRuns(std::move(parts));
    merged.model = "m";
    ASSERT_EQ(merged.records.size(), records.size());
    EXPECT_EQ(merged.end_ns, one.end_ns);
    EXPECT_EQ(merged.thread_load.size(), 0u);
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(merged.records[i].index, i);
      EXPECT_EQ(merged.records[i].scheduled_ns, records[i].scheduled_ns) << i;
    }
    BenchOptions o;
    o.concurrency = 16;
    ResultOptions ro;
    ro.slo.ttft_ms = 45;
    auto a = SummarizeRun(one, o, ro).json;
    auto b = SummarizeRun(merged, o, ro).json;
    a.erase("date");  // the wall clock, to the second
    b.erase("date");
    EXPECT_EQ(a.dump(), b.dump()) << "threads=" << threads;
  }
}

// Counts and the client's load add up over the threads; the first start and last end bound
// the run.
TEST(MergeThreadRunsTest, CountsAndLoadsAddUp) {
  std::vector<BenchRun> parts(2);
  parts[0].start_ns = 100;
  parts[0].end_ns = 900;
  parts[0].warmup_requests = 3;
  parts[0].max_in_flight = 4;
  parts[0].connections_opened = 4;
  parts[0].thread_load = {ThreadLoad{1.0, 2.0, 1000, 900, 9}};
  parts[1].start_ns = 100;
  parts[1].end_ns = 1000;
  parts[1].warmup_requests = 2;
  parts[1].max_in_flight = 3;
  parts[1].connections_opened = 3;
  parts[1].thread_load = {ThreadLoad{1.9, 2.0, 3000, 2500, 500}};
  BenchRun m = MergeThreadRuns(std::move(parts));
  EXPECT_EQ(m.start_ns, 100);
  EXPECT_EQ(m.end_ns, 1000);
  EXPECT_EQ(m.warmup_requests, 5u);
  EXPECT_EQ(m.max_in_flight, 7);
  EXPECT_EQ(m.connections_opened, 7u);
  ASSERT_EQ(m.thread_load.size(), 2u);
  const ClientLoadSummary s = SummarizeClientLoad(m.thread_load);
  EXPECT_DOUBLE_EQ(s.cpu_s, 2.9);
  EXPECT_EQ(s.events, 4000u);
  EXPECT_EQ(s.late_reads, 509u);
  EXPECT_EQ(s.saturated, 1);  // 1.9 CPU-s in 2 s: 95% busy
  EXPECT_EQ(ClientLoadText(m.thread_load),
            "Client: 2 threads, 2.90 CPU-s, 1379 events per CPU-s, 15.0% of reads late (>1 ms)\n"
            "warning: client thread 2 of 2 saturated (95% busy, 20.0% of its reads late): its "
            "timings are suspect; give --threads more cores or lower the load\n");
}

// Round-robin dealing: every item goes to exactly one thread, shares differ by at most one,
// and the first threads get the remainder.
TEST(DealtCountTest, DealsEveryItemOnce) {
  for (uint64_t total : {0u, 1u, 7u, 8u, 1023u, 1024u}) {
    for (int threads : {1, 2, 3, 8}) {
      uint64_t sum = 0;
      for (int i = 0; i < threads; ++i) {
        uint64_t expect = 0;
        for (uint64_t k = 0; k < total; ++k) expect += k % uint64_t(threads) == uint64_t(i);
        EXPECT_EQ(DealtCount(total, threads, i), expect) << total << "/" << threads << "#" << i;
        sum += DealtCount(total, threads, i);
      }
      EXPECT_EQ(sum, total);
    }
  }
}

TEST(DefaultThreadsTest, OneCoreLessForALocalServer) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cores = CPU_COUNT(&set);
  EXPECT_EQ(DefaultThreads("127.0.0.1"), std::max(1, cores - 1));
  EXPECT_EQ(DefaultThreads("localhost"), std::max(1, cores - 1));
  EXPECT_EQ(DefaultThreads("[::1]"), std::max(1, cores - 1));
  EXPECT_EQ(DefaultThreads("192.0.2.10"), cores);  // TEST-NET-1: never this host's
  EXPECT_EQ(DefaultThreads("inference.example"), cores);
}

}  // namespace
}  // namespace latdoc::loadgen
