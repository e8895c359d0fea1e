// The scenario suite: real H200 traces of a decode loop, each with one planted pathology
// (tests/data/trace/h200_pathologies/README.md), and the verdicts a GPU performance engineer
// would sign: the top finding and its severity, the pathology's own finding, and no warning
// that engineer would dismiss. docs/trace-verdicts.md explains each threshold used.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/trace_rules.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::rules {
namespace {

struct Verdicts {
  trace::TraceReport report;
  std::vector<Finding> findings;   // ranked
};

Verdicts JudgeFile(const std::string& path) {
  trace::Trace t;
  const auto r = trace::ImportFiles({path}, trace::ImportOptions{}, t);
  EXPECT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  Verdicts v;
  v.report = trace::Analyze(t, trace::AnalysisOptions{});
  AddKnowledgeFacts(v.report);
  v.findings = EvaluateTraceRules(v.report, TraceRuleOptions{});
  RankFindings(v.findings);
  return v;
}

Verdicts Judge(const std::string& name) {
  return JudgeFile("tests/data/trace/h200_pathologies/h200_decode_" + name + ".json.gz");
}

const Finding* FindId(const Verdicts& v, std::string_view id) {
  for (const Finding& f : v.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const Evidence* FindEvidence(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// The ids of the warn and fail findings, in rank order.
std::vector<std::string> Problems(const Verdicts& v) {
  std::vector<std::string> out;
  for (const Finding& f : v.findings) {
    if (f.severity >= Severity::kWarn) out.push_back(f.id);
  }
  return out;
}

// No advice that cannot apply: these traces run one stream, so nothing about streams.
void ExpectNoStreamAdvice(const Verdicts& v) {
  for (const Finding& f : v.findings) {
    EXPECT_EQ(f.advice.find("between streams"), std::string::npos) << f.id;
  }
}

// Eager batch-8 decode, 86% of the GPU window idle with the host launching late: that is a real
// problem (fail: CUDA graphs would remove most of it), and the tiny kernels launched one by one
// are its evidence (warn). Nothing else warns: the one 8-byte pageable copy a step, its stream
// sync and the elementwise kernels whose slow-path condition a name cannot show are info.
TEST(TraceScenarioTest, CleanEagerIsHostBoundAndNothingElse) {
  const Verdicts v = Judge("clean_eager");
  ASSERT_EQ(v.report.steps.method, trace::StepMethod::kCadence);
  EXPECT_EQ(v.report.steps.steps.size(), 16u);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].id, "kernel.gpu_idle_host_bound");
  EXPECT_EQ(v.findings[0].severity, Severity::kFail);
  EXPECT_EQ(Problems(v), (std::vector<std::string>{"kernel.gpu_idle_host_bound", "kernel.launch_overhead"}));
  ASSERT_NE(FindId(v, "kernel.pageable_copies"), nullptr);
  EXPECT_EQ(FindId(v, "kernel.pageable_copies")->severity, Severity::kInfo);
  ASSERT_NE(FindId(v, "kernel.sync_every_step"), nullptr);
  EXPECT_EQ(FindId(v, "kernel.sync_every_step")->severity, Severity::kInfo);
  ExpectNoStreamAdvice(v);
}

// A CUDA-graph decode loop: no fail, no warn. Its 13% idle is the GPU's own gaps between graph
// nodes (info), and the step is found from the graph launches.
TEST(TraceScenarioTest, CleanGraphHasNoProblem) {
  const Verdicts v = Judge("clean_graph");
  EXPECT_EQ(v.report.steps.method, trace::StepMethod::kGraphLaunch);
  EXPECT_EQ(v.report.steps.steps.size(), 16u);
  EXPECT_TRUE(Problems(v).empty()) << Problems(v)[0];
  const Finding* idle = FindId(v, "kernel.gpu_idle_kernel_gaps");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kInfo);
  // The final synchronize after the loop is outside the steady state: no sync finding.
  EXPECT_EQ(FindId(v, "kernel.steady_state_sync"), nullptr);
  EXPECT_EQ(FindId(v, "kernel.sync_every_step"), nullptr);
  ExpectNoStreamAdvice(v);
}

// Class 1: .item() and .cpu() every step: a DtoH copy and a stream sync in every step warn,
// naming the call, how many a step and the cost a step.
TEST(TraceScenarioTest, SyncItemWarnsSyncEveryStep) {
  const Verdicts v = Judge("sync_item");
  EXPECT_EQ(v.findings[0].id, "kernel.gpu_idle_host_bound");
  const Finding* s = FindId(v, "kernel.sync_every_step");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kWarn);
  EXPECT_EQ(s->title.rfind("cudaStreamSynchronize in 100% of steps (3.9 a step), with a device-to-host copy", 0), 0u)
      << s->title;
  const Evidence* d2h = FindEvidence(*s, "steps_with_d2h_copy");
  ASSERT_NE(d2h, nullptr);
  EXPECT_EQ(d2h->value, 100);
  ASSERT_NE(FindEvidence(*s, "host_wait_per_step"), nullptr);
  ASSERT_NE(FindEvidence(*s, "share_of_step_time"), nullptr);
  // The loop's syncs are judged per step, not again as a whole-trace count.
  EXPECT_EQ(FindId(v, "kernel.steady_state_sync"), nullptr);
}

