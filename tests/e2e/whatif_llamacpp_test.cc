// End-to-end: `latdoc calibrate` and `latdoc whatif` on a real llama.cpp `llama-server`
// (scripts/build-llama-server.sh; CPU, one thread, the tiny random-weight model of
// scripts/make-tiny-gguf.py).
//
// The server runs with -np 4 and is swept; the sweep is calibrated with --parallel 4 and
// --ctx-size 2048; the model predicts -np 2 and -np 1 at 4 concurrent requests; the server is
// restarted with each and measured by three `latdoc bench` runs. The contract (docs/whatif.md,
// section "Calibrated on a real llama.cpp server"):
//   - the calibration names llama.cpp and takes its limits from its flags (4 slots, 2048 tokens
//     of context: 128 blocks of 16), and whatif maps llama.cpp's flag names on them;
//   - either the fit is usable and the predicted p99 TTFT and output tokens/s are within a
//     factor kMaxRatio of the median of the three measurements, or the fit is refused and the
//     refusal names the metric and its RMS error against the limit (and whatif refuses too).
// kMaxRatio is wide because the server's steps take a tenth of a millisecond and the machine
// that runs the suite is shared: on the loaded 2-core development machine (load average 3-6)
// three benches of the same server differed by up to 2.5x in tokens/s; over 15 usable runs of
// this test the worst errors were -69% (p99 TTFT, ratio 0.31) and +99% (tokens/s, -np 1), and 5
// of 20 runs were refused (3 of 3 while a compile ran alongside). Every figure is printed. When
// the server binary, gguf-py or numpy is missing, the test skips and says which.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/llama_server.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr double kMaxRatio = 5.0;
constexpr int kCtxTokens = 2048;
const std::vector<std::string> kWorkload = {"--input-len", "16", "--output-len", "12"};

