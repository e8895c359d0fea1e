#include "fleet/fleet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fleet/fleet_report.h"

namespace latdoc::fleet {
namespace {

using ::testing::HasSubstr;

TEST(FleetTest, SelectorMatchers) {
  EXPECT_EQ(*SelectorMatchers("--selector", ""), "");
  EXPECT_EQ(*SelectorMatchers("--selector", "{}"), "");
  EXPECT_EQ(*SelectorMatchers("--selector", "{ }"), "");
  EXPECT_EQ(*SelectorMatchers("--selector", " {job=\"vllm\",pod=~\"a.*\"} "),
            "job=\"vllm\",pod=~\"a.*\"");
  EXPECT_EQ(*SelectorMatchers("--selector", "{job=\"a}b\"}"), "job=\"a}b\"");
  auto bad = SelectorMatchers("--selector", "job=\"vllm\"");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "--selector 'job=\"vllm\"': must start with '{' and end with '}' (a PromQL label "
            "selector in braces, e.g. '{job=\"vllm\"}')");
  EXPECT_THAT(SelectorMatchers("--selector", "{job=\"vllm}").status().message(),
              HasSubstr("a quoted value is not closed"));
}

TEST(FleetTest, HostPortOf) {
  EXPECT_EQ(HostPortOf("http://127.0.0.1:8000"), "127.0.0.1:8000");
  EXPECT_EQ(HostPortOf("http://vllm-0.vllm:8000/v1"), "vllm-0.vllm:8000");
  EXPECT_EQ(HostPortOf("https://gw.example"), "gw.example:443");
  EXPECT_EQ(HostPortOf("http://[::1]:8000/x"), "[::1]:8000");
}

TEST(FleetTest, QueriesCarryTheSelectorAndWindow) {
  FleetOptions o;
  o.selector = "{job=\"vllm\"}";
  o.window_ns = 30'000'000'000;
  auto q = FleetQueries(o, 1000);
  ASSERT_TRUE(q.ok());
  // Each dialect's histogram, joined by `or`; TGI has no TTFT histogram.
  EXPECT_EQ((*q)[kQTtft99].promql,
            "histogram_quantile(0.99, sum by (instance, le) "
            "(rate(vllm:time_to_first_token_seconds_bucket{job=\"vllm\"}[30000ms])) or "
            "sum by (instance, le) "
            "(rate(sglang:time_to_first_token_seconds_bucket{job=\"vllm\"}[30000ms])))");
  EXPECT_EQ((*q)[kQRunning].promql,
            "sum by (instance) (avg_over_time(vllm:num_requests_running{job=\"vllm\"}[30000ms])) "
            "or sum by (instance) (avg_over_time(sglang:num_running_reqs{job=\"vllm\"}[30000ms])) "
            "or sum by (instance) (avg_over_time(tgi_batch_current_size{job=\"vllm\"}[30000ms]))");
  EXPECT_EQ((*q)[kQSeen].promql,
            "count by (instance, __name__) ({__name__=~\"vllm:num_requests_running|"
            "sglang:num_running_reqs|tgi_batch_current_size\",job=\"vllm\"})");
  // Only the dialects the fleet speaks: TGI alone has no TTFT, KV or preemption query.
  EXPECT_EQ(DialectsSeen({PromSeries{{{"__name__", "tgi_batch_current_size"}, {"instance", "a"}}, {}}}),
            0x4u);
  auto tgi = FleetQueries(o, 1000, 0x4);
  EXPECT_EQ((*tgi)[kQTtft99].promql, "");
  EXPECT_EQ((*tgi)[kQKv].promql, "");
  EXPECT_EQ((*tgi)[kQRate].promql,
            "sum by (instance) (rate(tgi_request_success{job=\"vllm\"}[30000ms]))");
  EXPECT_NE((*tgi)[kQSeen].promql, "");
  EXPECT_EQ((*q)[kQUp].promql, "up{job=\"vllm\"}");
  EXPECT_TRUE((*q)[kQSeen].range);
  EXPECT_DOUBLE_EQ((*q)[kQSeen].end_s, 1000);
  EXPECT_DOUBLE_EQ((*q)[kQSeen].start_s, 970);
  EXPECT_DOUBLE_EQ((*q)[kQSeen].step_s, 1);
  // The heat map's range queries only when asked.
  EXPECT_EQ((*q)[kQTtft99Range].promql, "");
  o.over_time = true;
  q = FleetQueries(o, 1000);
  EXPECT_THAT((*q)[kQTtft99Range].promql, HasSubstr("[3000ms]"));
  EXPECT_TRUE((*q)[kQTtft99Range].range);
  o.replica_label = "pod name";
  EXPECT_EQ(FleetQueries(o, 1000).status().message(), "--by 'pod name': not a Prometheus label name");
}

PromSeries S(std::map<std::string, std::string> labels, double v, double t = 1000) {
  return PromSeries{std::move(labels), {{t, v}}};
}

// Replicas come from the range query and `up`; a replica whose last point is before the end
// is stale; an exporter's findings go to the replica its target names.
TEST(FleetTest, AssembleJoinsTheAnswers) {
  FleetOptions o;
  o.selector = "{job=\"vllm\"}";
  o.window_ns = 30'000'000'000;
  o.prometheus_url = "http://p:9090";
  o.over_time = true;
  auto q = FleetQueries(o, 1000);
  ASSERT_TRUE(q.ok());
  std::vector<std::vector<PromSeries>> a(kQCount);
  a[kQSeen] = {PromSeries{{{"instance", "a:1"}}, {{990, 1}, {1000, 1}}},
               PromSeries{{{"instance", "b:1"}}, {{975, 1}, {980, 1}}}};
  a[kQUp] = {S({{"instance", "a:1"}}, 1), S({{"instance", "down:1"}}, 0)};
  a[kQTtft99] = {S({{"instance", "a:1"}}, 0.25)};
  a[kQQueueShare] = {S({{"instance", "a:1"}}, 1.7)};
  a[kQExporterInfo] = {S({{"instance", "exp:9464"}, {"target", "http://a:1"}}, 1)};
  a[kQExporterFindings] = {S({{"instance", "exp:9464"}, {"rule", "load.itl_stalls"}, {"severity", "warn"}}, 1),
                           S({{"instance", "other:9464"}, {"rule", "x"}, {"severity", "fail"}}, 1)};
  auto f = AssembleFleet(o, 1000, *q, a);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->replicas.size(), 3u);
  const rules::ReplicaFacts& ra = f->replicas[0];
  EXPECT_EQ(ra.replica, "a:1");
  EXPECT_EQ(ra.up, true);
  EXPECT_FALSE(ra.stale);
  EXPECT_DOUBLE_EQ(*ra.ttft_p99_s, 0.25);
  EXPECT_DOUBLE_EQ(*ra.queue_share, 1.0);  // clamped
  EXPECT_TRUE(ra.has_exporter);
  ASSERT_EQ(ra.exporter_findings.size(), 1u);
  EXPECT_EQ(ra.exporter_findings[0].rule, "load.itl_stalls");
  EXPECT_EQ(f->replicas[1].replica, "b:1");
  EXPECT_TRUE(f->replicas[1].stale);
  EXPECT_EQ(f->replicas[2].replica, "down:1");
  EXPECT_EQ(f->replicas[2].up, false);

