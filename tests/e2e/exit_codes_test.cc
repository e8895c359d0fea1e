// End-to-end contracts of exit codes and failure reporting, against a real `latdoc sim`:
// - a failed request fails the run: bench, sweep, diagnose and `exporter --once` exit 1 and
//   say on standard error "N of M requests failed (k reason, ...)", counts that agree with the
//   results file and with the simulator's own count of requests served; --max-error-rate
//   tolerates failures (they are still said);
// - an SLO or error-rate miss says which bound, the value measured and the threshold;
// - exit 3 when nothing could be run against, with the failure line and a results file;
// - SIGINT and SIGTERM exit 130 and 143 with partial results written; a first Ctrl-C drains
//   the streams in flight and says so, a second stops at once, and streams cut after their
//   first token keep their TTFT and ITL;
// - diagnose against a server that dies during the baseline keeps the baseline and says after
//   how many requests it stopped answering;
// - logs (and diagnose) given nothing they recognise exit 2 and say what was not recognised.
// Each run is bounded: small request counts, fast simulator settings, loopback only.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

const std::vector<std::string> kFastSim = {
    "--sim-step-base-ms", "4", "--sim-prefill-token-us", "20", "--sim-decode-seq-us", "50",
    "--sim-context-token-ns", "0", "--log-file", "/dev/null", "--disable-log-stats"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    ADD_FAILURE() << path << ": " << text.status().message();
    return json::object();
  }
  return json::parse(*text);
}

