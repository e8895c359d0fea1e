#include "exporter/exporter.h"

#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/clock.h"
#include "http/testing/blocking_client.h"
#include "servermetrics/prometheus_parser.h"

namespace latdoc::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* kGolden = "tests/data/exporter/metrics.golden.prom";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

rules::Finding MakeFinding(std::string id, rules::Layer layer, rules::Severity sev) {
  rules::Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = sev;
  f.title = "t";
  return f;
}

// Every field of the page set by hand. LATDOC_UPDATE_GOLDEN=1 rewrites the golden file.
TEST(RenderMetricsTest, MatchesGolden) {
  ExporterState s;
  s.version = "0.1.0";
  s.target = "http://127.0.0.1:8000";
  s.interval_s = 15;
  s.canary_max_rate_per_s = 1.0 / 15;
  s.findings = {MakeFinding("gpu.throttle", rules::Layer::kSystem, rules::Severity::kFail),
                MakeFinding("gpu.throttle", rules::Layer::kSystem, rules::Severity::kFail),
                MakeFinding("gpu.throttle", rules::Layer::kSystem, rules::Severity::kOk),
                MakeFinding("load.failures", rules::Layer::kLoad, rules::Severity::kOk),
                MakeFinding("net.time_wait", rules::Layer::kSystem, rules::Severity::kWarn)};
  s.canary_outcomes = {{"ok", 3}, {"connect", 1}};
  s.canary_last_ok = true;
  for (double v : {0.02, 0.3, 0.3}) s.canary_ttft_s.Record(v);
  for (double v : {0.005, 0.012, 2.0}) s.canary_itl_s.Record(v);
  s.server_up = true;
  s.server_restarts = 1;
  s.server_running = 3;
  s.server_waiting = 0;
  s.server_kv_usage = 0.125;
  s.ttft.client_s = 0.3;
  s.ttft.server_s = 0.25;
  s.ttft.queue_s = 0.05;
  s.ttft.prefill_s = 0.125;
  s.ttft.server_other_s = 0.075;
  s.ttft.network_front_end_s = 0.05;
  s.net_tcp_segments_sent = 412;
  s.net_tcp_retransmitted_segments = 3;
  s.net_tcp_srtt_s = 0.00125;
  s.net_path_mtu_bytes = 1400;
  s.net_interface_mtu_bytes = 1500;
  s.collectors["canary"] = {4, 0, 0, 0, 0.31, true, 0};
  s.collectors["host"] = {1, 0, 1, 2, 10, false, 60'000'000'000};
  s.cycles = 4;
  s.skipped_ticks = 1;
  s.last_cycle_duration_s = 0.5;
  s.last_cycle_unix_s = 1.7e9;
  s.cpu_s = 0.75;
  s.rss_bytes = 12345678;
  const std::string page = RenderMetrics(s);
  if (std::getenv("LATDOC_UPDATE_GOLDEN")) {
    std::ofstream(kGolden) << page;
  }
  EXPECT_EQ(page, ReadFile(kGolden));
  auto parsed = servermetrics::ParsePrometheusText(page);
  EXPECT_EQ(parsed.bad_line_count, 0u);
}

// An empty state (before the first cycle): the exporter's own series, and no invented values.
TEST(RenderMetricsTest, NothingMeasuredRendersNoValueSeries) {
  ExporterState s;
  const std::string page = RenderMetrics(s);
  EXPECT_THAT(page, HasSubstr("latdoc_exporter_cycles_total 0\n"));
  EXPECT_THAT(page, Not(HasSubstr("\nlatdoc_server_up ")));
  EXPECT_THAT(page, Not(HasSubstr("latdoc_ttft_decomposition_seconds{")));
  EXPECT_THAT(page, Not(HasSubstr("latdoc_finding{")));
  EXPECT_THAT(page, HasSubstr("latdoc_canary_ttft_seconds_count 0\n"));
  EXPECT_THAT(page, Not(HasSubstr("\nlatdoc_net_path_mtu_bytes ")));
  EXPECT_THAT(page, Not(HasSubstr("\nlatdoc_net_tcp_srtt_seconds ")));
}

ExporterOptions TestOptions(int64_t timeout_ns) {
  ExporterOptions o;
  o.listen_port = 0;
  o.interval_ns = kNsPerSec;
  o.collector_timeout_ns = timeout_ns;
  o.version = "test";
  return o;
}

CollectorSpec Returns(std::string name, int64_t period_ns, std::string rule,
                      rules::Severity sev) {
  return {name, period_ns, [rule, sev]() -> StatusOr<Observation> {
            Observation o;
            o.findings.push_back(MakeFinding(rule, rules::Layer::kSystem, sev));
            return o;
          }};
}

// A collector that hangs costs one timeout per cycle at most, is reported, and does not stop
// the others; while it still hangs, later cycles skip it (counted) instead of piling up threads.
TEST(ExporterTest, HungCollectorTimesOutAndIsReported) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<CollectorSpec> specs;
  specs.push_back({"stuck", 0, [released]() -> StatusOr<Observation> {
                     released.wait();
                     return Observation{};
                   }});
  specs.push_back(Returns("other", 0, "fake.rule", rules::Severity::kFail));
  Exporter e(TestOptions(300 * kNsPerMs), std::move(specs));
  const int64_t t0 = MonoNowNs();
  e.RunCycle(0);
  EXPECT_LT(MonoNowNs() - t0, 3 * kNsPerSec);
  std::string page = *e.page();
  EXPECT_THAT(page, HasSubstr("latdoc_collector_timeouts_total{collector=\"stuck\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_up{collector=\"stuck\"} 0\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_up{collector=\"other\"} 1\n"));
  EXPECT_THAT(page, HasSubstr(
      "latdoc_finding{rule=\"fake.rule\",layer=\"system\",severity=\"fail\"} 1\n"));
  e.RunCycle(kNsPerSec);
  page = *e.page();
  EXPECT_THAT(page, HasSubstr("latdoc_collector_skipped_total{collector=\"stuck\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_timeouts_total{collector=\"stuck\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_exporter_cycles_total 2\n"));
  release.set_value();
}

