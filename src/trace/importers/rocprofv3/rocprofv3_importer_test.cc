#include "trace/importers/rocprofv3/rocprofv3_importer.h"

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kDir[] = "tests/data/trace/handmade/";

TEST(Rocprofv3CsvTest, OneFileOfTheSetReadsItsSiblingsAsOneSource) {
  Trace trace;
  const std::string k = std::string(kDir) + "run1_kernel_trace.csv";
  const std::string h = std::string(kDir) + "run1_hip_api_trace.csv";
  auto r = ImportFiles({k, h}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocprofv3_csv");
  EXPECT_EQ(r[1].format, "(read with its set)");
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.gpu_ops.size(), 3u + 2);   // one kernel row dropped (negative)
  EXPECT_EQ(trace.api_calls.size(), 7u);
  ASSERT_EQ(trace.sources[0].issues.total(), 1);
  EXPECT_EQ(trace.sources[0].issues.examples[0].where, "run1_kernel_trace.csv line 5");
  int copies = 0;
  for (const GpuOp& op : trace.gpu_ops) {
    EXPECT_NE(op.api, kNoLink) << trace.Name(op.name);
    if (op.kind == GpuOpKind::kMemcpy) ++copies;
    if (op.kind == GpuOpKind::kKernel) {
      EXPECT_EQ(op.device, 4);
    }
  }
  EXPECT_EQ(copies, 3);   // 2 SDMA copies + the rocclr copy kernel
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  // hipMemcpyWithStream (sync) launched the rocclr copy; hipMemcpy the DtoH copy.
  int64_t sync = 0;
  for (const auto& d : rep.copies.by_direction) sync += d.sync_count;
  EXPECT_EQ(sync, 2);
  EXPECT_TRUE(rep.copies.pageable_is_heuristic);
}

TEST(Rocprofv3CsvTest, MissingColumnIsAnErrorNamingFileAndLine) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "badcols_kernel_trace.csv"}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.message(),
            std::string(kDir) + "badcols_kernel_trace.csv: line 1: missing column Start_Timestamp or End_Timestamp");
}

TEST(Rocprofv3JsonTest, ResolvesNamesDeclaredAfterTheRecords) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "rocprofv3_results.json"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocprofv3_json");
  ASSERT_EQ(trace.gpu_ops.size(), 2u);
  const GpuOp& copy = trace.gpu_ops[0];
  EXPECT_EQ(copy.kind, GpuOpKind::kMemcpy);
  EXPECT_EQ(copy.direction, CopyDirection::kHtoD);
  EXPECT_EQ(copy.bytes, 8192);
  ASSERT_NE(copy.api, kNoLink);
  EXPECT_EQ(trace.Name(trace.api_calls[copy.api].name), "hipMemcpyAsync");
  const GpuOp& k = trace.gpu_ops[1];
  EXPECT_EQ(trace.Name(k.name), "matmul(float*, float*)");
  EXPECT_EQ(k.device, 0);
  ASSERT_NE(k.api, kNoLink);
  EXPECT_EQ(trace.Name(trace.api_calls[k.api].name), "hipLaunchKernel");
  EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("negative duration"), 1);
  EXPECT_EQ(trace.sources[0].issues.examples[0].where, "buffer_records.kernel_dispatch[1]");
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].arch, "gfx942");
}

}  // namespace
}  // namespace latdoc::trace
