// Golden files: the analysis facts (ReportToJson) and the terminal summary of fixtures must not
// change unnoticed. Regenerate with tools/gen_trace_goldens.sh after an intended change, and
// review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "trace/analysis/summary_text.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

struct Case {
  const char* name;
  const char* input;
};

void CheckGolden(const std::string& golden_path, const std::string& got) {
  if (std::getenv("LATDOC_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomic(golden_path, got).ok());
    return;
  }
  auto want = ReadFileToString(golden_path);
  ASSERT_TRUE(want.ok()) << golden_path << " missing: run tools/gen_trace_goldens.sh";
  if (*want == got) return;
  std::istringstream a(*want), b(got);
  std::string la, lb;
  int line = 1;
  while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
  FAIL() << golden_path << " differs at line " << line << "\n want: " << la << "\n  got: " << lb;
}

class ReportGoldenTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReportGoldenTest, FactsAndSummaryMatchGolden) {
  const Case& c = GetParam();
  Trace trace;
  auto r = ImportFiles({c.input}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  const AnalysisOptions o;
  const TraceReport rep = Analyze(trace, o);
  CheckGolden(std::string("tests/data/trace/golden/") + c.name + ".facts.json",
              ReportToJson(rep).dump(1) + "\n");
  CheckGolden(std::string("tests/data/trace/golden/") + c.name + ".summary.txt",
              RenderTraceSummary(rep, trace.sources, o));
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, ReportGoldenTest,
    ::testing::Values(Case{"tracelens_mi300x_qwen", "tests/data/trace/tracelens/mi300x_qwen0.5b/trace.json.gz"},
                      Case{"rocpd_mi300x_gemm", "tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db"},
                      Case{"nsys_vecadd", "tests/data/trace/nsys/vecadd_pageable_report1.sqlite"},
                      Case{"rocprofv3_csv_run1", "tests/data/trace/handmade/run1_kernel_trace.csv"}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace latdoc::trace
