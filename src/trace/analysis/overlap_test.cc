// Copy/compute overlap and cross-stream concurrency against a brute-force count: one
// nanosecond at a time, which streams have a kernel running and whether a copy runs.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

TEST(OverlapTest, SweepEqualsANanosecondByNanosecondCount) {
  std::mt19937 rng(5);
  AnalysisOptions o;
  o.overlap_min_copy_ns = 10;
  for (int round = 0; round < 300; ++round) {
    Trace trace(1 + rng() % 8);   // spilled after a few rows, or not
    trace.AddSource("r", "test");
    const NameId k = trace.names.Intern("k");
    std::vector<GpuOp> ops;
    int64_t t = 0;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      t += static_cast<int64_t>(rng() % 12);
      GpuOp op;
      op.name = k;
      op.start_ns = t;
      op.dur_ns = static_cast<int64_t>(rng() % 6 == 0 ? 0 : rng() % 50);
      op.device = static_cast<int32_t>(rng() % 2);
      op.stream = static_cast<int32_t>(rng() % 3);
      op.kind = rng() % 4 == 0 ? GpuOpKind::kMemcpy : rng() % 8 == 0 ? GpuOpKind::kMemset : GpuOpKind::kKernel;
      ops.push_back(op);
      trace.gpu_ops.push_back(op);
    }
    trace.Finalize();
    const OverlapStats got = ComputeOverlap(trace, o);

    OverlapStats want;
    for (int32_t dev = 0; dev < 2; ++dev) {
      std::set<int32_t> streams;
      for (const GpuOp& op : ops) {
        if (op.device == dev && op.kind == GpuOpKind::kKernel) streams.insert(op.stream);
      }
      int64_t busy = 0, multi = 0;
      for (int64_t at = 0; at < 1000; ++at) {
        std::set<int32_t> active;
        bool copying = false;
        for (const GpuOp& op : ops) {
          if (op.device != dev || at < op.start_ns || at >= op.end_ns()) continue;
          if (op.kind == GpuOpKind::kKernel) active.insert(op.stream);
          if (op.kind == GpuOpKind::kMemcpy && op.dur_ns >= o.overlap_min_copy_ns) copying = true;
        }
        busy += !active.empty();
        multi += active.size() >= 2;
        want.copy_ns += copying;
        want.copy_hidden_ns += copying && !active.empty();
      }
      if (streams.empty()) continue;
      want.streams_with_kernels += static_cast<int64_t>(streams.size());
      want.max_streams_per_device = std::max(want.max_streams_per_device, static_cast<int>(streams.size()));
      want.kernel_busy_ns += busy;
      if (streams.size() >= 2) {
        want.multi_stream_ns += multi;
        want.multi_stream_busy_ns += busy;
      }
    }
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_EQ(got.kernel_busy_ns, want.kernel_busy_ns);
    EXPECT_EQ(got.multi_stream_ns, want.multi_stream_ns);
    EXPECT_EQ(got.multi_stream_busy_ns, want.multi_stream_busy_ns);
    EXPECT_EQ(got.copy_ns, want.copy_ns);
    EXPECT_EQ(got.copy_hidden_ns, want.copy_hidden_ns);
    EXPECT_EQ(got.streams_with_kernels, want.streams_with_kernels);
    EXPECT_EQ(got.max_streams_per_device, want.max_streams_per_device);
  }
}

}  // namespace
}  // namespace latdoc::trace