// The failure line's reasons as the results file's "failures" give them: commonest first,
// then by name; "cut_short" said "cut short", "http_status" "HTTP error"; "cancelled" (the
// user's stop) left out.
std::string Reasons(const json& failures) {
  std::vector<std::pair<std::string, int>> v;
  for (const auto& [k, n] : failures.items())
    if (k != "cancelled") v.emplace_back(k, n.get<int>());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (auto [k, n] : v) {
    std::string words = k == "http_status" ? "HTTP error" : k;
    std::replace(words.begin(), words.end(), '_', ' ');
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, words);
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

// The requests the simulator served to the end.
double Served(const SimProcess& sim) { return sim.Metric("vllm:request_success_total"); }

// Waits until `path` (a process's standard error) holds `text`; false after `timeout_ms`.
bool WaitForText(const std::string& path, const std::string& text, int timeout_ms = 30000) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (ReadFileOrEmpty(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// bench: failed requests.

// The simulator resets 40% of the streams, half before their first token and half after (D1
// of the 2026-12-04 review: this exited 0 with nothing said). Any failure exits 1 and is
// counted by reason in one line; the counts are the results file's, which are the simulator's
// own: its trace holds the streams it finished ("length") and those it reset after their first
// token (the client sees them cut short); those reset before any response are not traced.
TEST(BenchFailuresTest, AnyFailedRequestExits1AndSaysHowManyFailedAndWhy) {
  const std::vector<std::string> faults = {"--sim-fault-reset-after", "0.2", "--sim-fault-reset-before",
                                           "0.2", "--seed", "7"};
  TempDir dir("exit_fail");
  auto sim = std::make_unique<SimProcess>(With(With(kFastSim, faults), {"--trace-requests", dir / "truth.jsonl"}));
  RunResult r = RunLatdoc({"bench", "--url", sim->url(), "--concurrency", "8", "--num-requests", "100",
                           "--input-len", "8", "--output-len", "8", "--json", dir / "r.json", "--quiet"});
  sim.reset();  // the trace is complete once the simulator has stopped
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::map<std::string, int> truth;
  int traced = 0;
  for (const std::string& line : Lines(ReadFileOrEmpty(dir / "truth.jsonl"))) {
    if (line.empty()) continue;
    ++truth[json::parse(line)["status"].get<std::string>()];
    ++traced;
  }
  json j = ReadJson(dir / "r.json");
  const int failed = j["failed"].get<int>();
  EXPECT_EQ(j["completed"].get<int>(), truth["length"]);
  EXPECT_EQ(j["failures"].value("cut_short", 0), truth["reset_after_first_token"]);
  EXPECT_EQ(j["failures"].value("reset", 0), 100 - traced);
  EXPECT_EQ(failed, 100 - truth["length"]);
  ASSERT_GT(j["failures"].value("reset", 0), 0) << j["failures"].dump();
  ASSERT_GT(j["failures"].value("cut_short", 0), 0) << j["failures"].dump();
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0].rfind(fmt::format("latdoc bench: {} of 100 requests failed ({}); first: ",
                                       failed, Reasons(j["failures"])), 0), 0u) << lines[0];
  EXPECT_THAT(lines[0], HasSubstr("; see \"failures\" in " + (dir / "r.json")));
  const std::string miss = fmt::format("error rate {:.1f}% > --max-error-rate 0%", failed * 1.0);
  EXPECT_EQ(lines[1], "latdoc bench: " + miss);
  EXPECT_EQ(j["problems"], json::array({miss}));
  EXPECT_EQ(j["error_rate"], failed / 100.0);

  // --max-error-rate tolerates them: exit 0, and the line is still said.
  SimProcess again(With(kFastSim, faults));
  RunResult ok = RunLatdoc({"bench", "--url", again.url(), "--concurrency", "8", "--num-requests", "100",
                            "--input-len", "8", "--output-len", "8", "--max-error-rate", "0.9", "--quiet"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.err, HasSubstr(" of 100 requests failed ("));
  EXPECT_THAT(ok.err, HasSubstr("(tolerated: --max-error-rate 90%)\n"));
}

// The server killed mid-run (the review saw 352 of 400 failed, exit 0): exit 1, not 0 and not
// 3 (requests were served), every request counted in the line.
TEST(BenchFailuresTest, ServerKilledMidRunExits1) {
  auto sim = std::make_unique<SimProcess>(kFastSim);
  TempDir dir("exit_kill");
  const std::string err = dir / "err.txt";
  Process bench({LatdocBinary(), "bench", "--url", sim->url(), "--concurrency", "8", "--num-requests",
                 "400", "--input-len", "8", "--output-len", "40", "--json", dir / "r.json", "--quiet"},
                err);
  ASSERT_TRUE(sim->WaitForMetric("vllm:request_success_total", 20));
  sim->process().Signal(SIGKILL);
  EXPECT_EQ(bench.Wait(60000), 1) << ReadFileOrEmpty(err);
  json j = ReadJson(dir / "r.json");
  const int failed = j["failed"].get<int>();
  ASSERT_GT(failed, 0);
  EXPECT_GT(j["failures"].value("connect", 0), 0) << j["failures"].dump();
  EXPECT_THAT(ReadFileOrEmpty(err), HasSubstr(fmt::format("latdoc bench: {} of 400 requests failed ({}); first: ",
                                                failed, Reasons(j["failures"]))));
  EXPECT_THAT(ReadFileOrEmpty(err), HasSubstr(fmt::format("latdoc bench: error rate {:.1f}% > --max-error-rate 0%\n",
                                                failed / 4.0)));
}

// Nothing served: every request failed at connect (exit 3, as before, now with the line and a
// results file), or the preflight itself failed (exit 3 and a results file saying why; there
// was none: D19).
TEST(BenchFailuresTest, NothingRunAgainstExits3WithTheLineAndAResultsFile) {
  TempDir dir("exit_unreachable");
  const std::string url = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  RunResult sent = RunLatdoc({"bench", "--url", url, "--model", "m", "--concurrency", "2",
                              "--num-requests", "4", "--json", dir / "sent.json", "--quiet"});
  EXPECT_EQ(sent.exit_code, 3) << sent.err;
  EXPECT_EQ(sent.err, "latdoc bench: 4 of 4 requests failed (4 connect)\n"
                      "latdoc bench: " + url + ": connect " + url + ": Connection refused\n");
  json j = ReadJson(dir / "sent.json");
  EXPECT_EQ(j["sent"], 4);
  EXPECT_EQ(j["failures"], json({{"connect", 4}}));
  EXPECT_EQ(j["error"], url + ": connect " + url + ": Connection refused");

  RunResult preflight = RunLatdoc({"bench", "--url", url, "--num-requests", "4", "--json",
                                   dir / "pre.json", "--quiet"});
  EXPECT_EQ(preflight.exit_code, 3) << preflight.err;
  EXPECT_EQ(preflight.err, "latdoc bench: " + url + ": connect " + url + ": Connection refused\n");
  json p = ReadJson(dir / "pre.json");
  EXPECT_EQ(p["sent"], 0);
  EXPECT_EQ(p["error"], url + ": connect " + url + ": Connection refused");
}

// ---------------------------------------------------------------------------------------------
// bench: SLO and error-rate misses say which bound, what was measured and the threshold (D4).

TEST(BenchVerdictTest, SloAndErrorRateMissesSayWhatWasMissedAndByHowMuch) {
  SimProcess sim(kFastSim);
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "4", "--num-requests", "20",
                           "--input-len", "8", "--output-len", "4", "--slo", "ttft:0.001", "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "latdoc bench: SLO missed: 0.0% of requests met ttft<=0.001 ms (needed 99%)\n");

  // A share between: a TTFT bound at the median meets about half; the line gives the share the
  // results file has, and both bounds.
  TempDir dir("exit_slo");
  RunResult probe = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "4", "--num-requests",
                               "40", "--input-len", "8", "--output-len", "4", "--json", dir / "p.json",
                               "--quiet"});
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const double median = ReadJson(dir / "p.json")["median_ttft_ms"].get<double>();
  const std::string bound = fmt::format("{:.3f}", median);
  r = RunLatdoc({"bench", "--url", sim.url(), "--concurrency", "4", "--num-requests", "40", "--input-len",
                 "8", "--output-len", "4", "--slo", "ttft:" + bound + ",e2el:60000,percent:100",
                 "--json", dir / "s.json", "--quiet"});
  json j = ReadJson(dir / "s.json");
  const double good = j["slo"]["good_percent"].get<double>();
  if (good < 100) {
    EXPECT_EQ(r.exit_code, 1);
    const std::string miss = fmt::format("SLO missed: {:.1f}% of requests met ttft<={:g} ms, "
                                         "e2el<=60000 ms (needed 100%)", good, std::stod(bound));
    EXPECT_EQ(r.err, "latdoc bench: " + miss + "\n");
    EXPECT_EQ(j["problems"], json::array({miss}));
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }

  // Half the requests answered HTTP 500: 10% tolerated is missed.
  SimProcess bad(With(kFastSim, {"--sim-fault-500", "0.5", "--seed", "3"}));
  r = RunLatdoc({"bench", "--url", bad.url(), "--concurrency", "4", "--num-requests", "50", "--input-len",
                 "8", "--output-len", "4", "--max-error-rate", "0.1", "--json", dir / "e.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  j = ReadJson(dir / "e.json");
  const int failed = j["failed"].get<int>();
  ASSERT_GT(failed, 5);
  EXPECT_EQ(j["failures"], json({{"http_status", failed}}));
  EXPECT_THAT(r.err, HasSubstr(fmt::format("latdoc bench: {} of 50 requests failed ({} HTTP error); "
                                           "first: http_status: HTTP 500", failed, failed)));
  EXPECT_THAT(r.err, HasSubstr(fmt::format("\nlatdoc bench: error rate {:.1f}% > --max-error-rate 10%\n",
                                           failed * 2.0)));
}

// ---------------------------------------------------------------------------------------------
// Interrupts.

// SIGINT exits 130 and SIGTERM 143 (they exited 0: D15), with the partial results written and
// marked, and nothing called a failure: the streams ended within the drain.
TEST(InterruptTest, SigintExits130AndSigtermExits143WithPartialResults) {
  SimProcess sim(kFastSim);
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    SCOPED_TRACE(name);
    TempDir dir("exit_sig");
    const double before = Served(sim);
    Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "4", "--duration", "60",
                   "--input-len", "8", "--output-len", "20", "--json", dir / "p.json", "--quiet"},
                  dir / "err.txt");
    ASSERT_TRUE(sim.WaitForMetric("vllm:request_success_total", before + 8));
    EXPECT_EQ(bench.Signal(sig), 128 + sig) << ReadFileOrEmpty(dir / "err.txt");
    json j = ReadJson(dir / "p.json");
    EXPECT_EQ(j["partial"], true);
    EXPECT_EQ(j["partial_reason"], "interrupted by " + name);
    EXPECT_EQ(j["failed"], 0) << j["failures"].dump();
    EXPECT_EQ(j["completed"].get<int>(), j["sent"].get<int>());
    EXPECT_THAT(ReadFileOrEmpty(dir / "err.txt"), HasSubstr("latdoc bench: interrupted by " + name + ": partial results\n"));
    EXPECT_THAT(ReadFileOrEmpty(dir / "err.txt"), Not(HasSubstr("requests failed")));
  }
}