  auto findings = rules::JudgeFleet(f->replicas);
  rules::RankFindings(findings);
  auto j = FleetToJson(*f, findings);
  EXPECT_EQ(j["schema"], "latdoc.fleet/1");
  EXPECT_EQ(j["replicas"][0]["replica"], "down:1");
  EXPECT_EQ(j["replicas"][0]["worst_severity"], "fail");
  EXPECT_TRUE(j["replicas"][0]["ttft_p99_ms"].is_null());
  EXPECT_EQ(j["worst_severity"], "fail");
  EXPECT_THAT(RenderFleetSummary(*f, findings),
              HasSubstr("Fleet: 3 replicas matching {job=\"vllm\"} at http://p:9090, last 30s"));
  EXPECT_THAT(RenderFleetMarkdown(*f, findings), HasSubstr("| a:1 | ok | up |"));
  // The heat map's steps: 30 s at 1 s, both ends included.
  ASSERT_EQ(f->times_unix_s.size(), 31u);
  EXPECT_DOUBLE_EQ(f->times_unix_s.front(), 970);
  EXPECT_DOUBLE_EQ(f->heat_rate_window_s, 3);
}

// The heat map colours a replica by its value over the fleet's median at each step, escapes
// names, and marks steps without traffic.
TEST(FleetTest, HtmlHeatMap) {
  FleetFacts f;
  f.prometheus = "http://p:9090";
  f.selector = "{}";
  f.replica_label = "instance";
  f.window_ns = 2'000'000'000;
  f.times_unix_s = {100, 101, 102};
  f.heat_rate_window_s = 3;
  for (const char* name : {"a:1", "b:1", "<x>:1"}) {
    rules::ReplicaFacts r;
    r.replica = name;
    r.up = true;
    f.replicas.push_back(r);
    f.ttft_p99_over_time_s[name] = {0.1, 0.1, std::nullopt};
    f.itl_p99_over_time_s[name] = {0.01, 0.01, 0.01};
  }
  f.ttft_p99_over_time_s["<x>:1"] = {0.1, 0.4, std::nullopt};
  const std::string html = RenderFleetHtml(f, {});
  EXPECT_THAT(html, HasSubstr("<th>&lt;x&gt;:1</th>"));
  EXPECT_THAT(html, ::testing::Not(HasSubstr("<x>")));
  EXPECT_THAT(html, HasSubstr("title=\"400.0 ms (4.0x median)\""));
  EXPECT_THAT(html, HasSubstr("background:hsl(0,75%,50%)"));    // 4x: red
  EXPECT_THAT(html, HasSubstr("background:hsl(120,75%,50%)"));  // at the median: green
  EXPECT_THAT(html, HasSubstr("<td class=none title=\"no traffic\"></td>"));
}

