// End-to-end: `latdoc compare` on files the real latdoc wrote — two bench runs against a real
// `latdoc sim`, one with its step time tripled — and on bad or mismatched files.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// One bench run of 48 requests at concurrency 4 against a fresh simulator; returns the path of
// its --json.
std::string Bench(const std::string& name, const std::vector<std::string>& sim_extra) {
  std::vector<std::string> sim_args = {"--time-scale", "0.25", "--seed", "3", "--log-file",
                                       "/dev/null", "--disable-log-stats"};
  sim_args.insert(sim_args.end(), sim_extra.begin(), sim_extra.end());
  SimProcess sim(sim_args);
  std::string out = TempPath(name + ".json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "4", "--num-requests",
                           "48", "--input-len", "64", "--output-len", "24", "--token-ids",
                           "--json", out});
  sim.process().Signal(SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

const json* Metric(const json& doc, const std::string& name) {
  for (const auto& m : doc["metrics"])
    if (m["metric"] == name) return &m;
  return nullptr;
}

TEST(CompareE2eTest, SlowerServerIsWorseBeyondNoiseAndTheSameFileIsTheSame) {
  std::string before = Bench("compare_before", {});
  std::string after = Bench("compare_after", {"--sim-step-base-ms", "18"});  // 3x the default 6

  std::string out = TempPath("compare.json");
  RunResult r = RunLatdoc({"compare", before, after, "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("latdoc compare (bench)"));
  EXPECT_THAT(r.out, HasSubstr("mean_tpot_ms"));
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  json doc = json::parse(*text);
  EXPECT_EQ(doc["kind"], "bench");
  const json* tpot = Metric(doc, "mean_tpot_ms");
  ASSERT_NE(tpot, nullptr);
  // bench writes per-request samples, so noise is judged by bootstrap.
  EXPECT_EQ((*tpot)["noise_method"], "bootstrap");
  EXPECT_EQ((*tpot)["verdict"], "worse");
  EXPECT_GT((*tpot)["rel"].get<double>(), 1.0);  // step time x3: TPOT more than doubles
  EXPECT_EQ((*Metric(doc, "output_throughput"))["verdict"], "worse");
  EXPECT_GT(doc["worse"].get<int>(), 0);

  // --fail-on-worse turns a regression into exit 1 (for CI); --quiet keeps the verdict and
  // drops the table.
  EXPECT_EQ(RunLatdoc({"compare", before, after, "--fail-on-worse"}).exit_code, 1);
  RunResult quiet = RunLatdoc({"compare", before, after, "--fail-on-worse", "--quiet"});
  EXPECT_EQ(quiet.exit_code, 1);
  EXPECT_EQ(quiet.out, "");

  // A file against itself: nothing moved.
  RunResult same = RunLatdoc({"compare", before, before, "--json", out, "--fail-on-worse"});
  ASSERT_EQ(same.exit_code, 0) << same.err;
  doc = json::parse(*ReadFileToString(out));
  for (const auto& m : doc["metrics"]) {
    EXPECT_FALSE(m["beyond_noise"].get<bool>()) << m.dump();
    EXPECT_THAT(m["verdict"].get<std::string>(), ::testing::AnyOf("same", "n/a")) << m.dump();
  }
  EXPECT_THAT(same.out, HasSubstr("Beyond noise: 0 better, 0 worse."));
  std::remove(out.c_str());
  std::remove(after.c_str());

  // A bench result against a diagnosis: exit 2, naming both.
  const std::string diag = "tests/data/report/diagnosis_example.json";
  RunResult mixed = RunLatdoc({"compare", before, diag});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_EQ(mixed.err, "latdoc compare: " + before + " is a bench result but " + diag +
                           " is a diagnose result: compare two results of the same kind\n");
  std::remove(before.c_str());
}

TEST(CompareE2eTest, BadFilesExitTwoWithWhatAndWhere) {
  RunResult missing = RunLatdoc({"compare", "/nonexistent/a.json", "/nonexistent/b.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/a.json"));

  std::string bad = TempPath("not_json.json");
  ASSERT_TRUE(WriteFileAtomic(bad, "{\"schema\": \"latdoc.bench/1\", ").ok());
  RunResult r = RunLatdoc({"compare", bad, bad});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(bad + ": byte "));
  EXPECT_THAT(r.err, HasSubstr("not valid JSON"));

  // A file with no schema (not written by latdoc) and one from a newer latdoc.
  RunResult noschema = RunLatdoc({"compare", "tests/data/host/sweep_knee64.json", bad});
  EXPECT_EQ(noschema.exit_code, 2);
  EXPECT_THAT(noschema.err, HasSubstr("tests/data/host/sweep_knee64.json: no \"schema\" field"));
  ASSERT_TRUE(WriteFileAtomic(bad, R"({"schema": "latdoc.sweep/7"})").ok());
  RunResult newer = RunLatdoc({"compare", bad, bad});
  EXPECT_EQ(newer.exit_code, 2);
  EXPECT_THAT(newer.err, HasSubstr("is newer than this latdoc reads (latdoc.sweep/1)"));
  std::remove(bad.c_str());
}

// A gate compares like with like: two runs of other loads get a note, and --fail-on-worse
// refuses a verdict (exit 2) instead of calling the load's effect the server's.
TEST(CompareE2eTest, FailOnWorseRefusesRunsOfDifferentLoads) {
  auto bench = [](int concurrency, double ttft) {
    return nlohmann::json{{"schema", "latdoc.bench/1"}, {"completed", 100}, {"failed", 0},
                          {"max_concurrency", concurrency}, {"request_rate", "inf"},
                          {"total_input_tokens", 6400}, {"total_output_tokens", 1600},
                          {"mean_ttft_ms", ttft}, {"median_ttft_ms", ttft}, {"p99_ttft_ms", ttft},
                          {"output_throughput", 100.0}, {"request_throughput", 1.0}};
  };
  const std::string c1 = TempPath("load_c1.json"), c8 = TempPath("load_c8.json");
  ASSERT_TRUE(WriteFileAtomic(c1, bench(1, 20).dump()).ok());
  ASSERT_TRUE(WriteFileAtomic(c8, bench(8, 90).dump()).ok());
  RunResult plain = RunLatdoc({"compare", c1, c8});
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_THAT(plain.out, HasSubstr("offered different loads (max_concurrency 1 vs 8)"));
  RunResult gate = RunLatdoc({"compare", c1, c8, "--fail-on-worse"});
  EXPECT_EQ(gate.exit_code, 2);
  EXPECT_THAT(gate.err, HasSubstr("offered different loads (see the note), so no verdict"));
  // The same load, slower: the gate fails as it should.
  const std::string slow = TempPath("load_c1_slow.json");
  ASSERT_TRUE(WriteFileAtomic(slow, bench(1, 60).dump()).ok());
  EXPECT_EQ(RunLatdoc({"compare", c1, slow, "--fail-on-worse"}).exit_code, 1);
}

// Two real diagnoses (the report example is one, written by diagnose on the simulator): the
// same file compares as unchanged, with its load, trace and findings all read.
TEST(CompareE2eTest, DiagnosisAgainstItself) {
  const std::string diag = "tests/data/report/diagnosis_example.json";
  RunResult r = RunLatdoc({"compare", diag, diag, "--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("latdoc compare (diagnose)"));
  EXPECT_THAT(r.out, HasSubstr("p99_ttft_ms"));
  EXPECT_THAT(r.out, HasSubstr("Beyond noise: 0 better, 0 worse."));
}

}  // namespace
}  // namespace latdoc::testing
