// End-to-end: `latdoc calibrate` and `latdoc whatif` against ground truth.
//
// A `latdoc sim` whose step costs are not the defaults (and not told to latdoc) plays the real
// server. latdoc sweeps it, calibrates on the sweep, and predicts three flag changes inside the
// swept range: a lower --max-num-seqs, a lower --max-num-batched-tokens (prompts then prefill
// in chunks), and a concurrency the sweep did not run. The hidden-parameter sim is then started
// with those flags and measured by `latdoc bench`. The contract (docs/whatif.md): predicted
// p99 TTFT and output tokens/s within kBound of the measured values. Every error is printed.
#include <cmath>
#include <cstdio>
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

constexpr double kBound = 0.15;  // the issue's goal, asserted as is
constexpr int kInputLen = 128, kOutputLen = 32;

// The hidden server: 8 ms per step, 150 us per decoding sequence, 40 us per prompt token (the
// defaults are 6, 80 and 60), at time scale 0.5 (4 ms steps on the wall clock), batch <= 16.
std::vector<std::string> HiddenSim(std::vector<std::string> flags) {
  std::vector<std::string> a = {"--time-scale", "0.5", "--seed", "3", "--sim-step-base-ms", "8",
                                "--sim-decode-seq-us", "150", "--sim-prefill-token-us", "40",
                                "--disable-log-stats", "--disable-uvicorn-access-log"};
  a.insert(a.end(), flags.begin(), flags.end());
  return a;
}

json ReadJson(const std::string& path) { return json::parse(ReadFileOrEmpty(path)); }

TEST(WhatifE2eTest, PredictsFlagChangesOfAHiddenParameterSim) {
#ifdef LATDOC_SANITIZED
  // One ASan run gave a worst error of 6.8% (docs/whatif.md), but a TSan build slows the sim's
  // event loop by more than the steps it times. The code paths run under the sanitizers in the
  // unit tests and in BadInputAndRefusals.
  GTEST_SKIP() << "predictions against measured timing are checked by the release build";
#endif
  TempDir dir("whatif_e2e");
  {
    SimProcess sim(HiddenSim({"--max-num-seqs", "16"}));
    auto sweep = RunLatdoc({"sweep", "--url", sim.url(), "--concurrency", "1:32", "--input-len",
                            std::to_string(kInputLen), "--output-len", std::to_string(kOutputLen),
                            "--min-requests", "16", "--max-requests", "64", "--max-steps", "8",
                            "-q", "--json", dir / "sweep.json"});
    ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  }
  auto cal = RunLatdoc({"calibrate", dir / "sweep.json", "--json", dir / "cal.json"});
  ASSERT_EQ(cal.exit_code, 0) << cal.out << cal.err;
  std::printf("%s", cal.out.c_str());
  json c = ReadJson(dir / "cal.json");
  EXPECT_EQ(c["schema"], "latdoc.calibration/1");
  EXPECT_EQ(c["model"]["max_num_seqs"], 16);  // the running plateau while requests queued
  // The hidden step costs, scaled by 0.5: 4 ms, 75 us, 20 us.
  EXPECT_NEAR(c["model"]["step_base_ms"].get<double>(), 4.0, 4.0 * 0.15);

  struct Change {
    std::string what;
    std::vector<std::string> sim_flags, sets;
    int concurrency, requests;
  };
  const std::vector<Change> changes = {
      {"max-num-seqs 16 -> 8 at 16 concurrent", {"--max-num-seqs", "8"}, {"max-num-seqs=8"}, 16, 128},
      {"max-num-batched-tokens 8192 -> 64 at 16 concurrent",
       {"--max-num-seqs", "16", "--max-num-batched-tokens", "64"}, {"max-num-batched-tokens=64"}, 16, 128},
      {"24 concurrent (not swept)", {"--max-num-seqs", "16"}, {}, 24, 192},
  };
  double worst = 0;
  for (const Change& ch : changes) {
    json measured;
    {
      SimProcess sim(HiddenSim(ch.sim_flags));
      auto b = RunLatdoc({"bench", "--url", sim.url(), "-c", std::to_string(ch.concurrency), "-n",
                          std::to_string(ch.requests), "--input-len", std::to_string(kInputLen),
                          "--output-len", std::to_string(kOutputLen), "-q", "--json", dir / "bench.json"});
      ASSERT_EQ(b.exit_code, 0) << b.err;
      measured = ReadJson(dir / "bench.json");
    }
    std::vector<std::string> args = {"whatif", "--calibration", dir / "cal.json", "--load",
                                     "concurrency=" + std::to_string(ch.concurrency), "--requests",
                                     std::to_string(ch.requests), "-q", "--json", dir / "whatif.json"};
    for (const std::string& s : ch.sets) args.insert(args.end(), {"--set", s});
    auto w = RunLatdoc(args);
    ASSERT_EQ(w.exit_code, 0) << w.err;
    json p = ReadJson(dir / "whatif.json");
    for (const char* key : {"p99_ttft_ms", "output_throughput"}) {
      double pred = p["predicted"][key].get<double>(), meas = measured[key].get<double>();
      double err = pred / meas - 1;
      worst = std::max(worst, std::fabs(err));
      std::printf("%-50s %-18s predicted %9.2f measured %9.2f error %+6.1f%% interval [%.2f, %.2f]\n",
                  ch.what.c_str(), key, pred, meas, 100 * err, p["intervals"][key][0].get<double>(),
                  p["intervals"][key][1].get<double>());
      EXPECT_LE(std::fabs(err), kBound) << ch.what << ": " << key;
    }
  }
  std::printf("worst error %.1f%% (bound %.0f%%)\n", 100 * worst, 100 * kBound);
}