// With --by pod, an exporter sidecar is joined by the pod label its series share with vLLM's,
// whatever its --target says.
TEST(FleetTest, ExporterJoinedByTheReplicaLabel) {
  FleetOptions o;
  o.replica_label = "pod";
  o.window_ns = 30'000'000'000;
  auto q = FleetQueries(o, 1000);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)[kQRate].promql,
            "sum by (pod) (rate(vllm:e2e_request_latency_seconds_count{}[30000ms])) or "
            "sum by (pod) (rate(sglang:num_requests_total{}[30000ms])) or "
            "sum by (pod) (rate(tgi_request_success{}[30000ms]))");
  std::vector<std::vector<PromSeries>> a(kQCount);
  a[kQSeen] = {PromSeries{{{"pod", "vllm-0"}}, {{1000, 1}}}};
  a[kQExporterInfo] = {S({{"instance", "10.1.0.5:9464"}, {"pod", "vllm-0"}, {"target", "http://127.0.0.1:8000"}}, 1)};
  a[kQExporterFindings] = {S({{"instance", "10.1.0.5:9464"}, {"rule", "host.numa"}, {"severity", "fail"}}, 1)};
  auto f = AssembleFleet(o, 1000, *q, a);
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_EQ(f->replicas.size(), 1u);
  EXPECT_TRUE(f->replicas[0].has_exporter);
  ASSERT_EQ(f->replicas[0].exporter_findings.size(), 1u);
  EXPECT_EQ(f->replicas[0].exporter_findings[0].rule, "host.numa");
}

TEST(FleetTest, NoReplicaIsBadInputWithTheQueryToTry) {
  FleetOptions o;
  o.selector = "{job=\"nope\"}";
  o.window_ns = 60'000'000'000;
  o.prometheus_url = "http://p:9090";
  auto q = FleetQueries(o, 1000);
  std::vector<std::vector<PromSeries>> a(kQCount);
  auto f = AssembleFleet(o, 1000, *q, a);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.status().message(),
            "no vLLM, SGLang or TGI series match {job=\"nope\"} at http://p:9090 in the last 1m "
            "(is Prometheus scraping the replicas' /metrics? the query up{job=\"nope\"} lists "
            "the targets)");
}

}  // namespace
}  // namespace latdoc::fleet
