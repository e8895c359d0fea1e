#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

// Two devices with one equal gap each. The largest gaps come longest first, then earliest,
// then in file and device order, and `largest_gaps` cuts the list anywhere, through the equal
// pair too.
TEST(IdleGapsTest, LargestGapsInOrderWhereverTheCut) {
  Trace t;
  t.AddSource("a", "test");
  auto add = [&](int32_t device, int64_t start_ns) {
    GpuOp op;
    op.device = device;
    op.start_ns = start_ns;
    op.dur_ns = 10;
    op.name = t.names.Intern("k");
    t.gpu_ops.push_back(op);
  };
  for (int64_t start : {0, 30, 100}) add(0, start);   // gaps 20 at 10, 60 at 40
  for (int64_t start : {0, 30, 50}) add(1, start);    // gaps 20 at 10, 10 at 40
  t.Finalize();
  struct Want {
    int32_t device;
    int64_t at_ns, dur_ns;
  };
  const std::vector<Want> all = {{0, 40, 60}, {0, 10, 20}, {1, 10, 20}, {1, 40, 10}};
  for (int keep : {0, 1, 2, 3, 4, 10, -1}) {
    AnalysisOptions o;
    o.largest_gaps = keep;
    const IdleStats s = ComputeIdle(t, o, 0);
    const size_t n = keep < 0 ? all.size() : std::min(all.size(), static_cast<size_t>(keep));
    ASSERT_EQ(s.largest_gaps.size(), n) << "keep=" << keep;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(s.largest_gaps[i].device, all[i].device) << "keep=" << keep << " i=" << i;
      EXPECT_EQ(s.largest_gaps[i].at_ns, all[i].at_ns) << "keep=" << keep << " i=" << i;
      EXPECT_EQ(s.largest_gaps[i].dur_ns, all[i].dur_ns) << "keep=" << keep << " i=" << i;
    }
  }
}

// Forty devices over two files with the same gap at the same time (more than a sort keeps in
// order by chance): every cut lists them in file, then device, order.
TEST(IdleGapsTest, EqualGapsOnManyDevicesInFileAndDeviceOrder) {
  Trace t;
  t.AddSource("a", "test");
  t.AddSource("b", "test");
  for (int32_t device = 19; device >= 0; --device) {
    for (uint16_t source : {1, 0}) {
      for (int64_t start : {0, 30}) {
        GpuOp op;
        op.source = source;
        op.device = device;
        op.start_ns = start;
        op.dur_ns = 10;
        op.name = t.names.Intern("k");
        t.gpu_ops.push_back(op);
      }
    }
  }
  t.Finalize();
  for (int keep : {1, 7, 20, 39, 40, -1}) {
    AnalysisOptions o;
    o.largest_gaps = keep;
    const IdleStats s = ComputeIdle(t, o, 0);
    const size_t n = keep < 0 ? 40 : static_cast<size_t>(keep);
    ASSERT_EQ(s.largest_gaps.size(), n) << "keep=" << keep;
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(s.largest_gaps[i].source, i / 20) << "keep=" << keep << " i=" << i;
      EXPECT_EQ(s.largest_gaps[i].device, static_cast<int32_t>(i % 20)) << "keep=" << keep << " i=" << i;
    }
  }
}

