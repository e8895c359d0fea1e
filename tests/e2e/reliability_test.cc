// End-to-end reliability contracts of the latdoc binary against a real `latdoc sim` process:
// - nothing lost: with faults injected, or the server killed mid-run, every request sent ends
//   in exactly one record (completed + failed == sent), the results file is written, no crash;
// - SIGTERM, like SIGINT, writes partial results marked partial (bench, sweep, diagnose);
// - output files are written atomically: a failing write leaves neither a partial file nor a
//   temporary behind;
// - secrets: an API key never appears in any output, log or report, and the server command
//   lines that doctor reports are redacted;
// - read-only: `latdoc doctor` writes nothing (inotify watches, see DoctorWritesNothing).
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "http/testing/blocking_client.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

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
    return json();
  }
  return json::parse(*text);
}

// The exit of a latdoc run that must not have crashed: a normal exit with a documented code
// (130 and 143: interrupted by SIGINT or SIGTERM, after writing partial results).
void ExpectNoCrash(int code, const std::string& what) {
  EXPECT_TRUE((code >= 0 && code <= 3) || code == 130 || code == 143) << what << " exited " << code;
}

void ExpectAllAccountedFor(const json& r, const std::string& what) {
  ASSERT_TRUE(r.contains("sent")) << what << ": " << r.dump().substr(0, 300);
  EXPECT_EQ(r["completed"].get<int64_t>() + r["failed"].get<int64_t>(), r["sent"].get<int64_t>())
      << what;
}

// The requests the simulator has finished (its /metrics).
double FinishedRequests(SimProcess& sim) { return sim.Metric("vllm:request_success_total"); }

// Waits until the simulator has finished `n` requests, so a fault is injected mid-run however
// slow the machine is. False after a minute.
bool WaitForFinished(SimProcess& sim, int n) { return sim.WaitForMetric("vllm:request_success_total", n); }

// ---------------------------------------------------------------------------------------------
// Nothing lost.

// The server dies (SIGKILL) half-way through a bench run: the requests in flight and the ones
// not yet sent fail, every one is accounted for, and the results file is written.
TEST(FaultTest, BenchWhenTheServerIsKilledMidRun) {
  auto sim = std::make_unique<SimProcess>(kFastSim);
  TempDir dir("bench_kill");
  Process bench({LatdocBinary(), "bench", "--url", sim->url(), "--concurrency", "8",
                 "--num-requests", "400", "--input-len", "8", "--output-len", "40", "--json",
                 dir / "r.json", "--save-requests", dir / "req.jsonl", "--quiet"});
  EXPECT_TRUE(WaitForFinished(*sim, 20));
  sim->process().Signal(SIGKILL);
  int code = bench.Wait(120000);
  ExpectNoCrash(code, "bench");
  json r = ReadJson(dir / "r.json");
  ExpectAllAccountedFor(r, "bench");
  EXPECT_GT(r["completed"].get<int>(), 0);
  EXPECT_GT(r["failed"].get<int>(), 0) << r["failures"].dump();
  auto lines = ReadFileToString(dir / "req.jsonl");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(std::count(lines->begin(), lines->end(), '\n'), r["sent"].get<int64_t>());
}

TEST(FaultTest, SweepWhenTheServerIsKilledMidRun) {
  auto sim = std::make_unique<SimProcess>(With(kFastSim, {"--max-num-seqs", "8"}));
  TempDir dir("sweep_kill");
  Process sweep({LatdocBinary(), "sweep", "--url", sim->url(), "--concurrency", "1:64",
                 "--input-len", "8", "--output-len", "20", "--json", dir / "s.json", "--quiet"});
  EXPECT_TRUE(WaitForFinished(*sim, 150));  // a few steps done
  sim->process().Signal(SIGKILL);
  int code = sweep.Wait(180000);
  ExpectNoCrash(code, "sweep");
  json s = ReadJson(dir / "s.json");
  ASSERT_TRUE(s.contains("steps")) << s.dump().substr(0, 300);
  for (const json& step : s["steps"]) {
    EXPECT_EQ(step["completed"].get<int64_t>() + step["failed"].get<int64_t>(),
              step["requests"].get<int64_t>()) << step.dump();
  }
}

