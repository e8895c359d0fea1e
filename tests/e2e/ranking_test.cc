// The one ranking rule (README, "How findings are ranked"), end to end: `latdoc diagnose` on the
// simulator with a GPU trace. A trace not known to be of the server under test claims no share
// of its latency and ranks below every problem that has one; a trace of that server
// (--trace-of-server, or GPU work on the wall clock inside the load) claims shares of the mean
// end-to-end latency. Terminal, JSON, Markdown and HTML name the same finding to change first.
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/html_escape.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A TraceLens reference trace (vLLM decode on an MI300X): its top finding is a GPU idle `fail`.
constexpr char kSampleTrace[] = "tests/data/trace/tracelens/mi300x_qwen0.5b/trace.json.gz";

struct Diagnosis {
  RunResult run;
  json doc;
  std::string markdown, html;
};

// diagnose against a simulator whose max_num_seqs (2) is far below the load (16): the load
// layer finds queueing, with a measured share of the latency.
Diagnosis DiagnoseWithTrace(const std::string& trace, std::vector<std::string> extra = {}) {
  SimProcess sim({"--time-scale", "0.2", "--max-num-seqs", "2", "--log-file", "/dev/null",
                  "--disable-log-stats"});
  TempDir dir("ranking");
  std::vector<std::string> args = {"diagnose", "--url", sim.url(), "--net-samples", "0",
                                   "--requests", "48", "--concurrency", "16",
                                   "--baseline-requests", "4", "--input-len", "32",
                                   "--output-len", "16", "--trace", trace,
                                   "--json", dir.path() + "/d.json", "--markdown", dir.path() + "/d.md",
                                   "--report", dir.path() + "/d.html"};
  args.insert(args.end(), extra.begin(), extra.end());
  Diagnosis d;
  d.run = RunLatdoc(args, 180'000);
  std::ifstream in(dir.path() + "/d.json");
  if (in) d.doc = json::parse(in, nullptr, false);
  d.markdown = ReadFileOrEmpty(dir.path() + "/d.md");
  d.html = ReadFileOrEmpty(dir.path() + "/d.html");
  return d;
}

bool Problem(const json& f) { return f["severity"] == "fail" || f["severity"] == "warn"; }

// The finding change_first names is the one the terminal, the Markdown and the HTML show first.
void ExpectEveryRendererNamesTheSameFirst(const Diagnosis& d) {
  const json& cf = d.doc["change_first"];
  ASSERT_TRUE(cf.is_object()) << d.run.out;
  const std::string title = cf["title"];
  EXPECT_THAT(d.run.out, HasSubstr("Change first: " + title + "\n"));
  EXPECT_THAT(d.markdown, HasSubstr(fmt::format("## Change first\n\n**")));
  EXPECT_THAT(d.markdown, HasSubstr(fmt::format("** (`{}`)", cf["id"].get<std::string>())));
  EXPECT_LT(d.markdown.find("## Change first"), d.markdown.find("## Findings checklist"));
  EXPECT_THAT(d.html, HasSubstr("<div class=\"first\"><div class=\"t\">1. " + report::HtmlEscape(title)));
}

TEST(RankingE2eTest, TraceOfAnotherServerRanksBelowEveryMeasuredProblem) {
  Diagnosis d = DiagnoseWithTrace(kSampleTrace);
  ASSERT_TRUE(d.doc.is_object()) << d.run.err;
  EXPECT_TRUE(d.doc["trace"]["recorded_from"].is_null());
  EXPECT_THAT(d.doc["trace"]["share"].get<std::string>(), HasSubstr("not on the measured request path"));

  // Every kernel finding: no share, said so. Every problem with a share ranks above every
  // kernel problem; the trace's GPU-idle fail does not outrank the queueing.
  size_t last_with_share = 0, first_kernel_problem = SIZE_MAX, kernel_problems = 0;
  const json& fs = d.doc["findings"];
  for (size_t i = 0; i < fs.size(); ++i) {
    if (fs[i]["layer"] == "kernel") {
      EXPECT_FALSE(fs[i].contains("latency_share")) << fs[i].dump();
      EXPECT_EQ(fs[i]["share_of"], "not on the measured request path") << fs[i].dump();
      if (Problem(fs[i])) {
        first_kernel_problem = std::min(first_kernel_problem, i);
        ++kernel_problems;
      }
    } else if (Problem(fs[i]) && fs[i].contains("latency_share")) {
      last_with_share = i;
      EXPECT_EQ(fs[i]["share_of"], "mean end-to-end latency") << fs[i].dump();
    }
  }
  ASSERT_GT(kernel_problems, 0u) << "the sample trace should hold a GPU problem";
  EXPECT_LT(last_with_share, first_kernel_problem);
  EXPECT_EQ(d.doc["change_first"]["layer"], "load") << d.run.out;
  EXPECT_EQ(d.doc["change_first"]["id"], "load.queueing") << d.run.out;
  ExpectEveryRendererNamesTheSameFirst(d);
  EXPECT_THAT(d.run.out, HasSubstr("share: not on the measured request path"));
}

TEST(RankingE2eTest, TraceOfTheServerClaimsSharesOfItsLatency) {
  Diagnosis d = DiagnoseWithTrace(kSampleTrace, {"--trace-of-server"});
  ASSERT_TRUE(d.doc.is_object()) << d.run.err;
  EXPECT_THAT(d.doc["trace"]["recorded_from"].get<std::string>(), HasSubstr("--trace-of-server"));
  int kernel_shares = 0;
  for (const json& f : d.doc["findings"]) {
    if (f["layer"] != "kernel" || !f.contains("latency_share")) continue;
    ++kernel_shares;
    EXPECT_EQ(f["share_of"], "mean end-to-end latency") << f.dump();
  }
  EXPECT_GT(kernel_shares, 0);
  ExpectEveryRendererNamesTheSameFirst(d);
}

// A Kineto trace: one launch and one kernel every 20 s from 0 to 200 s after `base_ns`.
std::string KinetoAt(int64_t base_ns) {
  std::string events;
  for (int i = 0; i <= 10; ++i) {
    const int64_t us = int64_t{i} * 20'000'000;
    events += fmt::format(
        "{}{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": {}, \"dur\": 5, \"args\": {{\"correlation\": {}}}}},\n"
        "{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": {}, "
        "\"dur\": 100, \"args\": {{\"device\": 0, \"stream\": 7, \"correlation\": {}}}}}",
        i ? ",\n" : "", us, i + 1, us + 10, i + 1);
  }
  return fmt::format("{{\"schemaVersion\": 1, \"baseTimeNanoseconds\": {}, \"traceEvents\": [\n{}\n]}}\n",
                     base_ns, events);
}

TEST(RankingE2eTest, TraceWhoseGpuWorkOverlapsTheLoadIsOfTheServer) {
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  TempDir dir("ranking-clock");
  // From 10 s before this test to 190 s after: the diagnosis's load runs inside it.
  const std::string during = dir.path() + "/during.json";
  std::ofstream(during) << KinetoAt(now_ns - 10'000'000'000);
  Diagnosis d = DiagnoseWithTrace(during);
  ASSERT_TRUE(d.doc.is_object()) << d.run.err;
  EXPECT_THAT(d.doc["trace"]["recorded_from"].get<std::string>(), HasSubstr("overlaps this run's load"));

  // The same trace a day earlier: not this run's.
  const std::string before = dir.path() + "/before.json";
  std::ofstream(before) << KinetoAt(now_ns - int64_t{86400} * 1'000'000'000);
  d = DiagnoseWithTrace(before);
  ASSERT_TRUE(d.doc.is_object()) << d.run.err;
  EXPECT_TRUE(d.doc["trace"]["recorded_from"].is_null());
}

}  // namespace
}  // namespace latdoc::testing
