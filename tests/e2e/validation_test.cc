// End-to-end: results that check themselves (loadgen/validation.h). A run that could not offer
// the load asked for says so in its JSON and on the terminal; compare refuses it (exit 2) unless
// --allow-invalid; --num-runs reports the run-to-run variation of the headline metrics.
#include <signal.h>

#include <cmath>
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

const std::vector<std::string> kSimArgs = {"--time-scale", "0.25", "--seed", "5", "--log-file",
                                           "/dev/null", "--disable-log-stats"};

json ReadJson(const std::string& path) { return json::parse(ReadFileOrEmpty(path)); }

const json* Check(const json& doc, const std::string& name) {
  for (const auto& c : doc["validation"]["checks"])
    if (c["name"] == name) return &c;
  return nullptr;
}

// --concurrency 16 with 6 requests: 16 in flight is never offered. The run itself succeeds
// (exit 0: validation does not judge the server), but its result is marked invalid.
TEST(ValidationE2eTest, ImpossibleConcurrencyFailsValidationInJsonAndTerminal) {
  SimProcess sim(kSimArgs);
  TempDir dir("validation-conc");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "16", "--num-requests",
                           "6", "--input-len", "32", "--output-len", "8", "--json", dir / "a.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Validation FAIL: concurrency: --concurrency 16 requested but at "
                               "most "));
  EXPECT_THAT(r.out, HasSubstr("Validation FAIL: steady_state: 16 in flight was never reached"));
  json doc = ReadJson(dir / "a.json");
  EXPECT_EQ(doc["validation"]["status"], "fail");
  EXPECT_EQ(doc["validation"]["failed"], json::array({"concurrency", "steady_state"}));
  const json* c = Check(doc, "concurrency");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["requested"], 16);
  EXPECT_LE((*c)["max_in_flight"].get<int>(), 6);
  EXPECT_GE((*c)["max_in_flight"].get<int>(), 1);
  EXPECT_EQ((*c)["measured_requests"], 6);
  // The numbers that need no load judgement are ok against the simulator.
  EXPECT_EQ((*Check(doc, "impossible"))["status"], "ok");
  EXPECT_EQ((*Check(doc, "token_counts"))["status"], "ok");
  EXPECT_EQ((*Check(doc, "token_counts"))["ok_requests"], 6);
  EXPECT_EQ((*Check(doc, "warmup"))["excluded_requests"], 0);
}