// diagnose against a server that fails a third of its requests in every way the simulator
// can, then against one killed during the load step: the report is written each time, and
// both load runs account for every request.
TEST(FaultTest, DiagnoseUnderFaultsAndWhenTheServerIsKilled) {
  for (bool kill : {false, true}) {
    SCOPED_TRACE(kill ? "killed" : "faults");
    std::vector<std::string> faults = {"--sim-fault-429", "0.05", "--sim-fault-500", "0.05",
                                       "--sim-fault-503", "0.05", "--sim-fault-reset-before", "0.05",
                                       "--sim-fault-reset-after", "0.05", "--sim-fault-cut-stream",
                                       "0.05", "--seed", "5"};
    auto sim = std::make_unique<SimProcess>(kill ? kFastSim : With(kFastSim, faults));
    TempDir dir("diag_fault");
    Process d({LatdocBinary(), "diagnose", "--url", sim->url(), "--concurrency", "4",
               "--requests", kill ? "2000" : "60", "--baseline-requests", "4",
               "--net-samples", "2", "--input-len", "8", "--output-len", kill ? "40" : "8", "--json",
               dir / "d.json", "--report", dir / "r.html", "--quiet"});
    if (kill) {
      EXPECT_TRUE(WaitForFinished(*sim, 30));  // baseline done, the load step under way
      sim->process().Signal(SIGKILL);
    }
    int code = d.Wait(240000);
    ExpectNoCrash(code, "diagnose");
    json j = ReadJson(dir / "d.json");
    EXPECT_TRUE(fs::exists(dir / "r.html"));
    for (const char* part : {"baseline", "bench"}) {
      if (j.contains(part) && j[part].is_object() && j[part].contains("sent")) {
        ExpectAllAccountedFor(j[part], part);
      } else if (!kill) {
        ADD_FAILURE() << "no " << part << " results: " << j.dump().substr(0, 300);
      }
    }
  }
}

// SIGTERM (what a container runtime or systemd sends) gives the same partial results as SIGINT.
TEST(FaultTest, SigtermWritesPartialBenchResults) {
  SimProcess sim(kFastSim);
  TempDir dir("bench_term");
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "4", "--duration",
                 "30", "--input-len", "8", "--output-len", "50", "--json", dir / "p.json",
                 "--quiet"});
  EXPECT_TRUE(WaitForFinished(sim, 8));
  int code = bench.Signal(SIGTERM);
  EXPECT_EQ(code, 143);
  json r = ReadJson(dir / "p.json");
  EXPECT_EQ(r["partial"], true);
  EXPECT_EQ(r["partial_reason"], "interrupted by SIGTERM");
  ExpectAllAccountedFor(r, "bench");
  EXPECT_GT(r["completed"].get<int>(), 0);
}

// SIGINT during the warm-up: nothing more is sent, warm-up requests included; the streams in
// flight (4) end and the run is written, partial, with no measured request.
TEST(FaultTest, SigintDuringWarmupStopsSending) {
  SimProcess sim(kFastSim);
  TempDir dir("bench_warmup_int");
  Process bench({LatdocBinary(), "bench", "--url", sim.url(), "--concurrency", "4", "--warmup",
                 "100000", "--num-requests", "10", "--input-len", "8", "--output-len", "20",
                 "--json", dir / "w.json", "--quiet"});
  EXPECT_TRUE(WaitForFinished(sim, 8));
  const int code = bench.Signal(SIGINT);
  EXPECT_EQ(code, 130);
  const double at_exit = FinishedRequests(sim);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(FinishedRequests(sim), at_exit);  // the bench is gone: nothing was left sending
  json r = ReadJson(dir / "w.json");
  EXPECT_EQ(r["partial"], true);
  EXPECT_EQ(r["partial_reason"], "interrupted by SIGINT");
  EXPECT_EQ(r["completed"].get<int>() + r["failed"].get<int>(), 0);
}

