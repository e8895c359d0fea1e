#include "rules/trace_rules.h"

#include <gtest/gtest.h>

#include "rules/gpu_specs.h"
#include "rules/kernel_patterns.h"

namespace latdoc::rules {
namespace {

using trace::CopyDirection;
using trace::TraceReport;

const Finding* FindId(const std::vector<Finding>& v, std::string_view id) {
  for (const Finding& f : v) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

TraceReport HostBoundReport() {
  TraceReport r;
  r.api_calls = 5000;   // a trace with host records: the host-side checks run
  r.span_ns = 100'000'000;
  r.timeline.total_ns = 50'000'000;
  r.timeline.busy_ns = 30'000'000;
  r.all_ops_busy_ns = 30'000'000;
  r.timeline.idle_ns = 20'000'000;
  r.idle.host_wait_ns = 15'000'000;
  r.idle.kernel_wait_ns = 1'000'000;
  r.idle.other_ns = 4'000'000;
  trace::IdleGap g;
  g.dur_ns = 900'000;
  g.at_ns = 2'000'000;
  g.next_op = "gemm";
  g.cpu_busy_ns = 880'000;
  g.cpu_top = {{"aten::copy_", 500'000}};
  r.idle.largest_gaps.push_back(g);
  return r;
}

TEST(TraceRulesTest, IdleGpuWithLateHostIsHostBoundFail) {
  const auto f = EvaluateTraceRules(HostBoundReport(), TraceRuleOptions{});
  const Finding* idle = FindId(f, "kernel.gpu_idle_host_bound");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kFail);   // 40% idle >= 30%
  EXPECT_EQ(idle->title, "GPU idle 40.0% of its 50.00 ms window; 75% of stream idle time is the host launching late");
  ASSERT_TRUE(idle->latency_share.has_value());
  EXPECT_DOUBLE_EQ(*idle->latency_share, 0.4);
  EXPECT_NE(idle->evidence.back().text.find("aten::copy_ 500.0 us"), std::string::npos);
}

TEST(TraceRulesTest, IdleBelowThresholdIsOk) {
  TraceReport r = HostBoundReport();
  r.timeline.idle_ns = 2'000'000;   // 4%
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  // Below the thresholds it is plain gpu_idle, without the host-bound title and advice.
  EXPECT_EQ(FindId(f, "kernel.gpu_idle_host_bound"), nullptr);
  ASSERT_NE(FindId(f, "kernel.gpu_idle"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.gpu_idle")->severity, Severity::kOk);
  EXPECT_EQ(FindId(f, "kernel.gpu_idle")->title, "GPU idle 4.0% of its 50.00 ms window");
}

// Two ranks' GPUs, each busy its whole window, 1000 s apart: the union of their windows is
// nearly all idle, but neither GPU was. The rule judges the devices apart, summed.
TEST(TraceRulesTest, IdleIsJudgedPerDeviceWhenThereAreSeveral) {
  TraceReport r;
  r.timeline.total_ns = 1'000'000'000'100;
  r.timeline.busy_ns = 200;
  r.timeline.idle_ns = r.timeline.total_ns - 200;
  for (int i = 0; i < 2; ++i) {
    trace::GpuTimeline d;
    d.total_ns = d.busy_ns = 100;
    r.per_device.push_back(d);
  }
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* idle = FindId(f, "kernel.gpu_idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kOk);
  EXPECT_EQ(idle->title, "GPU idle 0.0% of 2 devices' 0.00 ms window");
}

// The outlier rule weighs every outlier's excess, not only the instances the report keeps.
TEST(TraceRulesTest, OutlierShareCountsEveryOutlier) {
  TraceReport r;
  r.timeline.total_ns = r.timeline.busy_ns = 1'000'000'000;
  r.all_ops_busy_ns = 1'000'000'000;
  r.outlier_count = 1000;
  r.outlier_excess_ns = 25'000'000;   // 1000 x 25 us: 2.5% of busy time
  r.outliers.resize(50);
  for (auto& x : r.outliers) {
    x.dur_ns = 45'000;
    x.median_ns = 20'000;
  }
  const auto all = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* o = FindId(all, "kernel.outlier_instances");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->severity, Severity::kWarn);
  ASSERT_TRUE(o->latency_share.has_value());
  EXPECT_NEAR(*o->latency_share, 0.025, 1e-9);
  // Under 1% of busy time: reported, not a warning.
  r.outlier_excess_ns = 5'000'000;
  const auto fewer = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* small = FindId(fewer, "kernel.outlier_instances");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->severity, Severity::kInfo);
}

TEST(TraceRulesTest, SmallH2DCopiesNeedCountAndRate) {
  TraceReport r = HostBoundReport();
  trace::CopyDirectionStat d;
  d.direction = CopyDirection::kHtoD;
  d.count = 20;
  d.small_count = 9;    // below the minimum count
  r.copies.by_direction.push_back(d);
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.small_h2d_copies"), nullptr);
  r.copies.by_direction[0].small_count = 12;
  r.copies.by_direction[0].small_per_s = 120;   // over its file's span (ComputeCopyStats)
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* s = FindId(f, "kernel.small_h2d_copies");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->title, "12 small host-to-device copies (120/s)");
  // Enough copies, but neither fast enough nor back to back: nothing; a storm alone suffices.
  r.copies.by_direction[0].small_per_s = 50;
  r.copies.by_direction[0].storm_runs = 0;
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.small_h2d_copies"), nullptr);
  r.copies.by_direction[0].storm_runs = 1;
  EXPECT_NE(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.small_h2d_copies"), nullptr);
}

TEST(TraceRulesTest, PageableCopiesSayWhenHeuristic) {
  TraceReport r = HostBoundReport();
  trace::CopyDirectionStat d;
  d.direction = CopyDirection::kHtoD;
  d.count = 2;
  d.pageable_count = 2;
  r.copies.by_direction.push_back(d);
  r.copies.pageable_is_heuristic = true;
  const auto all = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* f = FindId(all, "kernel.pageable_copies");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "2 copies from or to pageable host memory (heuristic: the async call blocked)");
  EXPECT_EQ(f->severity, Severity::kInfo);  // two short ones: worth knowing, not worth the change
  // The method says how the heuristic decides, in words a reader of the report can check.
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence.back().name, "method");
  EXPECT_EQ(f->evidence.back().text,
            "ROCm traces record no memory kind: an *Async copy whose call blocked for most of the "
            "copy's time counts as pageable");
  // Two that take 1% of the 50 ms window, or ten of any length: worth the change.
  r.copies.by_direction[0].pageable_ns = 500'000;
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.pageable_copies")->severity, Severity::kWarn);
  r.copies.by_direction[0].pageable_ns = 0;
  r.copies.by_direction[0].pageable_count = 10;
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.pageable_copies")->severity, Severity::kWarn);
  // Synchronous copy calls in the steady state likewise.
  r.steady.sync_copy_count = 1;
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.sync_copies")->severity, Severity::kInfo);
  r.steady.sync_copy_count = 12;
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.sync_copies")->severity, Severity::kWarn);
}

TEST(TraceRulesTest, EagerTinyKernelsWithoutGraphs) {
  TraceReport r = HostBoundReport();
  r.launch.kernels = 1000;
  r.launch.tiny_kernels = 800;
  r.launch.tiny_share = 0.8;
  r.launch.tiny_kernel_limit_ns = 10'000;
  auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  ASSERT_NE(FindId(f, "kernel.launch_overhead"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.launch_overhead")->evidence[1].value, std::nullopt);  // n/a
  EXPECT_EQ(FindId(f, "kernel.launch_overhead")->title, "80% of 1000 kernels launched one by one run under 10 us");
  // Graph nodes are not launched one by one: the share is of the 500 eager kernels (ComputeLaunch
  // counts tiny kernels among those only).
  r.launch.graph_launches = 10;
  r.launch.graph_kernels = 500;
  r.launch.tiny_kernels = 400;
  r.launch.tiny_share = 0.8;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  ASSERT_NE(FindId(f, "kernel.launch_overhead"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.launch_overhead")->title, "80% of 500 kernels launched one by one run under 10 us");
  // The title says the limit the analysis used (--tiny-kernel-us).
  r.launch.tiny_kernel_limit_ns = 3'000;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_EQ(FindId(f, "kernel.launch_overhead")->title, "80% of 500 kernels launched one by one run under 3 us");
  r.launch.graph_kernels = 900;
  r.launch.tiny_kernels = 20;
  r.launch.tiny_share = 0.2;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_EQ(FindId(f, "kernel.launch_overhead"), nullptr);
  EXPECT_NE(FindId(f, "kernel.graphs_in_use"), nullptr);
}

TEST(GpuSpecsTest, ByNameThenArchEveryRowSourced) {
  ASSERT_NE(FindGpuSpec("NVIDIA H200", ""), nullptr);
  EXPECT_EQ(FindGpuSpec("NVIDIA H200", "")->hbm_gbps, 4800);
  EXPECT_EQ(FindGpuSpec("AMD Instinct MI300X VF", "gfx942")->name, "AMD Instinct MI300X");
  EXPECT_EQ(FindGpuSpec("", "gfx942")->name, "AMD Instinct MI300X");
  EXPECT_EQ(FindGpuSpec("NVIDIA H100 80GB HBM3", "sm90")->hbm_gbps, 3350);
  EXPECT_EQ(FindGpuSpec("NVIDIA A100 80GB PCIe", "sm80")->hbm_gbps, 1935);
  EXPECT_EQ(FindGpuSpec("NVIDIA A100-SXM4-80GB", "sm80")->peer_link_gbps, 300);
  EXPECT_EQ(FindGpuSpec("Some GPU", ""), nullptr);
  for (const GpuSpec& s : GpuSpecs()) EXPECT_FALSE(s.source.empty()) << s.name;
}

TEST(KernelPatternsTest, ArchScopedPrefixAndSubstring) {
  const KernelPattern* rocclr = nullptr;
  const KernelPattern* unrolled = nullptr;
  for (const auto& p : KernelPatterns()) {
    EXPECT_FALSE(p.source.empty()) << p.id;
    EXPECT_FALSE(p.advice.empty()) << p.id;
    if (p.id == "rocclr_copy_kernel") rocclr = &p;
    if (p.id == "unrolled_elementwise") unrolled = &p;
  }
  ASSERT_NE(rocclr, nullptr);
  EXPECT_TRUE(MatchesPattern(*rocclr, "__amd_rocclr_copyBufferAligned", "gfx942"));
  EXPECT_TRUE(MatchesPattern(*rocclr, "__amd_rocclr_copyBufferAligned", ""));
  EXPECT_FALSE(MatchesPattern(*rocclr, "__amd_rocclr_copyBufferAligned", "sm90"));
  ASSERT_NE(unrolled, nullptr);
  EXPECT_TRUE(MatchesPattern(*unrolled, "at::native::unrolled_elementwise_kernel<at::native::X>", "sm90"));
  EXPECT_FALSE(MatchesPattern(*unrolled, "at::native::vectorized_elementwise_kernel<4, X>", "sm90"));
}

// indexSelectLargeIndex is PyTorch's normal kernel for many indices with 32-bit index math; only
// its 64-bit (unsigned long) instance is the slow fallback.
TEST(KernelPatternsTest, IndexSelectLargeIndexOnlyWith64BitIndexMath) {
  const KernelPattern* p = nullptr;
  for (const auto& k : KernelPatterns()) {
    if (k.id == "index_select_large_index") p = &k;
  }
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(MatchesPattern(
      *p, "at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>", "sm90"));
  EXPECT_TRUE(MatchesPattern(
      *p, "at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned long, -1, -1, -1, true>", "sm90"));
}

TEST(AddKnowledgeFactsTest, BandwidthAgainstSpecAndPatternHits) {
  TraceReport r = HostBoundReport();
  r.devices.push_back({0, 0, "NVIDIA H200", "sm90"});
  trace::CopyDirectionStat d;
  d.direction = CopyDirection::kHtoD;
  d.count = 4;
  d.bytes = 64 << 20;
  d.bytes_count = 4;
  d.achieved_gbps = 3.0;
  r.copies.by_direction.push_back(d);
  trace::KernelStat k;
  k.name = "at::native::unrolled_elementwise_kernel<foo>";
  k.count = 5;
  k.total_ns = 3'000'000;   // 10% of busy
  k.busy_share = 0.1;
  r.hot_kernels.push_back(k);
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.bandwidth.size(), 1u);
  EXPECT_EQ(r.bandwidth[0].peak_gbps, 63);
  ASSERT_EQ(r.patterns.size(), 1u);
  EXPECT_EQ(r.patterns[0].pattern, "unrolled_elementwise");
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  ASSERT_NE(FindId(f, "kernel.low_copy_bandwidth"), nullptr);   // 16 MiB average, 3 of 63 GB/s
  // The unrolled path is slow only for misaligned or non-contiguous inputs, which a kernel name
  // does not show (a cast takes it by design): info, whatever its share, saying what to check.
  const Finding* p = FindId(f, "kernel.pattern.unrolled_elementwise");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kInfo);
  EXPECT_EQ(p->title.rfind("possible slow path: ", 0), 0u) << p->title;
  EXPECT_EQ(p->evidence[1].name, "condition");
  EXPECT_EQ(p->evidence[1].text.rfind("not checked (the trace does not show it): slow only when its inputs are misaligned", 0), 0u)
      << p->evidence[1].text;
}

// A pattern whose name is the whole condition (an sm80 tensor-core GEMM on sm90) warns past its
// share; an fp32 GEMM without TF32 has no sm90 kernel and is not a hit.
TEST(AddKnowledgeFactsTest, NameOnlyPatternWarnsAndFp32GemmIsNotAHit) {
  TraceReport r = HostBoundReport();
  r.devices.push_back({0, 0, "NVIDIA H200", "sm90"});
  trace::KernelStat k;
  k.name = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32";
  k.count = 5;
  k.total_ns = 3'000'000;
  k.busy_share = 0.1;
  r.hot_kernels.push_back(k);
  AddKnowledgeFacts(r);
  auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* p = FindId(f, "kernel.pattern.sm80_xmma_on_hopper");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kWarn);
  EXPECT_EQ(p->title.rfind("known slow path: ", 0), 0u) << p->title;
  r.hot_kernels[0].name = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8";
  AddKnowledgeFacts(r);
  EXPECT_TRUE(r.patterns.empty());
}

// A kernel-only trace (no API calls): nothing is said about the host; the host-side checks are
// `skip` with the reason, and the idle finding names no cause.
TEST(TraceRulesTest, NoHostRecordsSkipsHostChecksAndClaimsNothingAboutTheHost) {
  TraceReport r = HostBoundReport();
  r.api_calls = 0;
  r.idle.host_wait_ns = 0;
  r.idle.kernel_wait_ns = 0;
  r.idle.other_ns = 20'000'000;
  r.gpu_ops = 2000;
  r.launch.kernels = 2000;
  r.launch.tiny_kernels = 1900;
  r.launch.tiny_share = 0.95;
  r.launch.tiny_kernel_limit_ns = 10'000;
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  for (const char* id : {"kernel.launch_overhead", "kernel.steady_state_sync", "kernel.steady_state_alloc",
                         "kernel.sync_every_step"}) {
    const Finding* s = FindId(f, id);
    ASSERT_NE(s, nullptr) << id;
    EXPECT_EQ(s->severity, Severity::kSkip) << id;
    EXPECT_EQ(s->title, "not checked: the trace has no host API records") << id;
  }
  const Finding* idle = FindId(f, "kernel.gpu_idle");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kFail);   // 40% idle is a GPU fact
  EXPECT_EQ(idle->title, "GPU idle 40.0% of its 50.00 ms window");
  EXPECT_EQ(idle->advice.find("without the host being late"), std::string::npos);
  EXPECT_EQ(idle->evidence[2].value, std::nullopt);
  EXPECT_EQ(idle->evidence[2].text, "no host records");
}

// Idle time made of short gaps between ops already launched (a graph replay) is the GPU's own:
// info at most, with fusion as the only lever, and no advice about streams.
TEST(TraceRulesTest, IdleOfKernelGapsIsInfoAndSingleStreamGetsNoStreamAdvice) {
  TraceReport r = HostBoundReport();
  r.idle.host_wait_ns = 0;
  r.idle.kernel_wait_ns = 18'000'000;
  r.idle.other_ns = 2'000'000;
  r.overlap.streams_with_kernels = 1;
  auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* idle = FindId(f, "kernel.gpu_idle_kernel_gaps");
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->severity, Severity::kInfo);
  EXPECT_EQ(idle->title, "GPU idle 40.0% of its 50.00 ms window; 90% of it is short gaps between ops already launched");
  // Neither host nor gaps: the advice names streams only when there are several.
  r.idle.kernel_wait_ns = 2'000'000;
  r.idle.other_ns = 18'000'000;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  ASSERT_NE(FindId(f, "kernel.gpu_idle"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.gpu_idle")->severity, Severity::kFail);
  EXPECT_EQ(FindId(f, "kernel.gpu_idle")->advice.find("between streams"), std::string::npos);
  r.overlap.streams_with_kernels = 3;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_NE(FindId(f, "kernel.gpu_idle")->advice.find("between streams"), std::string::npos);
}


TEST(AddKnowledgeFactsTest, EachCopyDirectionAgainstTheLinkItCrosses) {
  TraceReport r = HostBoundReport();
  r.devices.push_back({0, 0, "NVIDIA H200", "sm90"});
  auto copies = [&](CopyDirection dir, double gbps) {
    trace::CopyDirectionStat d;
    d.direction = dir;
    d.count = 4;
    d.bytes = int64_t{256} << 20;
    d.bytes_count = 4;
    d.achieved_gbps = gbps;
    r.copies.by_direction.push_back(d);
  };
  copies(CopyDirection::kDtoD, 2000);     // of 4800 / 2: fine
  copies(CopyDirection::kPtoP, 419.4);    // of 450 GB/s NVLink one way: fine
  copies(CopyDirection::kHtoH, 10.5);     // crosses none of the GPU's links
  copies(CopyDirection::kUnknown, 1.0);
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.bandwidth.size(), 2u);
  EXPECT_EQ(r.bandwidth[0].direction, CopyDirection::kDtoD);
  EXPECT_EQ(r.bandwidth[0].peak_gbps, 2400);
  EXPECT_EQ(r.bandwidth[1].direction, CopyDirection::kPtoP);
  EXPECT_EQ(r.bandwidth[1].peak_gbps, 450);
  EXPECT_EQ(FindId(EvaluateTraceRules(r, TraceRuleOptions{}), "kernel.low_copy_bandwidth"), nullptr);

  // The same peer copies on an MI300X cross one 64 GB/s xGMI link each way; slower ones warn,
  // with advice about peer access rather than pinned host memory.
  r.devices[0] = {0, 0, "AMD Instinct MI300X", "gfx942"};
  r.copies.by_direction = {};
  copies(CopyDirection::kPtoP, 12.0);
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.bandwidth.size(), 1u);
  EXPECT_EQ(r.bandwidth[0].peak_gbps, 64);
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* low = FindId(f, "kernel.low_copy_bandwidth");
  ASSERT_NE(low, nullptr);
  EXPECT_NE(low->advice.find("enable peer access"), std::string::npos) << low->advice;
}

// A pattern's share of busy time is the time its kernels ran: instances of one kernel on two
// streams at once count once, so a kernel whose instances add up to twice the busy time ran 60%
// of it; two kernels of one pattern are summed, and the sum stops at 100%.
TEST(AddKnowledgeFactsTest, PatternShareIsTimeRanAndNeverPastAllOfIt) {
  TraceReport r = HostBoundReport();
  r.devices.push_back({0, 0, "NVIDIA H200", "sm90"});
  trace::KernelStat k;
  k.name = "at::native::unrolled_elementwise_kernel<foo>";
  k.count = 50;
  k.total_ns = 2 * r.all_ops_busy_ns;  // on two streams at once
  k.busy_share = 0.6;
  r.hot_kernels.push_back(k);
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.patterns.size(), 1u);
  EXPECT_DOUBLE_EQ(r.patterns[0].busy_share, 0.6);
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* p = FindId(f, "kernel.pattern.unrolled_elementwise");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->title.find("60.0% of busy time"), std::string::npos) << p->title;

