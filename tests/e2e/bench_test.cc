// End-to-end: `latdoc bench` against a real `latdoc sim` process. The simulator's request trace
// (--trace-requests) is the ground truth the client's measurements must match.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "loadgen/load_facts.h"
#include "stats/sample_summary.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct Truth {
  std::vector<double> ttft_ms, itl_ms, e2el_ms;
  double first_received_ms = 1e300, last_written_ms = 0;   // the measured requests' span
};

// Ground truth from the simulator: when each token's chunk reached the kernel on the server's
// side (written_ns: after any simulated network delay), from when the request was received.
// Requests latdoc-bench-0 .. latdoc-bench-<warmup - 1> were the warm-up: not in the results.
Truth ReadTruth(const std::string& trace, int warmup) {
  Truth t;
  std::ifstream in(trace);
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line);
    if (j["status"] != "length" && j["status"] != "stop") continue;
    std::string id = j["x_request_id"];
    if (std::stoi(id.substr(id.rfind('-') + 1)) < warmup) continue;
    double received = double(j["received_ns"].get<int64_t>()) / 1e6;
    auto times = j["written_ns"].get<std::vector<int64_t>>();
    auto counts = j["token_counts"].get<std::vector<int>>();
    t.ttft_ms.push_back(double(times.front()) / 1e6 - received);
    t.e2el_ms.push_back(double(times.back()) / 1e6 - received);
    t.first_received_ms = std::min(t.first_received_ms, received);
    t.last_written_ms = std::max(t.last_written_ms, double(times.back()) / 1e6);
    for (size_t i = 1; i < times.size(); ++i) {
      double gap = double(times[i] - times[i - 1]) / 1e6;
      for (int k = 0; k < counts[i]; ++k) t.itl_ms.push_back(gap / counts[i]);
    }
  }
  return t;
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, p);
}

// The bound is the issue's: 2% or 0.2 ms, whichever is larger. Both ends take their times from
// the kernel (the simulator's request arrival and the client's token arrivals are receive
// timestamps; the simulator's writes are stamped when send() returns), so neither event loop's
// wake-up is inside the gap. What is left: a read that finds two chunks (the client thread was
// descheduled for a whole step) stamps both with the later arrival, which moves single ITL
// samples; so the p99s get 0.5 ms of margin on a loaded machine, the p50s none. Sanitizer
// builds run several times slower: there the bound is 10x.
#ifdef LATDOC_SANITIZED
constexpr double kTolScale = 10;
#else
constexpr double kTolScale = 1;
#endif
void ExpectClose(double measured, double truth, const std::string& what, double floor_ms = 0.2) {
  double tol = kTolScale * std::max(floor_ms, 0.02 * truth);
  EXPECT_NEAR(measured, truth, tol) << what;
}
// ExpectClose as a value: empty when within the bound, else what is off and by how much.
std::string Miss(double measured, double truth, const std::string& what, double floor_ms = 0.2) {
  const double tol = kTolScale * std::max(floor_ms, 0.02 * truth);
  if (std::abs(measured - truth) <= tol) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s: measured %.3f ms, truth %.3f ms, bound %.2f ms", what.c_str(), measured,
                truth, tol);
  return buf;
}

