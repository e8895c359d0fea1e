// The contract of the spilled tables: a trace whose tables spill to their files after a few rows
// (so Finalize sorts externally and links by a merge join, and every analysis reads its tables
// back, sorts its samples externally, and sweeps without holding sets) gives exactly what the
// same trace held in memory gives: the same events in the same order with the same links, the
// same facts to the last bit, the same summary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trace/analysis/summary_text.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

struct Case {
  const char* name;
  std::vector<std::string> inputs;
};

class SpillEquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(SpillEquivalenceTest, SpilledTablesGiveTheInMemoryResult) {
  const Case& c = GetParam();
  Trace memory;
  const auto mr = ImportFiles(c.inputs, ImportOptions{}, memory);
  for (const auto& r : mr) ASSERT_TRUE(r.status.ok()) << r.path << ": " << r.status.ToString();
  ASSERT_EQ(memory.gpu_ops.spilled(), 0u);
  const AnalysisOptions o;
  const TraceReport want = Analyze(memory, o);
  const std::string want_dump = DumpTrace(memory);
  const std::string want_facts = ReportToJson(want).dump(1);
  const std::string want_summary = RenderTraceSummary(want, memory.sources, o);

  // Blocks of 3 rows: a thousand runs and more, so the sorts merge in several passes.
  for (size_t block : {3, 50, 4096}) {
    Trace spilled(block);
    const auto sr = ImportFiles(c.inputs, ImportOptions{}, spilled);
    for (const auto& r : sr) ASSERT_TRUE(r.status.ok()) << r.path << ": " << r.status.ToString();
    if (memory.gpu_ops.size() > block) {
      EXPECT_GT(spilled.gpu_ops.spilled(), 0u) << block;
    }
    if (memory.api_calls.size() > block) {
      EXPECT_GT(spilled.api_calls.spilled(), 0u) << block;
    }
    EXPECT_EQ(DumpTrace(spilled), want_dump) << "block " << block;
    const TraceReport got = Analyze(spilled, o);
    EXPECT_EQ(ReportToJson(got).dump(1), want_facts) << "block " << block;
    EXPECT_EQ(RenderTraceSummary(got, spilled.sources, o), want_summary) << "block " << block;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, SpillEquivalenceTest,
    ::testing::Values(
        Case{"kineto_h200", {"tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz"}},
        // Three files at once: correlation ids repeat across them, linked per file.
        Case{"tracelens_three_files",
             {"tests/data/trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz",
              "tests/data/trace/tracelens/mi300x_qwen0.5b/trace.json.gz",
              "tests/data/trace/tracelens/h100_qwen0.5b/trace.json.gz"}},
        Case{"rocpd", {"tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db"}},
        Case{"rocpd_synthetic", {"tests/data/trace/rocpd/synthetic_200_results.db"}},
        Case{"nsys", {"tests/data/trace/nsys/vecadd_pageable_report1.sqlite"}},
        Case{"rocprof_v1_json", {"tests/data/trace/rocprof_v1/hip_vecadd/results.json"}},
        Case{"rocprof_v1_csv", {"tests/data/trace/handmade/v1_results.csv"}},
        Case{"rocprofv3_json", {"tests/data/trace/handmade/rocprofv3_results.json"}},
        Case{"rocprofv3_csv", {"tests/data/trace/handmade/run1_kernel_trace.csv"}}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace latdoc::trace