TEST(FaultTest, SigtermWritesPartialSweepResults) {
  SimProcess sim(kFastSim);
  TempDir dir("sweep_term");
  Process p({LatdocBinary(), "sweep", "--url", sim.url(), "--concurrency", "1:256",
             "--input-len", "8", "--output-len", "20", "--json", dir / "s.json", "--quiet"});
  EXPECT_TRUE(WaitForFinished(sim, 100));
  int code = p.Signal(SIGTERM);
  ExpectNoCrash(code, "sweep");
  json j = ReadJson(dir / "s.json");
  EXPECT_EQ(j["partial"], true);
  EXPECT_FALSE(j.value("partial_reason", "").empty());
}

// diagnose stopped by SIGINT or SIGTERM during its load step: the report is still written, the
// load step's results account for every request sent, and the document says it is partial.
TEST(FaultTest, SignalsWritePartialDiagnoseResults) {
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    SCOPED_TRACE(name);
    SimProcess sim(kFastSim);
    TempDir dir("diag_sig");
    Process d({LatdocBinary(), "diagnose", "--url", sim.url(), "--concurrency", "4", "--requests",
               "5000", "--baseline-requests", "4", "--net-samples", "2", "--input-len", "8",
               "--output-len", "40", "--json", dir / "d.json", "--report", dir / "r.html",
               "--quiet"});
    EXPECT_TRUE(WaitForFinished(sim, 20));  // the baseline done, the load step under way
    int code = d.Signal(sig);
    EXPECT_EQ(code, 128 + sig);  // interrupted: 130 or 143, the report written all the same
    json j = ReadJson(dir / "d.json");
    EXPECT_TRUE(fs::exists(dir / "r.html"));
    EXPECT_EQ(j.value("partial", false), true) << j.dump().substr(0, 400);
    EXPECT_EQ(j.value("partial_reason", ""), "interrupted by " + name);
    ASSERT_TRUE(j.contains("bench"));
    EXPECT_EQ(j["bench"]["partial"], true);
    ExpectAllAccountedFor(j["bench"], "bench");
    ExpectAllAccountedFor(j["baseline"], "baseline");
  }
}

// A results path that cannot be written (here: a directory is in the way, which fails even
// for root, so the test holds on CI machines running as root): the run reports the error, and
// leaves no partial file and no temporary next to it.
TEST(AtomicWriteTest, FailingWriteLeavesNoPartialOrTemporaryFile) {
  SimProcess sim(kFastSim);
  TempDir dir("atomic");
  fs::create_directories(dir / "taken.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--num-requests", "4", "--input-len",
                           "4", "--output-len", "2", "--json", dir / "taken.json",
                           "--save-requests", dir / "missing_dir/req.jsonl", "--quiet"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("taken.json"));
  EXPECT_TRUE(fs::is_directory(dir / "taken.json"));
  EXPECT_TRUE(fs::is_empty(dir / "taken.json"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) left.push_back(e.path().filename());
  EXPECT_THAT(left, ::testing::ElementsAre("taken.json"));
}

// Inputs and outputs are checked before anything runs: a misspelt --trace is bad input (not a
// layer that quietly failed under a clean report), and an output path that cannot be written
// costs no load test and leaves no other report written.
TEST(DiagnoseInputTest, MissingInputOrUnwritableOutputIsRefusedBeforeAnythingRuns) {
  TempDir dir("diag_input");
  RunResult r = RunLatdoc({"diagnose", "--trace", dir / "nosuch.json", "--json", dir / "d.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--trace " + (dir / "nosuch.json") + ": No such file or directory"));
  EXPECT_FALSE(fs::exists(dir / "d.json"));
  for (const char* flag : {"--trace", "--logs", "--facts"}) {
    r = RunLatdoc({"diagnose", flag, dir.path(), "--json", dir / "d.json"});
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_EQ(r.err, "latdoc diagnose: " + std::string(flag) + " " + dir.path() + ": is a directory, not a file\n");
    EXPECT_FALSE(fs::exists(dir / "d.json"));
  }

  SimProcess sim(kFastSim);
  const auto t0 = std::chrono::steady_clock::now();
  r = RunLatdoc({"diagnose", "--url", sim.url(), "--net-samples", "0", "--json", dir / "ok.json",
                 "--report", dir / "missing_dir/r.html"});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("missing_dir/r.html: no such directory"));
  EXPECT_FALSE(fs::exists(dir / "ok.json"));
  EXPECT_LT(took, std::chrono::seconds(2));  // no baseline or load step was run
  EXPECT_EQ(FinishedRequests(sim), 0);
}

