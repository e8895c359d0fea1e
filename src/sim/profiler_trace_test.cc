// StepProfiler: what a step becomes in the Kineto trace, and when a trace is written.
#include "sim/profiler_trace.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace latdoc::sim {
namespace {

using nlohmann::json;

constexpr int64_t kBase = 5'000'000'000;  // CLOCK_MONOTONIC of the start

std::vector<json> Events(const json& t, const std::string& cat) {
  std::vector<json> out;
  for (const auto& e : t["traceEvents"])
    if (e.value("ph", "") == "X" && e["cat"] == cat) out.push_back(e);
  return out;
}

TEST(StepProfilerTest, EachStepIsAnnotatedAndItsKernelsLieInsideItLinkedToTheirLaunches) {
  StepPlan prefill;
  prefill.prefill_tokens = 512;
  StepPlan slow;
  slow.decode_seqs = 4;
  slow.slow_kernel = true;
  std::vector<StepProfiler::Step> steps = {{kBase + 1'000'000, kBase + 11'000'000, prefill},
                                           {kBase + 12'000'000, kBase + 22'000'000, slow}};
  json t = json::parse(StepProfiler::TraceJson(steps, kBase, 1'796'440'000'000'000'000, 42));
  EXPECT_EQ(t["baseTimeNanoseconds"].get<int64_t>(), 1'796'440'000'000'000'000);
  auto ann = Events(t, "user_annotation");
  ASSERT_EQ(ann.size(), 4u);
  EXPECT_EQ(ann[0]["name"], "ProfilerStep#1");
  EXPECT_EQ(ann[0]["ts"].get<double>(), 1000.0);  // µs from the start
  EXPECT_EQ(ann[0]["dur"].get<double>(), 10000.0);
  EXPECT_EQ(ann[1]["name"], "execute_model");
  EXPECT_EQ(ann[1]["args"]["prefill_tokens"], 512);
  auto kernels = Events(t, "kernel");
  auto launches = Events(t, "cuda_runtime");
  ASSERT_EQ(kernels.size(), 12u);
  ASSERT_EQ(launches.size(), 12u);
  for (size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(kernels[i]["args"]["correlation"], launches[i]["args"]["correlation"]);
    EXPECT_LT(launches[i]["ts"].get<double>(), kernels[i]["ts"].get<double>());
    const double from = i < 6 ? 1000 : 12000, to = i < 6 ? 11000 : 22000;
    EXPECT_GE(kernels[i]["ts"].get<double>(), from);
    EXPECT_LE(kernels[i]["ts"].get<double>() + kernels[i]["dur"].get<double>(), to);
  }
  EXPECT_THAT(kernels[2]["name"].get<std::string>(), ::testing::HasSubstr("flash_fwd_kernel"));
  EXPECT_THAT(kernels[8]["name"].get<std::string>(), ::testing::HasSubstr("paged_attention"));
  // The slow step's first GEMM takes 90% of its kernel time.
  double sum = 0;
  for (size_t i = 6; i < 12; ++i) sum += kernels[i]["dur"].get<double>();
  EXPECT_NEAR(kernels[6]["dur"].get<double>() / sum, 0.9, 0.001);
}

// A step with a host stall (here 30 of its 40 ms of model time, on 20 ms of wall) launches
// nothing for that share of its span: its kernels start after 15 ms and keep the length they have
// in a step of the other 5 ms of wall alone, so the GPU idles 75% of the step.
TEST(StepProfilerTest, AHostStallIsAnIdleGapBeforeUsualKernels) {
  StepPlan usual;
  usual.decode_seqs = 4;
  usual.dur_ns = 10'000'000;
  StepPlan stalled = usual;
  stalled.dur_ns = 40'000'000;
  stalled.host_stall_ns = 30'000'000;
  stalled.host_gap = true;
  std::vector<StepProfiler::Step> steps = {{kBase, kBase + 5'000'000, usual},
                                           {kBase + 10'000'000, kBase + 30'000'000, stalled}};
  json t = json::parse(StepProfiler::TraceJson(steps, kBase, 1'796'440'000'000'000'000, 42));
  auto kernels = Events(t, "kernel");
  auto launches = Events(t, "cuda_runtime");
  ASSERT_EQ(kernels.size(), 12u);
  EXPECT_GE(launches[6]["ts"].get<double>(), 10000 + 15000);
  EXPECT_GE(kernels[6]["ts"].get<double>(), 10000 + 15000);
  EXPECT_LE(kernels[11]["ts"].get<double>() + kernels[11]["dur"].get<double>(), 30000);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_DOUBLE_EQ(kernels[6 + i]["dur"].get<double>(), kernels[i]["dur"].get<double>()) << i;
}

TEST(StepProfilerTest, WritesOnlyTheStepsBetweenStartAndStop) {
  const std::string dir = ::testing::TempDir() + "/step-profiler/sub";  // made when missing
  std::filesystem::remove_all(dir);
  StepProfiler off("");
  EXPECT_FALSE(off.enabled());
  StepProfiler p(dir);
  ASSERT_TRUE(p.enabled());
  EXPECT_EQ(*p.Stop(), "");  // not started: nothing written
  p.OnStep(kBase, kBase + 10, StepPlan{});  // before the start: ignored
  p.Start(kBase + 100, 1'700'000'000'000'000'000);
  EXPECT_TRUE(p.active());
  p.OnStep(kBase + 200, kBase + 300, StepPlan{});
  p.OnStep(kBase + 400, kBase + 500, StepPlan{});
  auto path = p.Stop();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  EXPECT_FALSE(p.active());
  EXPECT_THAT(*path, ::testing::EndsWith(".1700000000000.pt.trace.json"));
  std::ifstream in(*path);
  std::stringstream ss;
  ss << in.rdbuf();
  json t = json::parse(ss.str());
  EXPECT_EQ(Events(t, "user_annotation").size(), 4u);  // two steps
  p.OnStep(kBase + 600, kBase + 700, StepPlan{});     // after the stop: ignored
  EXPECT_EQ(*p.Stop(), "");
  std::filesystem::remove_all(::testing::TempDir() + "/step-profiler");
}

}  // namespace
}  // namespace latdoc::sim
