#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"

namespace latdoc::trace {
namespace {

class TraceBuilder {
 public:
  TraceBuilder() { t.AddSource("a", "test"); }
  void Api(const char* name, int64_t start, int64_t dur, int64_t correlation = kNoCorrelation) {
    ApiCall a;
    a.start_ns = start;
    a.dur_ns = dur;
    a.correlation = correlation;
    a.tid = 1;
    a.name = t.names.Intern(name);
    a.kind = ClassifyApi(name);
    t.api_calls.push_back(a);
  }
  void Op(const char* name, int64_t start, int64_t dur, int64_t correlation = kNoCorrelation,
          GpuOpKind kind = GpuOpKind::kKernel, CopyDirection dir = CopyDirection::kUnknown) {
    GpuOp g;
    g.start_ns = start;
    g.dur_ns = dur;
    g.correlation = correlation;
    g.name = t.names.Intern(name);
    g.kind = kind;
    g.direction = dir;
    t.gpu_ops.push_back(g);
  }
  void Range(const char* name, int64_t start, int64_t end) {
    CpuOp c;
    c.start_ns = start;
    c.dur_ns = end - start;
    c.tid = 1;
    c.kind = CpuOpKind::kAnnotation;
    c.name = t.names.Intern(name);
    t.cpu_ops.push_back(c);
  }
  Trace t;
};

// Four ProfilerStep#N ranges of 1 ms. Each step launches a kernel, then reads a result back
// (a DtoH copy and a stream sync) and launches the next step 870 us after the copy ended. An
// allocation before the first step and a free after the last are setup; one malloc in step 2 is
// in the steady state.
void ProfiledLoop(TraceBuilder& b, const std::string& range = "ProfilerStep#") {
  b.Api("cudaMalloc", 0, 1'000);
  int64_t corr = 1;
  for (int k = 0; k < 4; ++k) {
    const int64_t base = 100'000 + 1'000'000 * k;
    b.Range((range + std::to_string(k + 10)).c_str(), base, base + 900'000);
    if (k == 2) b.Api("cudaMalloc", base + 2'000, 1'000);
    b.Api("cudaLaunchKernel", base + 10'000, 5'000, corr);
    b.Op("k", base + 20'000, 100'000, corr++);
    b.Api("cudaMemcpyAsync", base + 130'000, 5'000, corr);
    b.Op("Memcpy DtoH", base + 140'000, 10'000, corr++, GpuOpKind::kMemcpy, CopyDirection::kDtoH);
    b.Api("cudaStreamSynchronize", base + 136'000, 16'000);
  }
  b.Api("cudaFree", 5'000'000, 1'000);
  b.t.Finalize();
}

TEST(StepsTest, ProfilerStepRangesGiveTheTableAndTheIdleSplit) {
  TraceBuilder b;
  ProfiledLoop(b);
  const StepStats s = ComputeSteps(b.t, AnalysisOptions{}, TraceStartNs(b.t));
  ASSERT_EQ(s.method, StepMethod::kProfilerStep);
  ASSERT_EQ(s.steps.size(), 4u);
  EXPECT_TRUE(s.host_records);
  EXPECT_EQ(s.ops_outside, 0);
  for (size_t k = 0; k < 4; ++k) {
    const StepRow& st = s.steps[k];
    SCOPED_TRACE(k);
    // GPU-side step time: first op to the next step's first op; the last step to its last end.
    EXPECT_EQ(st.wall_ns, k < 3 ? 1'000'000 : 130'000);
    EXPECT_EQ(st.at_ns, 120'000 + 1'000'000 * static_cast<int64_t>(k));
    EXPECT_EQ(st.gpu_busy_ns, 110'000);
    // Kernel end -> copy start: the copy's launch came after the kernel ended (host late).
    EXPECT_EQ(st.idle_host_late_ns, 20'000);
    // Copy end -> next step: the host had just waited in cudaStreamSynchronize.
    EXPECT_EQ(st.idle_sync_ns, k < 3 ? 870'000 : 0);
    EXPECT_EQ(st.idle_kernel_wait_ns, 0);
    EXPECT_EQ(st.launches, 1);
    EXPECT_EQ(st.copies, 1);
    EXPECT_EQ(st.d2h_copies, 1);
    EXPECT_EQ(st.syncs, 1);
    EXPECT_EQ(st.sync_wait_ns, 16'000);
    EXPECT_EQ(st.allocs, k == 2 ? 1 : 0);
    // The launching thread's API calls in the range, once each: 5 + 5 + 16 us (+1 the malloc).
    ASSERT_TRUE(st.host_busy_ns.has_value());
    EXPECT_EQ(*st.host_busy_ns, k == 2 ? 27'000 : 26'000);
  }
  ASSERT_TRUE(s.Quantile("wall_ns").has_value());
  EXPECT_EQ(s.Quantile("wall_ns")->p50, 1'000'000);
  ASSERT_EQ(s.syncs.size(), 1u);
  EXPECT_EQ(s.syncs[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(s.syncs[0].count, 4);
  EXPECT_EQ(s.d2h_copy, "Memcpy DtoH");
  // The slowest step is listed first; nothing in it ran above its mean (its time is the host's).
  ASSERT_FALSE(s.slowest.empty());
  EXPECT_EQ(s.slowest[0].wall_ns, 1'000'000);
  EXPECT_TRUE(s.slowest[0].kernels.empty());
}

// vLLM's model-runner ranges (a name holding execute_model) make the steps when the profiler's
// own are absent.
TEST(StepsTest, VllmExecuteModelRanges) {
  TraceBuilder b;
  ProfiledLoop(b, "gpu_model_runner: execute_model ");
  const StepStats s = ComputeSteps(b.t, AnalysisOptions{}, TraceStartNs(b.t));
  EXPECT_EQ(s.method, StepMethod::kVllmRange);
  EXPECT_EQ(s.steps.size(), 4u);
  EXPECT_EQ(s.detail, "execute_model ranges");
}

// The steady state is the steps' host window: the setup malloc before the first step and the
// free after the last are not in it; the malloc inside step 2 is.
TEST(StepsTest, SteadyStateAllocationsAreThoseInsideTheSteps) {
  TraceBuilder b;
  ProfiledLoop(b);
  const TraceReport r = Analyze(b.t, AnalysisOptions{});
  EXPECT_EQ(r.steady.basis, "steps");
  EXPECT_EQ(r.steady.alloc_count, 1);
  ASSERT_EQ(r.steady.allocs.size(), 1u);
  EXPECT_EQ(r.steady.allocs[0].name, "cudaMalloc");
  EXPECT_EQ(r.steady.sync_count, 4);
}

// A kernel trace only (no launch calls): steps from the cadence of the op names, nothing about
// the host (no host busy time; idle that cannot be split is "other").
TEST(StepsTest, KernelOnlyTraceStepsByCadenceWithoutHostClaims) {
  TraceBuilder b;
  int64_t t = 0;
  for (int k = 0; k < 6; ++k) {
    b.Op("embed", t, 10'000);
    for (int g = 0; g < 4; ++g) b.Op("gemm", t + 20'000 + 60'000 * g, 50'000);
    b.Op(k % 3 == 2 ? "big" : "small", t + 260'000, k % 3 == 2 ? 500'000 : 5'000);
    t += 1'000'000;
  }
  b.t.Finalize();
  const StepStats s = ComputeSteps(b.t, AnalysisOptions{}, 0);
  ASSERT_EQ(s.method, StepMethod::kCadence);
  EXPECT_EQ(s.detail, "a repeated launch sequence, each step opened by embed");
  ASSERT_EQ(s.steps.size(), 6u);
  EXPECT_FALSE(s.host_records);
  for (const StepRow& st : s.steps) {
    EXPECT_FALSE(st.host_busy_ns.has_value());
    EXPECT_EQ(st.idle_host_late_ns + st.idle_sync_ns + st.idle_kernel_wait_ns, 0);
    EXPECT_EQ(st.launches, 0);
  }
  EXPECT_EQ(s.steps[0].gpu_busy_ns, 10'000 + 4 * 50'000 + 5'000);
  EXPECT_EQ(s.steps[0].idle_other_ns, s.steps[0].wall_ns - s.steps[0].gpu_busy_ns);
  // "big" runs in steps 2 and 5: every 3rd step, from step 2.
  ASSERT_FALSE(s.periodic.empty());
  EXPECT_EQ(s.periodic[0].name, "big");
  EXPECT_EQ(s.periodic[0].period_steps, 3);
  EXPECT_EQ(s.periodic[0].first_step, 2);
  EXPECT_EQ(s.periodic[0].occurrences, 2);
}

// No ranges and no repetition: no steps, and the reason.
TEST(StepsTest, NoRepeatedSequenceNoSteps) {
  TraceBuilder b;
  b.Op("a", 0, 10);
  b.Op("b", 100, 10);
  b.Op("c", 200, 10);
  b.t.Finalize();
  const StepStats s = ComputeSteps(b.t, AnalysisOptions{}, 0);
  EXPECT_EQ(s.method, StepMethod::kNone);
  EXPECT_TRUE(s.steps.empty());
  EXPECT_EQ(s.detail, "no step ranges, graph launches or repeated launch sequence found");
}

}  // namespace
}  // namespace latdoc::trace