// A canary that outlives its deadline is a failed request for the load rules too: the last
// good run's findings do not stay published (canary_up 0, one timeout, load.failures fails).
TEST(ExporterTest, CanaryTimeoutReplacesTheLastRunsFindings) {
  auto hang = std::make_shared<std::atomic<bool>>(false);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<CollectorSpec> specs;
  specs.push_back({"canary", 0, [hang, released]() -> StatusOr<Observation> {
                     if (hang->load()) released.wait();
                     Observation o;
                     loadgen::BenchRun run;
                     run.model = "m";
                     run.start_ns = MonoNowNs();
                     loadgen::RequestRecord r;
                     r.outcome = loadgen::Outcome::kOk;
                     r.scheduled_ns = r.sent_ns = run.start_ns;
                     r.first_token_ns = r.sent_ns + 20 * kNsPerMs;
                     r.last_token_ns = r.end_ns = r.sent_ns + 40 * kNsPerMs;
                     r.output_tokens = r.requested_output_tokens = 2;
                     r.chunks = {{r.first_token_ns, 1}, {r.last_token_ns, 1}};
                     run.records.push_back(r);
                     run.end_ns = r.end_ns;
                     o.canary = std::move(run);
                     return o;
                   }});
  Exporter e(TestOptions(300 * kNsPerMs), std::move(specs));
  e.RunCycle(0);
  std::string page = *e.page();
  EXPECT_THAT(page, HasSubstr("latdoc_canary_up 1\n"));
  EXPECT_THAT(page, Not(HasSubstr("rule=\"load.failures\",layer=\"load\",severity=\"fail\"")));
  hang->store(true);
  e.RunCycle(kNsPerSec);
  page = *e.page();
  EXPECT_THAT(page, HasSubstr("latdoc_canary_up 0\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_canary_requests_total{outcome=\"timeout\"} 1\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_finding{rule=\"load.failures\",layer=\"load\",severity=\"fail\"} 1\n"));
  release.set_value();
}

