// Several files (ranks, processes) analysed together: device numbers, correlation ids and clocks
// repeat or differ from file to file, so what belongs to one process is judged per file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "trace/analysis/annotate.h"
#include "trace/analysis/summary_text.h"
#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

class TwoRanks {
 public:
  TwoRanks() {
    trace.AddSource("rank0.json", "test");
    trace.AddSource("rank1.json", "test");
  }
  GpuOp& Kernel(uint16_t source, int32_t device, int64_t start_ns, int64_t dur_ns) {
    GpuOp op;
    op.source = source;
    op.device = device;
    op.start_ns = start_ns;
    op.dur_ns = dur_ns;
    op.name = trace.names.Intern("k");
    trace.gpu_ops.push_back(op);
    return trace.gpu_ops.last();
  }
  void SmallCopy(uint16_t source, int64_t start_ns) {
    GpuOp& op = Kernel(source, 0, start_ns, 1'000);
    op.kind = GpuOpKind::kMemcpy;
    op.direction = CopyDirection::kHtoD;
    op.bytes = 4096;
    op.name = trace.names.Intern("Memcpy HtoD");
  }
  void Call(uint16_t source, ApiKind kind, const char* name, int64_t start_ns) {
    ApiCall a;
    a.source = source;
    a.kind = kind;
    a.name = trace.names.Intern(name);
    a.start_ns = start_ns;
    a.dur_ns = 0;
    trace.api_calls.push_back(a);
  }
  TraceReport Analyze() {
    trace.Finalize();
    return trace::Analyze(trace, AnalysisOptions{});
  }
  Trace trace;
};

// Both ranks see their GPU as device 0, and rank 1 ran a microsecond later: two devices, each
// busy all its own window, not one device idle for most of the pair's.
TEST(MultiSourceTest, RanksWithTheSameDeviceNumberAreSeparateDevices) {
  TwoRanks t;
  t.Kernel(0, 0, 0, 100);
  t.Kernel(1, 0, 1'000, 100);
  const TraceReport r = t.Analyze();
  ASSERT_EQ(r.per_device.size(), 2u);
  for (uint16_t s = 0; s < 2; ++s) {
    const GpuTimeline& d = r.per_device[s];
    EXPECT_EQ(d.source, s);
    EXPECT_EQ(d.device, 0);
    EXPECT_EQ(d.total_ns, 100);
    EXPECT_EQ(d.busy_ns, 100);
    EXPECT_EQ(d.idle_ns, 0);
  }
  EXPECT_EQ(r.timeline.total_ns, 1'100);  // the whole trace, as TraceLens counts it
  // What the findings judge, in the JSON and the summary: each device on its own window.
  ASSERT_TRUE(r.devices_summed.has_value());
  EXPECT_EQ(r.devices_summed->total_ns, 200);
  EXPECT_EQ(r.devices_summed->busy_ns, 200);
  EXPECT_EQ(r.devices_summed->idle_ns, 0);
  EXPECT_EQ(ReportToJson(r)["gpu_timeline_devices_summed"]["idle_pct"], 0.0);
  EXPECT_NE(RenderTraceSummary(r, t.trace.sources, AnalysisOptions{})
                .find("2 devices summed, each on its own window: total 0.000 ms, busy 0.000 ms, idle 0.000 ms"),
            std::string::npos);
}

// Rank 0's small copies 1.5 ms apart, rank 1's in between: no storm (each process's gaps are
// over the 1 ms limit). Three of rank 0's 0.2 ms apart, with rank 1's copies between them: one.
TEST(MultiSourceTest, SmallCopyStormsArePerProcess) {
  {
    TwoRanks t;
    for (int64_t ms10 : {0, 15, 30}) t.SmallCopy(0, ms10 * 100'000);
    for (int64_t ms10 : {7, 22}) t.SmallCopy(1, ms10 * 100'000 + 50'000);
    const TraceReport r = t.Analyze();
    ASSERT_EQ(r.copies.by_direction.size(), 1u);
    EXPECT_EQ(r.copies.by_direction[0].small_count, 5);
    EXPECT_EQ(r.copies.by_direction[0].storm_runs, 0);
  }
  {
    TwoRanks t;
    for (int64_t us : {0, 200, 400}) t.SmallCopy(0, us * 1'000);
    for (int64_t us : {100, 300}) {
      GpuOp& big = t.Kernel(1, 0, us * 1'000, 1'000);
      big.kind = GpuOpKind::kMemcpy;
      big.direction = CopyDirection::kHtoD;
      big.bytes = 64 << 20;  // not small: would break a run of rank 0's if runs were shared
    }
    const TraceReport r = t.Analyze();
    ASSERT_EQ(r.copies.by_direction.size(), 1u);
    EXPECT_EQ(r.copies.by_direction[0].storm_runs, 1);
    EXPECT_EQ(r.copies.by_direction[0].longest_storm, 3);
  }
}

// Rank 1's clock is 1000 s ahead. Each rank's warm-up is the first 20% of its own calls' span,
// and its launch rate is over its own span.
TEST(MultiSourceTest, WarmUpAndLaunchRateArePerProcess) {
  TwoRanks t;
  constexpr int64_t kLater = 1'000'000'000'000;
  for (int64_t i = 0; i <= 10; ++i) t.Call(0, ApiKind::kKernelLaunch, "cudaLaunchKernel", i * 100);
  t.Call(0, ApiKind::kSync, "cudaDeviceSynchronize", 100);  // warm-up of rank 0
  t.Call(0, ApiKind::kSync, "cudaDeviceSynchronize", 900);
  t.Call(1, ApiKind::kKernelLaunch, "cudaLaunchKernel", kLater);
  t.Call(1, ApiKind::kKernelLaunch, "cudaLaunchKernel", kLater + 1'000'000);
  t.Call(1, ApiKind::kSync, "cudaDeviceSynchronize", kLater + 100);  // warm-up of rank 1
  t.Call(1, ApiKind::kSync, "cudaDeviceSynchronize", kLater + 900'000);
  const TraceReport r = t.Analyze();
  EXPECT_EQ(r.steady.sync_count, 2);
  EXPECT_EQ(r.steady.steady_from_ns, 200);  // rank 0's cut, the earlier
  ASSERT_TRUE(r.launch.launches_per_s.has_value());
  EXPECT_DOUBLE_EQ(*r.launch.launches_per_s, 11 * 1e9 / 1'000);  // rank 0: 11 over 1 us
}

// A trace whose launches are all in one file and a kernel-only file beside it (a rocprofv3
// kernel trace): the TraceLens rule (count GPU ops with a host launch) holds for the first;
// the second has no launches to hold it to, so its ops count, as when it is read alone.
TEST(MultiSourceTest, KernelOnlyFileCountsBesideALinkedOne) {
  TwoRanks t;
  t.Call(0, ApiKind::kKernelLaunch, "cudaLaunchKernel", 0);
  t.trace.api_calls.last().correlation = 5;
  t.Kernel(0, 0, 10, 100).correlation = 5;
  t.Kernel(0, 0, 200, 100);  // rank 0, no launch in the trace: dropped by the rule
  t.Kernel(1, 0, 0, 1'000);
  const TraceReport r = t.Analyze();
  EXPECT_EQ(r.timeline.ops, 2);
  EXPECT_EQ(r.timeline.ops_dropped_unlinked, 1);
  EXPECT_EQ(r.timeline.busy_ns, 1'000);  // [0, 1000) covers rank 0's [10, 110)
  ASSERT_EQ(r.per_device.size(), 2u);
  EXPECT_EQ(r.per_device[0].ops, 1);
  EXPECT_EQ(r.per_device[1].ops, 1);
  EXPECT_EQ(r.per_device[1].busy_ns, 1'000);
}

// Rates are per file, over the file's own span: rank 0's 50 small copies in 0.1 s are 500/s
// (and more, as its span is the copies' own), whatever rank 1, 1000 s later, does.
TEST(MultiSourceTest, SmallCopyRateIsPerFileOverItsOwnSpan) {
  TwoRanks t;
  for (int64_t i = 0; i < 50; ++i) t.SmallCopy(0, i * 2'000'000);   // 0 .. 98 ms
  t.Kernel(1, 0, 1'000'000'000'000, 100);
  const TraceReport r = t.Analyze();
  ASSERT_EQ(r.copies.by_direction.size(), 1u);
  ASSERT_TRUE(r.copies.by_direction[0].small_per_s.has_value());
  EXPECT_NEAR(*r.copies.by_direction[0].small_per_s, 50 / 0.098001, 0.01);
  ASSERT_TRUE(r.copies.small_copies_per_s.has_value());
  EXPECT_NEAR(*r.copies.small_copies_per_s, 50 / 0.098001, 0.01);
}

// One stream on each of two ranks' GPUs is no serialisation: only a device with two streams or
// more is judged for concurrency. Busy time is summed per device: 200 ns, not the union's 100.
TEST(MultiSourceTest, StreamsAndBusyTimeArePerDevice) {
  TwoRanks t;
  t.Kernel(0, 0, 0, 100).stream = 7;
  t.Kernel(1, 0, 0, 100).stream = 7;
  TraceReport r = t.Analyze();
  EXPECT_EQ(r.overlap.streams_with_kernels, 2);
  EXPECT_EQ(r.overlap.max_streams_per_device, 1);
  EXPECT_FALSE(r.overlap.concurrency_share.has_value());
  EXPECT_EQ(r.all_ops_busy_ns, 200);
  EXPECT_DOUBLE_EQ(r.hot_kernels.at(0).busy_share, 1.0);   // 200 of 200, not 200%

  TwoRanks u;   // rank 0 has two streams, one after the other: judged, 0% concurrent
  u.Kernel(0, 0, 0, 100).stream = 7;
  u.Kernel(0, 0, 100, 100).stream = 8;
  u.Kernel(1, 0, 0, 100).stream = 7;
  r = u.Analyze();
  EXPECT_EQ(r.overlap.max_streams_per_device, 2);
  EXPECT_EQ(r.overlap.multi_stream_busy_ns, 200);
  ASSERT_TRUE(r.overlap.concurrency_share.has_value());
  EXPECT_EQ(*r.overlap.concurrency_share, 0.0);
}

// In the annotated trace two ranks' calls get a track per file, as their GPU ops do: with the
// same pid (containers) they would share one thread and overlap there. One file keeps its pids.
TEST(MultiSourceTest, AnnotatedTraceGivesEachFilesCallsTheirOwnTrack) {
  TwoRanks t;
  t.Kernel(0, 0, 1'500, 100);
  t.Kernel(1, 0, 2'500, 100);
  t.Call(0, ApiKind::kKernelLaunch, "cudaLaunchKernel", 990'000);
  t.Call(1, ApiKind::kKernelLaunch, "cudaLaunchKernel", 993'000);
  t.trace.Finalize();
  const std::string two = RenderAnnotatedTrace(t.trace, {}, AnnotateOptions{});
  EXPECT_NE(two.find("\"pid\": \"host 0:0\", \"tid\": 0, \"ts\": 990.000"), std::string::npos) << two;
  EXPECT_NE(two.find("\"pid\": \"host 1:0\", \"tid\": 0, \"ts\": 993.000"), std::string::npos) << two;
  EXPECT_NE(two.find("\"pid\": \"GPU 1:0\", \"tid\": \"stream 0\", \"ts\": 2.500, \"dur\": 0.100"),
            std::string::npos) << two;

  Trace one;
  one.AddSource("rank0.json", "test");
  one.api_calls.push_back(t.trace.api_calls[0]);
  one.names.Intern("k");
  one.names.Intern("cudaLaunchKernel");
  one.Finalize();
  const std::string single = RenderAnnotatedTrace(one, {}, AnnotateOptions{});
  EXPECT_NE(single.find("\"pid\": 0, \"tid\": 0, \"ts\": 990.000"), std::string::npos) << single;
}

// An outlier names the file it ran in: both ranks call their GPU device 0.
TEST(MultiSourceTest, OutliersNameTheirFile) {
  TwoRanks t;
  for (uint16_t source : {0, 1}) {
    for (int64_t i = 0; i < 10; ++i) t.Kernel(source, 0, i * 1'000'000, 10'000);
  }
  t.Kernel(1, 0, 20'000'000, 500'000);
  const TraceReport r = t.Analyze();
  ASSERT_EQ(r.outliers.size(), 1u);
  EXPECT_EQ(r.outliers[0].source, 1);
  EXPECT_EQ(ReportToJson(r)["outliers"]["instances"][0]["source"], 1);
  EXPECT_NE(RenderTraceSummary(r, t.trace.sources, AnalysisOptions{}).find("device 0 of rank1.json stream 0: k"),
            std::string::npos);
}

}  // namespace
}  // namespace latdoc::trace
