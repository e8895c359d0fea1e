// End-to-end: `latdoc sweep` against a real `latdoc sim` process whose knee is known.
//
// The truth. In a closed loop every request prefills L prompt tokens (P ms each) and decodes
// N tokens; with step time a + b x batch the time of one request at concurrency C (nothing
// queued) is E(C) = N a + C (P L + (N-1) b) = A + B C, and tokens/s = C N / E(C). The knee's
// elasticity (stats/knee.h) d ln(tokens/s) / d ln E = A / (B C) crosses 1 at C* = A / B.
// Past max_num_seqs M tokens/s is flat while requests queue: elasticity 0. So the true knee
// is min(M, A / B). The simulator's context cost is set to 0 so this holds exactly.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct SimModel {
  int max_num_seqs;
  double step_base_ms, decode_seq_us, prefill_token_us;
};

constexpr int kInputLen = 8;
constexpr int kOutputLen = 16;
constexpr double kTimeScale = 1.0;  // smaller scales let CPU jitter of a loaded host swamp 10% steps

double TrueKnee(const SimModel& m) {
  double a = m.step_base_ms, b = m.decode_seq_us / 1e3, p = m.prefill_token_us / 1e3;
  double c_star = kOutputLen * a / (p * kInputLen + (kOutputLen - 1) * b);
  return std::min(double(m.max_num_seqs), c_star);
}

std::vector<std::string> SimArgs(const SimModel& m) {
  return {"--max-num-seqs", std::to_string(m.max_num_seqs), "--sim-step-base-ms",
          std::to_string(m.step_base_ms), "--sim-decode-seq-us", std::to_string(m.decode_seq_us),
          "--sim-prefill-token-us", std::to_string(m.prefill_token_us), "--sim-context-token-ns",
          "0", "--time-scale", std::to_string(kTimeScale), "--log-file", "/dev/null",
          "--disable-log-stats"};
}

std::vector<std::string> SweepArgs(const std::string& url, const std::string& json_out) {
  return {"sweep", "--url", url, "--concurrency", "1:256", "--input-len",
          std::to_string(kInputLen), "--output-len", std::to_string(kOutputLen), "--token-ids",
          "--scrape-interval", "0.005", "--json", json_out};
}

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    ADD_FAILURE() << "no " << path;
    return json();
  }
  std::remove(path.c_str());
  return json::parse(*text);
}

// A step of the sweep in `j` that the host stalled, said in words: its p99 ITL is over twice the
// simulator's step time at its batch (a prompt's prefill included), or its tokens/s are more
// than 25% under a step at a lower load (in the simulator's closed loop, throughput only rises
// with load, then stays flat once requests queue); only a stall of the whole process explains
// either. (CI failed once on the second: tokens/s 2718 at 49 against 4402 at 45, knee 41 for 48,
// every p99 ITL normal.)
std::optional<std::string> HostStall(const json& j, const SimModel& m) {
  for (const auto& s : j["steps"]) {
    if (!s["output_throughput"].is_number()) continue;
    const double c = s["concurrency"].get<double>(), tput = s["output_throughput"].get<double>();
    for (const auto& lower : j["steps"]) {
      if (!lower["output_throughput"].is_number() || lower["concurrency"].get<double>() >= c) continue;
      if (tput < 0.75 * lower["output_throughput"].get<double>()) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "concurrency %.0f: %.0f tokens/s, under the %.0f at %.0f", c,
                      tput, lower["output_throughput"].get<double>(),
                      lower["concurrency"].get<double>());
        return std::string(buf);
      }
    }
  }
  for (const auto& s : j["steps"]) {
    if (!s["p99_itl_ms"].is_number()) continue;
    const double c = s["concurrency"].get<double>();
    const double batch = std::min(c, double(m.max_num_seqs));
    const double step_ms = m.step_base_ms + m.prefill_token_us / 1e3 * kInputLen + m.decode_seq_us / 1e3 * batch;
    const double itl = s["p99_itl_ms"].get<double>();
    if (itl > 2 * step_ms) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "concurrency %.0f: p99 ITL %.1f ms, the step takes %.1f ms", c, itl, step_ms);
      return std::string(buf);
    }
  }
  return std::nullopt;
}