// With the network probe off, the load step is the first to find the target unreachable: the
// report says so and the exit code is 3, as with the probe on.
// latdoc trace's thresholds are checked before any file is read: out of range or NaN is bad
// input (a NaN or 1e300 us would be undefined in the conversion to nanoseconds).
TEST(TraceInputTest, ThresholdsOutOfRangeAreRefused) {
  const std::string trace = "tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz";
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const Case cases[] = {
      {{"--outlier-factor", "-1"}, "--outlier-factor -1: must be 1 to 1e+06"},
      {{"--small-copy-kib", "-5"}, "--small-copy-kib -5: must be 0 to 1e+09"},
      {{"--tiny-kernel-us", "1e300"}, "--tiny-kernel-us 1e+300: must be 0 to 1e+09"},
      {{"--outlier-min-excess-us", "nan"}, "--outlier-min-excess-us nan: must be 0 to 1e+09"},
      {{"--idle-fail", "-1"}, "--idle-fail -1: must be 0 to 1"},
      {{"--idle-warn", "0.5", "--idle-fail", "0.2"}, "--idle-warn 0.5 is above --idle-fail 0.2"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"trace", trace, "-q"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = RunLatdoc(args);
    EXPECT_EQ(r.exit_code, 2) << c.err << ": " << r.err;
    EXPECT_EQ(r.err, "latdoc trace: " + c.err + "\n");
  }
}

// A file cut before its first GPU event leaves nothing to analyse (exit 2), and --json still
// says which input failed and where, with no facts.
TEST(TraceInputTest, UnreadableOnlyInputStillGetsItsJson) {
  TempDir dir("trace_cut");
  auto whole = ReadFileToString("tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz");
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "cut.json.gz", whole->substr(0, 1'500'000)).ok());
  RunResult r = RunLatdoc({"trace", dir / "cut.json.gz", "-q", "--json", dir / "out.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const json j = ReadJson(dir / "out.json");
  EXPECT_EQ(j["complete"], false);
  EXPECT_TRUE(j["facts"].is_null());
  EXPECT_TRUE(j["findings"].empty());
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["error"], dir / "cut.json.gz" + ": byte 1500000: gzip stream is truncated");
}

