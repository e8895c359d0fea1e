#include "trace/model/trace.h"

#include <gtest/gtest.h>

namespace latdoc::trace {
namespace {

TEST(StringTableTest, InternsOnceAndKeepsViewsStable) {
  StringTable t;
  const NameId a = t.Intern("hipLaunchKernel");
  for (int i = 0; i < 1000; ++i) t.Intern("k" + std::to_string(i));
  EXPECT_EQ(t.Intern("hipLaunchKernel"), a);
  EXPECT_EQ(t.Get(a), "hipLaunchKernel");
  EXPECT_EQ(t.size(), 1001u);
}

TEST(ClassifyApiTest, NamesOfBothVendors) {
  EXPECT_EQ(ClassifyApi("cudaLaunchKernel_v7000"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("cuLaunchKernel"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("hipExtModuleLaunchKernel"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("hipGraphLaunch"), ApiKind::kGraphLaunch);
  EXPECT_EQ(ClassifyApi("cudaGraphLaunch_v10000"), ApiKind::kGraphLaunch);
  EXPECT_EQ(ClassifyApi("cudaMemcpyAsync"), ApiKind::kMemcpyAsync);
  EXPECT_EQ(ClassifyApi("hipMemcpyWithStream"), ApiKind::kMemcpy);
  EXPECT_EQ(ClassifyApi("cudaMemcpy_v3020"), ApiKind::kMemcpy);
  EXPECT_EQ(ClassifyApi("hipMemsetAsync"), ApiKind::kMemset);
  EXPECT_EQ(ClassifyApi("cudaStreamSynchronize"), ApiKind::kSync);
  EXPECT_EQ(ClassifyApi("hipDeviceSynchronize"), ApiKind::kSync);
  EXPECT_EQ(ClassifyApi("hipMalloc"), ApiKind::kMalloc);
  EXPECT_EQ(ClassifyApi("cudaFreeHost"), ApiKind::kFree);
  EXPECT_EQ(ClassifyApi("cudaStreamIsCapturing"), ApiKind::kOther);
  EXPECT_EQ(ClassifyApi("aten::mm"), ApiKind::kOther);
}

TEST(TraceTest, FinalizeLinksByCorrelationWithinOneSourceOnly) {
  Trace t;
  const uint16_t a = t.AddSource("a", "test");
  const uint16_t b = t.AddSource("b", "test");
  ApiCall call;
  call.source = a;
  call.correlation = 7;
  call.start_ns = 5;
  t.api_calls.push_back(call);
  GpuOp same, other;
  same.source = a;
  same.correlation = 7;
  same.start_ns = 20;
  other.source = b;
  other.correlation = 7;
  other.start_ns = 10;
  t.gpu_ops = {same, other};
  t.Finalize();
  ASSERT_EQ(t.gpu_ops.size(), 2u);
  EXPECT_EQ(t.gpu_ops[0].source, b);  // sorted by start
  EXPECT_EQ(t.gpu_ops[0].api, kNoLink);
  EXPECT_EQ(t.gpu_ops[1].api, 0u);
}

TEST(ImportIssuesTest, CountsEveryIssueButKeepsFewExamples) {
  ImportIssues is;
  for (int i = 0; i < 25; ++i) is.Add("negative duration", "row " + std::to_string(i));
  is.Add("missing ts", "byte 9");
  EXPECT_EQ(is.total(), 26);
  EXPECT_EQ(is.count_by_reason.at("negative duration"), 25);
  EXPECT_EQ(is.examples.size(), ImportIssues::kMaxExamples);
  EXPECT_EQ(is.examples[0].where, "row 0");
}

}  // namespace
}  // namespace latdoc::trace