// Ctrl-C with long streams (D3): the first says it drains and how to stop now; the second stops
// at once; the streams cut keep their TTFT and ITL (every latency read n/a) and count as
// cancelled, not as the server's failures (the run exited 3, "every request failed").
TEST(InterruptTest, SecondCtrlCStopsAtOnceAndCutStreamsKeepTheirTokenTimes) {
  SimProcess sim(kFastSim);
  TempDir dir("exit_drain");
  const std::string err = dir / "err.txt";
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "4", "--num-requests",
                 "100", "--input-len", "8", "--output-len", "4000", "--json", dir / "d.json"},
                err);
  // Four streams under way, each past its first tokens.
  ASSERT_TRUE(sim.WaitForMetric("vllm:num_requests_running", 4));
  ASSERT_TRUE(sim.WaitForMetric("vllm:generation_tokens_total", 4 * 50));
  ::kill(bench.pid(), SIGINT);
  ASSERT_TRUE(WaitForText(err, "latdoc bench: stopping: draining 4 in-flight streams (up to 10 s); "
                               "Ctrl-C again to stop now\n")) << ReadFileOrEmpty(err);
  const auto second = std::chrono::steady_clock::now();
  EXPECT_EQ(bench.Signal(SIGINT), 130) << ReadFileOrEmpty(err);
  EXPECT_LT(std::chrono::steady_clock::now() - second, std::chrono::seconds(3)) << "not at once";
  EXPECT_THAT(ReadFileOrEmpty(err), HasSubstr("latdoc bench: stopping now: cancelling 4 streams\n"));
  EXPECT_THAT(ReadFileOrEmpty(err), HasSubstr("latdoc bench: interrupted by SIGINT: partial results (4 streams cut by the stop)\n"));
  EXPECT_THAT(ReadFileOrEmpty(err), Not(HasSubstr("failed")));
  json j = ReadJson(dir / "d.json");
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["sent"], 4);
  EXPECT_EQ(j["completed"], 0);
  EXPECT_EQ(j["failed"], 4);  // every request accounted for: none completed
  EXPECT_EQ(j["cancelled"], 4);
  EXPECT_EQ(j["failures"], json({{"cancelled", 4}}));
  EXPECT_EQ(j["error_rate"], 0.0);
  // Their first tokens and the gaps after them were measured; an end-to-end latency was not.
  ASSERT_TRUE(j["mean_ttft_ms"].is_number()) << j.dump().substr(0, 400);
  EXPECT_GT(j["mean_ttft_ms"].get<double>(), 0);
  EXPECT_EQ(j["per_request"]["ttft_ms"].size(), 4u);
  ASSERT_TRUE(j["mean_itl_ms"].is_number());
  EXPECT_GT(j["mean_itl_ms"].get<double>(), 0);
  EXPECT_TRUE(j["mean_e2el_ms"].is_null());
  EXPECT_TRUE(j["mean_tpot_ms"].is_null());
}

