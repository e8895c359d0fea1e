#include "report/markdown_report.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/file_util.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;
using ::testing::HasSubstr;

const char kExample[] = "tests/data/report/diagnosis_example.json";
const char kGoldenMd[] = "tests/data/report/diagnosis_example.golden.md";

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
            "- findings: 0 fail, 0 warn, 0 info, 0 ok, 0 skipped\n\n"
            "## Findings checklist\n\nRanked by the estimated share of latency each explains, then severity.\n\n"
            "No findings.\n\n"
            "## Layers checked\n\n| layer | status |\n|---|---|\n"
            "| network | not reported |\n| system | not reported |\n| kernel | not reported |\n"
            "| config | not reported |\n| load | not reported |\n\n"
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
  EXPECT_THAT(md, HasSubstr("| `a\\|b c` | 2 | 4 | 2000 | 50.0 |\n"));
}

}  // namespace
}  // namespace latdoc::report
