#include "rules/trace_roofline_rules.h"

#include <gtest/gtest.h>

#include "rules/gpu_specs.h"
#include "rules/trace_rank_rules.h"
#include "rules/trace_rules.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::rules {
namespace {

using trace::RooflineKernel;
using trace::TraceReport;

const Finding* FindId(const std::vector<Finding>& v, std::string_view id) {
  for (const Finding& f : v) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

RooflineKernel Family(std::string kind, std::string dtype, double flops, double bytes, int64_t total_ns, int64_t count) {
  RooflineKernel k;
  k.name = "kernel_" + kind + "_" + dtype;
  k.op = kind == "counters" ? "" : "aten::mm";
  k.kind = std::move(kind);
  k.dtype = std::move(dtype);
  k.count = count;
  k.total_ns = total_ns;
  const double secs = static_cast<double>(total_ns) / 1e9;
  if (flops > 0) {
    k.flops = flops;
    k.achieved_tflops = flops / secs / 1e12;
  }
  k.bytes = bytes;
  k.achieved_gbps = bytes / secs / 1e9;
  if (flops > 0) k.intensity = flops / bytes;
  return k;
}

TraceReport OnH200(std::vector<RooflineKernel> kernels) {
  TraceReport r;
  r.devices.push_back({0, 0, "NVIDIA H200", "sm90"});
  r.all_ops_busy_ns = 40'000'000;
  r.roofline.kernels = std::move(kernels);
  r.roofline.kernel_ns = 40'000'000;
  r.roofline.kernel_ns_with_work = 40'000'000;
  for (auto& k : r.roofline.kernels) k.busy_share = static_cast<double>(k.total_ns) / 40e6;
  return r;
}

TEST(GpuSpecsTest, EveryRowHasItsPeaksAndSources) {
  for (const GpuSpec& s : GpuSpecs()) {
    SCOPED_TRACE(s.name);
    EXPECT_GT(s.hbm_gbps, 0);
    EXPECT_FALSE(s.source.empty());
    ASSERT_TRUE(s.fp32_tflops.has_value());
    ASSERT_TRUE(s.bf16_tflops.has_value());
    EXPECT_GT(*s.bf16_tflops, *s.fp32_tflops);   // tensor/matrix cores above the fp32 rate
    EXPECT_FALSE(s.compute_source.empty());
  }
  // The most specific row first: an NVL part is not its SXM sibling, an L40S not an L4.
  EXPECT_EQ(FindGpuSpec("NVIDIA H200 NVL", "")->name, "NVIDIA H200 NVL");
  EXPECT_EQ(FindGpuSpec("NVIDIA H200", "")->fp32_tflops, 67);
  EXPECT_EQ(FindGpuSpec("NVIDIA H200", "")->bf16_tflops, 989.5);
  EXPECT_EQ(FindGpuSpec("NVIDIA L40S", "")->name, "NVIDIA L40S");
  EXPECT_EQ(FindGpuSpec("NVIDIA L4", "")->name, "NVIDIA L4");
  EXPECT_EQ(FindGpuSpec("NVIDIA B200", "")->bf16_tflops, 2250);
  EXPECT_EQ(FindGpuSpec("AMD Instinct MI300X VF", "gfx942")->bf16_tflops, 1307.4);
  EXPECT_EQ(FindGpuSpec("", "gfx950")->name, "AMD Instinct MI355X");
}

// heavy_every4's fp32 6144^3 GEMM: ~51 TFLOP/s of H200's 67 fp32: compute-bound, ~76%.
TEST(RooflineRulesTest, Fp32GemmOnH200IsComputeBoundBelowItsPeak) {
  const double flops = 4 * 2.0 * 6144 * 6144 * 6144;
  TraceReport r = OnH200({Family("gemm", "fp32", flops, 4 * 3.0 * 6144 * 6144 * 4, 36'424'000, 4)});
  AddRooflineFacts(r);
  const RooflineKernel& k = r.roofline.kernels[0];
  EXPECT_EQ(k.gpu, "NVIDIA H200");
  EXPECT_EQ(k.peak_tflops, 67);
  EXPECT_EQ(k.peak_tflops_name, "fp32");
  EXPECT_EQ(k.bound, "compute");
  ASSERT_TRUE(k.roof_share.has_value());
  EXPECT_NEAR(*k.roof_share, flops / 36.424e-3 / 1e12 / 67, 1e-9);
  EXPECT_FALSE(k.impossible);
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* info = FindId(f, "kernel.roofline");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->severity, Severity::kInfo);
  EXPECT_EQ(FindId(f, "kernel.rate_above_peak"), nullptr);
  EXPECT_EQ(FindId(f, "kernel.roofline_low"), nullptr);
}

// A decode GEMM (M = 8) is memory-bound: its roof is bandwidth x intensity.
TEST(RooflineRulesTest, SkinnyGemmIsMemoryBound) {
  const double flops = 2.0 * 8 * 2048 * 6144, bytes = (8.0 * 2048 + 2048.0 * 6144 + 8.0 * 6144) * 2;
  TraceReport r = OnH200({Family("gemm", "bf16", 100 * flops, 100 * bytes, 100 * 11'000, 100)});
  AddRooflineFacts(r);
  const RooflineKernel& k = r.roofline.kernels[0];
  EXPECT_EQ(k.bound, "memory");
  ASSERT_TRUE(k.ridge.has_value());
  EXPECT_NEAR(*k.ridge, 989.5e12 / 4800e9, 1e-9);
  EXPECT_NEAR(*k.roof_share, (bytes / 11e-6 / 1e9) / 4800, 1e-9);
}

// An fp32 GEMM above the FP32 peak ran on TF32 tensor cores: judged against TF32, not flagged.
TEST(RooflineRulesTest, Fp32AboveItsPeakIsJudgedAsTf32) {
  TraceReport r = OnH200({Family("gemm", "fp32", 200e12 * 0.01, 1e9, 10'000'000, 10)});   // 200 TFLOP/s
  AddRooflineFacts(r);
  EXPECT_EQ(r.roofline.kernels[0].peak_tflops_name, "tf32");
  EXPECT_FALSE(r.roofline.kernels[0].impossible);
}

// Impossible rates are a data problem: a FLOP rate above the bf16 peak, counter bytes above
// HBM, and a copy above its link (the generated rocprof fixture's 87 GB/s over PCIe Gen5's 63).
TEST(RooflineRulesTest, RatesAbovePeakAreADataProblem) {
  TraceReport r = OnH200({Family("gemm", "bf16", 2000e12 * 0.01, 1e9, 10'000'000, 10),     // 2000 TFLOP/s
                          Family("counters", "unknown", 0, 6000e9 * 0.01, 10'000'000, 10)});  // 6000 GB/s
  trace::CopyDirectionStat d;
  d.direction = trace::CopyDirection::kHtoD;
  d.count = 3;
  d.achieved_gbps = 87.0;
  r.copies.by_direction.push_back(d);
  AddKnowledgeFacts(r);
  EXPECT_TRUE(r.roofline.kernels[0].impossible);
  EXPECT_EQ(r.roofline.kernels[0].note,
            "2000.0 TFLOP/s is above the bf16 peak of 989.5: the kernel times or shapes are wrong");
  EXPECT_TRUE(r.roofline.kernels[1].impossible);
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* bad = FindId(f, "kernel.rate_above_peak");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->severity, Severity::kWarn);
  EXPECT_EQ(bad->title, "3 rates above the GPU's datasheet peak: a data problem, not a result");
  EXPECT_EQ(bad->evidence.back().name, "HtoD copies");
  EXPECT_EQ(bad->evidence.back().value, 87.0);
  // Not reported as a result.
  const Finding* info = FindId(f, "kernel.roofline");
  EXPECT_EQ(info, nullptr);
}

// The generated rocpd fixture's copies: 25 MiB HtoD in 0.3 ms, 87 GB/s over an MI300X's
// PCIe Gen5 x16 (63 GB/s one way).
TEST(RooflineRulesTest, GeneratedRocpdFixtureCopiesAreAboveTheLink) {
  trace::Trace t;
  for (const auto& res : trace::ImportFiles({"tests/data/trace/rocpd/synthetic_200_results.db"}, trace::ImportOptions{}, t)) {
    ASSERT_TRUE(res.status.ok()) << res.status.message();
  }
  TraceReport r = trace::Analyze(t, trace::AnalysisOptions{});
  AddKnowledgeFacts(r);
  const auto f = EvaluateTraceRules(r, TraceRuleOptions{});
  const Finding* bad = FindId(f, "kernel.rate_above_peak");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->severity, Severity::kWarn);
  ASSERT_EQ(bad->evidence.size(), 1u);
  EXPECT_EQ(bad->evidence[0].name, "HtoD copies");
  EXPECT_NEAR(*bad->evidence[0].value, 87.38, 0.01);
  EXPECT_EQ(bad->evidence[0].text, "above the 63 GB/s peak of the AMD Instinct MI300X's link");
}

TEST(RooflineRulesTest, GpuNotInTheTableIsSaid) {
  TraceReport r = OnH200({Family("gemm", "bf16", 1e12, 1e9, 10'000'000, 10)});
  r.devices[0].name = "NVIDIA GeForce GTX 1080";
  r.devices[0].arch = "sm61";
  AddRooflineFacts(r);
  EXPECT_EQ(r.roofline.gpu_not_in_table, "NVIDIA GeForce GTX 1080");
  EXPECT_FALSE(r.roofline.kernels[0].roof_share.has_value());
  std::vector<Finding> f;
  RooflineRules(r, f);
  const Finding* skip = FindId(f, "kernel.roofline_gpu_unknown");
  ASSERT_NE(skip, nullptr);
  EXPECT_EQ(skip->severity, Severity::kSkip);
  EXPECT_EQ(skip->title, "No roofline: GPU NVIDIA GeForce GTX 1080 is not in the peak table; achieved rates only");
}

// A hot, long compute-bound family far under its roof warns; short kernels do not.
TEST(RooflineRulesTest, HotFamilyFarUnderItsRoofWarns) {
  // 10 TFLOP/s bf16 at intensity 1000: compute-bound, 1% of 989.5.
  TraceReport r = OnH200({Family("gemm", "bf16", 10e12 * 0.03, 10e12 * 0.03 / 1000, 30'000'000, 100)});
  AddRooflineFacts(r);
  std::vector<Finding> f;
  RooflineRules(r, f);
  const Finding* low = FindId(f, "kernel.roofline_low");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->severity, Severity::kWarn);
  TraceReport shortk = OnH200({Family("gemm", "bf16", 10e12 * 0.03, 10e12 * 0.03 / 1000, 30'000'000, 3000)});
  AddRooflineFacts(shortk);
  std::vector<Finding> g;
  RooflineRules(shortk, g);
  EXPECT_EQ(FindId(g, "kernel.roofline_low"), nullptr);   // 10 us kernels: latency, not a roof
}

TEST(RankRulesTest, UsualStragglerWarnsNamingItsDevice) {
  TraceReport r;
  trace::RankInfo a, b;
  a.label = "rank 0 (device 0, NVIDIA H200, r0.json)";
  b.label = "rank 1 (device 1, NVIDIA H200, r1.json)";
  a.total_ns = b.total_ns = 10'000'000;
  a.waited_ns = 3'000'000;
  a.exposed_comm_ns = 3'100'000;
  b.exposed_comm_ns = 100'000;
  b.straggler_count = 10;
  b.caused_wait_ns = 3'000'000;
  r.ranks.ranks = {a, b};
  r.ranks.collectives_aligned = 10;
  r.ranks.collectives_with_straggler = 10;
  r.ranks.usual_straggler = 1;
  r.ranks.usual_share = 1.0;
  std::vector<Finding> f;
  RankRules(r, f);
  const Finding* s = FindId(f, "kernel.rank_straggler");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->severity, Severity::kWarn);
  EXPECT_EQ(s->title,
            "rank 1 (device 1, NVIDIA H200, r1.json) is the straggler: last into 10 of 10 collectives with a straggler; "
            "the other ranks wait 3.00 ms for it (30.0% of their GPU time)");
  // The waiting is the straggler's finding, not exposed communication.
  EXPECT_EQ(FindId(f, "kernel.rank_exposed_comm"), nullptr);
  r.ranks.problems.push_back("rank 0 appears in 2 files (a.json, b.json): the same rank twice");
  f.clear();
  RankRules(r, f);
  const Finding* m = FindId(f, "kernel.rank_files_mismatch");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->severity, Severity::kWarn);
  EXPECT_EQ(FindId(f, "kernel.rank_straggler")->severity, Severity::kWarn);   // a mismatch, not a conflict
  r.ranks.files_conflict = true;
  f.clear();
  RankRules(r, f);
  EXPECT_EQ(FindId(f, "kernel.rank_straggler")->severity, Severity::kInfo);
}

}  // namespace
}  // namespace latdoc::rules
