#include "loadgen/load_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include "loadgen/results.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen {
namespace {

using nlohmann::ordered_json;
using ::testing::ElementsAre;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMs = 1'000'000;

servermetrics::HistogramData Hist(double n, double sum_s) {
  return servermetrics::HistogramData{{0.5, kInf}, {n, n}, sum_s, n};
}

// A run with every part of the bench JSON: an open loop (client queue), a failure, TCP counters,
// two load threads, a /metrics timeline and the server's TTFT split, judged on an SLO.
BenchRun FullRun() {
  BenchRun run;
  run.model = "m";
  run.start_ns = 0;
  run.end_ns = 400 * kMs;
  for (int i = 0; i < 6; ++i) {
    RequestRecord r;
    r.index = static_cast<uint64_t>(i);
    r.outcome = i == 5 ? Outcome::kReset : Outcome::kOk;
    if (i == 5) r.error = "Connection reset by peer";
    r.scheduled_ns = i * 20 * kMs;
    r.sent_ns = r.scheduled_ns + (i % 2) * kMs;
    r.first_token_ns = r.scheduled_ns + (40 + 7 * i) * kMs;
    r.last_token_ns = r.end_ns = r.first_token_ns + (30 + i) * kMs;
    r.prompt_tokens = 100;
    r.output_tokens = 4;
    r.chunks = {{r.first_token_ns, 1}, {r.first_token_ns + 9 * kMs, 2}, {r.last_token_ns, 1}};
    run.records.push_back(r);
  }
  run.metrics_available = true;
  run.before.server = run.after.server = "vllm";
  run.before.ttft_s = Hist(0, 0);
  run.before.queue_s = Hist(0, 0);
  run.before.prefill_s = Hist(0, 0);
  run.after.ttft_s = Hist(5, 0.150);
  run.after.queue_s = Hist(5, 0.040);
  run.after.prefill_s = Hist(5, 0.090);
  run.timeline = {{10 * kMs, 2, 0, 0.25, 0}, {20 * kMs, 3, std::nullopt, 0.5, 0}};
  run.tcp.connections = 2;
  run.tcp.segs_out = 40;
  run.tcp.retrans_segs = 1;
  run.tcp.retrans_share = 0.025;
  run.tcp.srtt_max_ms = 0.2;
  run.thread_load = {{0.05, 0.4, 30, 12, 0}, {0.38, 0.4, 25, 10, 3}};
  run.connections_opened = 2;
  run.max_in_flight = 3;
  run.client_cpu_s = 0.43;
  return run;
}

BenchSummary Summarize(const BenchRun& run) {
  BenchOptions o;
  o.request_rate = 20;
  o.max_concurrency = 4;
  ResultOptions ro;
  ro.slo.ttft_ms = 60;
  ro.max_error_rate = 0.5;
  return SummarizeRun(run, o, ro);
}

// What SummarizeRun writes reads back to the same facts, and writes out byte for byte the same.
TEST(LoadFactsTest, RoundTripOfARunIsExact) {
  const BenchSummary s = Summarize(FullRun());
  auto f = LoadFactsFromJson(s.json);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(ToJson(*f).dump(2), s.json.dump(2));
  auto again = LoadFactsFromJson(ToJson(*f));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again == *f);
  // The typed view holds the figures the JSON holds.
  ASSERT_TRUE(f->ttft.has_value());
  EXPECT_EQ(f->ttft->p99_ms(), s.json["p99_ttft_ms"].get<double>());
  EXPECT_EQ(f->ttft->At(99.9), s.json["p99.9_ttft_ms"].get<double>());
  EXPECT_EQ(f->completed, 5u);
  EXPECT_EQ(f->failed, 1u);
  EXPECT_EQ(f->failures.at("reset"), 1u);
  ASSERT_TRUE(f->server.ttft_breakdown.has_value());
  EXPECT_DOUBLE_EQ(*f->server.ttft_breakdown->queue_ms, 8);
  ASSERT_TRUE(f->client_queue.has_value());
  ASSERT_TRUE(f->tcp.has_value());
  EXPECT_EQ(f->tcp->retrans_segs, 1u);
  ASSERT_TRUE(f->client_load.has_value());
  EXPECT_EQ(f->client_load->per_thread.size(), 2u);
  ASSERT_TRUE(f->slo.has_value());
  ASSERT_TRUE(f->server.timeline.has_value());
  EXPECT_EQ(f->server.timeline->size(), 2u);
  EXPECT_EQ((*f->server.timeline)[1].waiting, std::nullopt);
}

