// ValidateRun's checks against hand-made runs whose faults are known.
#include "loadgen/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::loadgen {
namespace {

constexpr int64_t kMs = 1'000'000;

// An ok request scheduled at `sched_ms`, sent `lag_ms` later, first token 10 ms and last 20 ms
// after its schedule, 2 chunks.
RequestRecord Ok(int64_t sched_ms, double lag_ms = 0) {
  RequestRecord r;
  r.outcome = Outcome::kOk;
  r.scheduled_ns = sched_ms * kMs;
  r.sent_ns = r.scheduled_ns + int64_t(lag_ms * kMs);
  r.first_token_ns = r.scheduled_ns + 10 * kMs + int64_t(lag_ms * kMs);
  r.last_token_ns = r.end_ns = r.first_token_ns + 10 * kMs;
  r.output_tokens = 2;
  r.chunks = {{r.first_token_ns, 1}, {r.last_token_ns, 1}};
  return r;
}

BenchRun OpenRun(int n, double gap_ms, double lag_ms) {
  BenchRun run;
  for (int i = 0; i < n; ++i) run.records.push_back(Ok(int64_t(i * gap_ms), lag_ms * (i % 2)));
  run.start_ns = 0;
  run.end_ns = run.records.back().end_ns;
  return run;
}

const ValidationCheck& Get(const Validation& v, const std::string& name) {
  for (const ValidationCheck& c : v.checks)
    if (c.name == name) return c;
  static ValidationCheck none;
  ADD_FAILURE() << "no check " << name;
  return none;
}

TEST(ValidationTest, OnScheduleOpenLoopPassesEveryCheck) {
  BenchOptions o;
  o.request_rate = 100;  // every 10 ms
  Validation v = ValidateRun(OpenRun(200, 10, 0), o);
  EXPECT_EQ(v.status, CheckStatus::kOk) << v.Text();
  EXPECT_EQ(v.Text(), "");
  EXPECT_NEAR(Get(v, "rate").numbers["achieved_rps"].get<double>(), 100, 1e-6);
  EXPECT_EQ(Get(v, "schedule_lag").numbers["p99_ms"].get<double>(), 0);
}

TEST(ValidationTest, ScheduleLagAboveTheFailBoundFails) {
  BenchOptions o;
  o.request_rate = 100;
  Validation v = ValidateRun(OpenRun(200, 10, 30), o);  // every other request sent 30 ms late
  const ValidationCheck& c = Get(v, "schedule_lag");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.numbers["p99_ms"].get<double>(), 30);
  EXPECT_EQ(c.numbers["p50_ms"].get<double>(), 15);  // half at 0, half at 30: interpolated
  EXPECT_EQ(v.status, CheckStatus::kFail);
  EXPECT_THAT(v.Text(), ::testing::HasSubstr("Validation FAIL: schedule_lag: requests sent p99 30.000 ms"));
  // Behind a --max-concurrency cap the wait is the client queue: reported, not judged.
  o.max_concurrency = 4;
  EXPECT_EQ(Get(ValidateRun(OpenRun(200, 10, 30), o), "schedule_lag").status, CheckStatus::kOk);
}

TEST(ValidationTest, RateShortfallBeyondTheScheduleDrawFails) {
  BenchOptions o;
  o.request_rate = 300;  // asked for 300/s, sent every 10 ms: 100/s
  const Validation v = ValidateRun(OpenRun(200, 10, 0), o);
  const ValidationCheck& c = Get(v, "rate");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NEAR(c.numbers["shortfall"].get<double>(), 2.0 / 3, 1e-3);
  // 15% short on 200 requests (allowance 3/sqrt(200) = 21%) is the draw's, not the client's.
  o.request_rate = 117;
  EXPECT_EQ(Get(ValidateRun(OpenRun(200, 10, 0), o), "rate").status, CheckStatus::kOk);
}

TEST(ValidationTest, ImpossibleNumbersAndTokenMismatchesAreCounted) {
  BenchOptions o;
  o.concurrency = 1;
  BenchRun run = OpenRun(10, 30, 0);
  run.records[3].first_token_ns = run.records[3].scheduled_ns;       // TTFT 0
  run.records[5].last_token_ns = run.records[5].first_token_ns - 1;  // E2EL below TTFT
  std::swap(run.records[6].chunks[0], run.records[6].chunks[1]);     // chunks out of order
  run.records[7].count_mismatch = true;
  Validation v = ValidateRun(run, o);
  const ValidationCheck& imp = Get(v, "impossible");
  EXPECT_EQ(imp.status, CheckStatus::kFail);
  EXPECT_EQ(imp.numbers["nonpositive_ttft"], 1);
  EXPECT_EQ(imp.numbers["e2el_below_ttft"], 1);
  EXPECT_EQ(imp.numbers["chunks_out_of_order"], 1);
  const ValidationCheck& tok = Get(v, "token_counts");
  EXPECT_EQ(tok.numbers["mismatches"], 1);
  EXPECT_EQ(tok.status, CheckStatus::kFail);  // 1 of 10: above 5%
}

TEST(ValidationTest, ClosedLoopThatNeverHeldItsConcurrencyFails) {
  BenchOptions o;
  o.concurrency = 3;
  BenchRun run = OpenRun(6, 30, 0);  // one at a time (each lasts 20 ms, 30 ms apart)
  Validation v = ValidateRun(run, o);
  EXPECT_EQ(Get(v, "concurrency").status, CheckStatus::kFail);
  EXPECT_EQ(Get(v, "concurrency").numbers["max_in_flight"], 1);
  EXPECT_EQ(Get(v, "steady_state").status, CheckStatus::kFail);
  // At concurrency 1 it was held from the first send to the last end but for the gaps.
  o.concurrency = 1;
  Validation one = ValidateRun(run, o);
  EXPECT_EQ(Get(one, "concurrency").status, CheckStatus::kOk);
  const ValidationCheck& s = Get(one, "steady_state");
  EXPECT_NEAR(s.numbers["held_share"].get<double>(), 120.0 / 170.0, 1e-3);
  EXPECT_EQ(s.numbers["requests_inside"], 6);
}

TEST(ValidationTest, RunVariationIsTheSampleCvAndCarriesEarlierFailures) {
  std::vector<nlohmann::ordered_json> runs(3);
  const double ttft[] = {10, 12, 14};
  for (int i = 0; i < 3; ++i) {
    runs[i]["mean_ttft_ms"] = ttft[i];
    runs[i]["validation"] = {{"status", "ok"}, {"failed", nlohmann::ordered_json::array()},
                             {"warned", nlohmann::ordered_json::array()},
                             {"checks", nlohmann::ordered_json::array()}};
  }
  runs[0]["validation"]["status"] = "fail";
  runs[0]["validation"]["checks"].push_back({{"name", "rate"}, {"status", "fail"}, {"message", "m"}});
  nlohmann::ordered_json last = runs[2];
  std::string text = AddRunVariation(runs, &last);
  EXPECT_DOUBLE_EQ(last["runs"]["metrics"]["mean_ttft_ms"]["cv"].get<double>(), 2.0 / 12.0);
  EXPECT_FALSE(last["runs"]["metrics"].contains("p99_ttft_ms"));  // absent from the runs
  EXPECT_EQ(last["validation"]["status"], "fail");
  EXPECT_EQ(last["validation"]["failed"][0], "run 1: rate");
  EXPECT_THAT(text, ::testing::HasSubstr("mean_ttft_ms"));
  EXPECT_THAT(text, ::testing::HasSubstr("16.7%"));
}

}  // namespace
}  // namespace latdoc::loadgen