json RunBench(const std::string& url, std::vector<std::string> extra, int* exit_code = nullptr,
              std::string* requests_path = nullptr) {
  std::string out = TempPath("bench.json");
  std::vector<std::string> args = {"bench", "--url", url, "--json", out, "--quiet"};
  if (requests_path) {
    *requests_path = TempPath("requests.jsonl");
    args.push_back("--save-requests");
    args.push_back(*requests_path);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  RunResult r = RunLatdoc(args);
  if (exit_code) *exit_code = r.exit_code;
  auto text = ReadFileToString(out);
  if (!text.ok()) {
    ADD_FAILURE() << "no results file; exit " << r.exit_code << "; stderr: " << r.err;
    return json();
  }
  std::remove(out.c_str());
  return json::parse(*text);
}

const std::vector<std::string> kFastSim = {
    "--sim-step-base-ms", "4", "--sim-prefill-token-us", "20", "--sim-decode-seq-us", "50",
    "--sim-context-token-ns", "0", "--log-file", "/dev/null", "--disable-log-stats"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One closed-loop bench against a fast simulator that records its ground truth: the results
// and the truth of the requests after the warm-up.
struct TruthRun {
  json results;
  Truth truth;
};
TruthRun BenchAgainstTruth(const std::vector<std::string>& sim_args, int concurrency, int requests,
                           int input_len, int output_len, int warmup) {
  const std::string trace = TempPath("truth.jsonl");
  SimProcess sim(With(With(kFastSim, sim_args), {"--trace-requests", trace}));
  TruthRun run;
  run.results = RunBench(sim.url(), {"--concurrency", std::to_string(concurrency), "--num-requests",
                                     std::to_string(requests), "--input-len", std::to_string(input_len),
                                     "--output-len", std::to_string(output_len), "--token-ids", "--warmup",
                                     std::to_string(warmup)});
  sim.process().Signal(SIGTERM);
  run.truth = ReadTruth(trace, warmup);
  std::remove(trace.c_str());
  return run;
}

// Up to three runs: a stall of the shared host between the simulator's send() and its time
// stamp moves single truth gaps by milliseconds (CI VM, run alone: 1 run in 5 had p99 ITL 6.69
// ms measured against 8.07 ms of truth). A client whose times are wrong misses in every run.
TEST(BenchTruthTest, LatenciesMatchTheSimulatorsGroundTruth) {
  std::vector<std::string> misses;
  json b;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const TruthRun run = BenchAgainstTruth({"--sim-network-delay-ms", "3"}, 8, 160, 64, 16, 8);
    const json& r = run.results;
    const Truth& t = run.truth;
    ASSERT_EQ(r["completed"], 160);
    EXPECT_EQ(r["failed"], 0);
    EXPECT_EQ(r["total_output_tokens"], 160 * 16);
    EXPECT_EQ(r["total_input_tokens"], 160 * 64);
    EXPECT_EQ(r["token_count_method"]["usage_per_chunk"], 160);
    ASSERT_EQ(t.ttft_ms.size(), 160u);
    misses.clear();
    for (std::string m : {Miss(r["median_ttft_ms"], Pct(t.ttft_ms, 50), "p50 TTFT"),
                          Miss(r["p99_ttft_ms"], Pct(t.ttft_ms, 99), "p99 TTFT", 0.5),
                          Miss(r["median_itl_ms"], Pct(t.itl_ms, 50), "p50 ITL"),
                          Miss(r["p99_itl_ms"], Pct(t.itl_ms, 99), "p99 ITL", 0.5),
                          Miss(r["median_e2el_ms"], Pct(t.e2el_ms, 50), "p50 E2EL"),
                          Miss(r["p99_e2el_ms"], Pct(t.e2el_ms, 99), "p99 E2EL", 0.5),
                          Miss(r["mean_ttft_ms"], Mean(t.ttft_ms), "mean TTFT", 0.5),
                          Miss(r["mean_e2el_ms"], Mean(t.e2el_ms), "mean E2EL", 0.5)}) {
      if (!m.empty()) misses.push_back(m);
    }
    // The measured phase's duration is the measured requests' span (the client starts its clock
    // as it sends the first, and stops it at the last token: a few ms more than the server's
    // view), and the throughputs are the counts over it.
    const double span_s = (t.last_written_ms - t.first_received_ms) / 1e3;
    const double duration = r["duration"].get<double>();
    if (std::abs(duration - span_s) > kTolScale * (0.03 * span_s + 0.01)) {
      misses.push_back("duration " + std::to_string(duration) + " s, truth span " + std::to_string(span_s) + " s");
    }
    EXPECT_NEAR(r["output_throughput"].get<double>(), 160.0 * 16 / duration, 1e-6 * 160 * 16 / duration);
    EXPECT_NEAR(r["request_throughput"].get<double>(), 160.0 / duration, 1e-6 * 160 / duration);
    EXPECT_NEAR(r["total_token_throughput"].get<double>(), 160.0 * (16 + 64) / duration, 1e-6 * 160 * 80 / duration);
    b = r["server_metrics"]["ttft_breakdown"];
    if (misses.empty()) break;
    for (const auto& m : misses) std::fprintf(stderr, "run %d: %s\n", attempt, m.c_str());
  }
  EXPECT_TRUE(misses.empty()) << ::testing::PrintToString(misses);
  // The TTFT split: the 3 ms of injected network delay shows up as network and front end.
  EXPECT_NEAR(b["network_and_front_end_ms"].get<double>(), 3.0, 1.5 * kTolScale) << b.dump();
}

TEST(BenchTruthTest, SeveralTokensPerChunkStillGivePerTokenItl) {
  const TruthRun run = BenchAgainstTruth({"--sim-tokens-per-chunk", "4"}, 4, 40, 32, 33, 4);
  const json& r = run.results;
  const Truth& t = run.truth;
  ASSERT_EQ(r["completed"], 40);
  EXPECT_EQ(r["total_output_tokens"], 40 * 33);
  ExpectClose(r["median_itl_ms"], Pct(t.itl_ms, 50), "p50 ITL");
  ExpectClose(r["mean_itl_ms"], [&] {
    double s = 0;
    for (double x : t.itl_ms) s += x;
    return s / double(t.itl_ms.size());
  }(), "mean ITL");
  // A step is ~4.2 ms and carries 4 tokens: about 1 ms per token, not 4.
  EXPECT_LT(r["median_itl_ms"].get<double>(), 1.6);
}

// A real run's result file reads back as LoadFacts (loadgen/load_facts.h), and the facts write
// out again every key of the file but bench's own additions, in the file's order, with the
// file's values: the typed facts hold everything SummarizeRun wrote.
TEST(BenchResultTest, ResultFileRoundTripsThroughLoadFacts) {
  SimProcess sim(kFastSim);
  const std::string out = TempPath("bench.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--request-rate", "200",
                           "--max-concurrency", "4", "--num-requests", "40", "--input-len", "16",
                           "--output-len", "8", "--slo", "ttft:5000", "--json", out, "--quiet"});
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok()) << "exit " << r.exit_code << "; stderr: " << r.err;
  std::remove(out.c_str());
  const auto file = nlohmann::ordered_json::parse(*text);
  auto facts = loadgen::LoadFactsFromJson(file);
  ASSERT_TRUE(facts.ok()) << facts.status().ToString();
  EXPECT_EQ(facts->completed, 40u);
  EXPECT_EQ(facts->max_concurrency, 4);
  ASSERT_TRUE(facts->ttft.has_value());
  EXPECT_EQ(facts->ttft->p99_ms(), file[loadgen::keys::kP99TtftMs].get<double>());
  ASSERT_TRUE(facts->client_queue.has_value());
  ASSERT_TRUE(facts->slo.has_value());
  ASSERT_TRUE(facts->server.ttft_breakdown.has_value()) << file["server_metrics"].dump();
  auto again = loadgen::LoadFactsFromJson(loadgen::ToJson(*facts));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(*again == *facts);
  const nlohmann::ordered_json written = loadgen::ToJson(*facts);
  std::vector<std::string> file_keys, written_keys;
  for (const auto& [k, v] : file.items())
    if (written.contains(k)) file_keys.push_back(k);
  for (const auto& [k, v] : written.items()) {
    written_keys.push_back(k);
    EXPECT_EQ(v, file[k]) << k;
  }
  EXPECT_EQ(file_keys, written_keys);
}