TEST(InterruptTest, SweepSigintExits130WithTheStepsDone) {
  SimProcess sim(kFastSim);
  TempDir dir("exit_sweep_sig");
  Process p({LatdocBinary(), "sweep", "--url", sim.url(), "--concurrency", "1:256", "--input-len", "8",
             "--output-len", "20", "--json", dir / "s.json", "--quiet"},
            dir / "err.txt");
  ASSERT_TRUE(sim.WaitForMetric("vllm:request_success_total", 40));
  EXPECT_EQ(p.Signal(SIGINT), 130) << ReadFileOrEmpty(dir / "err.txt");
  json j = ReadJson(dir / "s.json");
  EXPECT_EQ(j["partial"], true);
  EXPECT_THAT(ReadFileOrEmpty(dir / "err.txt"),
              HasSubstr(fmt::format("latdoc sweep: interrupted by SIGINT: partial results ({} step", j["steps"].size())));
}

// diagnose stopped by SIGTERM: 143, the report written, and no "No problems found." that would
// vouch for the layers it never ran.
TEST(InterruptTest, DiagnoseSigtermExits143AndDoesNotClaimNoProblems) {
  SimProcess sim(kFastSim);
  TempDir dir("exit_diag_sig");
  Process d({LatdocBinary(), "diagnose", "--url", sim.url(), "--concurrency", "4", "--requests", "5000",
             "--baseline-requests", "4", "--net-samples", "2", "--input-len", "8", "--output-len", "40",
             "--json", dir / "d.json"},
            dir / "err.txt");
  ASSERT_TRUE(sim.WaitForMetric("vllm:request_success_total", 20));
  EXPECT_EQ(d.Signal(SIGTERM), 143) << ReadFileOrEmpty(dir / "err.txt");
  const std::string out = d.ReadToEnd(5000);
  EXPECT_THAT(out, HasSubstr("STOPPED EARLY (interrupted by SIGTERM)"));
  EXPECT_THAT(out, Not(HasSubstr("No problems found.\n")));
  EXPECT_EQ(ReadJson(dir / "d.json")["partial_reason"], "interrupted by SIGTERM");
  EXPECT_THAT(ReadFileOrEmpty(dir / "err.txt"), HasSubstr("latdoc diagnose: interrupted by SIGTERM: partial results"));
}

