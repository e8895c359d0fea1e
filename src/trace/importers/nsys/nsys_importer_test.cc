#include "trace/importers/nsys/nsys_importer.h"

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kFixture[] = "tests/data/trace/nsys/vecadd_pageable_report1.sqlite";

TEST(NsysImporterTest, ReadsVecAddFixture) {
  Trace trace;
  auto r = ImportFiles({kFixture}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "nsys");
  int kernels = 0, h2d = 0, d2h = 0, pageable = 0;
  for (const GpuOp& op : trace.gpu_ops) {
    if (op.kind == GpuOpKind::kKernel) ++kernels;
    if (op.direction == CopyDirection::kHtoD) ++h2d;
    if (op.direction == CopyDirection::kDtoH) ++d2h;
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) ++pageable;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(h2d, 2);
  EXPECT_EQ(d2h, 1);
  EXPECT_EQ(pageable, 3);
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].arch, "sm86");
  // The launch joins on correlationId: cudaLaunchKernel end -> kernel start = 1,119,214 ns.
  for (const GpuOp& op : trace.gpu_ops) {
    if (op.kind != GpuOpKind::kKernel) continue;
    ASSERT_NE(op.api, kNoLink);
    const ApiCall& a = trace.api_calls[op.api];
    EXPECT_EQ(trace.Name(a.name), "cudaLaunchKernel");
    EXPECT_EQ(a.kind, ApiKind::kKernelLaunch);
    EXPECT_EQ(op.start_ns - a.end_ns(), 1119214);
  }
}

TEST(NsysImporterTest, CopiesAreSynchronousAndPageable) {
  Trace trace;
  ImportFiles({kFixture}, ImportOptions{}, trace);
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  int64_t sync = 0, pageable = 0;
  for (const auto& d : rep.copies.by_direction) {
    sync += d.sync_count;
    pageable += d.pageable_count;
    if (d.direction == CopyDirection::kHtoD) {
      EXPECT_EQ(d.bytes, 2 * 4194304);
    }
  }
  EXPECT_EQ(sync, 3);
  EXPECT_EQ(pageable, 3);
  EXPECT_FALSE(rep.copies.pageable_is_heuristic);
}

}  // namespace
}  // namespace latdoc::trace