constexpr int kSweepAttempts = 4;

// The reported knee is within 10% of the true one, for two batch limits and one compute-bound
// step-time setting.
TEST(SweepTruthTest, KneeWithinTenPercentOfTheSimulatorsTruth) {
#ifdef LATDOC_SANITIZED
  GTEST_SKIP() << "timing truth is checked by the release build; under ASan+UBSan the simulator "
                  "and the client run several times slower and their jitter hides 10% steps";
#endif
  for (SimModel m : {SimModel{16, 6, 80, 5}, SimModel{48, 6, 80, 5}}) {
    double truth = TrueKnee(m);
    // Sweeping again only when a sweep's knee is off and the host stalled during it: a stall
    // holds every stream at once, so it lands in the p99 of every latency of its step, and the
    // knee is judged on steps 10% apart (CI, 2 cores, failed once: p99 ITL 21 ms at 45 against
    // 8-10 ms beside it, knee 41 for 48; on this shared VM most sweeps see such a stall, and
    // about one in four missed the knee of 48 in a noisy hour). A quiet sweep that misses fails
    // at once; so does a sweep that misses kSweepAttempts times.
    json j;
    RunResult r;
    double knee = 0;
    std::vector<std::string> stalls;
    for (int attempt = 1; attempt <= kSweepAttempts; ++attempt) {
      SimProcess sim(SimArgs(m));
      std::string out = TempPath("sweep.json");
      r = RunLatdoc(SweepArgs(sim.url(), out));
      sim.process().Signal(SIGTERM);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      j = ReadJson(out);
      ASSERT_FALSE(j["knee"].is_null()) << r.out;
      knee = j["knee"]["concurrency"].get<double>();
      if (std::abs(knee - truth) <= 0.10 * truth) break;
      std::optional<std::string> stall = HostStall(j, m);
      if (!stall) break;
      stalls.push_back(*stall);
      std::fprintf(stderr, "sweep %d: knee %.0f (truth %.0f) while the host stalled (%s)\n%s", attempt, knee,
                   truth, stall->c_str(), r.out.c_str());
    }
    EXPECT_TRUE(j["knee"]["reached"].get<bool>()) << r.out;
    EXPECT_NEAR(knee, truth, 0.10 * truth) << "max_num_seqs " << m.max_num_seqs << "\n" << r.out;
    EXPECT_EQ(j["schema"], "latdoc.sweep/1");
    EXPECT_FALSE(j["partial"].get<bool>());
    if (m.max_num_seqs < truth * 1.5) continue;
    // Compute-bound: nothing queued at the knee.
    EXPECT_EQ(j["knee"]["bend"], "compute") << r.out;
  }
}