// A scrape that arrives while a cycle is slow is answered at once from the last complete
// cycle; the new page appears only when the cycle completes.
TEST(ExporterTest, ScrapeDuringSlowCycleGetsTheLastCompletePage) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<CollectorSpec> specs;
  specs.push_back({"slow", 0, [calls, released]() -> StatusOr<Observation> {
                     Observation o;
                     if (++*calls == 1) {
                       o.findings.push_back(MakeFinding("first.rule", rules::Layer::kSystem,
                                                        rules::Severity::kOk));
                     } else {
                       released.wait();
                       o.findings.push_back(MakeFinding("second.rule", rules::Layer::kSystem,
                                                        rules::Severity::kWarn));
                     }
                     return o;
                   }});
  Exporter e(TestOptions(30 * kNsPerSec), std::move(specs));
  ASSERT_TRUE(e.Start().ok());
  e.RunCycle(0);
  std::thread cycle([&] { e.RunCycle(kNsPerSec); });
  while (calls->load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int64_t t0 = MonoNowNs();
  http::testing::BlockingResponse r = http::testing::Fetch(e.port(), "GET", "/metrics");
  const int64_t took = MonoNowNs() - t0;
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.head, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_LT(took, kNsPerSec);
  EXPECT_THAT(r.body, HasSubstr("latdoc_finding{rule=\"first.rule\""));
  EXPECT_THAT(r.body, Not(HasSubstr("second.rule")));
  EXPECT_THAT(r.body, HasSubstr("latdoc_exporter_cycles_total 1\n"));
  release.set_value();
  cycle.join();
  r = http::testing::Fetch(e.port(), "GET", "/metrics");
  EXPECT_THAT(r.body, HasSubstr(
      "latdoc_finding{rule=\"second.rule\",layer=\"system\",severity=\"warn\"} 1"));
  EXPECT_THAT(r.body, Not(HasSubstr("first.rule")));
  EXPECT_THAT(r.body, HasSubstr("latdoc_exporter_cycles_total 2\n"));
  EXPECT_EQ(http::testing::Fetch(e.port(), "GET", "/nope").status, 404);
}

// Six cycles 1 s apart with the expensive collector's period at 3 s: cheap 6 runs, expensive 2.
TEST(ExporterTest, CheapEveryCycleExpensiveOncePerPeriod) {
  std::vector<CollectorSpec> specs;
  specs.push_back(Returns("cheap", 0, "c.rule", rules::Severity::kOk));
  specs.push_back(Returns("pricey", 3 * kNsPerSec, "p.rule", rules::Severity::kOk));
  Exporter e(TestOptions(kNsPerSec), std::move(specs));
  for (int i = 0; i < 6; ++i) e.RunCycle(i * kNsPerSec);
  EXPECT_EQ(e.state().collectors.at("cheap").runs, 6u);
  EXPECT_EQ(e.state().collectors.at("pricey").runs, 2u);
  const std::string page = *e.page();
  EXPECT_THAT(page, HasSubstr("latdoc_collector_period_seconds{collector=\"pricey\"} 3\n"));
  EXPECT_THAT(page, HasSubstr("latdoc_collector_period_seconds{collector=\"cheap\"} 1\n"));
  // The expensive collector's findings stay served between its runs.
  EXPECT_THAT(page, HasSubstr("latdoc_finding{rule=\"p.rule\""));
}

// The server's counters went down between two scrapes (a restart): counted once, and the
// scrapes either side of it are not. A restart usually makes a scrape fail (the model loads):
// it is still seen, against the last scrape that worked.
TEST(ExporterTest, ServerRestartBetweenScrapesIsCounted) {
  auto scrapes = std::make_shared<std::atomic<int>>(0);
  std::vector<CollectorSpec> specs;
  specs.push_back({"server_metrics", 0, [scrapes]() -> StatusOr<Observation> {
                     const double tokens[] = {1000, 1500, -1, 30, 60, 5, 9};  // -1: down
                     const double t = tokens[std::min(6, (*scrapes)++)];
                     if (t < 0) return Unavailable("connection refused");
                     Observation o;
                     o.snapshot.emplace();
                     o.snapshot->server = "vllm";
                     o.snapshot->prompt_tokens_total = t;
                     return o;
                   }});
  ExporterOptions o = TestOptions(kNsPerSec);
  o.target = "http://127.0.0.1:1";
  Exporter e(o, std::move(specs));
  for (int i = 0; i < 5; ++i) e.RunCycle(i * kNsPerSec);
  EXPECT_EQ(e.state().server_restarts, 1u);  // 1500 -> (down) -> 30
  for (int i = 5; i < 7; ++i) e.RunCycle(i * kNsPerSec);
  EXPECT_EQ(e.state().server_restarts, 2u);  // 60 -> 5, between two good scrapes
  EXPECT_THAT(*e.page(), HasSubstr("\nlatdoc_server_restarts_total 2\n"));
}

}  // namespace
}  // namespace latdoc::exporter
