#include "report/markdown_report.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"
#include "report/findings_text.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;
using ::testing::HasSubstr;

const char kExample[] = "tests/data/report/diagnosis_example.json";
const char kGoldenMd[] = "tests/data/report/diagnosis_example.golden.md";

// The Markdown of a diagnosis document (as `latdoc diagnose --json` writes it), read back.
std::string RenderMarkdownReport(const ordered_json& doc) {
  return report::RenderMarkdownReport(DiagnosisFromJson(doc));
}

// The Markdown of the example diagnosis is byte-identical to the golden file
// (tests/data/report/regen_golden.sh rewrites it).
TEST(MarkdownReportTest, ExampleMatchesGolden) {
  auto text = ReadFileToString(kExample);
  ASSERT_TRUE(text.ok());
  const std::string md = RenderMarkdownReport(ordered_json::parse(*text));
  if (const char* regen = std::getenv("LATDOC_REGEN_GOLDEN"); regen && regen[0] == '1') {
    ASSERT_TRUE(WriteFileAtomic(kGoldenMd, md).ok());
  }
  auto golden = ReadFileToString(kGoldenMd);
  ASSERT_TRUE(golden.ok());
  EXPECT_EQ(md, *golden);
}

TEST(MarkdownReportTest, NothingMeasured) {
  const std::string md = RenderMarkdownReport(ordered_json::object());
  EXPECT_EQ(md,
            "# latdoc diagnosis\n\n"
            "- target: n/a\n"
            "- model: n/a\n"
            "- findings: 0 fail, 0 warn, 0 info, 0 ok, 0 skipped\n\n"
            "## Findings checklist\n\nProblems (fail, warn) first, ranked by the estimated share of the mean end-to-end latency "
            "each explains (a trace's only when it was recorded from the server under test), then severity; "
            "then the rest.\n\n"
            "No findings.\n\n"
            "## Layers checked\n\n| layer | status |\n|---|---|\n"
            "| network | not reported |\n| system | not reported |\n| kernel | not reported |\n"
            "| config | not reported |\n| load | not reported |\n| logs | not reported |\n\n"
            "## TTFT decomposition\n\n_TTFT waterfall: not measured._\n\n"
            "## Load run\n\n_Load run: not measured._\n\n"
            "## Latency curve (sweep)\n\n_Latency curve: not measured._\n\n"
            "## GPU time (trace)\n\n_GPU timeline: not measured._\n\n_Kernel time breakdown: not measured._\n\n"
            "## GPU idle gaps (trace)\n\n_GPU idle gaps: not measured._\n\n"
            "## Server queue and KV cache\n\n_Queue and KV-cache series: not measured._\n\n");
}

// A '|' or newline inside a name cannot break a table row.
TEST(MarkdownReportTest, CellsEscapePipesAndNewlines) {
  const ordered_json d = {
      {"trace", {{"facts", {{"kernels", {{{"name", "a|b\nc"}, {"count", 2}, {"total_ns", 4e6}, {"mean_ns", 2e6},
                                          {"busy_share", 0.5}}}}}}}}};
  const std::string md = RenderMarkdownReport(d);
  EXPECT_THAT(md, HasSubstr("| `a\\|b c` | 2 | 4 | 2000 | 50 |\n"));
}

// Names and messages from outside are shown literally: HTML stays text (a kernel name cannot
// inject a tag into a renderer that allows HTML), a backtick cannot end a code span early, and
// a CRLF is one line break, not a broken row.
TEST(MarkdownReportTest, OutsideTextCannotInjectHtmlOrEndACodeSpan) {
  const std::string evil = "gemm<float>(<img src=x onerror=alert(1)>) | a`b & *c*";
  const ordered_json d = {
      {"findings", {{{"id", "kernel.hot_kernel"}, {"layer", "kernel"}, {"severity", "warn"},
                     {"title", evil + "\r\nsecond line"}, {"advice", "[x](javascript:y)"}}}},
      {"layers", {{"logs", "failed: <b>log</b>"}}},
      {"trace", {{"facts", {{"kernels", {{{"name", evil}, {"count", 1}, {"total_ns", 1e6},
                                          {"mean_ns", 1e6}, {"busy_share", 1}}}}}}}}};
  const std::string md = RenderMarkdownReport(d);
  // Outside code spans no tag survives (the kernel table below shows the name as code).
  const std::string checklist = md.substr(0, md.find("## TTFT decomposition"));
  EXPECT_THAT(checklist, ::testing::Not(HasSubstr("<img")));
  EXPECT_THAT(checklist, ::testing::Not(HasSubstr("<float>")));
  EXPECT_THAT(md, HasSubstr("**gemm&lt;float&gt;(&lt;img src=x onerror=alert(1)&gt;) \\| a\\`b &amp; "
                            "\\*c\\*<br>second line**"));
  EXPECT_THAT(md, HasSubstr("| \\[x\\](javascript:y) |"));
  EXPECT_THAT(md, HasSubstr("| logs | failed: &lt;b&gt;log&lt;/b&gt; |"));
  // In a code span '<' is literal (not HTML); the fence is longer than the backtick inside.
  // The name is cut from the middle to the table's width.
  EXPECT_THAT(md, HasSubstr("| ``gemm<float>(<img src=x\xE2\x80\xA6lert(1)>) \\| a`b & *c*`` | 1 |"));
}

// Mangled C++ names (`_Z10vecAddPfS_`) keep their underscores: no emphasis, no strikethrough.
TEST(MarkdownTextTest, UnderscoresAndTildesAreLiteral) {
  EXPECT_EQ(MarkdownText("one kernel: _Z10vecAddPfS_"), "one kernel: \\_Z10vecAddPfS\\_");
  EXPECT_EQ(MarkdownText("~~x~~"), "\\~\\~x\\~\\~");
}

TEST(MarkdownCodeTest, FenceOutgrowsEveryBacktickRun) {
  EXPECT_EQ(MarkdownCode("plain"), "`plain`");
  EXPECT_EQ(MarkdownCode("a``b"), "```a``b```");
  EXPECT_EQ(MarkdownCode("`edge"), "`` `edge ``");
  EXPECT_EQ(MarkdownCode("x|y\nz"), "`x\\|y z`");
}

// The rules write commands in advice as `code`: kept as code spans, their text literal (an
// entity would show as "&lt;" inside one); the text around them and a lone backtick escaped.
TEST(MarkdownAdviceTest, CodeSpansStayCode) {
  EXPECT_EQ(MarkdownAdvice("run `nvidia-smi -pl <W>` then <b>check</b>"),
            "run `nvidia-smi -pl <W>` then &lt;b&gt;check&lt;/b&gt;");
  EXPECT_EQ(MarkdownAdvice("a `x|y` b ` c"), "a `x\\|y` b \\` c");
}

}  // namespace
}  // namespace latdoc::report