// `diagnose --sweep`: a config finding with advice gets its predicted effect, and the "before"
// side of it (the model at the target load, as many requests as the load step) matches the load
// step diagnose measured within kBound. The sim's log gives diagnose the server's flags.
TEST(WhatifE2eTest, DiagnosePutsAPredictedEffectOnConfigFindings) {
#ifdef LATDOC_SANITIZED
  GTEST_SKIP() << "predictions against measured timing are checked by the release build";
#endif
  TempDir dir("whatif_e2e_diag");
  SimProcess sim(HiddenSim({"--max-num-seqs", "16", "--max-num-batched-tokens", "20000",
                            "--log-file", dir / "vllm.log"}));
  auto d = RunLatdoc({"diagnose", "--url", sim.url(), "--sweep", "--sweep-max", "16", "-c", "16",
                      "-n", "96", "--input-len", "64", "--output-len", "16", "--net-samples", "0",
                      "--logs", dir / "vllm.log", "-q", "--json", dir / "diag.json"});
  ASSERT_LE(d.exit_code, 1) << d.err;
  json doc = ReadJson(dir / "diag.json");
  std::string effect;
  for (const json& f : doc["findings"]) {
    if (f["id"] != "config.max_num_batched_tokens") continue;
    for (const json& e : f["evidence"])
      if (e["name"] == "predicted_effect") effect = e["text"].get<std::string>();
  }
  ASSERT_THAT(effect, ::testing::StartsWith("at 16 concurrent: p99 TTFT ")) << d.out;
  double ttft = 0, tput = 0;
  ASSERT_EQ(std::sscanf(effect.c_str(), "at 16 concurrent: p99 TTFT %lf ->", &ttft), 1) << effect;
  auto out = effect.find(", output ");
  ASSERT_NE(out, std::string::npos);
  ASSERT_EQ(std::sscanf(effect.c_str() + out, ", output %lf ->", &tput), 1) << effect;
  const double meas_ttft = doc["bench"]["p99_ttft_ms"].get<double>();
  const double meas_tput = doc["bench"]["output_throughput"].get<double>();
  std::printf("diagnose: %s\nmeasured load step: p99 TTFT %.2f ms (error %+.1f%%), %.1f tokens/s (error %+.1f%%)\n",
              effect.c_str(), meas_ttft, 100 * (ttft / meas_ttft - 1), meas_tput, 100 * (tput / meas_tput - 1));
  EXPECT_LE(std::fabs(ttft / meas_ttft - 1), kBound);
  EXPECT_LE(std::fabs(tput / meas_tput - 1), kBound);
}

// Bad input: exit 2, saying what and where; a calibration too poor to predict from: exit 1.
TEST(WhatifE2eTest, BadInputAndRefusals) {
  TempDir dir("whatif_e2e_bad");
  {
    std::FILE* f = std::fopen((dir / "broken.json").c_str(), "w");
    std::fputs("{\"schema\": \"latdoc.calibration/1\",", f);
    std::fclose(f);
  }
  auto broken = RunLatdoc({"whatif", "--calibration", dir / "broken.json", "--load", "concurrency=4"});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_THAT(broken.err, HasSubstr("latdoc whatif: " + (dir / "broken.json") + ": byte "));

  // A sweep of two steps cannot be fitted: calibrate writes why and exits 1.
  json sweep = {{"schema", "latdoc.sweep/1"}, {"mode", "concurrency"},
                {"workload", {{"dataset", "random"}, {"input_len", 64}, {"output_len", 16}}},
                {"steps", json::array()}};
  for (int c : {1, 2}) {
    sweep["steps"].push_back({{"concurrency", c}, {"requests", 16}, {"failed", 0},
                              {"median_ttft_ms", 10}, {"p99_ttft_ms", 12}, {"median_itl_ms", 5},
                              {"output_throughput", 190.0 * c}});
  }
  {
    std::FILE* f = std::fopen((dir / "sweep.json").c_str(), "w");
    std::fputs(sweep.dump().c_str(), f);
    std::fclose(f);
  }
  auto poor = RunLatdoc({"calibrate", dir / "sweep.json", "--json", dir / "cal.json"});
  EXPECT_EQ(poor.exit_code, 1);
  EXPECT_THAT(poor.err, HasSubstr("latdoc calibrate: not usable for prediction: 2 usable step(s): "
                                  "at least 3 are needed to fit the step time"));
  auto refused = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--load", "concurrency=4"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("latdoc whatif: not predictable: 2 usable step(s)"));
  auto unknown = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--load", "concurrency=4",
                            "--set", "max-seqs=4"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("latdoc whatif: --set max-seqs=4: unknown key (known: max-num-seqs,"));
  auto bad_load = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--load", "users=4"});
  EXPECT_EQ(bad_load.exit_code, 2);
  EXPECT_THAT(bad_load.err, HasSubstr("latdoc whatif: --load users=4: expected concurrency=N or rate=R"));

  sweep.erase("workload");
  {
    std::FILE* f = std::fopen((dir / "old.json").c_str(), "w");
    std::fputs(sweep.dump().c_str(), f);
    std::fclose(f);
  }
  auto old = RunLatdoc({"calibrate", dir / "old.json"});
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_THAT(old.err, HasSubstr("latdoc calibrate: " + (dir / "old.json") + ": no \"workload\""));
}

}  // namespace
}  // namespace latdoc::testing