  k.name = "at::native::unrolled_elementwise_kernel<bar>";
  k.busy_share = 0.7;
  r.hot_kernels.push_back(k);
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.patterns.size(), 1u);
  EXPECT_EQ(r.patterns[0].count, 100);
  EXPECT_DOUBLE_EQ(r.patterns[0].busy_share, 1.0);
}

TEST(AddKnowledgeFactsTest, PatternsSeeCopiesAndFillsRunAsKernels) {
  // ROCm's blit kernels are read as a copy and a fill (ClassifyRocmInternalKernel), so they are
  // not in the hot kernel list; their patterns must still fire.
  TraceReport r = HostBoundReport();
  r.devices.push_back({0, 0, "AMD Instinct MI300X", "gfx942"});
  trace::KernelStat copy;
  copy.name = "__amd_rocclr_copyBuffer.kd";
  copy.kind = trace::GpuOpKind::kMemcpy;
  copy.count = 40;
  copy.total_ns = 400'000;
  trace::KernelStat fill = copy;
  fill.name = "__amd_rocclr_fillBufferAligned.kd";
  fill.kind = trace::GpuOpKind::kMemset;
  r.other_ops = {copy, fill};
  AddKnowledgeFacts(r);
  ASSERT_EQ(r.patterns.size(), 2u);
  EXPECT_EQ(r.patterns[0].pattern, "rocclr_copy_kernel");
  EXPECT_EQ(r.patterns[0].count, 40);
  EXPECT_EQ(r.patterns[1].pattern, "rocclr_fill_kernel");
}

