#include "exporter/metric_text.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "servermetrics/prometheus_parser.h"

namespace latdoc::exporter {
namespace {

TEST(MetricTextTest, FamiliesGroupTheirSamplesInDeclarationOrder) {
  MetricText m;
  m.Family("a_total", MetricKind::kCounter, "A counter.");
  m.Family("b", MetricKind::kGauge, "B gauge.");
  m.Add("b", {{"x", "1"}}, 2);
  m.Add("a_total", {}, 3);
  m.Add("b", {{"x", "2"}}, 0.25);
  EXPECT_EQ(m.Render(),
            "# HELP a_total A counter.\n"
            "# TYPE a_total counter\n"
            "a_total 3\n"
            "# HELP b B gauge.\n"
            "# TYPE b gauge\n"
            "b{x=\"1\"} 2\n"
            "b{x=\"2\"} 0.25\n");
}

TEST(MetricTextTest, EscapesLabelValuesAndHelp) {
  MetricText m;
  m.Family("g", MetricKind::kGauge, "back\\slash and\nnewline");
  m.Add("g", {{"v", "a\"b\\c\nd"}}, 1);
  EXPECT_EQ(m.Render(),
            "# HELP g back\\\\slash and\\nnewline\n"
            "# TYPE g gauge\n"
            "g{v=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricTextTest, SpecialAndSmallValues) {
  EXPECT_EQ(FormatMetricValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatMetricValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatMetricValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatMetricValue(1e-6), "1e-06");
  EXPECT_EQ(FormatMetricValue(0.1), "0.1");
  EXPECT_EQ(FormatMetricValue(1234567), "1234567");
  // The exporter page never shows "-0" (server_other of equal means is -0.0).
  EXPECT_EQ(FormatMetricValue(-0.0), "0");
  EXPECT_EQ(FormatMetricValue(0.0), "0");
  EXPECT_EQ(FormatMetricValue(-1e-9), "-1e-09");
}

TEST(MetricTextTest, HistogramIsCumulativeWithInfSumAndCount) {
  MetricText m;
  m.Family("h_seconds", MetricKind::kHistogram, "H.");
  const double bounds[] = {0.1, 1};
  const uint64_t cum[] = {1, 3};
  m.AddHistogram("h_seconds", {{"k", "v"}}, bounds, cum, 4.5, 4);
  EXPECT_EQ(m.Render(),
            "# HELP h_seconds H.\n"
            "# TYPE h_seconds histogram\n"
            "h_seconds_bucket{k=\"v\",le=\"0.1\"} 1\n"
            "h_seconds_bucket{k=\"v\",le=\"1\"} 3\n"
            "h_seconds_bucket{k=\"v\",le=\"+Inf\"} 4\n"
            "h_seconds_sum{k=\"v\"} 4.5\n"
            "h_seconds_count{k=\"v\"} 4\n");
}

// What we write, latdoc's own Prometheus parser (written from the spec) reads back exactly.
TEST(MetricTextTest, RoundTripsThroughTheParser) {
  MetricText m;
  m.Family("x_seconds", MetricKind::kGauge, "X.");
  m.Add("x_seconds", {{"l", "q\"uo\\te\n"}}, 0.1 + 0.2);
  auto page = servermetrics::ParsePrometheusText(m.Render());
  ASSERT_EQ(page.samples.size(), 1u);
  EXPECT_EQ(page.bad_line_count, 0u);
  EXPECT_EQ(page.samples[0].value, 0.1 + 0.2);
  EXPECT_EQ(page.samples[0].label("l"), "q\"uo\\te\n");
  EXPECT_EQ(page.TypeOf("x_seconds"), servermetrics::MetricType::kGauge);
}

}  // namespace
}  // namespace latdoc::exporter