// --threads 2: the two threads' requests and tokens add up to exactly what the simulator
// served (its own counters), warm-up included, and the result says it ran on two threads.
TEST(BenchThreadsTest, TwoThreadsCountExactlyWhatTheSimulatorServed) {
  SimProcess sim(kFastSim);
  json r = RunBench(sim.url(), {"--threads", "2", "--concurrency", "24", "--num-requests", "301",
                                "--warmup", "5", "--input-len", "16", "--output-len", "12",
                                "--token-ids"});
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["client_threads"], 2);
  EXPECT_EQ(r["completed"], 301);
  EXPECT_EQ(r["failed"], 0);
  EXPECT_EQ(r["total_output_tokens"], 301 * 12);
  EXPECT_EQ(r["total_input_tokens"], 301 * 16);
  EXPECT_EQ(r["max_concurrent_requests"], 24);
  EXPECT_EQ(sim.Metric("vllm:request_success_total"), 301 + 5);
  EXPECT_EQ(sim.Metric("vllm:generation_tokens_total"), (301 + 5) * 12);
  const json& load = r["client_load"];
  ASSERT_EQ(load["per_thread"].size(), 2u) << load.dump();
  // Each stream: 12 content events, the usage event and [DONE]; the warm-up's are not counted.
  EXPECT_EQ(load["events"], 301 * 14);
  EXPECT_GT(load["cpu_s"].get<double>(), 0);
}