// Without steps, a sync or two after warm-up (a final synchronize) is a one-off: info however
// long it waited; a habit of the loop (many) past the share warns.
TEST(TraceRulesTest, OneOffSyncIsInfoManyWarn) {
  TraceReport r = HostBoundReport();
  r.steady.steady_span_ns = 100'000'000;
  r.steady.sync_count = 1;
  r.steady.sync_ns = 27'000'000;
  r.steady.syncs = {{"cudaDeviceSynchronize", 1, 27'000'000}};
  auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  ASSERT_NE(FindId(f, "kernel.steady_state_sync"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.steady_state_sync")->severity, Severity::kInfo);
  r.steady.sync_count = 40;
  r.steady.syncs = {{"cudaStreamSynchronize", 40, 27'000'000}};
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_EQ(FindId(f, "kernel.steady_state_sync")->severity, Severity::kWarn);
}

// Per-step verdicts on a made-up table of 10 steps of 1 ms: a read-back and a sync every step
// whose drained GPU is 30% of the step fails; one 8-byte pageable copy a step is info, 3 warn;
// allocation calls in the steps carry their count a step.
TEST(TraceRulesTest, PerStepSeverities) {
  TraceReport r = HostBoundReport();
  r.steps.method = trace::StepMethod::kProfilerStep;
  r.steps.host_records = true;
  for (int i = 0; i < 10; ++i) {
    trace::StepRow st;
    st.index = i;
    st.at_ns = 1'000'000LL * i;
    st.wall_ns = 1'000'000;
    st.gpu_busy_ns = 500'000;
    st.idle_sync_ns = 300'000;
    st.idle_host_late_ns = 200'000;
    st.syncs = 1;
    st.sync_wait_ns = 400'000;
    st.d2h_copies = 1;
    st.pageable_copies = 1;
    st.pageable_bytes = 8;
    st.pageable_ns = 1'000;
    st.allocs = i % 2;
    r.steps.steps.push_back(st);
  }
  r.steps.quantiles = {{"wall_ns", 1e6, 1e6}, {"pageable_copies", 1, 1}, {"pageable_bytes", 8, 8},
                       {"pageable_ns", 1000, 1000}, {"small_h2d_copies", 1, 1}};
  r.steps.syncs = {{"cudaStreamSynchronize", 10, 4'000'000}};
  r.steps.allocs = {{"cudaMalloc", 5, 500'000}};
  r.steps.d2h_copy = "Memcpy DtoH (Device -> Pageable)";
  trace::CopyDirectionStat d;
  d.direction = CopyDirection::kHtoD;
  d.count = 10;
  d.pageable_count = 10;
  d.pageable_ns = 10'000;
  r.copies.by_direction.push_back(d);
  r.steady.alloc_count = 5;
  r.steady.allocs = {{"cudaMalloc", 5, 500'000}};
  auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* s = FindId(f, "kernel.sync_every_step");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kFail);   // 30% >= 25%
  EXPECT_EQ(s->title, "cudaStreamSynchronize in 100% of steps (1.0 a step), with a device-to-host copy "
                      "(Memcpy DtoH (Device -> Pageable)): GPU idle after it 0.300 ms a step, 30.0% of step time");
  ASSERT_TRUE(s->latency_share.has_value());
  EXPECT_DOUBLE_EQ(*s->latency_share, 0.3);
  const Finding* p = FindId(f, "kernel.pageable_copies");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->severity, Severity::kInfo);   // one 8-byte copy a step
  r.steps.quantiles[1].p50 = 3;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_EQ(FindId(f, "kernel.pageable_copies")->severity, Severity::kWarn);
  const Finding* a = FindId(f, "kernel.steady_state_alloc");
  ASSERT_NE(a, nullptr);
  bool per_step = false;
  for (const Evidence& e : a->evidence) {
    if (e.name == "alloc_calls_per_step") per_step = e.value == 0.5;
  }
  EXPECT_TRUE(per_step);
  // Below the warn share, without a read-back: info.
  for (auto& st : r.steps.steps) st.idle_sync_ns = 10'000, st.d2h_copies = 0;
  f = EvaluateTraceRules(r, TraceRuleOptions{});
  EXPECT_EQ(FindId(f, "kernel.sync_every_step")->severity, Severity::kInfo);
}

}  // namespace
}  // namespace latdoc::rules