// A run with a server that gives no /metrics, closed loop, no SLO: keys that are absent stay
// absent.
TEST(LoadFactsTest, RoundTripWithoutMetricsKeepsKeysOut) {
  BenchRun run = FullRun();
  run.metrics_available = false;
  run.metrics_error = "connection refused";
  run.tcp = {};
  BenchOptions o;
  o.concurrency = 2;
  o.summary_metrics = {"ttft", "e2el"};
  o.summary_percentiles = {50, 99.9};
  const BenchSummary s = SummarizeRun(run, o, ResultOptions{});
  auto f = LoadFactsFromJson(s.json);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(ToJson(*f).dump(2), s.json.dump(2));
  EXPECT_FALSE(f->tpot.has_value());
  EXPECT_FALSE(f->itl.has_value());
  ASSERT_TRUE(f->ttft.has_value());
  EXPECT_EQ(f->ttft->percentiles.size(), 2u);
  EXPECT_EQ(f->ttft->p99_ms(), std::nullopt);
  EXPECT_FALSE(f->server.metrics_available);
  EXPECT_EQ(f->server.error, "connection refused");
  EXPECT_FALSE(f->slo.has_value());
  EXPECT_FALSE(f->request_goodput.has_value());
  EXPECT_FALSE(f->client_queue.has_value());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A saved diagnosis (written by an older latdoc: no "cancelled", no client queue) reads back;
// what it lacks is not measured, and the facts round-trip.
TEST(LoadFactsTest, SavedFileReadsAndRoundTrips) {
  const ordered_json doc =
      ordered_json::parse(ReadFile("tests/data/report/diagnosis_example.json"));
  auto f = LoadFactsFromJson(doc["bench"]);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->completed, 300u);
  EXPECT_EQ(f->max_concurrency, 48);
  EXPECT_EQ(f->request_rate, kInf);
  EXPECT_EQ(f->request_goodput, std::nullopt);
  EXPECT_EQ(f->cancelled, std::nullopt);
  ASSERT_TRUE(f->itl.has_value());
  EXPECT_DOUBLE_EQ(*f->itl->p99_ms(), 259.1123756);
  ASSERT_TRUE(f->server.ttft_breakdown.has_value());
  EXPECT_DOUBLE_EQ(*f->server.ttft_breakdown->network_and_front_end_ms, 27.621665166666958);
  EXPECT_EQ(f->server.ttft_breakdown->client_queue_ms, std::nullopt);
  EXPECT_EQ(f->server.preemptions, 0.0);
  auto again = LoadFactsFromJson(ToJson(*f));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(*again == *f);
  // Every key the file has, ToJson writes with the same value.
  const ordered_json out = ToJson(*f);
  for (const auto& [k, v] : doc["bench"].items()) {
    ASSERT_TRUE(out.contains(k)) << k;
    EXPECT_EQ(out[k], v) << k;
  }
}

// A key of the wrong type is an error that names it; a missing or null key is not measured.
TEST(LoadFactsTest, MistypedKeyIsAnErrorNamingIt) {
  const ordered_json good = Summarize(FullRun()).json;
  struct Case {
    const char* what;
    std::function<void(ordered_json&)> edit;
    std::string message;
  };
  const Case cases[] = {
      {"p99", [](ordered_json& j) { j["p99_ttft_ms"] = "slow"; }, "p99_ttft_ms: expected a number"},
      {"completed", [](ordered_json& j) { j["completed"] = -1; },
       "completed: expected a count (an integer >= 0)"},
      {"server", [](ordered_json& j) { j["server_metrics"]["queue_mean_ms"] = true; },
       "server_metrics.queue_mean_ms: expected a number"},
      {"split", [](ordered_json& j) { j["server_metrics"]["ttft_breakdown"]["note"] = 1; },
       "server_metrics.ttft_breakdown.note: expected a string"},
      {"timeline", [](ordered_json& j) { j["server_metrics"]["timeline"][1]["running"] = "x"; },
       "server_metrics.timeline[1].running: expected a number"},
      {"failures", [](ordered_json& j) { j["failures"]["reset"] = "one"; },
       "failures.reset: expected a count (an integer >= 0)"},
      {"rate", [](ordered_json& j) { j["request_rate"] = "fast"; },
       "request_rate: expected a number or \"inf\""},
      {"server object", [](ordered_json& j) { j["server_metrics"] = 3; },
       "server_metrics: expected an object"},
      {"thread", [](ordered_json& j) { j["client_load"]["per_thread"][0]["saturated"] = 0; },
       "client_load.per_thread[0].saturated: expected true or false"},
  };
  for (const Case& c : cases) {
    ordered_json j = good;
    c.edit(j);
    auto f = LoadFactsFromJson(j);
    ASSERT_FALSE(f.ok()) << c.what;
    EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(f.status().message(), c.message) << c.what;
  }
  ordered_json j = good;
  j["p99_ttft_ms"] = nullptr;
  j.erase("server_metrics");
  auto f = LoadFactsFromJson(j);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->ttft->p99_ms(), std::nullopt);
  EXPECT_FALSE(f->server.metrics_available);
}

TEST(LoadFactsTest, KeysAreVllmNames) {
  EXPECT_EQ(StatKey("p99.9", "itl"), "p99.9_itl_ms");
  EXPECT_STREQ(keys::kP99TtftMs, "p99_ttft_ms");
  EXPECT_EQ(StatKey("p99", "ttft"), keys::kP99TtftMs);
  LatencyStats s;
  s.percentiles = {{90, 1.0}, {99, 2.0}};
  std::vector<std::string> names;
  const ordered_json j = ToJson(s, "e2el");
  for (const auto& [k, v] : j.items()) names.push_back(k);
  EXPECT_THAT(names, ElementsAre("mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p90_e2el_ms",
                                 "p99_e2el_ms", "max_e2el_ms"));
}

}  // namespace
}  // namespace latdoc::loadgen