// Class 2: a 9 ms fp32 GEMM every 4th step: a warning naming the kernel, its period in steps
// and ms, its shares and the p99/median step ratio. The fp32 GEMM is not an "sm80 kernel on
// Hopper" (cuBLAS has no sm90 fp32 kernel), and the sync that waits for it is not a warning.
TEST(TraceScenarioTest, HeavyEvery4WarnsPeriodicKernel) {
  const Verdicts v = Judge("heavy_every4");
  const Finding* p = FindId(v, "kernel.periodic_heavy_kernel");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kWarn);
  EXPECT_EQ(p->title.rfind("sm80_xmma_gemm_f32f32_f32f32", 0), 0u) << p->title;
  EXPECT_NE(p->title.find(" runs every 4 steps ("), std::string::npos) << p->title;
  ASSERT_NE(FindEvidence(*p, "period_steps"), nullptr);
  EXPECT_EQ(FindEvidence(*p, "period_steps")->value, 4);
  ASSERT_NE(FindEvidence(*p, "p99_over_median_step"), nullptr);
  EXPECT_GT(*FindEvidence(*p, "p99_over_median_step")->value, 3.0);
  EXPECT_GT(*FindEvidence(*p, "share_of_gpu_busy")->value, 70.0);
  EXPECT_EQ(FindId(v, "kernel.pattern.sm80_xmma_on_hopper"), nullptr);
  EXPECT_EQ(FindId(v, "kernel.steady_state_sync"), nullptr);
  // Its slow steps are explained by it: no separate step-outlier finding.
  EXPECT_EQ(FindId(v, "kernel.step_outliers"), nullptr);
  EXPECT_EQ(Problems(v), (std::vector<std::string>{"kernel.gpu_idle_host_bound", "kernel.periodic_heavy_kernel",
                                                   "kernel.launch_overhead"}));
}

// Class 3, as captured: torch.cuda.empty_cache() every step left no cudaMalloc/cudaFree in this
// trace (the profiler recorded none), so there is nothing to find, and nothing is invented: the
// verdicts are those of the clean eager loop. Allocations inside the steps are covered by
// steps_test.cc with a trace that has them.
TEST(TraceScenarioTest, AllocInLoopTraceHasNoAllocationRecords) {
  const Verdicts v = Judge("alloc_in_loop");
  EXPECT_TRUE(v.report.steady.allocs.empty());
  EXPECT_EQ(FindId(v, "kernel.steady_state_alloc"), nullptr);
  EXPECT_EQ(Problems(v), (std::vector<std::string>{"kernel.gpu_idle_host_bound", "kernel.launch_overhead"}));
}

// Class 3, generated (tools/gen_trace.py --alloc-every 2): a cudaMalloc and a cudaFree in every
// second step are the steady state's (8 calls, 0.6 + 0.32 ms, one a step on average, half the
// steps); the setup cudaMalloc before the first kernel (400 us) and its cudaFree after the last
// (200 us) are not counted.
TEST(TraceScenarioTest, AllocationsInsideTheStepsWarnAndSetupOnesDoNot) {
  const Verdicts v = JudgeFile("tests/data/trace/generated/kineto_alloc_every2_8steps.json.gz");
  ASSERT_EQ(v.report.steps.method, trace::StepMethod::kProfilerStep);
  ASSERT_EQ(v.report.steps.steps.size(), 8u);
  EXPECT_EQ(v.report.steady.alloc_count, 8);
  EXPECT_EQ(v.report.steady.alloc_ns, 4 * 150'000 + 4 * 80'000);
  for (const trace::StepRow& st : v.report.steps.steps) EXPECT_EQ(st.allocs, st.index % 2 == 0 ? 2 : 0) << st.index;
  const Finding* a = FindId(v, "kernel.steady_state_alloc");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->severity, Severity::kWarn);
  EXPECT_EQ(a->title, "8 device/host allocation calls after warm-up (0.92 ms)");
  ASSERT_NE(FindEvidence(*a, "cudaMalloc"), nullptr);
  EXPECT_EQ(FindEvidence(*a, "cudaMalloc")->text, "4 calls");
  ASSERT_NE(FindEvidence(*a, "steps_with_alloc"), nullptr);
  EXPECT_EQ(FindEvidence(*a, "steps_with_alloc")->value, 50);
  ASSERT_NE(FindEvidence(*a, "alloc_calls_per_step"), nullptr);
  EXPECT_EQ(FindEvidence(*a, "alloc_calls_per_step")->value, 1);
}