TEST(BenchFaultTest, EveryRequestEndsInExactlyOneRecord) {
  SimProcess sim(With(kFastSim, {"--sim-fault-429", "0.05", "--sim-fault-500", "0.05",
                                 "--sim-fault-503", "0.05", "--sim-fault-reset-before", "0.05",
                                 "--sim-fault-reset-after", "0.05", "--sim-fault-cut-stream", "0.05",
                                 "--seed", "3"}));
  std::string reqs;
  json r = RunBench(sim.url(), {"--concurrency", "16", "--num-requests", "300", "--input-len",
                                "16", "--output-len", "8", "--model", "latdoc-sim/llama-3-8b"},
                    nullptr, &reqs);
  EXPECT_EQ(r["completed"].get<int>() + r["failed"].get<int>(), 300);
  EXPECT_GT(r["failed"].get<int>(), 40);
  const json& f = r["failures"];
  EXPECT_GT(f.value("http_status", 0), 0) << f.dump();
  EXPECT_GT(f.value("cut_short", 0), 0) << f.dump();
  EXPECT_GT(f.value("reset", 0) + f.value("cut_short", 0), 0) << f.dump();
  auto lines = ReadFileToString(reqs);
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(std::count(lines->begin(), lines->end(), '\n'), 300);
  std::remove(reqs.c_str());
}

TEST(BenchCliTest, UnreachableTargetExits3) {
  RunResult r = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--num-requests", "2"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr("latdoc bench: http://127.0.0.1:1: connect"));
}

