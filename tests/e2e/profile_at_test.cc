// End-to-end: `latdoc diagnose --profile-at` against `latdoc sim --sim-profiler-dir`: the
// simulator's /start_profile and /stop_profile (vLLM's) write a Kineto trace of its engine
// steps, and the diagnosis analyses it in the same run as the server under test's own trace.
#include <signal.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().string());
  return out;
}

// The trace the simulator writes is Kineto: kernels on stream 7 each launched by a
// cudaLaunchKernel with the same correlation id, the steps as ProfilerStep#N annotations.
TEST(ProfileAtE2eTest, SimWritesAKinetoTraceOfItsStepsBetweenStartAndStop) {
  TempDir dir("profile-sim");
  SimProcess sim({"--time-scale", "0.1", "--log-file", "/dev/null", "--disable-log-stats",
                  "--sim-profiler-dir", dir.path()});
  // A load without /start_profile records nothing.
  RunResult start = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "2", "--num-requests",
                               "4", "--output-len", "8", "-q"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_TRUE(FilesIn(dir.path()).empty());  // nothing recorded without /start_profile
  RunResult d = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "2", "--requests", "8",
                           "--baseline-requests", "2", "--net-samples", "0", "--profile-at", "2",
                           "--profile-dir", dir.path(), "--profile-seconds", "0.5", "--json",
                           dir / "d.json"});
  ASSERT_THAT(d.exit_code, ::testing::AnyOf(0, 1)) << d.err;
  std::vector<std::string> files;
  for (const std::string& f : FilesIn(dir.path()))
    if (f.find(".pt.trace.json") != std::string::npos) files.push_back(f);
  ASSERT_EQ(files.size(), 1u);
  json t = json::parse(ReadFileOrEmpty(files[0]));
  ASSERT_TRUE(t.contains("baseTimeNanoseconds"));
  std::map<int64_t, int> launches, kernels;
  int steps = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e["cat"];
    if (cat == "user_annotation" && e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0) ++steps;
    if (cat == "cuda_runtime") {
      EXPECT_EQ(e["name"], "cudaLaunchKernel");
      ++launches[e["args"]["correlation"].get<int64_t>()];
    }
    if (cat == "kernel") {
      EXPECT_EQ(e["args"]["stream"], 7);
      ++kernels[e["args"]["correlation"].get<int64_t>()];
    }
  }
  EXPECT_GT(steps, 0);
  EXPECT_EQ(launches.size(), kernels.size());
  EXPECT_EQ(launches, kernels);  // each correlation id: one launch, one kernel
  EXPECT_EQ(kernels.size(), size_t(6 * steps));
}

// --profile-at N: profiled once N requests run, the trace analysed in the same run, marked as
// the server under test's, its findings with shares of the latency.
TEST(ProfileAtE2eTest, ProfileAtNRecordsAndAnalysesTheTraceInTheSameRun) {
  TempDir dir("profile-at-n");
  SimProcess sim({"--time-scale", "0.1", "--log-file", "/dev/null", "--disable-log-stats",
                  "--sim-profiler-dir", dir.path()});
  RunResult d = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "4", "--requests", "16",
                           "--baseline-requests", "2", "--net-samples", "0", "--profile-at", "3",
                           "--profile-dir", dir.path(), "--profile-seconds", "1", "--json",
                           dir / "d.json"});
  ASSERT_THAT(d.exit_code, ::testing::AnyOf(0, 1)) << d.err;
  json doc = json::parse(ReadFileOrEmpty(dir / "d.json"));
  const json& p = doc["profile_at"];
  EXPECT_EQ(p["recorded"], true) << p.dump();
  EXPECT_EQ(p["running_at"], 3);
  EXPECT_GE(p["running_at_start"].get<double>(), 3);
  EXPECT_THAT(p["status"].get<std::string>(), StartsWith("recorded 1 file over "));
  ASSERT_EQ(p["files"].size(), 1u);
  EXPECT_THAT(p["files"][0].get<std::string>(), HasSubstr(".pt.trace.json"));
  EXPECT_THAT(doc["layers"]["kernel"].get<std::string>(),
              HasSubstr("1 file(s) recorded from the server under test (--profile-at)"));
  const json& t = doc["trace"];
  EXPECT_EQ(t["recorded_from"], "server under test (--profile-at)");
  EXPECT_EQ(t["files"], p["files"]);
  ASSERT_FALSE(t["findings"].empty());
  int with_share = 0;
  for (const auto& f : t["findings"]) with_share += f.contains("latency_share") && f["latency_share"].is_number();
  EXPECT_GT(with_share, 0);
  // The hot kernel is the simulator's decode GEMM (46% of each decode step).
  bool hot = false;
  for (const auto& f : t["findings"])
    if (f["id"] == "kernel.hot_kernel") hot = f["title"].get<std::string>().find("sm90_xmma_gemm") != std::string::npos;
  EXPECT_TRUE(hot) << t["findings"].dump();
}