json ReadJson(const std::string& path) { return json::parse(ReadFileOrEmpty(path), nullptr, false); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::vector<std::string> Args(std::vector<std::string> a) {
  a.insert(a.end(), kWorkload.begin(), kWorkload.end());
  return a;
}

TEST(WhatifLlamaCppTest, CalibratesOnNp4AndPredictsNp2AndNp1) {
  const std::string why = LlamaServerSkipReason();
  if (!why.empty()) GTEST_SKIP() << "llama.cpp server not available: " << why;
  TempDir dir("whatif_llamacpp");
  const std::string model = dir / "tiny.gguf";
  ASSERT_EQ(MakeTinyGguf(model), "") << "scripts/make-tiny-gguf.py failed";
  auto start = [&](int parallel) {
    LlamaServerProcess::Options o;
    o.model_path = model;
    o.parallel = parallel;
    o.ctx_tokens = kCtxTokens;
    auto s = std::make_unique<LlamaServerProcess>(o, dir / ("server" + std::to_string(parallel) + ".log"));
    EXPECT_TRUE(s->WaitReady()) << ReadFileOrEmpty(dir / ("server" + std::to_string(parallel) + ".log"));
    return s;
  };
  {
    auto server = start(4);
    auto sweep = RunLatdoc(Args({"sweep", "--url", server->url(), "--concurrency", "1:8",
                                 "--max-steps", "6", "-q", "--json", dir / "sweep.json"}),
                           300000);
    ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  }
  auto cal = RunLatdoc({"calibrate", dir / "sweep.json", "--parallel", "4", "--ctx-size",
                        std::to_string(kCtxTokens), "--json", dir / "cal.json"});
  std::printf("%s%s", cal.out.c_str(), cal.err.c_str());
  ASSERT_TRUE(cal.exit_code == 0 || cal.exit_code == 1) << cal.exit_code << cal.err;
  json c = ReadJson(dir / "cal.json");
  ASSERT_TRUE(c.is_object());
  EXPECT_EQ(c["server"], "llamacpp");
  EXPECT_THAT(cal.out, HasSubstr("(llama.cpp, "));
  EXPECT_EQ(c["model"]["max_num_seqs"], 4);
  EXPECT_EQ(c["model"]["ctx_size"], kCtxTokens);
  EXPECT_EQ(c["model"]["num_gpu_blocks"], kCtxTokens / 16);
  EXPECT_EQ(c["model"]["max_num_batched_tokens"], 2048);
  EXPECT_EQ(c["model"]["enable_chunked_prefill"], true);
  bool saw_flag = false;
  for (const json& p : c["parameters"])
    if (p["name"] == "max_num_seqs") saw_flag = p["source"] == "flag: --parallel";
  EXPECT_TRUE(saw_flag) << c["parameters"].dump();

  // llama.cpp's flag names: an unknown one is bad input, whatever the fit.
  auto bad = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--set", "parallels=2", "--load",
                        "concurrency=4"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--set parallels=2: unknown key (known: "));
  EXPECT_THAT(bad.err, HasSubstr("parallel, ctx-size, batch-size, ubatch-size)"));

  const std::vector<std::string> predict = {"whatif", "--calibration", dir / "cal.json", "--set", "parallel=2",
                                            "--load", "concurrency=4", "--requests", "64", "--json",
                                            dir / "whatif.json"};
  if (cal.exit_code == 1) {
    // Refused: the refusal names what the model missed, by how much, against which limit.
    EXPECT_FALSE(c["usable"].get<bool>());
    const std::string refusal = c["refusal"].get<std::string>();
    // (A sweep cut short by a loaded host may also leave too few steps.)
    EXPECT_THAT(refusal, ::testing::MatchesRegex(
                             "the fitted model does not reproduce the sweep: .*(output tokens/s|median ITL|"
                             "TTFT \\(median and p99\\)) off by [0-9]+% RMS \\(limit [0-9]+%\\).*|"
                             "[0-2] usable step\\(s\\): at least 3 are needed to fit the step time"));
    EXPECT_THAT(cal.err, HasSubstr("latdoc calibrate: not usable for prediction: " + refusal));
    auto w = RunLatdoc(predict);
    EXPECT_EQ(w.exit_code, 1);
    EXPECT_THAT(w.err, HasSubstr("not predictable: " + refusal));
    std::printf("calibration refused: %s\n", refusal.c_str());
    return;
  }
  ASSERT_TRUE(c["usable"].get<bool>());
  // A request larger than a slot's share of the context is rejected by llama.cpp, so the
  // prediction is refused as bad input: 16 + 12 tokens > 128 / 8.
  auto too_small = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--set", "parallel=8", "--set",
                              "ctx-size=128", "--load", "concurrency=4"});
  EXPECT_EQ(too_small.exit_code, 2);
  EXPECT_THAT(too_small.err, HasSubstr("a request of 28 tokens does not fit a slot's 16 tokens "
                                       "(ctx-size 128 / parallel 8): llama.cpp rejects it"));

#ifdef LATDOC_SANITIZED
  // A sanitized client slows the measurement by more than the server's 0.1 ms steps.
  std::printf("predictions against measured timing are checked by the release build\n");
  return;
#endif
  for (int parallel : {2, 1}) {
    SCOPED_TRACE("-np " + std::to_string(parallel));
    const std::string wjson = dir / ("whatif" + std::to_string(parallel) + ".json");
    auto w = RunLatdoc({"whatif", "--calibration", dir / "cal.json", "--set", "parallel=" + std::to_string(parallel),
                        "--load", "concurrency=4", "--requests", "64", "--json", wjson});
    ASSERT_EQ(w.exit_code, 0) << w.out << w.err;
    std::printf("%s", w.out.c_str());
    json pred = ReadJson(wjson);
    ASSERT_TRUE(pred.is_object());
    EXPECT_EQ(pred["config"]["max_num_seqs"], parallel);
    EXPECT_EQ(pred["predicted"]["max_running"], parallel);  // the slots bound the batch

    // Measured: three benches of the same 64 requests after 8 requests of warm-up (the first
    // requests after a start are slower), compared by their median.
    std::vector<double> p99_ttft, tput;
    {
      auto server = start(parallel);
      for (int rep = 0; rep < 3; ++rep) {
        const std::string out = dir / ("bench" + std::to_string(parallel) + "." + std::to_string(rep) + ".json");
        auto b = RunLatdoc(Args({"bench", "--url", server->url(), "-n", "64", "--max-concurrency", "4",
                                 "--warmup", rep == 0 ? "8" : "0", "--json", out}));
        ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
        json j = ReadJson(out);
        ASSERT_EQ(j["completed"], 64);
        p99_ttft.push_back(j["p99_ttft_ms"].get<double>());
        tput.push_back(j["output_throughput"].get<double>());
      }
    }
    const double pred_ttft = pred["predicted"]["p99_ttft_ms"].get<double>();
    const double pred_tput = pred["predicted"]["output_throughput"].get<double>();
    const double meas_ttft = Median(p99_ttft), meas_tput = Median(tput);
    std::printf("-np %d at 4 concurrent: p99 TTFT predicted %.3g ms, measured %.3g %.3g %.3g ms (median "
                "%.3g, error %+.0f%%); tokens/s predicted %.4g, measured %.4g %.4g %.4g (median %.4g, "
                "error %+.0f%%)\n",
                parallel, pred_ttft, p99_ttft[0], p99_ttft[1], p99_ttft[2], meas_ttft,
                100 * (pred_ttft / meas_ttft - 1), pred_tput, tput[0], tput[1], tput[2], meas_tput,
                100 * (pred_tput / meas_tput - 1));
    EXPECT_LE(std::fabs(std::log(pred_ttft / meas_ttft)), std::log(kMaxRatio));
    EXPECT_LE(std::fabs(std::log(pred_tput / meas_tput)), std::log(kMaxRatio));
  }
}

}  // namespace
}  // namespace latdoc::testing