TEST(BenchCliTest, BadOptionsExit2) {
  EXPECT_EQ(RunLatdoc({"bench", "--url", "localhost:8000"}).exit_code, 2);
  RunResult r = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--slo", "ttft=5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--slo: 'ttft=5': expected KEY:MS"));
  RunResult d = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--dataset", "/nonexistent.jsonl"});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_THAT(d.err, HasSubstr("/nonexistent.jsonl: No such file or directory"));
  // Numbers out of range or not numbers at all: each exits 2 with what is wrong, before any
  // request (they ran with nonsense latencies, sent nothing, or hammered /metrics).
  struct Case {
    std::vector<std::string> args;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {{"--request-rate", "10", "--burstiness", "nan"}, "--burstiness must be a finite number above 0"},
           {{"--request-rate", "10", "--burstiness", "inf"}, "--burstiness must be a finite number above 0"},
           {{"--request-rate", "nan"}, "--request-rate nan: not a number"},
           {{"--duration", "1e11"}, "--duration must be between 0 and 1e+06 seconds"},
           {{"--duration", "-1"}, "--duration -1: must be more than 0"},
           {{"--num-requests", "-5"}, "--num-requests -5: must be more than 0"},
           {{"--warmup", "-3"}, "--warmup must not be negative"},
           {{"--max-concurrency", "-4", "--request-rate", "5"}, "--max-concurrency -4: must be more than 0"},
           {{"--range-ratio", "nan"}, "--range-ratio must be in [0, 1)"},
           {{"--input-len", "1000000000"}, "must be at most 10000000"},
           {{"--max-error-rate", "nan"}, "--max-error-rate must be in [0, 1]"},
           {{"--max-error-rate", "2"}, "--max-error-rate must be in [0, 1]"},
           {{"--scrape-interval", "0"}, "--scrape-interval must be between 0.001 and 3600 seconds"},
           {{"--idle-timeout", "-1"}, "--idle-timeout"},
       }) {
    std::vector<std::string> args = {"bench", "--url", "http://127.0.0.1:1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult b = RunLatdoc(args);
    EXPECT_EQ(b.exit_code, 2) << c.args[0] << " " << c.args[1] << ": " << b.err;
    EXPECT_THAT(b.err, HasSubstr(c.error)) << c.args[0];
  }
}