// What the launching thread ran during each of the largest gaps: its framework ops (not
// annotations, not other threads) and API calls, clipped to the gap, merged for the busy time
// and summed by name for the top three. The same whether the CPU ops sit in memory or in the
// spill file, and whatever order they were added in.
TEST(IdleGapsTest, CpuSideOfTheGapsFromMemoryOrSpillFile) {
  for (size_t block : {size_t{1000}, size_t{2}}) {
    Trace t;
    t.cpu_ops = CpuOpTable(block);
    t.AddSource("a", "test");
    auto api = [&](int64_t correlation, int64_t start, int32_t tid) {
      ApiCall a;
      a.start_ns = start;
      a.dur_ns = 5;
      a.correlation = correlation;
      a.tid = tid;
      a.name = t.names.Intern("cudaLaunchKernel");
      a.kind = ApiKind::kKernelLaunch;
      t.api_calls.push_back(a);
    };
    auto gpu = [&](int64_t correlation, int64_t start) {
      GpuOp g;
      g.start_ns = start;
      g.dur_ns = 10;
      g.correlation = correlation;
      g.name = t.names.Intern("k");
      t.gpu_ops.push_back(g);
    };
    auto cpu = [&](const char* name, int64_t start, int64_t end, int32_t tid, CpuOpKind kind) {
      CpuOp c;
      c.start_ns = start;
      c.dur_ns = end - start;
      c.tid = tid;
      c.kind = kind;
      c.name = t.names.Intern(name);
      t.cpu_ops.push_back(c);
    };
    gpu(-1, 0);
    api(1, 90, 7);
    gpu(1, 100);    // gap [10, 100), launched on tid 7
    api(2, 250, 8);
    gpu(2, 300);    // gap [110, 300), launched on tid 8
    cpu("t8", 200, 260, 8, CpuOpKind::kOp);
    cpu("late", 95, 150, 7, CpuOpKind::kOp);
    cpu("annotation", 10, 100, 7, CpuOpKind::kAnnotation);
    cpu("outer", 0, 200, 7, CpuOpKind::kOp);
    cpu("other thread", 10, 100, 9, CpuOpKind::kOp);
    cpu("before", 50, 120, 8, CpuOpKind::kOp);
    cpu("inner", 20, 40, 7, CpuOpKind::kOp);
    t.Finalize();
    EXPECT_EQ(t.cpu_ops.spilled(), block == 2 ? 6u : 0u);
    const IdleStats s = ComputeIdle(t, AnalysisOptions{}, 0);
    ASSERT_EQ(s.largest_gaps.size(), 2u) << block;
    EXPECT_FALSE(s.cpu_ops_error.has_value());
    const IdleGap& a = s.largest_gaps[0];
    EXPECT_EQ(a.at_ns, 110);
    EXPECT_EQ(a.dur_ns, 190);
    EXPECT_EQ(a.launch_tid, 8);
    EXPECT_EQ(a.launch_wait_ns, 140);
    EXPECT_EQ(a.cpu_busy_ns, 10 + 60);   // [110, 120) and [200, 260)
    // Outermost ops only: the launch call [250, 255) is inside "t8".
    ASSERT_EQ(a.cpu_top.size(), 2u);
    EXPECT_EQ(a.cpu_top[0].name, "t8");
    EXPECT_EQ(a.cpu_top[0].overlap_ns, 60);
    EXPECT_EQ(a.cpu_top[1].name, "before");
    EXPECT_EQ(a.cpu_top[1].overlap_ns, 10);
    const IdleGap& b = s.largest_gaps[1];
    EXPECT_EQ(b.at_ns, 10);
    EXPECT_EQ(b.dur_ns, 90);
    EXPECT_EQ(b.launch_tid, 7);
    EXPECT_EQ(b.cpu_busy_ns, 90);        // "outer" covers it all
    // "inner", "late" and the launch call all sit inside "outer": counted once, in it, so the
    // times listed never add up past the thread's busy time.
    ASSERT_EQ(b.cpu_top.size(), 1u);
    EXPECT_EQ(b.cpu_top[0].name, "outer");
    EXPECT_EQ(b.cpu_top[0].overlap_ns, 90);
  }
}

