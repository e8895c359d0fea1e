#include "report/diagnosis.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/html_report.h"
#include "report/markdown_report.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;
using rules::Finding;
using rules::Layer;
using rules::Severity;
using ::testing::HasSubstr;

Finding Make(std::string id, Layer layer, Severity sev, std::string title, std::string advice,
             std::optional<double> share) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.severity = sev;
  f.title = std::move(title);
  f.advice = std::move(advice);
  f.latency_share = share;
  f.evidence.push_back({"p99_itl_ms", 41.5, "ms", ""});
  return f;
}

// Ranked as rules::RankFindings leaves them: the top item is a warning with no change to make,
// so the item to change first is the second, the failure with advice.
Diagnosis Example() {
  Diagnosis d;
  d.target = "http://127.0.0.1:8000";
  d.generated_at = "2026-12-05T09:00:00Z";
  d.target_reachable = true;
  d.layers = {
      {"network", "measured"}, {"load", "measured"}, {"kernel", "skipped: no --trace given"}};
  SetFindings(d, {Make("load.queueing", Layer::kLoad, Severity::kWarn, "Requests queue", "", 0.5),
                  Make("config.max_num_seqs", Layer::kConfig, Severity::kFail,
                       "Batch limit too low", "--max-num-seqs 128", 0.2),
                  Make("net.rtt", Layer::kNetwork, Severity::kOk, "Round trip is short", "",
                       std::nullopt)});
  d.sections["bench"] = {{"schema", "latdoc.bench/1"}, {"completed", 200}};
  return d;
}

void ExpectSame(const Diagnosis& a, const Diagnosis& b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.generated_at, b.generated_at);
  EXPECT_EQ(a.target_reachable, b.target_reachable);
  EXPECT_EQ(a.layers, b.layers);
  ASSERT_EQ(a.findings.size(), b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].id, b.findings[i].id);
    EXPECT_EQ(a.findings[i].severity, b.findings[i].severity);
    EXPECT_EQ(a.findings[i].latency_share, b.findings[i].latency_share);
    EXPECT_EQ(a.findings[i].evidence.size(), b.findings[i].evidence.size());
  }
  EXPECT_EQ(a.change_first, b.change_first);
  EXPECT_EQ(a.partial, b.partial);
  EXPECT_EQ(a.partial_reason, b.partial_reason);
  EXPECT_EQ(a.sections, b.sections);
}

TEST(DiagnosisTest, ChangeFirstIsTheTopFailureWithAdvice) {
  const Diagnosis d = Example();
  ASSERT_EQ(d.change_first, 1u);
  EXPECT_EQ(d.ChangeFirst()->id, "config.max_num_seqs");
}

TEST(DiagnosisTest, JsonDocumentAndBack) {
  Diagnosis d = Example();
  d.partial = true;
  d.partial_reason = "interrupted by SIGINT";
  const ordered_json doc = ToJson(d);
  EXPECT_EQ(doc["schema"], "latdoc.diagnose/1");
  EXPECT_EQ(doc["bench"]["completed"], 200);
  EXPECT_EQ(doc["layers"]["kernel"], "skipped: no --trace given");
  EXPECT_EQ(doc["worst_severity"], "fail");
  EXPECT_EQ(doc["change_first"], (ordered_json{{"id", "config.max_num_seqs"},
                                               {"layer", "config"},
                                               {"title", "Batch limit too low"}}));
  EXPECT_EQ(doc["findings"][0]["id"], "load.queueing");
  ExpectSame(DiagnosisFromJson(doc), d);
  // Nothing to change: change_first is null, and reads back as none.
  Diagnosis quiet;
  SetFindings(quiet, {Make("net.rtt", Layer::kNetwork, Severity::kOk, "fine", "", std::nullopt)});
  EXPECT_TRUE(ToJson(quiet)["change_first"].is_null());
  EXPECT_EQ(DiagnosisFromJson(ToJson(quiet)).ChangeFirst(), nullptr);
  EXPECT_TRUE(ToJson(quiet)["target"].is_null());
  EXPECT_TRUE(ToJson(quiet)["target_reachable"].is_null());
}

TEST(DiagnosisTest, ReadBackNeverThrowsAndCountsUnreadableFindings) {
  ordered_json doc = ToJson(Example());
  doc["findings"].push_back({{"id", 7}, {"layer", "load"}, {"severity", "warn"}});
  doc["findings"].push_back({{"id", "x"}, {"layer", "nowhere"}, {"severity", "warn"}});
  doc["findings"][0]["title"] = 12;  // a mistyped field reads as absent
  doc["layers"]["logs"] = 3;
  doc["target"] = false;
  Diagnosis d;
  ASSERT_NO_THROW(d = DiagnosisFromJson(doc));
  EXPECT_EQ(d.unreadable_findings, 2);
  EXPECT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].title, "");
  EXPECT_EQ(d.layers.size(), 3u);
  EXPECT_FALSE(d.target);
  EXPECT_NO_THROW(DiagnosisFromJson(ordered_json::array()));
  EXPECT_NO_THROW(DiagnosisFromJson(ordered_json("text")));
}

TEST(DiagnosisTest, ChangeFirstComesFromTheDocument) {
  ordered_json doc = ToJson(Example());
  // A document that names another finding is believed: the report shows what the run said.
  doc["change_first"] = {{"id", "load.queueing"}, {"layer", "load"}};
  EXPECT_EQ(DiagnosisFromJson(doc).ChangeFirst()->id, "load.queueing");
  // One that names no finding of the document has none.
  doc["change_first"] = {{"id", "gone"}, {"layer", "load"}};
  EXPECT_EQ(DiagnosisFromJson(doc).ChangeFirst(), nullptr);
  // One without the field (an older latdoc's) takes the rule's choice.
  doc.erase("change_first");
  EXPECT_EQ(DiagnosisFromJson(doc).ChangeFirst()->id, "config.max_num_seqs");
}

// Markdown and HTML name the diagnosis's change_first first, not the top-ranked item.
TEST(DiagnosisTest, ReportsShowChangeFirstFirst) {
  const Diagnosis d = Example();
  const std::string md = RenderMarkdownReport(d);
  EXPECT_THAT(md, HasSubstr("## Change first\n\n**Batch limit too low** (`config.max_num_seqs`)"));
  HtmlReportOptions o;
  o.embed_chart_library = false;
  const std::string html = RenderHtmlReport(d, o);
  EXPECT_THAT(html, HasSubstr("<div class=\"first\"><div class=\"t\">1. Batch limit too low"));
  EXPECT_THAT(html, HasSubstr("<div class=\"first\"><div class=\"t\">2. Requests queue"));
}

}  // namespace
}  // namespace latdoc::report