// ---------------------------------------------------------------------------------------------
// sweep, diagnose, exporter --once: the same contract for their requests.

// A sweep whose steps had failures: exit 1 and the line over the steps (it exited 0).
TEST(SweepFailuresTest, FailedRequestsInAStepExit1AndAreCounted) {
  SimProcess sim(With(kFastSim, {"--sim-fault-500", "0.1", "--seed", "11"}));
  TempDir dir("exit_sweep");
  RunResult r = RunLatdoc({"sweep", "--url", sim.url(), "--concurrency", "1:2", "--min-requests", "16",
                           "--max-requests", "32", "--input-len", "8", "--output-len", "8", "--json",
                           dir / "s.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json j = ReadJson(dir / "s.json");
  int failed = 0, requests = 0;
  for (const json& step : j["steps"]) {
    failed += step["failed"].get<int>();
    requests += step["requests"].get<int>();
  }
  ASSERT_GT(failed, 0) << j["steps"].dump();
  EXPECT_THAT(r.err, HasSubstr(fmt::format("latdoc sweep: {} of {} requests failed ({} HTTP error) over {} step",
                                           failed, requests, failed, j["steps"].size())));
  EXPECT_THAT(r.err, HasSubstr("% > --max-error-rate 0% at "));

  // Tolerated: exit 0, still said.
  r = RunLatdoc({"sweep", "--url", sim.url(), "--concurrency", "1:2", "--min-requests", "16",
                 "--max-requests", "32", "--input-len", "8", "--output-len", "8", "--max-error-rate",
                 "0.9", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(tolerated: --max-error-rate 90%)"));
}

// The server dies during diagnose's baseline (D6): it was reached, so not "could not be
// reached" (exit 3) with the baseline dropped; the baseline's requests are kept and the report
// says after how many requests the server stopped answering; exit 1.
TEST(DiagnoseFailuresTest, ServerDyingDuringTheBaselineKeepsWhatWasMeasured) {
  auto sim = std::make_unique<SimProcess>(kFastSim);
  TempDir dir("exit_diag_kill");
  const std::string err = dir / "err.txt";
  Process d({LatdocBinary(), "diagnose", "--url", sim->url(), "--concurrency", "4", "--requests", "50",
             "--baseline-requests", "200", "--net-samples", "0", "--input-len", "8", "--output-len", "20",
             "--json", dir / "d.json", "--quiet"},
            err);
  ASSERT_TRUE(sim->WaitForMetric("vllm:request_success_total", 10));
  sim->process().Signal(SIGKILL);
  EXPECT_EQ(d.Wait(60000), 1) << ReadFileOrEmpty(err);
  json j = ReadJson(dir / "d.json");
  EXPECT_EQ(j["target_reachable"], true);
  ASSERT_TRUE(j.contains("baseline")) << j["layers"].dump();
  const int answered = j["baseline"]["completed"].get<int>();
  EXPECT_GE(answered, 10);
  EXPECT_EQ(j["stopped_answering_after"], answered);
  EXPECT_THAT(j["layers"]["load"].get<std::string>(),
              HasSubstr(fmt::format("failed: the server stopped answering after {} requests", answered)));
  bool finding = false;
  for (const json& f : j["findings"]) {
    finding = finding || f["id"] == "load.stopped_answering";
    EXPECT_NE(f["id"], "load.unreachable");
  }
  EXPECT_TRUE(finding) << j["findings"].dump().substr(0, 400);
  const std::string text = ReadFileOrEmpty(err);
  EXPECT_THAT(text, HasSubstr(fmt::format("latdoc diagnose: the target {} stopped answering after {} "
                                          "requests; the report keeps what was measured before\n",
                                          sim->url(), answered)));
  const int failed = j["baseline"]["failed"].get<int>();
  if (failed > 0) {
    EXPECT_THAT(text, HasSubstr(fmt::format("latdoc diagnose: {} of {} requests failed ({}) in the load tests",
                                            failed, j["baseline"]["sent"].get<int>(),
                                            Reasons(j["baseline"]["failures"]))));
  }
  EXPECT_THAT(text, Not(HasSubstr("could not be reached")));
}

// diagnose's load runs with failures: the line counts the baseline's and the load step's
// together, and the run exits 1.
TEST(DiagnoseFailuresTest, FailedRequestsInTheLoadTestsExit1AndAreCounted) {
  SimProcess sim(With(kFastSim, {"--sim-fault-503", "0.1", "--seed", "5"}));
  TempDir dir("exit_diag_fail");
  RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "4", "--requests", "40",
                           "--baseline-requests", "8", "--net-samples", "0", "--input-len", "8",
                           "--output-len", "8", "--json", dir / "d.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  json j = ReadJson(dir / "d.json");
  const int failed = j["baseline"]["failed"].get<int>() + j["bench"]["failed"].get<int>();
  const int sent = j["baseline"]["sent"].get<int>() + j["bench"]["sent"].get<int>();
  ASSERT_GT(failed, 0);
  EXPECT_THAT(r.err, HasSubstr(fmt::format("latdoc diagnose: {} of {} requests failed ({} HTTP error) in "
                                           "the load tests; first: http_status: HTTP 503", failed, sent, failed)));
}

// diagnose --max-error-rate raises the tolerance as bench's does: the same failures are said,
// marked tolerated, and the run exits 0 (a fail finding aside); below them it exits 1 with the
// rate line.
TEST(DiagnoseFailuresTest, MaxErrorRateToleratesFailuresAsBenchDoes) {
  SimProcess sim(With(kFastSim, {"--sim-fault-503", "0.1", "--seed", "5"}));
  TempDir dir("exit_diag_tol");
  const std::vector<std::string> run = {"diagnose", "--url", sim.url(), "--concurrency", "4",
                                        "--requests", "40", "--baseline-requests", "8",
                                        "--net-samples", "0", "--input-len", "8", "--output-len", "8",
                                        "--quiet", "--json", dir / "d.json"};
  std::vector<std::string> args = run;
  args.insert(args.end(), {"--max-error-rate", "0.9"});
  RunResult r = RunLatdoc(args);
  json j = ReadJson(dir / "d.json");
  const int failed = j["baseline"]["failed"].get<int>() + j["bench"]["failed"].get<int>();
  ASSERT_GT(failed, 0);
  EXPECT_THAT(r.err, HasSubstr("(tolerated: --max-error-rate 90%)"));
  bool fail_finding = false;
  for (const json& f : j["findings"]) fail_finding = fail_finding || f["severity"] == "fail";
  EXPECT_EQ(r.exit_code, fail_finding ? 1 : 0) << r.err;

  args = run;
  args.insert(args.end(), {"--max-error-rate", "0.001"});
  r = RunLatdoc(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc diagnose: error rate "));
  EXPECT_THAT(r.err, HasSubstr("> --max-error-rate 0.1%"));
  EXPECT_THAT(r.err, Not(HasSubstr("tolerated")));

  r = RunLatdoc({"diagnose", "--url", sim.url(), "--max-error-rate", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// diagnose --slo missed at the target load: exit 1 and the line says which bound, the share
// met and the share needed (nothing said it).
TEST(DiagnoseFailuresTest, SloMissedAtTheTargetLoadIsSaid) {
  SimProcess sim(kFastSim);
  RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "4", "--requests", "12",
                           "--baseline-requests", "2", "--net-samples", "0", "--input-len", "8",
                           "--output-len", "4", "--slo", "ttft:0.001", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "latdoc diagnose: SLO missed: 0.0% of requests met ttft<=0.001 ms (needed 99%) at "
                   "concurrency 4\n");
}

// exporter --once: a failed canary is said as bench says its failures; exit 1 when the server
// answered (with an error), 3 when nothing answered.
TEST(ExporterOnceTest, FailedCanaryIsSaidAndExits1Or3) {
  SimProcess sim(With(kFastSim, {"--sim-fault-500", "1"}));
  RunResult r = RunLatdoc({"exporter", "--once", "--no-host", "--target", sim.url()}, 30000);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc exporter: 1 of 1 canary requests failed (1 HTTP error); last: "
                               "http_status: HTTP 500"));

  // --max-error-rate 1 tolerates the failed canary: said and marked tolerated. The run still
  // exits 1, for a reason of its own that the page shows: the load.failures rule fails a server
  // that answered every request of the cycle with an error.
  r = RunLatdoc({"exporter", "--once", "--no-host", "--target", sim.url(), "--max-error-rate", "1"},
                30000);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("latdoc_finding{rule=\"load.failures\",layer=\"load\",severity=\"fail\"} 1"));
  EXPECT_THAT(r.err, HasSubstr("1 of 1 canary requests failed (1 HTTP error); last: http_status: "
                               "HTTP 500"));
  EXPECT_THAT(r.err, EndsWith(" (tolerated: --max-error-rate 100%)\n"));

  const std::string url = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  r = RunLatdoc({"exporter", "--once", "--no-host", "--timeout", "2s", "--target", url}, 30000);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc exporter: 1 of 1 canary requests failed (1 connect); last: connect: "));
  EXPECT_THAT(r.err, HasSubstr("latdoc exporter: the target " + url +
                               " answered neither the canary nor the /metrics scrape\n"));
}

// ---------------------------------------------------------------------------------------------
// Nothing recognised.

TEST(NothingRecognisedTest, LogsOfNoKnownLineExit2AndSayWhat) {
  TempDir dir("exit_logs");
  ASSERT_TRUE(WriteFileAtomic(dir / "empty.log", "").ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "app.log", "hello world\nanother line\n").ok());
  RunResult r = RunLatdoc({"logs", dir / "empty.log", "--json", dir / "out.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc logs: nothing to analyse: " + (dir / "empty.log") + ": empty (no lines)\n");
  EXPECT_THAT(r.out, Not(HasSubstr("No problems found")));
  EXPECT_FALSE(fs::exists(dir / "out.json"));

  r = RunLatdoc({"logs", dir / "app.log"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc logs: nothing to analyse: " + (dir / "app.log") +
                       " (2 lines): no line of a known format (vLLM, SGLang, TGI, llama.cpp, "
                       "uvicorn access, Python logging); first: " + (dir / "app.log") + ":1: hello world\n");

  // A log with recognised lines is read as before.
  r = RunLatdoc({"logs", "tests/data/logs/vllm_journal.log"});
  EXPECT_NE(r.exit_code, 2) << r.err;

  // diagnose whose every input was unreadable: exit 2, saying which (it said "No problems
  // found" and exited 0).
  r = RunLatdoc({"diagnose", "--logs", dir / "app.log", "--json", dir / "d.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "latdoc diagnose: logs: " + (dir / "app.log") +
                       " (2 lines): no line of a known format (vLLM, SGLang, TGI, llama.cpp, "
                       "uvicorn access, Python logging); first: " + (dir / "app.log") + ":1: hello world\n"
                       "latdoc diagnose: no input could be read: nothing was diagnosed\n");
  EXPECT_THAT(r.out, Not(HasSubstr("No problems found")));
}

}  // namespace
}  // namespace latdoc::testing