// Launch stats count tiny kernels among those launched one by one: a graph's nodes share one
// launch. Copies and fills (ROCm's blit kernels among them) are kept by name for the pattern
// table, outside the kernel hot list.
TEST(LaunchStatsTest, TinyKernelsAreThoseLaunchedOneByOne) {
  Trace t;
  t.AddSource("a", "test");
  auto api = [&](const char* name, int64_t correlation, int64_t start) {
    ApiCall a;
    a.start_ns = start;
    a.dur_ns = 5'000;
    a.correlation = correlation;
    a.name = t.names.Intern(name);
    a.kind = ClassifyApi(name);
    t.api_calls.push_back(a);
  };
  auto op = [&](const char* name, GpuOpKind kind, int64_t correlation, int64_t start, int64_t dur) {
    GpuOp g;
    g.start_ns = start;
    g.dur_ns = dur;
    g.correlation = correlation;
    g.kind = kind;
    g.name = t.names.Intern(name);
    t.gpu_ops.push_back(g);
  };
  api("cudaGraphLaunch", 1, 0);
  for (int i = 0; i < 8; ++i) op("node", GpuOpKind::kKernel, 1, 10'000 + i * 3'000, 2'000);
  api("cudaLaunchKernel", 2, 50'000);
  op("eager_tiny", GpuOpKind::kKernel, 2, 60'000, 2'000);
  api("cudaLaunchKernel", 3, 70'000);
  op("eager_long", GpuOpKind::kKernel, 3, 80'000, 50'000);
  op("__amd_rocclr_copyBuffer", GpuOpKind::kMemcpy, -1, 140'000, 1'000);
  op("__amd_rocclr_copyBuffer", GpuOpKind::kMemcpy, -1, 150'000, 3'000);
  t.Finalize();
  const TraceReport r = Analyze(t, AnalysisOptions{});
  EXPECT_EQ(r.launch.kernels, 10);
  EXPECT_EQ(r.launch.graph_kernels, 8);
  EXPECT_EQ(r.launch.tiny_kernels, 1);
  EXPECT_DOUBLE_EQ(r.launch.tiny_share, 0.5);
  ASSERT_EQ(r.other_ops.size(), 1u);
  EXPECT_EQ(r.other_ops[0].name, "__amd_rocclr_copyBuffer");
  EXPECT_EQ(r.other_ops[0].kind, GpuOpKind::kMemcpy);
  EXPECT_EQ(r.other_ops[0].count, 2);
  EXPECT_EQ(r.other_ops[0].total_ns, 4'000);
  for (const KernelStat& k : r.hot_kernels) EXPECT_NE(k.name, "__amd_rocclr_copyBuffer");
}


// Achieved copy bandwidth counts only copies that took time (one recorded at 0 ns moved its
// bytes in no time); a graph's first node before its launch began is a clock mismatch.
TEST(CopyStatsTest, ZeroDurationCopiesAddBytesNotRate) {
  Trace t;
  t.AddSource("a", "test");
  auto copy = [&](int64_t start, int64_t dur, int64_t bytes) {
    GpuOp g;
    g.kind = GpuOpKind::kMemcpy;
    g.direction = CopyDirection::kHtoD;
    g.start_ns = start;
    g.dur_ns = dur;
    g.bytes = bytes;
    g.name = t.names.Intern("Memcpy HtoD");
    t.gpu_ops.push_back(g);
  };
  copy(0, 1'000, 10'000);       // 10 GB/s
  copy(5'000, 0, 1'000'000);    // no time: bytes only
  t.Finalize();
  const CopyStats s = ComputeCopyStats(t, AnalysisOptions{});
  ASSERT_EQ(s.by_direction.size(), 1u);
  EXPECT_EQ(s.by_direction[0].bytes, 1'010'000);
  EXPECT_EQ(s.by_direction[0].bytes_count, 2);
  ASSERT_TRUE(s.by_direction[0].achieved_gbps.has_value());
  EXPECT_DOUBLE_EQ(*s.by_direction[0].achieved_gbps, 10.0);

  // Graph launches: one first node 2 us after its call, one before its call began.
  Trace g;
  g.AddSource("a", "test");
  for (int64_t i : {0, 1}) {
    ApiCall a;
    a.start_ns = 100'000 * (i + 1);
    a.dur_ns = 1'000;
    a.correlation = i + 1;
    a.name = g.names.Intern("cudaGraphLaunch");
    a.kind = ApiKind::kGraphLaunch;
    g.api_calls.push_back(a);
    GpuOp k;
    k.start_ns = i == 0 ? a.end_ns() + 2'000 : a.start_ns - 50'000;
    k.dur_ns = 1'000;
    k.correlation = i + 1;
    k.name = g.names.Intern("node");
    g.gpu_ops.push_back(k);
  }
  g.Finalize();
  const LaunchStats l = ComputeLaunch(g, AnalysisOptions{});
  EXPECT_EQ(l.graph_kernels, 2);
  ASSERT_TRUE(l.graph_first_node_p50_ns.has_value());
  EXPECT_DOUBLE_EQ(*l.graph_first_node_p50_ns, 2'000);
}

// Whether a copy's host end was pageable is known only from CUDA's kinds. A ROCm copy named
// "Host -> Device" has its device end known and its host end not: it is judged by the blocking
// heuristic like one with no kinds at all; a CUDA copy from pinned (or managed) memory is not.
TEST(CopyStatsTest, PageableHeuristicForEveryCopyWithoutAHostKind) {
  for (MemKind host : {MemKind::kUnknown, MemKind::kPinned, MemKind::kManaged}) {
    Trace t;
    t.AddSource("a", "test");
    for (int64_t i = 0; i < 3; ++i) {
      ApiCall a;
      a.start_ns = i * 1'000'000;
      a.dur_ns = 110'000;  // blocks for the whole copy
      a.correlation = i + 1;
      a.name = t.names.Intern("hipMemcpyAsync");
      a.kind = ApiKind::kMemcpyAsync;
      t.api_calls.push_back(a);
      GpuOp g;
      g.kind = GpuOpKind::kMemcpy;
      g.direction = CopyDirection::kHtoD;
      g.src_kind = host;
      g.dst_kind = MemKind::kDevice;
      g.start_ns = a.start_ns + 5'000;
      g.dur_ns = 100'000;
      g.bytes = 4 << 20;
      g.correlation = i + 1;
      g.name = t.names.Intern("Memcpy HtoD (Host -> Device)");
      t.gpu_ops.push_back(g);
    }
    t.Finalize();
    const CopyStats s = ComputeCopyStats(t, AnalysisOptions{});
    ASSERT_EQ(s.by_direction.size(), 1u);
    const bool unknown = host == MemKind::kUnknown;
    EXPECT_EQ(s.by_direction[0].pageable_count, unknown ? 3 : 0) << MemKindName(host);
    EXPECT_EQ(s.pageable_is_heuristic, unknown) << MemKindName(host);
  }
}

// A kernel running on two streams at once is busy once, not twice: its share of busy time is a
// share (it was 200% when summed).
TEST(KernelStatsTest, BusyShareCountsConcurrentInstancesOnce) {
  Trace t;
  t.AddSource("a", "test");
  for (int32_t stream : {7, 8}) {
    for (int64_t i = 0; i < 10; ++i) {
      GpuOp g;
      g.stream = stream;
      g.start_ns = i * 200'000;
      g.dur_ns = 100'000;
      g.name = t.names.Intern("gemm_kernel");
      t.gpu_ops.push_back(g);
    }
  }
  GpuOp other;
  other.start_ns = 100'000;
  other.dur_ns = 100'000;  // in the first gap
  other.name = t.names.Intern("other_kernel");
  t.gpu_ops.push_back(other);
  t.Finalize();
  const TraceReport r = Analyze(t, AnalysisOptions{});
  ASSERT_EQ(r.all_ops_busy_ns, 1'100'000);
  ASSERT_FALSE(r.hot_kernels.empty());
  EXPECT_EQ(r.hot_kernels[0].name, "gemm_kernel");
  EXPECT_EQ(r.hot_kernels[0].total_ns, 2'000'000);
  EXPECT_DOUBLE_EQ(r.hot_kernels[0].busy_share, 1'000'000.0 / 1'100'000.0);
  EXPECT_DOUBLE_EQ(r.hot_kernels[1].busy_share, 100'000.0 / 1'100'000.0);
}

}  // namespace
}  // namespace latdoc::trace
