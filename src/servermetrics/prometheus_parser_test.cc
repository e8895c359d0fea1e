#include "servermetrics/prometheus_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "base/file_util.h"

namespace latdoc::servermetrics {
namespace {

using ::testing::ElementsAre;

std::string Fixture(const std::string& name) {
  auto text = ReadFileToString("tests/data/servermetrics/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : std::string();
}

// Every feature of the format in a few lines: escapes in HELP and label values, a trailing
// comma, +Inf/-Inf/NaN, timestamps, tabs, CRLF, a blank line and a plain comment.
const char kAllFeatures[] =
    "# HELP http_requests_total The total number\\\\of \"requests\".\\nSecond line.\n"
    "# TYPE http_requests_total counter\n"
    "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
    "http_requests_total{method=\"post\",code=\"400\",}    3   1395066363000\r\n"
    "\n"
    "# A plain comment\n"
    "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
    "metric_without_timestamp_and_labels\t12.47\n"
    "# TYPE rpc_duration_seconds histogram\n"
    "rpc_duration_seconds_bucket{le=\"0.05\"} 24054\n"
    "rpc_duration_seconds_bucket{le=\"+Inf\"} 144320\n"
    "rpc_duration_seconds_sum 53423\n"
    "rpc_duration_seconds_count 144320\n"
    "weird{ a = \"b\" } +Inf\n"
    "neg -Inf\n"
    "nan_value NaN\n";

TEST(PrometheusParserTest, ParsesEveryFeature) {
  PrometheusPage page = ParsePrometheusText(kAllFeatures);
  EXPECT_EQ(page.bad_line_count, 0u) << page.DebugString();
  EXPECT_EQ(page.lines, 16u);
  ASSERT_EQ(page.samples.size(), 11u);

  EXPECT_EQ(page.families["http_requests_total"].type, MetricType::kCounter);
  EXPECT_EQ(page.families["http_requests_total"].help,
            "The total number\\of \"requests\".\nSecond line.");

  const Sample& s0 = page.samples[0];
  EXPECT_EQ(s0.name, "http_requests_total");
  EXPECT_THAT(s0.labels, ElementsAre(Label{"method", "post"}, Label{"code", "200"}));
  EXPECT_EQ(s0.value, 1027);
  EXPECT_EQ(s0.timestamp_ms, 1395066363000);
  EXPECT_EQ(s0.line, 3u);

  const Sample& s1 = page.samples[1];
  EXPECT_THAT(s1.labels, ElementsAre(Label{"method", "post"}, Label{"code", "400"}));
  EXPECT_EQ(s1.value, 3);
  EXPECT_EQ(s1.line, 4u);

  const Sample& s2 = page.samples[2];
  EXPECT_EQ(s2.label("path"), "C:\\DIR\\FILE.TXT");
  EXPECT_EQ(s2.label("error"), "Cannot find file:\n\"FILE.TXT\"");
  EXPECT_EQ(s2.value, 1.458255915e9);
  EXPECT_FALSE(s2.timestamp_ms.has_value());
  EXPECT_FALSE(s2.label("missing").has_value());

  EXPECT_EQ(page.samples[3].name, "metric_without_timestamp_and_labels");
  EXPECT_EQ(page.samples[3].value, 12.47);
  EXPECT_EQ(page.samples[5].label("le"), "+Inf");
  EXPECT_EQ(page.samples[8].label("a"), "b");
  EXPECT_TRUE(std::isinf(page.samples[8].value) && page.samples[8].value > 0);
  EXPECT_TRUE(std::isinf(page.samples[9].value) && page.samples[9].value < 0);
  EXPECT_TRUE(std::isnan(page.samples[10].value));

  EXPECT_EQ(page.TypeOf("rpc_duration_seconds_bucket"), MetricType::kHistogram);
  EXPECT_EQ(page.TypeOf("rpc_duration_seconds_count"), MetricType::kHistogram);
  EXPECT_EQ(page.TypeOf("http_requests_total"), MetricType::kCounter);
  EXPECT_EQ(page.TypeOf("neg"), MetricType::kUntyped);
}

// Every split point of the page must yield the same page.
void ExpectSameAtEveryChunkBoundary(std::string_view text, size_t stride = 1) {
  const std::string want = ParsePrometheusText(text).DebugString();
  for (size_t cut = 0; cut <= text.size(); cut += stride) {
    PrometheusParser p;
    p.Feed(text.substr(0, cut));
    p.Feed(text.substr(cut));
    ASSERT_EQ(p.Finish().DebugString(), want) << "cut=" << cut;
  }
}

TEST(PrometheusParserTest, SameAtEveryChunkBoundary) {
  ExpectSameAtEveryChunkBoundary(kAllFeatures);
  ExpectSameAtEveryChunkBoundary(Fixture("llamacpp_metrics.prom"));
  // The first ~6 KB of the vLLM page (gauges, counters, the first histogram) at every
  // boundary, and the whole page at random boundaries and in 1-byte slices.
  const std::string vllm = Fixture("vllm_v1_after.prom");
  ExpectSameAtEveryChunkBoundary(std::string_view(vllm).substr(0, vllm.find('\n', 6000) + 1));
  const std::string want = ParsePrometheusText(vllm).DebugString();
  std::mt19937 rng(5);
  for (int i = 0; i < 50; ++i) {
    const size_t a = rng() % vllm.size(), b = rng() % vllm.size();
    PrometheusParser p;
    p.Feed(std::string_view(vllm).substr(0, std::min(a, b)));
    p.Feed(std::string_view(vllm).substr(std::min(a, b), std::max(a, b) - std::min(a, b)));
    p.Feed(std::string_view(vllm).substr(std::max(a, b)));
    ASSERT_EQ(p.Finish().DebugString(), want) << "cuts=" << a << "," << b;
  }
  PrometheusParser bytewise;
  for (char c : vllm) bytewise.Feed(std::string_view(&c, 1));
  EXPECT_EQ(bytewise.Finish().DebugString(), want);
}

TEST(PrometheusParserTest, BadLinesAreCountedWithLineNumbersAndSkipped) {
  const char kPage[] =
      "ok_metric 1\n"
      "bad metric name\n"
      "m{a=\"x} 1\n"
      "m{a=x} 1\n"
      "m{a=\"\\q\"} 1\n"
      "m\n"
      "m 1 notatime\n"
      "# TYPE m flavour\n"
      "{a=\"b\"} 1\n"
      "m{a=\"b\" c=\"d\"} 1\n"
      "m 1 2 3\n"
      "m{a:b=\"c\"} 1\n"
      "# HELP\n"
      "good 2\n";
  PrometheusPage page = ParsePrometheusText(kPage);
  ASSERT_EQ(page.samples.size(), 2u);
  EXPECT_EQ(page.samples[0].name, "ok_metric");
  EXPECT_EQ(page.samples[1].name, "good");
  EXPECT_EQ(page.samples[1].line, 14u);
  EXPECT_EQ(page.bad_line_count, 12u);
  std::vector<std::string> messages;
  for (const BadLine& b : page.bad_lines) messages.push_back(b.message);
  EXPECT_THAT(messages,
              ElementsAre("line 2: bad: bad value 'metric'",
                          "line 3: unterminated value of label a",
                          "line 4: expected '\"' to open the value of label a",
                          "line 5: invalid escape '\\q' in the value of label a",
                          "line 6: m: missing value",
                          "line 7: m: bad timestamp 'notatime'",
                          "line 8: unknown metric type 'flavour' for m",
                          "line 9: expected a metric name at column 1",
                          "line 10: expected ',' or '}' after the value of label a",
                          "line 11: m: unexpected text after the timestamp",
                          "line 12: expected '=' after label name a",
                          "line 13: # HELP without a metric name"));
  EXPECT_EQ(page.bad_lines[4].line, 6u);
}

TEST(PrometheusParserTest, KeepsOnlyTheFirstHundredBadLinesButCountsAll) {
  std::string text;
  for (int i = 0; i < 150; ++i) text += "x y\n";
  PrometheusPage page = ParsePrometheusText(text);
  EXPECT_EQ(page.bad_line_count, 150u);
  EXPECT_EQ(page.bad_lines.size(), PrometheusPage::kMaxBadLinesKept);
  EXPECT_EQ(page.bad_lines.back().message, "line 100: x: bad value 'y'");
}

TEST(PrometheusParserTest, OpenMetricsExemplarsAndEofAreIgnored) {
  PrometheusPage page = ParsePrometheusText(
      "foo_bucket{le=\"0.01\"} 0 # {trace_id=\"KOO5S4vxi0o\"} 0.67\n"
      "foo_bucket{le=\"+Inf\"} 17 1520879607789 # {trace_id=\"x\"} 1.5\n"
      "# EOF\n");
  EXPECT_EQ(page.bad_line_count, 0u) << page.DebugString();
  ASSERT_EQ(page.samples.size(), 2u);
  EXPECT_EQ(page.samples[1].value, 17);
  EXPECT_EQ(page.samples[1].timestamp_ms, 1520879607789);
}

TEST(PrometheusParserTest, LastLineWithoutNewline) {
  PrometheusParser p;
  p.Feed("a 1\nb 2");
  PrometheusPage page = p.Finish();
  ASSERT_EQ(page.samples.size(), 2u);
  EXPECT_EQ(page.samples[1].value, 2);
  // The parser starts over after Finish().
  p.Feed("c 3\n");
  EXPECT_EQ(p.Finish().samples.at(0).line, 1u);
}

TEST(PrometheusParserTest, VllmFixtureParsesCleanly) {
  PrometheusPage page = ParsePrometheusText(Fixture("vllm_v1_after.prom"));
  EXPECT_EQ(page.bad_line_count, 0u);
  EXPECT_EQ(page.TypeOf("vllm:time_to_first_token_seconds_bucket"), MetricType::kHistogram);
  EXPECT_EQ(page.TypeOf("vllm:num_requests_running"), MetricType::kGauge);
  EXPECT_EQ(page.TypeOf("vllm:prompt_tokens_total"), MetricType::kCounter);
  size_t ttft_buckets = 0;
  for (const Sample& s : page.samples) {
    if (s.name == "vllm:time_to_first_token_seconds_bucket") ++ttft_buckets;
  }
  EXPECT_EQ(ttft_buckets, 2u * 23u);  // two engines, 22 bounds + +Inf
}

}  // namespace
}  // namespace latdoc::servermetrics