TEST(ValidationE2eTest, CompareRefusesAnInvalidRunUnlessAllowed) {
  SimProcess sim(kSimArgs);
  TempDir dir("validation-compare");
  RunResult bad = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "16", "--num-requests",
                             "6", "--input-len", "32", "--output-len", "8", "-q", "--json",
                             dir / "bad.json"});
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  RunResult good = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "2", "--num-requests",
                              "12", "--warmup", "2", "--input-len", "32", "--output-len", "8",
                              "-q", "--json", dir / "good.json"});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ((*Check(ReadJson(dir / "good.json"), "concurrency"))["status"], "ok");
  EXPECT_EQ((*Check(ReadJson(dir / "good.json"), "warmup"))["excluded_requests"], 2);

  for (const auto& [a, b] : {std::pair{dir / "good.json", dir / "bad.json"},
                             std::pair{dir / "bad.json", dir / "good.json"}}) {
    RunResult c = RunLatdoc({"compare", a, b});
    EXPECT_EQ(c.exit_code, 2) << c.out << c.err;
    EXPECT_THAT(c.err, HasSubstr(dir / "bad.json" + ": validation failed (concurrency: "
                                 "--concurrency 16 requested but at most"));
    EXPECT_THAT(c.err, HasSubstr("(pass --allow-invalid to compare anyway)"));
    EXPECT_EQ(c.out, "");
  }
  RunResult allowed = RunLatdoc({"compare", dir / "good.json", dir / "bad.json", "--allow-invalid",
                                 "--json", dir / "cmp.json"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
  EXPECT_THAT(allowed.out, HasSubstr("Note: validation failed, compared anyway (--allow-invalid): " +
                                     dir / "bad.json" + ": concurrency: "));
  json cmp = ReadJson(dir / "cmp.json");
  // Every entry is bad.json's; its two failed checks are among them (a short run on a loaded
  // machine may add a warning-level check elsewhere, never a failure of good.json's load).
  std::vector<std::string> invalid = cmp["invalid_runs"].get<std::vector<std::string>>();
  EXPECT_THAT(invalid, ::testing::Contains(HasSubstr("bad.json: concurrency: ")));
  EXPECT_THAT(invalid, ::testing::Contains(HasSubstr("bad.json: steady_state: ")));
  for (const std::string& i : invalid) EXPECT_THAT(i, HasSubstr("bad.json: "));
}

// Three runs of the same load: the written result is the last run's, and each headline
// metric's CV is the sample standard deviation of its three values over their mean.
TEST(ValidationE2eTest, NumRunsReportsTheCoefficientOfVariationOfEachHeadlineMetric) {
  SimProcess sim(kSimArgs);
  TempDir dir("validation-runs");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "2", "--num-requests",
                           "10", "--input-len", "32", "--output-len", "8", "--num-runs", "3",
                           "--json", dir / "r.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Run-to-run variation (3 runs)"));
  EXPECT_THAT(r.err, HasSubstr("latdoc bench: run 3 of 3"));
  json doc = ReadJson(dir / "r.json");
  ASSERT_TRUE(doc.contains("runs"));
  EXPECT_EQ(doc["runs"]["num_runs"], 3);
  EXPECT_EQ(doc["runs"]["per_run"].size(), 3u);
  for (const char* name : {"mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
                           "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms",
                           "request_throughput", "output_throughput", "total_token_throughput"}) {
    SCOPED_TRACE(name);
    const json& m = doc["runs"]["metrics"][name];
    ASSERT_EQ(m["values"].size(), 3u);
    std::vector<double> v = m["values"].get<std::vector<double>>();
    EXPECT_DOUBLE_EQ(v[2], doc[name].get<double>());  // the last run is the one written
    const double mean = (v[0] + v[1] + v[2]) / 3;
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    const double sd = std::sqrt(ss / 2);
    EXPECT_NEAR(m["mean"].get<double>(), mean, 1e-9 * std::fabs(mean));
    EXPECT_NEAR(m["cv"].get<double>(), sd / mean, 1e-9);
    EXPECT_THAT(r.out, HasSubstr(name));
  }
}

// Each sweep step carries its window's rounds' validation; a step the simulator served at the
// concurrency asked for passes the concurrency check in every round.
TEST(ValidationE2eTest, SweepStepsCarryTheirRoundsValidation) {
  SimProcess sim(kSimArgs);
  TempDir dir("validation-sweep");
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "-c", "1:4", "--min-requests", "8",
                           "--input-len", "32", "--output-len", "8", "-q", "--json", dir / "s.json"});
  ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 1)) << r.err;
  json doc = ReadJson(dir / "s.json");
  ASSERT_FALSE(doc["steps"].empty());
  for (const auto& step : doc["steps"]) {
    ASSERT_TRUE(step.contains("validation")) << step.dump();
    const json& v = step["validation"];
    EXPECT_GE(v["rounds"].get<int>(), 1);
    EXPECT_THAT(v["status"].get<std::string>(), ::testing::AnyOf("ok", "warn", "fail"));
    for (const auto& c : v["checks"]) {
      EXPECT_NE(c["status"], "ok");  // only the checks that were not ok are listed
      EXPECT_NE(c["name"], "concurrency") << c.dump();
      EXPECT_NE(c["name"], "impossible") << c.dump();
    }
  }
}

TEST(ValidationE2eTest, NumRunsWithShardIsBadUsage) {
  TempDir dir("validation-shard");
  RunResult r = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--num-runs", "2", "--shard",
                           "0/2", "--num-requests", "4", "--json", dir / "s.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--num-runs cannot be combined with --shard"));
}

}  // namespace
}  // namespace latdoc::testing