// Queueing past max_num_seqs is named from the server's metrics, with the plateau.
TEST(SweepTruthTest, QueueingIsExplainedByTheServersMetrics) {
#ifdef LATDOC_SANITIZED
  GTEST_SKIP() << "timing truth is checked by the release build; under ASan+UBSan the simulator "
                  "and the client run several times slower and their jitter hides 10% steps";
#endif
  SimModel m{16, 6, 80, 5};
  SimProcess sim(SimArgs(m));
  std::string out = TempPath("q.json");
  std::string csv = TempPath("q.csv"), svg = TempPath("q.svg");
  auto args = SweepArgs(sim.url(), out);
  args.insert(args.end(), {"--csv", csv, "--svg", svg});
  RunResult r = RunLatdoc(args);
  sim.process().Signal(SIGTERM);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = ReadJson(out);
  EXPECT_EQ(j["knee"]["bend"], "queueing") << r.out;
  EXPECT_EQ(j["server_max_num_seqs"], 16) << r.out;
  EXPECT_THAT(r.out, HasSubstr("Recommendations:"));
  EXPECT_THAT(r.out, HasSubstr("--max-num-seqs"));
  EXPECT_THAT(r.out, HasSubstr("--max-num-batched-tokens"));
  // Every step above the limit shows requests waiting, none below it does.
  for (const json& s : j["steps"]) {
    double c = s["concurrency"].get<double>();
    const json& sm = s["server_metrics"];
    if (c > 20) {
      EXPECT_EQ(s["bend"], "queueing") << s.dump();
      ASSERT_TRUE(sm["max_waiting"].is_number()) << s.dump();
      EXPECT_GT(sm["max_waiting"].get<double>(), 0) << s.dump();
    }
    if (c <= 16) {
      EXPECT_NE(s["bend"], "queueing") << s.dump();
    }
    if (c >= 32) {
      ASSERT_TRUE(sm["max_running"].is_number()) << s.dump();
      EXPECT_LE(sm["max_running"].get<double>(), 16);
    }
  }
  auto csv_text = ReadFileToString(csv);
  ASSERT_TRUE(csv_text.ok());
  EXPECT_EQ(size_t(std::count(csv_text->begin(), csv_text->end(), '\n')), j["steps"].size() + 1);
  auto svg_text = ReadFileToString(svg);
  ASSERT_TRUE(svg_text.ok());
  EXPECT_THAT(*svg_text, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(*svg_text, HasSubstr(">knee " + std::to_string(j["knee"]["concurrency"].get<int>())));
  std::remove(csv.c_str());
  std::remove(svg.c_str());
}

// `diagnose --sweep` runs the sweep with the load test: the sweep's document goes into the
// diagnosis (the report's latency curve), and a target load past the knee (64 concurrent on a
// server that runs 16 at a time) is a warning whose advice is the sweep's recommendation.
TEST(DiagnoseSweepTest, TargetPastTheKneeIsAWarningWithTheSweepsFlags) {
#ifdef LATDOC_SANITIZED
  GTEST_SKIP() << "the knee's timing is checked by the release build";
#endif
  SimModel m{16, 6, 80, 5};
  SimProcess sim(SimArgs(m));
  std::string out = TempPath("diag_sweep.json");
  RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--net-samples", "0", "--concurrency",
                           "64", "--requests", "128", "--baseline-requests", "4", "--input-len",
                           std::to_string(kInputLen), "--output-len", std::to_string(kOutputLen),
                           "--token-ids", "--sweep", "--sweep-max", "64", "--json", out,
                           "--quiet"});
  sim.process().Signal(SIGTERM);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  json d = ReadJson(out);
  ASSERT_TRUE(d["sweep"].is_object()) << d["layers"].dump();
  EXPECT_EQ(d["sweep"]["schema"], "latdoc.sweep/1");
  EXPECT_GE(d["sweep"]["steps"].size(), 4u);
  EXPECT_THAT(d["layers"]["load"].get<std::string>(), HasSubstr("; sweep of "));
  const json* knee = nullptr;
  for (const json& f : d["findings"])
    if (f["id"] == "load.sweep_knee") knee = &f;
  ASSERT_NE(knee, nullptr);
  EXPECT_EQ((*knee)["severity"], "warn") << knee->dump();
  // The recommendation rests on the server's running batch, read from /metrics during each
  // step: it is the server's 16 or above, never the batch of 1 that sparse scrapes gave.
  const std::string advice = (*knee)["advice"].get<std::string>();
  const size_t at = advice.find("--max-num-seqs ");
  ASSERT_NE(at, std::string::npos) << advice;
  EXPECT_GE(std::stoi(advice.substr(at + 15)), 16) << advice;
}

