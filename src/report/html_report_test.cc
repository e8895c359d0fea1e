#include "report/html_report.h"

#include <cstdlib>
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "report/assets/assets.h"
#include "report/html_report_data.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;

const char kExample[] = "tests/data/report/diagnosis_example.json";
const char kGoldenHtml[] = "tests/data/report/diagnosis_example.golden.html";

ordered_json Load(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  return ordered_json::parse(text.ok() ? *text : "{}");
}

size_t Count(const std::string& hay, std::string_view needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The text of the #latdoc-data block.
std::string DataBlock(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"latdoc-data\">";
  const size_t a = html.find(open);
  if (a == std::string::npos) return "";
  const size_t b = html.find("</script>", a);
  return html.substr(a + open.size(), b - a - open.size());
}

std::vector<std::string> ChartNames(const std::string& html) {
  std::vector<std::string> out;
  static const std::regex re("<canvas data-chart=\"([a-z-]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// The tests write diagnoses as the JSON documents `latdoc diagnose --json` writes; the
// renderers draw the Diagnosis read back from one.
std::string RenderHtmlReport(const ordered_json& doc, const HtmlReportOptions& o = {}) {
  return report::RenderHtmlReport(DiagnosisFromJson(doc), o);
}
ordered_json ReportData(const ordered_json& doc) {
  return report::ReportData(DiagnosisFromJson(doc));
}

std::vector<std::string> MissingNotes(const std::string& html) {
  std::vector<std::string> out;
  static const std::regex re("<div class=\"not-measured\" data-missing=\"([a-z_]+)\">");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// The page for the example diagnosis (built from real tool outputs; see the README there),
// Chart.js left out, is byte-identical to the golden file. Regenerate with
// tests/data/report/regen_golden.sh after a deliberate change.
TEST(HtmlReportTest, ExampleMatchesGolden) {
  HtmlReportOptions o;
  o.embed_chart_library = false;
  const std::string html = RenderHtmlReport(Load(kExample), o);
  if (const char* regen = std::getenv("LATDOC_REGEN_GOLDEN"); regen && regen[0] == '1') {
    ASSERT_TRUE(WriteFileAtomic(kGoldenHtml, html).ok());
  }
  auto golden = ReadFileToString(kGoldenHtml);
  ASSERT_TRUE(golden.ok());
  EXPECT_EQ(html, *golden);
}

// With every source present, every chart is drawn and no "not measured" note is shown.
TEST(HtmlReportTest, ExampleHasEveryChart) {
  HtmlReportOptions o;
  o.embed_chart_library = false;
  const std::string html = RenderHtmlReport(Load(kExample), o);
  EXPECT_THAT(ChartNames(html),
              ::testing::ElementsAre("sweep", "ttft-waterfall", "gpu-time", "kernels", "idle-timeline",
                                     "idle-histogram", "server-series", "server-series"));
  EXPECT_THAT(MissingNotes(html), ::testing::IsEmpty());
  EXPECT_EQ(Count(html, "<li class=\"finding\""), Load(kExample)["findings"].size());
}

// The data block is JSON that reads back to exactly ReportData(diagnosis).
TEST(HtmlReportTest, DataBlockRoundTrips) {
  const ordered_json d = Load(kExample);
  const std::string block = DataBlock(RenderHtmlReport(d, HtmlReportOptions{false}));
  ASSERT_FALSE(block.empty());
  EXPECT_EQ(ordered_json::parse(block), ReportData(d));
}

// The real page embeds the whole library once, without its source-map line.
TEST(HtmlReportTest, EmbedsChartJs) {
  const std::string html = RenderHtmlReport(Load(kExample));
  EXPECT_GT(assets::ChartJs().size(), 100'000u);
  EXPECT_EQ(Count(html, assets::ChartJs()), 1u);
  EXPECT_THAT(html, HasSubstr("Chart.js " + std::string(assets::ChartJsVersion())));
  EXPECT_THAT(std::string(assets::ChartJsVersion()), ::testing::MatchesRegex("v[0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_THAT(html, Not(HasSubstr("sourceMappingURL")));
  EXPECT_THAT(html, Not(HasSubstr("http://cdn")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr(" src=")));
}

// Nothing measured: no canvas, one note per chart area, each saying why when `layers` does.
TEST(HtmlReportTest, EmptyDiagnosisSaysNotMeasured) {
  const ordered_json d = {{"schema", "latdoc.diagnose/1"},
                          {"layers", {{"kernel", "skipped: no --trace given"}, {"load", "skipped: target unreachable"}}}};
  const std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(ChartNames(html), ::testing::IsEmpty());
  EXPECT_THAT(MissingNotes(html),
              ::testing::ElementsAre("sweep", "waterfall", "kernels", "idle", "server_series"));
  EXPECT_THAT(html, HasSubstr("<b>Latency curve: not measured.</b> skipped: target unreachable. No sweep"));
  EXPECT_THAT(html, HasSubstr("<b>GPU idle gaps: not measured.</b> skipped: no --trace given."));
  EXPECT_THAT(html, HasSubstr("No problems found."));
  EXPECT_THAT(html, HasSubstr("<td class=\"status skipped\">not reported</td>"));
}

// Only a trace: its three charts, and notes for the rest.
TEST(HtmlReportTest, TraceOnlyDrawsTraceCharts) {
  ordered_json d = Load(kExample);
  for (const char* k : {"bench", "sweep", "logs", "ttft_waterfall"}) d.erase(k);
  const std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(ChartNames(html), ::testing::ElementsAre("gpu-time", "kernels", "idle-timeline", "idle-histogram"));
  EXPECT_THAT(MissingNotes(html), ::testing::ElementsAre("sweep", "waterfall", "server_series"));
}

// The header names the target, the model the load ran against and the server (kind and
// version from its log; else the metric names it answered in). The example's server is
// `latdoc sim`, which answers in vLLM's metric names.
TEST(HtmlReportTest, NamesTheModelAndTheServer) {
  ordered_json d = Load(kExample);
  std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(html, HasSubstr("<span>target: <b>http://127.0.0.1:18437</b></span>"
                              "<span>model: <b>latdoc-sim/llama-3-8b</b></span>"
                              "<span>server: <b>its /metrics in vLLM&#39;s names</b></span>"));
  d["logs"]["facts"]["vllm_server"]["version"] = "0.8.5";
  EXPECT_THAT(RenderHtmlReport(d, HtmlReportOptions{false}),
              HasSubstr("<span>server: <b>vLLM 0.8.5 (from its log)</b></span>"));
  // Without a load run there is no model to name, and the header says so.
  d.erase("bench");
  d.erase("sweep");
  d.erase("baseline");
  EXPECT_THAT(RenderHtmlReport(d, HtmlReportOptions{false}), HasSubstr("<span>model: <b>n/a</b></span>"));
}

// Counts print as whole numbers: the load line, the kernel count, evidence values.
TEST(HtmlReportTest, CountsPrintAsWholeNumbers) {
  const std::string html = RenderHtmlReport(Load(kExample), HtmlReportOptions{false});
  EXPECT_THAT(html, HasSubstr("300 requests completed, 0 failed, concurrency 48;"));
  EXPECT_THAT(html, HasSubstr("of 39 kernel names in the trace."));
  EXPECT_THAT(html, HasSubstr("<span class=\"mono\">preemptions</span>: 59</li>"));
  EXPECT_THAT(html, HasSubstr("the dashed line marks the knee at concurrency = 4."));
  const std::string shown = html.substr(0, html.find("<script"));  // the page's text, not its data
  EXPECT_THAT(shown, Not(HasSubstr(">-0")));
  EXPECT_THAT(shown, Not(HasSubstr(" -0")));
  for (const char* bad : {"48.0", "39.0", "59.0", ": 0.0 "}) EXPECT_THAT(shown, Not(HasSubstr(bad))) << bad;
}

// Kernel names of the bundled H200 trace: chart labels are cut from the middle and differ for
// different kernels (the two nvjet_sm90_tst_64x8_64x16 kernels once both read
// "nvjet_sm90_tst_64x8_64x16_4..."); the hot list shows that label with the full name as its
// tooltip.
TEST(HtmlReportTest, KernelLabelsAreDistinctWithTheFullNameAsTooltip) {
  const ordered_json d = Load(kExample);
  const ordered_json data = ReportData(d);
  const ordered_json& items = data["kernels"]["items"];
  ASSERT_EQ(items.size(), 12u);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string name = items[i]["name"], label = items[i]["label"];
    EXPECT_LE(label.size(), std::max<size_t>(name.size(), 44 + 2)) << label;
    for (size_t j = 0; j < i; ++j) {
      EXPECT_EQ(label == items[j]["label"].get<std::string>(), name == items[j]["name"].get<std::string>())
          << label;
    }
  }
  EXPECT_EQ(items[3]["name"], "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  EXPECT_EQ(items[3]["label"], "nvjet_sm90_tst_64x8_64\xE2\x80\xA6" "6_4x1_v_bz_splitK_TNT");
  const std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(html, HasSubstr("<td class=\"name mono\" title=\"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT\">"
                              "nvjet_sm90_tst_64x8_64\xE2\x80\xA6" "6_4x1_v_bz_splitK_TNT</td>"));
}

// A hostile string anywhere in the input is text, never markup or script.
TEST(HtmlReportTest, EscapesEveryInputString) {
  const std::string evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>&\"'";
  ordered_json d = {{"target", evil},
                    {"generated_at", evil},
                    {"schema", evil},
                    {"layers", {{"kernel", evil}}},
                    {"findings", ordered_json::array({{{"id", evil}, {"layer", "kernel"}, {"severity", "fail"},
                                                       {"title", evil}, {"advice", evil},
                                                       {"evidence", {{{"name", evil}, {"value", 1}, {"unit", evil},
                                                                      {"text", evil}}}}}})},
                    {"trace", {{"facts", {{"kernels", {{{"name", evil}, {"count", 1}, {"total_ns", 5000},
                                                        {"mean_ns", 5000}, {"busy_share", 1}}}},
                                          {"idle", {{"largest_gaps", {{{"at_ns", 1}, {"dur_ns", 2}, {"next_op", evil}}}}}}}}}},
                    {"logs", {{"facts", {{"engines", {{{"engine", 3}, {"series", {{"t_s", {0, 1}}, {"running", {1, 2}}}}}}}}}}},
                    {"sweep", {{"steps", {{{"concurrency", 1}, {"p99_ttft_ms", 3}}}}, {"knee", {{"concurrency", 1}}}}}};
  const std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(html, Not(HasSubstr("<img")));
  EXPECT_THAT(html, Not(HasSubstr("alert(1)</script>")));
  // Exactly the page's own three script elements, all closed where the page closes them.
  EXPECT_EQ(Count(html, "<script"), 3u);
  EXPECT_EQ(Count(html, "</script>"), 3u);
  EXPECT_THAT(html, HasSubstr("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"
                              "&amp;&quot;&#39;"));
  const std::string block = DataBlock(html);
  EXPECT_THAT(block, Not(HasSubstr("<")));
  EXPECT_THAT(block, Not(HasSubstr(">")));
  EXPECT_THAT(block, Not(HasSubstr("&")));
  // ... and the data still carries the names unchanged.
  const ordered_json parsed = ordered_json::parse(block);
  EXPECT_EQ(parsed["kernels"]["items"][0]["name"], evil);
  EXPECT_EQ(parsed["idle"]["gaps"][0]["next_op"], evil);
  EXPECT_EQ(parsed["server_series"][0]["source"], "server log: engine 3");
}

// Values of the wrong type are "not measured", never an exception.
TEST(HtmlReportTest, MistypedInputDoesNotThrow) {
  const ordered_json cases[] = {
      ordered_json::array(),
      "text",
      {{"findings", "x"}, {"bench", 5}, {"sweep", {{"steps", "x"}}}, {"trace", {{"facts", 3}}}},
      {{"findings", {1, {{"id", 2}}, {{"id", "a"}, {"layer", "kernel"}, {"severity", "bad"}},
                     {{"id", "b"}, {"layer", "kernel"}, {"severity", "warn"}, {"title", 7}, {"evidence", "x"}}}},
       {"trace", {{"facts", {{"kernels", {1, {{"name", 3}}, {{"total_ns", "x"}}}},
                             {"gpu_timeline", {{"total_ms", "9"}}}, {"idle", {{"largest_gaps", {1}}}}}}}},
       {"logs", {{"facts", {{"engines", {{{"series", {{"t_s", {1, "x", nullptr}}, {"kv_pct", "x"}}}}}}}}}},
       {"sweep", {{"steps", {{{"concurrency", "x"}}, {{"concurrency", 2}, {"p99_ttft_ms", "slow"}}}}}},
       {"ttft_waterfall", {{"client_ttft_ms", 10}, {"queue_ms", "x"}}}},
  };
  for (const auto& d : cases) {
    std::string html;
    EXPECT_NO_THROW(html = RenderHtmlReport(d, HtmlReportOptions{false})) << d.dump();
    EXPECT_THAT(html, HasSubstr("</html>")) << d.dump();
  }
  const std::string html = RenderHtmlReport(cases[3], HtmlReportOptions{false});
  EXPECT_THAT(html, HasSubstr("3 findings in the input had no id, layer or severity"));
  EXPECT_EQ(Count(html, "<li class=\"finding\""), 1u);
}

TEST(HtmlReportDataTest, WaterfallFallsBackToBenchBreakdownAndStacksSegments) {
  const ordered_json d = {{"bench", {{"server_metrics", {{"ttft_breakdown", {{"client_ttft_ms", 100.0},
                                                                             {"network_and_front_end_ms", 5.0},
                                                                             {"queue_ms", 60.0},
                                                                             {"prefill_ms", 30.0},
                                                                             {"server_other_ms", nullptr}}}}}}}};
  const ordered_json w = ReportData(d)["waterfall"];
  EXPECT_EQ(w["source"], "bench");
  EXPECT_EQ(w["client_ttft_ms"], 100.0);
  ASSERT_EQ(w["segments"].size(), 4u);
  EXPECT_EQ(w["segments"][1]["start_ms"], 5.0);
  EXPECT_EQ(w["segments"][2]["start_ms"], 65.0);
  EXPECT_TRUE(w["segments"][3]["ms"].is_null());
  // The document's own waterfall wins over the bench's.
  ordered_json d2 = d;
  d2["ttft_waterfall"] = {{"client_ttft_ms", 50.0}, {"queue_ms", 40.0}};
  EXPECT_EQ(ReportData(d2)["waterfall"]["source"], "diagnose");
  EXPECT_EQ(ReportData(d2)["waterfall"]["client_ttft_ms"], 50.0);
}

// With the network probed, the waterfall shows the measured network apart from the inferred
// front end, in place of their inferred sum.
TEST(HtmlReportDataTest, WaterfallSplitsMeasuredNetworkFromInferredFrontEnd) {
  ordered_json d = {{"ttft_waterfall", {{"client_ttft_ms", 50.0}, {"queue_ms", 10.0},
                                        {"prefill_ms", 25.0}, {"network_and_front_end_ms", 15.0},
                                        {"network_ms", 12.0}, {"front_end_ms", 3.0}}}};
  const ordered_json w = ReportData(d)["waterfall"];
  ASSERT_EQ(w["segments"].size(), 5u);
  EXPECT_EQ(w["segments"][0]["key"], "network_ms");
  EXPECT_EQ(w["segments"][0]["label"], "network (measured)");
  EXPECT_EQ(w["segments"][1]["key"], "front_end_ms");
  EXPECT_EQ(w["segments"][1]["label"], "front end (inferred)");
  EXPECT_EQ(w["segments"][2]["start_ms"], 15.0);
  for (const auto& s : w["segments"]) EXPECT_NE(s["key"], "network_and_front_end_ms");
}

TEST(HtmlReportDataTest, SweepSortsStepsAndFindsTheKnee) {
  ordered_json d = {{"sweep", {{"steps", {{{"concurrency", 8}, {"p99_ttft_ms", 90}, {"output_throughput", 800}},
                                         {{"concurrency", 1}, {"p99_ttft_ms", 20}, {"output_throughput", 100}},
                                         {{"concurrency", 4}, {"p99_ttft_ms", 30}}}},
                               {"knee", {{"concurrency", 4}, {"reached", true}}}}}};
  ordered_json s = ReportData(d)["sweep"];
  EXPECT_EQ(s["x_name"], "concurrency");
  ASSERT_EQ(s["steps"].size(), 3u);
  EXPECT_EQ(s["steps"][0]["x"], 1);
  EXPECT_EQ(s["steps"][2]["x"], 8);
  EXPECT_TRUE(s["steps"][1]["output_throughput"].is_null());
  EXPECT_EQ(s["knee"]["x"], 4);
  EXPECT_EQ(s["knee"]["reached"], true);
  // Other spellings of the knee that latdoc's readers accept (rules::SweepKneeFromJson).
  d["sweep"].erase("knee");
  d["sweep"]["knee_concurrency"] = 6;
  EXPECT_EQ(ReportData(d)["sweep"]["knee"]["x"], 6);
  d["sweep"].erase("knee_concurrency");
  EXPECT_TRUE(ReportData(d)["sweep"]["knee"].is_null());
}

TEST(HtmlReportDataTest, ServerSeriesFromBenchAndLogsInPercent) {
  const ordered_json d = {
      {"bench", {{"server_metrics", {{"timeline", {{{"t_s", 0.5}, {"running", 3}, {"waiting", 0}, {"kv_cache_usage", 0.25}},
                                                   {{"t_s", 1.5}, {"running", 4}, {"waiting", nullptr}, {"kv_cache_usage", 1}}}}}}}},
      {"logs", {{"facts", {{"engines", {{{"engine", 0}, {"series", {{"t_s", {0, 10}}, {"running", {1, 2}},
                                                                     {"waiting", {0, 5}}, {"kv_pct", {12.5, 99}}}}},
                                        {{"engine", -1}, {"series", {{"t_s", {0}}, {"running", {3}}}}}}}}}}}};
  const ordered_json s = ReportData(d)["server_series"];
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]["kv_pct"], ordered_json({25.0, 100.0}));
  EXPECT_EQ(s[0]["waiting"], ordered_json({0, nullptr}));
  EXPECT_EQ(s[1]["source"], "server log: engine 0");
  EXPECT_EQ(s[1]["kv_pct"], ordered_json({12.5, 99}));
  EXPECT_EQ(s[2]["source"], "server log: engines aggregated");
}

// The stall timeline takes diagnose's attribution.series as they are, and each stall (server-wide
// or single-stream) with its first cause, "unexplained" when it has none; a chart is drawn.
TEST(HtmlReportDataTest, AttributionTimelineMarksStallsByCause) {
  const ordered_json d = {
      {"bench", {{"server_metrics", {{"timeline", {{{"t_s", 0.5}, {"running", 3}, {"waiting", 0}}}}}}}},
      {"attribution",
       {{"series", {{"t_s", {0, 0.1}}, {"itl_p99_ms", {5.5, nullptr}}, {"running", {3, 4}}, {"waiting", {0, "x"}}}},
        {"stalls", {{{"at_s", 0.05}, {"dur_ms", 120}, {"causes", {"log", "prefill"}}},
                    {{"at_s", 0.08}, {"dur_ms", 90}, {"causes", ordered_json::array()}}}},
        {"stream_stalls", {{{"at_s", 0.09}, {"dur_ms", 300}, {"causes", {"preemption"}}}}}}}};
  const ordered_json a = ReportData(d)["attribution"];
  EXPECT_EQ(a["itl_p99_ms"], ordered_json({5.5, nullptr}));
  EXPECT_EQ(a["waiting"], ordered_json({0, nullptr}));
  ASSERT_EQ(a["stalls"].size(), 3u);
  EXPECT_EQ(a["stalls"][0]["cause"], "log");
  EXPECT_EQ(a["stalls"][1]["cause"], "unexplained");
  EXPECT_EQ(a["stalls"][2]["cause"], "preemption");
  HtmlReportOptions o;
  o.embed_chart_library = false;
  EXPECT_EQ(Count(RenderHtmlReport(d, o), "data-chart=\"attribution-timeline\""), 1u);
  EXPECT_TRUE(ReportData({{"attribution", {{"series", nullptr}}}})["attribution"].is_null());
}

// The log's write rate and the GPU kernel time per bin go under the ITL when diagnose wrote them
// (non-numbers as null); a column of another length is left out, and without them the chart
// has neither.
TEST(HtmlReportDataTest, AttributionTimelineTakesLogRateAndGpuTimeWhenPresent) {
  ordered_json d = {{"attribution",
                     {{"series", {{"t_s", {0, 0.1}}, {"itl_p99_ms", {5.5, 6}}, {"running", {3, 4}},
                                  {"waiting", {0, 0}}, {"log_write_kib_s", {12.5, "x"}},
                                  {"gpu_kernel_ms", {90, 91, 92}}}},
                      {"stalls", ordered_json::array()}}}};
  ordered_json a = ReportData(d)["attribution"];
  EXPECT_EQ(a["log_write_kib_s"], ordered_json({12.5, nullptr}));
  EXPECT_FALSE(a.contains("gpu_kernel_ms"));  // three values for two bins
  d["attribution"]["series"]["gpu_kernel_ms"] = {90, 91};
  a = ReportData(d)["attribution"];
  EXPECT_EQ(a["gpu_kernel_ms"], ordered_json({90, 91}));
  d["attribution"]["series"].erase("log_write_kib_s");
  d["attribution"]["series"].erase("gpu_kernel_ms");
  a = ReportData(d)["attribution"];
  EXPECT_FALSE(a.contains("log_write_kib_s"));
  EXPECT_FALSE(a.contains("gpu_kernel_ms"));
}

// The host's series (--local) and the output token rate go under the ITL as diagnose wrote them,
// each only when present and as long as t_s; each throughput dip with its first cause
// ("unexplained" when none), and a dip without its rate is left out.
TEST(HtmlReportDataTest, AttributionTimelineTakesHostSeriesAndDips) {
  ordered_json d = {{"attribution",
                     {{"series", {{"t_s", {0, 0.1}}, {"itl_p99_ms", {5.5, 6}}, {"running", {3, 4}},
                                  {"waiting", {0, 0}}, {"output_tok_s", {900, 10}},
                                  {"thread_busy_pct", {20, 99.5}}, {"run_queue", {1, nullptr}},
                                  {"psi_cpu_pct", {0, 85}}, {"psi_memory_pct", {0, 62.5}},
                                  {"psi_io_pct", {0}}}},
                      {"stalls", ordered_json::array()},
                      {"dips", {{{"at_s", 0.1}, {"dur_ms", 100}, {"rate_tok_s", 10}, {"causes", {"host_cpu", "log"}}},
                                {{"at_s", 0.2}, {"dur_ms", 100}, {"rate_tok_s", 0}, {"causes", ordered_json::array()}},
                                {{"at_s", 0.3}, {"dur_ms", 100}, {"causes", {"swap"}}}}}}}};
  const ordered_json a = ReportData(d)["attribution"];
  EXPECT_EQ(a["output_tok_s"], ordered_json({900, 10}));
  EXPECT_EQ(a["thread_busy_pct"], ordered_json({20, 99.5}));
  EXPECT_EQ(a["run_queue"], ordered_json({1, nullptr}));
  EXPECT_EQ(a["psi_cpu_pct"], ordered_json({0, 85}));
  EXPECT_EQ(a["psi_memory_pct"], ordered_json({0, 62.5}));
  EXPECT_FALSE(a.contains("psi_io_pct"));  // one value for two bins
  ASSERT_EQ(a["dips"].size(), 2u);
  EXPECT_EQ(a["dips"][0], ordered_json({{"at_s", 0.1}, {"dur_ms", 100}, {"rate_tok_s", 10}, {"cause", "host_cpu"}}));
  EXPECT_EQ(a["dips"][1]["cause"], "unexplained");
}

TEST(HtmlReportDataTest, IdleHistogramBinsTheListedGaps) {
  const ordered_json d = {{"trace", {{"facts", {{"span_ns", 2e9},
                                                {"idle", {{"host_wait_ns", 1e6}, {"kernel_wait_ns", 0}, {"other_ns", 0},
                                                          {"largest_gaps", {{{"at_ns", 1e6}, {"dur_ns", 5e3}},
                                                                            {{"at_ns", 2e6}, {"dur_ns", 30e3}},
                                                                            {{"at_ns", 3e6}, {"dur_ns", 40e3}},
                                                                            {{"at_ns", 4e6}, {"dur_ns", 20e6}}}}}}}}}}};
  const ordered_json idle = ReportData(d)["idle"];
  EXPECT_EQ(idle["span_ms"], 2000.0);
  EXPECT_EQ(idle["histogram_of"], "largest gaps listed");
  std::vector<std::pair<std::string, int>> bins;
  for (const auto& b : idle["histogram"]) bins.emplace_back(b["label"], b["count"]);
  EXPECT_THAT(bins, ::testing::ElementsAre(std::pair<std::string, int>{"< 10 us", 1}, std::pair<std::string, int>{"10-30 us", 0},
                                           std::pair<std::string, int>{"30-100 us", 2}, std::pair<std::string, int>{"100-300 us", 0},
                                           std::pair<std::string, int>{"300 us-1 ms", 0}, std::pair<std::string, int>{"1-3 ms", 0},
                                           std::pair<std::string, int>{"3-10 ms", 0}, std::pair<std::string, int>{">= 10 ms", 1}));
  EXPECT_EQ(idle["split"][0]["ms"], 1.0);
}

// The step chart: each step's time and its GPU-busy part from facts.steps.table; drawn only when
// the trace had steps.
TEST(HtmlReportDataTest, StepChartFromTheStepTable) {
  ordered_json d = {{"trace", {{"facts", {{"idle", {{"host_wait_ns", 0}}},
                                          {"steps", {{"method", "cadence"},
                                                      {"quantiles", {{"wall_ns", {{"p50", 3.5e6}, {"p99", 12.5e6}}}}},
                                                      {"table", {{{"index", 0}, {"wall_ns", 3.5e6}, {"gpu_busy_ns", 0.5e6}},
                                                                 {{"index", 1}, {"wall_ns", 12.5e6}, {"gpu_busy_ns", 9.6e6}},
                                                                 {{"index", 2}, {"wall_ns", "x"}}}}}}}}}}};
  const ordered_json s = ReportData(d)["steps"];
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["method"], "cadence");
  EXPECT_EQ(s["count"], 3);
  EXPECT_EQ(s["p50_ms"], 3.5);
  EXPECT_EQ(s["p99_ms"], 12.5);
  ASSERT_EQ(s["items"].size(), 2u);   // the row without a number is dropped
  EXPECT_EQ(s["items"][1]["wall_ms"], 12.5);
  EXPECT_EQ(s["items"][1]["busy_ms"], 9.6);
  const std::string html = RenderHtmlReport(d, HtmlReportOptions{false});
  EXPECT_THAT(ChartNames(html), ::testing::Contains("steps"));
  EXPECT_THAT(html, HasSubstr("3 steps found by cadence, median 3.5 ms, p99 12.5 ms; the first 2 shown."));
  d["trace"]["facts"]["steps"] = {{"method", "none"}, {"count", 0}};
  EXPECT_TRUE(ReportData(d)["steps"].is_null());
  EXPECT_THAT(ChartNames(RenderHtmlReport(d, HtmlReportOptions{false})), ::testing::Not(::testing::Contains("steps")));
}

TEST(HtmlReportDataTest, FormatNumber) {
  EXPECT_EQ(FormatNumber(std::nullopt), "n/a");
  EXPECT_EQ(FormatNumber(0.0), "0");
  EXPECT_EQ(FormatNumber(-5.7e-13), "0");
  EXPECT_EQ(FormatNumber(1.23456), "1.23");
  EXPECT_EQ(FormatNumber(12.345), "12.3");
  EXPECT_EQ(FormatNumber(1234.4), "1234");
  EXPECT_EQ(FormatNumber(2.5e7 + 0.6), "25000001");  // large values: whole, no exponent
  // Whole numbers print whole, whatever double carried them (counts: "16", not "16.0").
  EXPECT_EQ(FormatNumber(16.0), "16");
  EXPECT_EQ(FormatNumber(262144.0), "262144");
  EXPECT_EQ(FormatNumber(2.5e7), "25000000");
  EXPECT_EQ(FormatNumber(-0.0), "0");
  EXPECT_EQ(FormatNumber(-0.0004), "-0.0004");
  EXPECT_EQ(FormatCountValue(39.0), "39");
  EXPECT_EQ(FormatCountValue(std::nullopt), "n/a");
  EXPECT_EQ(FormatNumber(0.0001234), "0.000123");
}

}  // namespace
}  // namespace latdoc::report
