#include "trace/analysis/roofline.h"

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

TraceReport AnalyzeFiles(const std::vector<std::string>& paths) {
  Trace t;
  for (const auto& r : ImportFiles(paths, ImportOptions{}, t, nullptr)) EXPECT_TRUE(r.status.ok()) << r.status.message();
  return Analyze(t, AnalysisOptions{});
}

// The real H200 trace with a 6144^3 fp32 GEMM every 4th of 16 steps: 4 instances, each
// 2*6144^3 FLOPs, at about 9.1 ms each: about 51 TFLOP/s.
TEST(RooflineTest, HeavyGemmOfTheRealH200TraceRunsAtItsShapesRate) {
  const TraceReport r = AnalyzeFiles({"tests/data/trace/h200_pathologies/h200_decode_heavy_every4.json.gz"});
  ASSERT_FALSE(r.roofline.kernels.empty());
  const RooflineKernel& k = r.roofline.kernels.front();
  EXPECT_EQ(k.op, "aten::mm");
  EXPECT_EQ(k.dtype, "fp32");
  EXPECT_EQ(k.kind, "gemm");
  EXPECT_EQ(k.count, 4);
  ASSERT_TRUE(k.flops.has_value());
  EXPECT_DOUBLE_EQ(*k.flops, 4 * 2.0 * 6144 * 6144 * 6144);
  ASSERT_TRUE(k.achieved_tflops.has_value());
  EXPECT_NEAR(*k.achieved_tflops, 2.0 * 6144 * 6144 * 6144 / 9.1e-3 / 1e12, 2.0);
  ASSERT_TRUE(k.intensity.has_value());
  EXPECT_NEAR(*k.intensity, 2.0 * 6144 / (3 * 4), 1e-9);   // 2N^3 / (3 N^2 * 4 bytes)
  // Nearly every kernel of an eager decode step has its op's work.
  EXPECT_GT(r.roofline.kernel_ns_with_work, r.roofline.kernel_ns * 9 / 10);
  EXPECT_GT(r.roofline.work_ops, 1000);
}

// rocprof v1 counters: a kernel's bytes are FETCH_SIZE + WRITE_SIZE; no FLOPs.
TEST(RooflineTest, CounterBytesGiveBandwidthOnly) {
  const TraceReport r = AnalyzeFiles({"tests/data/trace/handmade/v1_results.csv"});
  ASSERT_EQ(r.roofline.kernels.size(), 1u);
  const RooflineKernel& k = r.roofline.kernels.front();
  EXPECT_EQ(k.kind, "counters");
  EXPECT_FALSE(k.flops.has_value());
  ASSERT_TRUE(k.bytes.has_value());
  EXPECT_DOUBLE_EQ(*k.bytes, 2 * (4096.0 + 2048.0) * 1024);
  ASSERT_TRUE(k.achieved_gbps.has_value());
  EXPECT_NEAR(*k.achieved_gbps, 2 * 6144.0 * 1024 / 200e-6 / 1e9, 1e-6);
}

// A graph-replayed loop: its kernels carry no op id, so almost nothing has known work.
TEST(RooflineTest, GraphReplayHasAlmostNoKnownWork) {
  const TraceReport r = AnalyzeFiles({"tests/data/trace/h200_pathologies/h200_decode_clean_graph.json.gz"});
  EXPECT_LT(r.roofline.kernel_ns_with_work, r.roofline.kernel_ns / 100);
}

}  // namespace
}  // namespace latdoc::trace
