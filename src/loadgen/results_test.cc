#include "loadgen/results.h"

#include <gtest/gtest.h>

#include <limits>
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

}  // namespace
}  // namespace latdoc::loadgen