// --profile-at knee: the sweep finds the knee (the simulator's batch limit of 3), and the
// profile is recorded at it.
TEST(ProfileAtE2eTest, ProfileAtKneeRecordsAtTheSweepsKnee) {
  TempDir dir("profile-at-knee");
  SimProcess sim({"--time-scale", "0.1", "--max-num-seqs", "3", "--log-file", "/dev/null",
                  "--disable-log-stats", "--sim-profiler-dir", dir.path()});
  RunResult d = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "2", "--requests", "16",
                           "--baseline-requests", "2", "--net-samples", "0", "--sweep-max", "12",
                           "--profile-at", "knee", "--profile-dir", dir.path(),
                           "--profile-seconds", "0.5", "--json", dir / "d.json"});
  ASSERT_THAT(d.exit_code, ::testing::AnyOf(0, 1)) << d.err;
  json doc = json::parse(ReadFileOrEmpty(dir / "d.json"));
  ASSERT_TRUE(doc.contains("sweep"));  // knee implies the sweep
  const json& p = doc["profile_at"];
  EXPECT_EQ(p["recorded"], true) << p.dump();
  const json& knee = doc["sweep"]["knee"];
  ASSERT_TRUE(knee["concurrency"].is_number());
  EXPECT_EQ(p["concurrency"].get<double>(), knee["concurrency"].get<double>());
  EXPECT_EQ(p["knee_reached"], knee["reached"]);
  EXPECT_EQ(doc["trace"]["recorded_from"], "server under test (--profile-at)");
}

// A server without the endpoints (vLLM without VLLM_TORCH_PROFILER_DIR: 404): a clear status and
// one line on standard error; the rest of the diagnosis goes on.
TEST(ProfileAtE2eTest, ServerWithoutTheEndpointsIsSkippedAndTheDiagnosisGoesOn) {
  TempDir dir("profile-at-404");
  SimProcess sim({"--time-scale", "0.1", "--log-file", "/dev/null", "--disable-log-stats"});
  RunResult d = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "2", "--requests", "8",
                           "--baseline-requests", "2", "--net-samples", "0", "--profile-at", "2",
                           "--profile-dir", dir.path(), "--profile-seconds", "0.5", "--json",
                           dir / "d.json"});
  ASSERT_THAT(d.exit_code, ::testing::AnyOf(0, 1)) << d.err;
  const std::string status =
      "skipped: the server has no profiler endpoint (POST /start_profile answered 404): start vLLM "
      "with VLLM_TORCH_PROFILER_DIR=" + dir.path() + " (or --profiler-config) to profile under load";
  EXPECT_THAT(d.err, HasSubstr("latdoc diagnose: --profile-at 2: " + status));
  json doc = json::parse(ReadFileOrEmpty(dir / "d.json"));
  EXPECT_EQ(doc["profile_at"]["recorded"], false);
  EXPECT_EQ(doc["profile_at"]["status"], status);
  EXPECT_EQ(doc["layers"]["load"], "measured");
  EXPECT_EQ(doc["layers"]["kernel"], "skipped: no --trace");
}

// sweep --profile-at knee: the same capture after the sweep, in the sweep's document.
TEST(ProfileAtE2eTest, SweepProfileAtKneeRecordsAndAnalysesTheTrace) {
  TempDir dir("profile-sweep");
  SimProcess sim({"--time-scale", "0.1", "--max-num-seqs", "3", "--log-file", "/dev/null",
                  "--disable-log-stats", "--sim-profiler-dir", dir.path()});
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "-c", "1:12", "--min-requests", "8",
                           "--output-len", "16", "--profile-at", "knee", "--profile-dir", dir.path(),
                           "--profile-seconds", "0.5", "--json", dir / "s.json"});
  ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 1)) << r.err;
  json doc = json::parse(ReadFileOrEmpty(dir / "s.json"));
  const json& p = doc["profile_at"];
  EXPECT_EQ(p["recorded"], true) << p.dump();
  EXPECT_EQ(p["trace_status"], "measured");
  ASSERT_EQ(p["files"].size(), 1u);
  EXPECT_EQ(doc["trace"]["recorded_from"], "server under test (--profile-at)");
  EXPECT_FALSE(doc["trace"]["findings"].empty());
  EXPECT_THAT(r.out, HasSubstr("Profile: recorded 1 file over "));
  EXPECT_THAT(r.out, HasSubstr("kernel.hot_kernel"));
}

TEST(ProfileAtE2eTest, SweepAgainstAServerWithoutTheEndpointsSaysSo) {
  TempDir dir("profile-sweep-404");
  SimProcess sim({"--time-scale", "0.1", "--log-file", "/dev/null", "--disable-log-stats"});
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "-c", "1:2", "--min-requests", "8",
                           "--output-len", "8", "--profile-at", "1", "--profile-dir", dir.path(),
                           "--profile-seconds", "0.3", "-q", "--json", dir / "s.json"});
  ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 1)) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc sweep: --profile-at 1: skipped: the server has no profiler "
                               "endpoint (POST /start_profile answered 404)"));
  json doc = json::parse(ReadFileOrEmpty(dir / "s.json"));
  EXPECT_EQ(doc["profile_at"]["recorded"], false);
  EXPECT_FALSE(doc.contains("trace"));
  EXPECT_FALSE(doc["steps"].empty());  // the sweep itself is all there
}

TEST(ProfileAtE2eTest, BadProfileAtIsBadUsage) {
  RunResult r = RunLatdoc({"diagnose", "--url", "http://127.0.0.1:1", "--profile-at", "many",
                           "--profile-dir", "/tmp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--profile-at many: give knee or a number of running requests"));
  RunResult n = RunLatdoc({"diagnose", "--url", "http://127.0.0.1:1", "--profile-at", "4"});
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_THAT(n.err, HasSubstr("--profile-at needs --url and --profile-dir"));
}

}  // namespace
}  // namespace latdoc::testing