// The default simulator (max_num_seqs 1024: no batch limit within 1:32) and the default prompts
// (256 tokens, so prompts wait for steps carrying other prompts' prefill). The
// output must follow the facts: no step where the engine ran every request offered is put down
// to the server's batch limit; one knee number in every line; the table sorted by concurrency
// with the knee marked; the model and the server named; the SVG carries p99 E2EL, the metric
// the knee is judged on. (It said "queueing past the server's batch limit: running plateaued at
// 20 while requests waited (... up to 0 waiting while 20 ran)", and "past the knee at 16" above
// "Knee: 19".)
TEST(SweepCliTest, DefaultSimExplanationFollowsTheFacts) {
#ifdef LATDOC_SANITIZED
  GTEST_SKIP() << "a sweep of the default workload is checked by the release build";
#endif
  SimProcess sim({"--log-file", "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("default_sim.json"), svg = TempPath("default_sim.svg");
  // 32 output tokens rather than the default 64: half the time, the same waits for prefill.
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "--concurrency", "1:32", "--output-len",
                           "32", "--json", out, "--svg", svg});
  sim.process().Signal(SIGTERM);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = ReadJson(out);
  EXPECT_EQ(j["model_id"], "latdoc-sim/llama-3-8b");
  EXPECT_THAT(r.out, HasSubstr("Model: latdoc-sim/llama-3-8b\nServer: " + sim.url() +
                               " (its /metrics in vLLM's names)\n"));
  EXPECT_TRUE(j["server_max_num_seqs"].is_null()) << r.out;
  int like_d8 = 0;  // steps as the review saw them: all offered running, queue > 2 engine steps
  for (const json& s : j["steps"]) {
    const json& sm = s["server_metrics"];
    const double c = s["concurrency"].get<double>();
    if (sm["max_running"].is_number() && sm["max_running"].get<double>() >= c - 0.5) {
      EXPECT_NE(s["bend"], "queueing") << s.dump();
      like_d8 += sm["queue_mean_ms"].is_number() && sm["step_time_ms"].is_number() &&
                 sm["queue_mean_ms"].get<double>() > 2 * sm["step_time_ms"].get<double>();
    }
  }
  EXPECT_GE(like_d8, 1) << "no step had the long queue time that was taken for a batch limit:\n" << r.out;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("batch limit: running plateaued")));
  // One knee number: the Knee line, the stop reason, the table's mark, the JSON.
  ASSERT_FALSE(j["knee"].is_null()) << r.out;
  const std::string knee = std::to_string(j["knee"]["concurrency"].get<int>());
  EXPECT_THAT(r.out, HasSubstr("\nKnee: " + knee + " concurrent"));
  for (const std::string lead : {"knee at ", "Knee: "}) {
    for (size_t at = r.out.find(lead); at != std::string::npos; at = r.out.find(lead, at + 1)) {
      const size_t from = at + lead.size();
      EXPECT_EQ(r.out.substr(from, r.out.find_first_not_of("0123456789", from) - from), knee)
          << r.out.substr(at, 60);
    }
  }
  // The table: sorted by concurrency, one row per step, the knee's row marked.
  std::vector<double> rows;
  std::string marked;
  const size_t table = r.out.find("    conc ");
  ASSERT_NE(table, std::string::npos) << r.out;
  for (size_t at = r.out.find('\n', table) + 1; at < r.out.size() && r.out[at] == ' ';) {
    const size_t end = r.out.find('\n', at);
    const std::string line = r.out.substr(at, end - at);
    rows.push_back(std::stod(line));
    if (line.find("<- knee") != std::string::npos) marked = std::to_string(int(rows.back()));
    at = end + 1;
  }
  EXPECT_EQ(rows.size(), j["steps"].size()) << r.out;
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end())) << r.out;
  EXPECT_EQ(marked, knee) << r.out;
  // Progress went to stderr, one line a step.
  EXPECT_EQ(size_t(std::count(r.err.begin(), r.err.end(), '\n')), j["steps"].size()) << r.err;
  EXPECT_THAT(r.err, HasSubstr("step 1 (ladder): 1 concurrent, "));
  auto svg_text = ReadFileToString(svg);
  ASSERT_TRUE(svg_text.ok());
  EXPECT_THAT(*svg_text, HasSubstr(">p99 E2EL (ms)<"));
  EXPECT_THAT(*svg_text, HasSubstr(">knee " + knee + "<"));
  std::remove(svg.c_str());
}