TEST(DiagnoseInputTest, UnreachableTargetWithTheProbeOffExitsThree) {
  TempDir dir("diag_unreachable");
  RunResult r = RunLatdoc({"diagnose", "--url", "http://127.0.0.1:1", "--net-samples", "0",
                           "--json", dir / "d.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json d = ReadJson(dir / "d.json");
  EXPECT_EQ(d["target_reachable"], false);
}

// A server that answers but refuses the key (401 on /v1, as vLLM with --api-key) is reachable:
// the report says the load test could not run and why, and the exit code is 1, not 3.
TEST(DiagnoseInputTest, RefusedKeyIsNotAnUnreachableTarget) {
  TempDir dir("diag_refused");
  SimProcess sim(With(kFastSim, {"--api-key", "right"}));
  ::setenv("LATDOC_TEST_KEY", "wrong", 1);
  for (const char* samples : {"0", "2"}) {
    RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--net-samples", samples,
                             "--api-key-env", "LATDOC_TEST_KEY", "--json", dir / "d.json",
                             "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << samples << " " << r.err;
    const json d = ReadJson(dir / "d.json");
    EXPECT_EQ(d["target_reachable"], true) << samples;
    bool refused = false;
    for (const json& f : d["findings"]) refused = refused || f["id"] == "load.refused";
    EXPECT_TRUE(refused) << samples << " " << d["findings"].dump();
    EXPECT_THAT(d["layers"]["load"].get<std::string>(), HasSubstr("answered HTTP 401"));
  }
  ::unsetenv("LATDOC_TEST_KEY");
}

// The terminal summary says what was diagnosed: the target, the model the load ran against and
// the server (the HTML and Markdown reports said neither model nor server).
TEST(DiagnoseOutputTest, SummaryNamesTheModelAndTheServer) {
  TempDir dir("diag_subject");
  SimProcess sim(kFastSim);
  RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--net-samples", "0", "--requests", "8",
                           "--baseline-requests", "2", "--concurrency", "2", "--input-len", "8",
                           "--output-len", "4", "--report", dir / "r.html", "--markdown", dir / "r.md"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find("\n\n") + 2),
            "latdoc diagnose: " + sim.url() + "\nmodel: latdoc-sim/llama-3-8b\nserver: " + sim.url() +
                " (its /metrics in vLLM's names)\n\n");
  auto md = ReadFileToString(dir / "r.md");
  ASSERT_TRUE(md.ok());
  EXPECT_THAT(*md, HasSubstr("- target: `" + sim.url() + "`\n- model: `latdoc-sim/llama-3-8b`\n"
                             "- server: its /metrics in vLLM's names\n"));
  auto html = ReadFileToString(dir / "r.html");
  ASSERT_TRUE(html.ok());
  EXPECT_THAT(*html, HasSubstr("<span>model: <b>latdoc-sim/llama-3-8b</b></span>"));
}

// A byte that is not UTF-8 in a file name and in a log line (a log cut mid-character, a path
// from another locale) reaches the JSON, Markdown and HTML reports: they are written, with the
// byte replaced, instead of the process aborting after the whole run.
TEST(DiagnoseInputTest, BytesThatAreNotUtf8StillGiveEveryReport) {
  TempDir dir("diag_utf8");
  const std::string trace = dir / "\xff\xfe_kernel_trace.csv";
  fs::copy_file("tests/data/trace/handmade/run1_kernel_trace.csv", trace);
  const std::string log = dir / "server\xff.log";
  std::ofstream(log) << "ERROR 01-02 03:04:05 [engine.py:1] boom \xc3\n"
                     << "INFO 01-02 03:04:06 [loggers.py:1] Engine 000: Avg prompt throughput: "
                        "1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: "
                        "1.0%\n";
  RunResult r = RunLatdoc({"diagnose", "--trace", trace, "--logs", log, "--json", dir / "d.json",
                           "--markdown", dir / "d.md", "--report", dir / "d.html", "--quiet"});
  ExpectNoCrash(r.exit_code, "diagnose " + r.err);
  for (const char* f : {"d.json", "d.md", "d.html"}) EXPECT_TRUE(fs::exists(dir / f)) << f;
  const std::string text = ReadFileOrEmpty(dir / "d.json");
  EXPECT_TRUE(json::accept(text));
  EXPECT_THAT(text, HasSubstr("\xef\xbf\xbd"));  // U+FFFD where the bad bytes were
}

// ---------------------------------------------------------------------------------------------
// Secrets.

std::string Marker() {
  std::random_device rd;
  return "sk-latdoc-marker-" + std::to_string(::getpid()) + "-" + std::to_string(rd());
}

// Every regular file under `dir` that contains `needle`.
std::vector<std::string> FilesContaining(const std::string& dir, const std::string& needle) {
  std::vector<std::string> hits;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto text = ReadFileToString(e.path());
    if (text.ok() && text->find(needle) != std::string::npos) hits.push_back(e.path());
  }
  return hits;
}