// Class 4: a token tensor and a 32 KiB mask built on the host and copied from pageable memory
// every step: a warning with the copies, bytes and time a step.
TEST(TraceScenarioTest, PageableH2DWarnsPerStep) {
  const Verdicts v = Judge("pageable_h2d");
  const Finding* p = FindId(v, "kernel.pageable_copies");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kWarn);
  ASSERT_NE(FindEvidence(*p, "pageable_copies_per_step"), nullptr);
  EXPECT_EQ(FindEvidence(*p, "pageable_copies_per_step")->value, 3);
  ASSERT_NE(FindEvidence(*p, "pageable_bytes_per_step"), nullptr);
  EXPECT_GE(*FindEvidence(*p, "pageable_bytes_per_step")->value, 8 * 512 * 8);
  ASSERT_NE(FindEvidence(*p, "pageable_time_per_step"), nullptr);
}

// Class 6: a rocprofv3 kernel trace alone (generated, tests/data/trace/generated). Nothing is
// claimed about the host: the host-side checks are `skip`, the idle finding names no cause; the
// steps are read by cadence, not confused with the 4 layers, and the 3 ms kernel every 4th step
// is found.
TEST(TraceScenarioTest, KernelOnlyTraceMakesNoHostClaims) {
  const Verdicts v = JudgeFile("tests/data/trace/generated/decode_kernelonly_kernel_trace.csv");
  ASSERT_EQ(v.report.steps.method, trace::StepMethod::kCadence);
  EXPECT_EQ(v.report.steps.steps.size(), 12u);
  EXPECT_FALSE(v.report.steps.host_records);
  EXPECT_EQ(v.findings[0].id, "kernel.gpu_idle");
  EXPECT_EQ(v.findings[0].severity, Severity::kFail);
  EXPECT_EQ(v.findings[0].advice.rfind("the trace has no host API records", 0), 0u);
  for (const char* id : {"kernel.launch_overhead", "kernel.steady_state_sync", "kernel.steady_state_alloc",
                         "kernel.sync_every_step"}) {
    ASSERT_NE(FindId(v, id), nullptr) << id;
    EXPECT_EQ(FindId(v, id)->severity, Severity::kSkip) << id;
  }
  for (const Finding& f : v.findings) {
    if (f.severity == Severity::kSkip) continue;   // says why: no host records
    EXPECT_EQ(f.title.find("host"), std::string::npos) << f.id << ": " << f.title;
    EXPECT_EQ(f.title.find("one by one"), std::string::npos) << f.id;
  }
  const Finding* p = FindId(v, "kernel.periodic_heavy_kernel");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kWarn);
  EXPECT_EQ(p->title.rfind("big_reduce_kernel runs every 4 steps", 0), 0u) << p->title;
}

// PyTorch's ProfilerStep#N ranges (user_annotation, generated by tools/gen_trace.py) make the
// steps, read through the Kineto importer.
TEST(TraceScenarioTest, ProfilerStepRangesMakeTheSteps) {
  const Verdicts v = JudgeFile("tests/data/trace/generated/kineto_profilerstep_8steps.json.gz");
  EXPECT_EQ(v.report.steps.method, trace::StepMethod::kProfilerStep);
  EXPECT_EQ(v.report.steps.steps.size(), 8u);
  EXPECT_EQ(v.report.steps.ops_outside, 0);
  EXPECT_EQ(v.report.steady.basis, "steps");
}

// On every trace: a step's GPU time is its busy time plus its idle split, to the nanosecond (one
// stream); the host time listed in an idle gap is never more than the gap (nested CPU ops,
// aten::copy_ in aten::_to_copy in aten::to, count once).
TEST(TraceScenarioTest, StepTimeAddsUpAndNestedCpuOpsCountOnce) {
  for (const char* name : {"clean_eager", "clean_graph", "sync_item", "heavy_every4", "alloc_in_loop", "pageable_h2d"}) {
    SCOPED_TRACE(name);
    const Verdicts v = Judge(name);
    ASSERT_FALSE(v.report.steps.steps.empty());
    for (const trace::StepRow& st : v.report.steps.steps) {
      EXPECT_EQ(st.gpu_busy_ns + st.idle_host_late_ns + st.idle_sync_ns + st.idle_kernel_wait_ns + st.idle_other_ns,
                st.wall_ns)
          << "step " << st.index;
      ASSERT_TRUE(st.host_busy_ns.has_value());
    }
    for (const trace::IdleGap& g : v.report.idle.largest_gaps) {
      ASSERT_TRUE(g.cpu_busy_ns.has_value());
      int64_t listed = 0;
      for (const trace::CpuActivity& a : g.cpu_top) listed += a.overlap_ns;
      EXPECT_LE(listed, *g.cpu_busy_ns);
      EXPECT_LE(*g.cpu_busy_ns, g.dur_ns);
    }
  }
}

}  // namespace
}  // namespace latdoc::rules