// An infinite rate sends every request at once and is written "inf", as vLLM does (it wrote
// null and drew gaps from a gamma distribution of scale 0).
TEST(BenchCliTest, InfiniteRateSendsAtOnceAndSaysInf) {
  SimProcess sim(kFastSim);
  int code = -1;
  json r = RunBench(sim.url(), {"--request-rate", "inf", "--num-requests", "6", "--input-len", "8",
                                "--output-len", "4"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(r["request_rate"], "inf");
  EXPECT_EQ(r["completed"], 6);
}

// A Ctrl-C during the warm-up: the measured phase never began and lasted nothing (it reported
// the machine's uptime as the duration).
TEST(BenchCliTest, SigintDuringWarmupReportsNoDuration) {
  SimProcess sim({"--sim-step-base-ms", "50", "--log-file", "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("warmup_partial.json");
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "1", "--num-requests", "5",
                 "--warmup", "2", "--input-len", "8", "--output-len", "1000", "--json", out, "--quiet"});
  ASSERT_TRUE(sim.WaitForMetric("vllm:num_requests_running", 1));  // the warm-up is under way
  EXPECT_EQ(bench.Signal(SIGINT), 130);
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  json r = json::parse(*text);
  EXPECT_EQ(r["partial"], true);
  EXPECT_EQ(r["sent"], 0);
  EXPECT_LT(r["duration"].get<double>(), 0.001);
  std::remove(out.c_str());
}

// vLLM's forms of the chunked-prefill switch are flags (argparse BooleanOptionalAction): a
// flag followed by another option, and its --no- form, both start the simulator as asked.
TEST(SimCliTest, ChunkedPrefillTakesVllmsFlagForms) {
  for (auto [flag, want] : {std::pair{"--enable-chunked-prefill", "enabled"},
                            std::pair{"--no-enable-chunked-prefill", "disabled"}}) {
    const std::string log = TempPath(std::string("chunked") + want + ".log");
    {
      SimProcess sim({flag, "--max-num-seqs", "4", "--log-file", log});
      ASSERT_NE(sim.port(), 0) << flag;
    }
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr(std::string("Chunked prefill is ") + want)) << flag;
    std::remove(log.c_str());
  }
}

// A server that answers but fails every request: exit 3 and the reason (it exited 0).
TEST(BenchCliTest, EveryRequestFailingExits3) {
  SimProcess sim({"--sim-fault-500", "1", "--log-file", "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("all_failed.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--num-requests", "4", "--input-len", "4",
                           "--output-len", "2", "--json", out, "--quiet"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc bench: 4 of 4 requests failed (4 HTTP error); first: http_status: HTTP 500"));
  EXPECT_THAT(r.err, HasSubstr("\nlatdoc bench: every request failed: the server could not serve this load\n"));
  EXPECT_TRUE(ReadFileToString(out).ok()) << "the results are written all the same";
}

TEST(BenchCliTest, MissedSloExits1) {
  SimProcess sim(kFastSim);
  int code = -1;
  json r = RunBench(sim.url(), {"--concurrency", "2", "--num-requests", "10", "--input-len", "8",
                                "--output-len", "4", "--slo", "ttft:0.001"}, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(r["slo"]["met"], false);
}

TEST(BenchCliTest, SigintWritesPartialResults) {
  SimProcess sim(kFastSim);
  std::string out = TempPath("partial.json");
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "4", "--duration",
                 "30", "--input-len", "8", "--output-len", "50", "--json", out, "--quiet"});
  ASSERT_TRUE(sim.WaitForMetric("vllm:request_success_total", 1));
  int code = bench.Signal(SIGINT);
  EXPECT_EQ(code, 130);  // interrupted, with the partial results written
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  json r = json::parse(*text);
  EXPECT_EQ(r["partial"], true);
  EXPECT_EQ(r["partial_reason"], "interrupted by SIGINT");
  EXPECT_EQ(r["completed"].get<int>() + r["failed"].get<int>(), r["sent"].get<int>());
  EXPECT_GT(r["completed"].get<int>(), 0);
  std::remove(out.c_str());
}

// Requests still queued on the client when Ctrl-C stops the run never reached the server: they
// are "not sent", not failures, so they cannot trip --max-error-rate (49 of 50 did: exit 1).
TEST(BenchCliTest, RequestsNeverSentAreNotFailures) {
  SimProcess sim({"--sim-step-base-ms", "50", "--log-file", "/dev/null", "--disable-log-stats"});
  std::string out = TempPath("not_sent.json");
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--request-rate", "inf", "--max-concurrency", "1",
                 "--num-requests", "50", "--input-len", "8", "--output-len", "20", "--max-error-rate", "0",
                 "--json", out, "--quiet"});
  ASSERT_TRUE(sim.WaitForMetric("vllm:num_requests_running", 1));  // one in flight, the rest queued
  // The one in flight ends within the drain: no failure; the exit says the run was interrupted.
  EXPECT_EQ(bench.Signal(SIGINT), 130);
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  json r = json::parse(*text);
  EXPECT_EQ(r["partial"], true);
  EXPECT_EQ(r["failed"], 0) << r["failures"].dump();
  EXPECT_GE(r["not_sent"].get<int>(), 40);
  EXPECT_EQ(r["completed"].get<int>() + r["failed"].get<int>(), r["sent"].get<int>());
  EXPECT_EQ(r["sent"].get<int>() + r["not_sent"].get<int>(), 50);
  EXPECT_EQ(r["error_rate"], 0.0);
  std::remove(out.c_str());
}

TEST(BenchCliTest, ApiKeyIsSentButNeverWritten) {
  SimProcess sim(kFastSim);
  std::string reqs;
  ::setenv("LATDOC_TEST_KEY", "sk-very-secret-123", 1);
  std::string out = TempPath("key.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--num-requests", "3", "--input-len", "4",
                           "--output-len", "2", "--api-key-env", "LATDOC_TEST_KEY", "--json", out});
  EXPECT_EQ(r.exit_code, 0);
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("sk-very-secret"), std::string::npos);
  EXPECT_EQ(r.out.find("sk-very-secret"), std::string::npos);
  EXPECT_EQ(r.err.find("sk-very-secret"), std::string::npos);
  std::remove(out.c_str());
}

}  // namespace
}  // namespace latdoc::testing