// A stand-in server process with the command line of `vllm serve ... --api-key KEY` and the key
// in its environment too (python3 running a script named vllm that sleeps). Killed at scope exit.
class FakeVllm {
 public:
  FakeVllm(const std::string& dir, const std::string& key) {
    std::ofstream(dir + "/vllm") << "import time\ntime.sleep(120)\n";
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string env_key = "OPENAI_API_KEY=" + key, env_hf = "HF_TOKEN=" + key;
      std::string script = dir + "/vllm", flag = "--hf-token=" + key;
      const char* argv[] = {"/usr/bin/python3", script.c_str(), "serve", "m", "--api-key",
                            key.c_str(), flag.c_str(), "--port", "8123", nullptr};
      const char* envp[] = {env_key.c_str(), env_hf.c_str(), "VLLM_LOGGING_LEVEL=INFO", nullptr};
      ::execve(argv[0], const_cast<char**>(argv), const_cast<char**>(envp));
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~FakeVllm() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// bench and diagnose with every output they have (--json, --save-requests, --report,
// --markdown, the server's log read back with --logs, this host's checks with --local and a
// server whose command line holds the key) and OPENAI_API_KEY set to a unique marker: the
// marker is in no output file, not on stdout or stderr, and not in the simulator's log.
TEST(SecretsTest, ApiKeyAppearsInNoOutputLogOrReport) {
  const std::string key = Marker();
  TempDir dir("secrets");
  FakeVllm server(dir.path(), key);
  ::setenv("OPENAI_API_KEY", key.c_str(), 1);
  SimProcess sim({"--sim-step-base-ms", "4", "--log-file", dir / "sim.log", "--enable-log-requests",
                  "--log-stats-interval", "0.5"});
  RunResult b = RunLatdoc({"bench", "--url", sim.url(), "--num-requests", "6", "--concurrency",
                           "2", "--input-len", "4", "--output-len", "3", "--json", dir / "b.json",
                           "--save-requests", dir / "b.jsonl"});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  RunResult d = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "2", "--requests", "8",
                           "--baseline-requests", "2", "--net-samples", "2", "--input-len", "4",
                           "--output-len", "3", "--logs", dir / "sim.log", "--local", "--show-ok",
                           "--json", dir / "d.json", "--markdown", dir / "d.md", "--report",
                           dir / "d.html"});
  ::unsetenv("OPENAI_API_KEY");
  ExpectNoCrash(d.exit_code, "diagnose " + d.err);
  for (const char* f : {"b.json", "b.jsonl", "d.json", "d.md", "d.html", "sim.log"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  }
  // The stand-in's script holds no key; everything else in the directory is output.
  EXPECT_THAT(FilesContaining(dir.path(), key), ::testing::IsEmpty());
  for (const std::string* s : {&b.out, &b.err, &d.out, &d.err}) {
    EXPECT_EQ(s->find(key), std::string::npos);
  }
  // The key was really sent and the server really reported: doctor saw the stand-in.
  auto report = ReadFileToString(dir / "d.json");
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(*report, HasSubstr("<redacted>"));
}

// doctor reports the server's command line and environment with every key redacted, on this
// host (the stand-in process) and from a recorded tree, in text, --json and --collect output.
TEST(SecretsTest, DoctorRedactsServerCommandLineAndEnvironment) {
  const std::string key = Marker();
  TempDir dir("doctor_secrets");
  FakeVllm server(dir.path(), key);
  const std::string pid = std::to_string(server.pid());
  RunResult text = RunLatdoc({"doctor", "--pid", pid, "--all", "--no-color", "--interval-ms", "50",
                              "--json", dir / "doctor.json"});
  ExpectNoCrash(text.exit_code, "doctor " + text.err);
  RunResult collect = RunLatdoc({"doctor", "--pid", pid, "--interval-ms", "50", "--collect",
                                 dir / "facts.json"});
  ExpectNoCrash(collect.exit_code, "doctor --collect " + collect.err);
  auto facts = ReadFileToString(dir / "facts.json");
  ASSERT_TRUE(facts.ok());
  EXPECT_THAT(*facts, HasSubstr("--api-key"));   // the command line is reported ...
  EXPECT_THAT(*facts, HasSubstr("<redacted>"));  // ... with the key replaced
  EXPECT_THAT(FilesContaining(dir.path(), key), ::testing::IsEmpty());
  for (const std::string* s : {&text.out, &text.err, &collect.out, &collect.err}) {
    EXPECT_EQ(s->find(key), std::string::npos) << *s;
  }
}

// ---------------------------------------------------------------------------------------------
// Read-only.

// Watches directory trees with inotify for anything that writes: a file created, written,
// renamed, deleted, or its attributes changed. Reads (IN_ACCESS, IN_OPEN) are not watched.
class WriteWatcher {
 public:
  WriteWatcher() : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}
  ~WriteWatcher() { ::close(fd_); }
  // Watches `root` and every directory below it; returns how many directories.
  int AddTree(const std::string& root) {
    int n = Add(root);
    for (const auto& e : fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied)) {
      if (e.is_directory() && !e.is_symlink()) n += Add(e.path());
    }
    return n;
  }
  // Every write event since the watches were added, as "dir/name (mask)".
  std::vector<std::string> Events() {
    std::vector<std::string> out;
    alignas(inotify_event) char buf[64 * 1024];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (char* p = buf; p < buf + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        std::string name = ev->len ? ev->name : "";
        out.push_back(dirs_[ev->wd] + "/" + name + " (mask 0x" + ToHex(ev->mask) + ")");
        p += sizeof(inotify_event) + ev->len;
      }
    }
    return out;
  }

 private:
  static std::string ToHex(uint32_t v) {
    std::ostringstream s;
    s << std::hex << v;
    return s.str();
  }
  int Add(const std::string& dir) {
    int wd = inotify_add_watch(fd_, dir.c_str(),
                               IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM |
                                   IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF);
    if (wd < 0) return 0;
    dirs_[wd] = dir;
    return 1;
  }
  int fd_;
  std::map<int, std::string> dirs_;
};