TEST(SweepCliTest, RangeWithOnePointExits2) {
  RunResult r = RunLatdoc({"sweep", "--url", "http://127.0.0.1:9", "--concurrency", "8:8"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "latdoc sweep: --concurrency 8:8: a sweep needs a range with at least two points "
            "(lo < hi); for one load level use `latdoc bench`\n");
}

TEST(SweepCliTest, UnreachableExits3) {
  std::string out = TempPath("unreach.json");
  RunResult r = RunLatdoc({"sweep", "--url", "http://127.0.0.1:9", "--concurrency", "1:4",
                           "--json", out});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc sweep: http://127.0.0.1:9"));
  EXPECT_FALSE(ReadFileToString(out).ok()) << "no output file for a sweep that did not run";
}

TEST(SweepCliTest, ServerErroringAtEveryStepExits3) {
  SimProcess sim({"--sim-fault-500", "1", "--log-file", "/dev/null", "--disable-log-stats"});
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "--concurrency", "1:8", "--input-len",
                           "4", "--output-len", "2", "--min-requests", "4"});
  sim.process().Signal(SIGTERM);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("every request failed at 1 concurrent (4 of 4; http_status: HTTP 500"));
}

// --metrics-url may name the endpoint (it fetched URL/metrics/metrics, and said nothing);
// metrics that cannot be read are said on stderr.
TEST(SweepCliTest, MetricsUrlNamingTheEndpointIsRead) {
  SimProcess sim({"--max-num-seqs", "8", "--log-file", "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("metrics_url.json");
  const std::vector<std::string> base = {"sweep", "--url", sim.url(), "--concurrency", "1:2", "--input-len",
                                         "4", "--output-len", "4", "--min-requests", "4", "--scrape-interval",
                                         "0.005", "--json", out, "--quiet"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--metrics-url", sim.url() + "/metrics"});
  RunResult r = RunLatdoc(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  json j = ReadJson(out);
  ASSERT_FALSE(j["steps"].empty());
  EXPECT_TRUE(j["steps"][0]["server_metrics"]["metrics_available"].get<bool>()) << j["steps"][0].dump();

  args = base;
  args.insert(args.end(), {"--metrics-url", sim.url() + "/prom"});
  r = RunLatdoc(args);
  sim.process().Signal(SIGTERM);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The URL really requested: the --metrics-url path with /metrics after it.
  EXPECT_EQ(r.err, "latdoc sweep: the server's metrics were not read (" + sim.url() +
                       "/prom/metrics answered HTTP 404): no queue, KV or step-time evidence for the knee\n");
}

TEST(SweepCliTest, SloNothingMeetsExits1) {
  SimModel m{16, 6, 80, 5};
  SimProcess sim(SimArgs(m));
  std::string out = TempPath("slo.json");
  auto args = SweepArgs(sim.url(), out);
  args.insert(args.end(), {"--slo", "ttft:0.01"});
  RunResult r = RunLatdoc(args);
  sim.process().Signal(SIGTERM);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc sweep: no step met the SLO"));
  json j = ReadJson(out);
  EXPECT_TRUE(j["highest_meeting_slo"].is_null());
  EXPECT_EQ(j["steps"].size(), 1u);
  EXPECT_THAT(j["stop_reason"].get<std::string>(), HasSubstr("SLO broken at 1 concurrent"));
}

TEST(SweepCliTest, SigintWritesTheStepsDoneMarkedPartial) {
  // Slow enough that the sweep is still running after a second.
  SimProcess sim({"--max-num-seqs", "16", "--sim-context-token-ns", "0", "--log-file",
                  "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("partial.json");
  Process p({LatdocBinary(), "sweep", "--url", sim.url(), "--concurrency", "1:256",
             "--input-len", "8", "--output-len", "32", "--json", out, "--quiet"});
  ASSERT_TRUE(sim.WaitForMetric("vllm:request_success_total", 2));  // the first step is done
  int code = p.Signal(SIGINT);
  sim.process().Signal(SIGTERM);
  EXPECT_EQ(code, 130);
  json j = ReadJson(out);
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["partial_reason"], "interrupted");
  ASSERT_FALSE(j["steps"].empty());
  EXPECT_TRUE(j["steps"].back().value("interrupted", false));
}

}  // namespace
}  // namespace latdoc::testing