// `latdoc doctor` with no output option writes nothing. Covered: the sysroot it judges (the
// checked-in recorded and built trees, every directory watched), its working directory, and
// the HOME and TMPDIR it is given (private, watched); for the live run on this host also this
// repository's tests/data/host. Not covered: other places on the live host (/tmp, /var) and
// what external tools it may run (nvidia-smi, rocm-smi, iptables -S) do themselves.
TEST(ReadOnlyTest, DoctorWritesNothing) {
  TempDir home("ro_home"), tmp("ro_tmp"), cwd("ro_cwd"), outdir("ro_out");
  const std::string src = LATDOC_SOURCE_DIR;
  const std::vector<std::string> runs = {
      "doctor --sysroot " + src + "/tests/data/host/mi300x_unhealthy_built/tree --all --no-color",
      "doctor --sysroot " + src + "/tests/data/host/mi300x_built/tree --pid 4242 --all --no-color",
      "doctor --sysroot " + src + "/tests/data/host/h200_recorded/tree --all --no-color",
      "doctor --all --no-color --interval-ms 50",  // this host, live
  };
  {  // The watcher sees a write in any watched tree (so an empty list below means something).
    WriteWatcher w;
    w.AddTree(cwd.path());
    std::ofstream(cwd / "probe") << "x";
    fs::remove(cwd / "probe");
    EXPECT_GE(w.Events().size(), 2u);
  }
  for (const std::string& args : runs) {
    SCOPED_TRACE(args);
    WriteWatcher w;
    int dirs = w.AddTree(src + "/tests/data/host") + w.AddTree(home.path()) +
               w.AddTree(tmp.path()) + w.AddTree(cwd.path());
    ASSERT_GT(dirs, 10);
    const std::string cmd = "cd '" + cwd.path() + "' && env HOME='" + home.path() + "' TMPDIR='" +
                            tmp.path() + "' '" + LatdocBinary() + "' " + args + " >'" +
                            (outdir / "out") + "' 2>'" + (outdir / "err") + "'";
    int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st)) << cmd;
    EXPECT_TRUE(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1)
        << WEXITSTATUS(st) << ": " << ReadFileOrEmpty(outdir / "err");
    EXPECT_GT(ReadFileOrEmpty(outdir / "out").size(), 100u);  // it did run its checks
    EXPECT_THAT(w.Events(), ::testing::IsEmpty());
    EXPECT_TRUE(fs::is_empty(cwd.path()) && fs::is_empty(home.path()) && fs::is_empty(tmp.path()));
  }
}

}  // namespace
}  // namespace latdoc::testing
