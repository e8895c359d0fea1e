// End-to-end: the command line as users of `vllm bench serve`, curl and load tools type it,
// against a real `latdoc sim`. The simulator's access log (--log-file) is the ground truth of
// which paths were requested.
#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A port nothing listens on: a flag check that ran after a connection attempt would exit 3.
constexpr const char* kDeadUrl = "http://127.0.0.1:9";

// A simulator whose access log goes to a file; requests_matching() counts its lines.
class LoggedSim {
 public:
  explicit LoggedSim(std::vector<std::string> args = {})
      : log_(TempPath("cli_sim_" + std::to_string(::getpid()) + "_" + std::to_string(++n_) + ".log")),
        sim_([&] {
          args.insert(args.end(), {"--log-file", log_, "--time-scale", "0.05", "--seed", "3"});
          return args;
        }()) {}
  ~LoggedSim() { ::unlink(log_.c_str()); }
  std::string url() const { return sim_.url(); }
  std::string port() const { return std::to_string(sim_.port()); }
  std::string log() const { return ReadFileOrEmpty(log_); }
  // Access-log lines for "METHOD TARGET HTTP/1.1".
  int Count(const std::string& method_and_target) const {
    const std::string text = log(), key = "\"" + method_and_target + " HTTP/1.1\"";
    int n = 0;
    for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + 1)) ++n;
    return n;
  }

 private:
  static inline int n_ = 0;
  std::string log_;
  SimProcess sim_;
};

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  return json::parse(text.ok() ? *text : "{}", nullptr, false);
}

// The OpenAI SDK's base_url (".../v1") and vLLM's flag names: the run completes against the
// right paths, and the note says what was dropped.
TEST(CliTest, VllmFlagsAndBaseUrlWithV1) {
  LoggedSim sim;
  const std::string out = TempPath("cli_v1.json");
  RunResult r = RunLatdoc({"bench", "--base-url", sim.url() + "/v1", "--num-prompts", "5", "--max-concurrency", "2",
                           "--random-input-len", "16", "--random-output-len", "8", "--json", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "latdoc bench: note: --url " + sim.url() + "/v1: ends in /v1, which latdoc adds itself; using " +
                       sim.url() + "\n");
  json j = ReadJson(out);
  EXPECT_EQ(j["completed"], 5);
  EXPECT_EQ(j["failed"], 0);
  // vLLM: --max-concurrency without --request-rate is a closed loop at that concurrency.
  EXPECT_EQ(j["max_concurrency"], 2);
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_LE(j["max_concurrent_requests"].get<int>(), 2);
  EXPECT_EQ(j["total_output_tokens"], 5 * 8);
  EXPECT_EQ(sim.Count("POST /v1/completions"), 5);
  EXPECT_EQ(sim.Count("GET /v1/models"), 1);
  EXPECT_THAT(sim.log(), Not(HasSubstr("/v1/v1")));
  ::unlink(out.c_str());
}

// A pasted endpoint URL selects that endpoint; --endpoint takes vLLM's path form too.
TEST(CliTest, PastedChatEndpointAndVllmEndpointForm) {
  LoggedSim sim;
  const std::string out = TempPath("cli_chat.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url() + "/v1/chat/completions", "-n", "3", "-c", "3",
                           "--input-len", "8", "--output-len", "4", "--json", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("names an endpoint, and latdoc adds the endpoint's path itself; using " + sim.url() +
                               " with --endpoint chat"));
  EXPECT_EQ(ReadJson(out)["endpoint_type"], "openai-chat");
  EXPECT_EQ(sim.Count("POST /v1/chat/completions"), 3);

  r = RunLatdoc({"bench", "--url", sim.url(), "--endpoint", "/v1/chat/completions", "-n", "2", "--input-len", "8",
                 "--output-len", "4", "--json", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(sim.Count("POST /v1/chat/completions"), 5);
  r = RunLatdoc({"bench", "--url", sim.url(), "--backend", "openai-chat", "-n", "1", "--input-len", "8",
                 "--output-len", "4", "--json", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(sim.Count("POST /v1/chat/completions"), 6);
  EXPECT_THAT(sim.log(), Not(HasSubstr("/v1/chat/completions/v1")));
  ::unlink(out.c_str());
}

// Another path is a gateway's route: kept as a prefix, and the error names the URL really
// requested (it used to print one without the prefix, which worked).
TEST(CliTest, PathPrefixIsKeptAndNamedInErrors) {
  LoggedSim sim;
  RunResult r = RunLatdoc({"bench", "--url", sim.url() + "/llm", "-n", "2", "--quiet"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "latdoc bench: " + sim.url() + "/llm/v1/models answered HTTP 404 (is /llm part of the "
                       "server's routes? latdoc adds /v1/... after it)\n");
  EXPECT_EQ(sim.Count("GET /llm/v1/models"), 1);
  r = RunLatdoc({"sweep", "--url", sim.url() + "/llm", "--concurrency", "1:2", "--quiet"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, HasSubstr(sim.url() + "/llm/v1/models answered HTTP 404"));
}

// Every command that talks to the server takes the SDK's ".../v1" the same way.
TEST(CliTest, EveryCommandDropsTheV1) {
  LoggedSim sim;
  const std::string v1 = sim.url() + "/v1";
  const std::string note = ": ends in /v1, which latdoc adds itself; using " + sim.url() + "\n";
  RunResult r = RunLatdoc({"net", "--url", v1, "--samples", "2", "--idle-wait", "0", "--stream-tokens", "0",
                           "--no-path", "--quiet"});
  // It ran (a finding on a loaded machine may make it 1) and its probes reached /v1/completions.
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.err;
  EXPECT_EQ(r.err, "latdoc net: note: --url " + v1 + note);
  EXPECT_GE(sim.Count("POST /v1/completions"), 2);
  r = RunLatdoc({"exporter", "--once", "--no-host", "--target", v1});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "latdoc exporter: note: --target " + v1 + note);
  EXPECT_THAT(r.out, HasSubstr("latdoc_canary_up 1\n"));
  r = RunLatdoc({"sweep", "--base-url", v1, "-c", "1:2", "--min-requests", "4", "--input-len", "8",
                 "--output-len", "4", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "latdoc sweep: note: --url " + v1 + note);
  EXPECT_THAT(sim.log(), Not(HasSubstr("/v1/v1")));
  EXPECT_GE(sim.Count("POST /v1/completions"), 2 + 1 + 8);
}

// vLLM's --host/--port build http://HOST:PORT; with --url they are refused.
TEST(CliTest, HostAndPort) {
  LoggedSim sim;
  RunResult r = RunLatdoc({"bench", "--host", "127.0.0.1", "--port", sim.port(), "-n", "2", "--input-len", "8",
                           "--output-len", "4", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(sim.Count("POST /v1/completions"), 2);
  r = RunLatdoc({"bench", "--url", sim.url(), "--port", sim.port(), "-n", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: give --url or --host/--port, not both\n");
  r = RunLatdoc({"bench", "-n", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: give the server's URL: --url http://HOST:PORT (or --host and --port)\n");
}

// --api-key works and is never printed; a key given to an unknown flag is never echoed.
TEST(CliTest, ApiKeyIsReadAndNeverPrinted) {
  const std::string key = "sk-SECRETKEY-cli-12345";
  LoggedSim sim({"--api-key", key});
  const std::string out = TempPath("cli_key.json");
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--api-key", key, "-n", "2", "--input-len", "8",
                           "--output-len", "4", "--json", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "latdoc bench: note: a key on the command line is visible to other users (ps) and kept in "
                   "the shell's history; next time put it in OPENAI_API_KEY (or a variable named by "
                   "--api-key-env)\n");
  EXPECT_THAT(r.out, Not(HasSubstr("SECRETKEY")));
  EXPECT_THAT(ReadFileOrEmpty(out), Not(HasSubstr("SECRETKEY")));
  EXPECT_GE(sim.Count("POST /v1/completions"), 2);
  ::unlink(out.c_str());

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench", "--url", sim.url(), "--token", key},
        std::vector<std::string>{"bench", "--url", sim.url(), "--hf-token=" + key},
        std::vector<std::string>{"net", "--url", sim.url(), "--auth-token", key, "--bogus", "x"}}) {
    r = RunLatdoc(args);
    EXPECT_EQ(r.exit_code, 2) << args[3];
    EXPECT_THAT(r.err, HasSubstr("its value is not shown; give a key in an environment variable")) << args[3];
    EXPECT_THAT(r.err + r.out, Not(HasSubstr("SECRETKEY"))) << args[3];
  }
  // Nor one typed into a number option.
  r = RunLatdoc({"bench", "--url", sim.url(), "--num-requests", key});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, Not(HasSubstr("SECRETKEY")));
  // A key typed where a command was expected is not echoed either.
  r = RunLatdoc({key});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc: unknown command (not shown: it looks like a key) ('latdoc --help' lists the commands)\n");
}

// Typos get "did you mean", exit 2, and the unknown option is named before anything else is
// judged ("--url is required" hid it).
TEST(CliTest, TyposHelpAndVersion) {
  RunResult r = RunLatdoc({"benchh", "--url", kDeadUrl});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc: unknown command 'benchh': did you mean 'bench'?\n");
  r = RunLatdoc({"bench", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: unknown option '--bogus' ('latdoc bench --help' lists the options)\n");
  r = RunLatdoc({"bench", "--url", kDeadUrl, "--concurency", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: unknown option '--concurency': did you mean '--concurrency'?\n");
  r = RunLatdoc({"bench", "--url", kDeadUrl, "--rate", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: unknown option '--rate': did you mean '--request-rate' or '--max-error-rate'?\n");
  r = RunLatdoc({"bench", "--url"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc bench: --url needs a value\n");
  r = RunLatdoc({"trace", "--bogus"});  // "files is required" must not hide it
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc trace: unknown option '--bogus' ('latdoc trace --help' lists the options)\n");

  r = RunLatdoc({"help", "bench"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("-n,--num-requests,--num-prompts"));
  r = RunLatdoc({"help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sweep"));
  for (const char* v : {"-V", "--version", "version"}) {
    r = RunLatdoc({v});
    EXPECT_EQ(r.exit_code, 0) << v;
    EXPECT_THAT(r.out, ContainsRegex("^latdoc [0-9]+\\.[0-9]+\\.[0-9]+\n$")) << v;
  }
  r = RunLatdoc({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("latdoc: give a command (latdoc help COMMAND explains one)\n"));
}

// Values that cannot mean anything are refused before any traffic, with exit 2.
TEST(CliTest, NonsenseValuesAreRefused) {
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--num-requests", "0"}, "latdoc bench: --num-requests 0: must be more than 0\n"},
      {{"--num-prompts", "-3"}, "latdoc bench: --num-requests -3: must be more than 0\n"},
      {{"--duration", "0"}, "latdoc bench: --duration 0: must be more than 0\n"},
      {{"--duration", "-5s"}, "latdoc bench: --duration '-5s' is not a duration (e.g. 30s, 250ms, 5m)\n"},
      {{"--duration", "-5"}, "latdoc bench: --duration -5: must be more than 0\n"},
      {{"--request-rate", "0"}, "latdoc bench: --request-rate 0: must be more than 0 (or inf)\n"},
      {{"--request-rate", "nan"}, "latdoc bench: --request-rate nan: not a number\n"},
      {{"--max-concurrency", "0"}, "latdoc bench: --max-concurrency 0: must be more than 0\n"},
      {{"--concurrency", "-1"}, "latdoc bench: --concurrency -1: must be more than 0\n"},
      {{"--burstiness", "nan"}, "latdoc bench: --burstiness must be a finite number above 0\n"},
      {{"--random-range-ratio", "nan"}, "latdoc bench: --range-ratio must be in [0, 1)\n"},
      {{"--connect-timeout", "0"}, "latdoc bench: --connect-timeout 0: must be more than 0\n"},
      {{"-n", "abc"}, "latdoc bench: --num-requests abc: expected a whole number\n"},
      {{"--dataset-name", "sonnet"}, "latdoc bench: --dataset-name sonnet: not supported; latdoc reads random, "
                                     "sharegpt, custom, multi-turn or replay\n"},
      {{"--dataset-name", "sharegpt"}, "latdoc bench: --dataset-name sharegpt reads --dataset-path FILE\n"},
      {{"--backend", "tgi"}, "latdoc bench: --backend tgi: not supported; latdoc speaks the OpenAI API: vllm, "
                             "openai or openai-chat\n"},
      {{"--endpoint", "/v1/embeddings"}, "latdoc bench: --endpoint /v1/embeddings: expected completions or chat "
                                         "(/v1/completions, /v1/chat/completions)\n"},
      {{"--percentile-metrics", "ttft,foo"}, "latdoc bench: --percentile-metrics 'foo': expected ttft, tpot, itl "
                                             "or e2el\n"},
      {{"--metric-percentiles", "0"}, "latdoc bench: --metric-percentiles '0': expected numbers above 0 and at "
                                      "most 100\n"},
      {{"--result-dir", "x"}, "latdoc bench: --result-dir and --result-filename go with --save-result\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"bench", "--url", kDeadUrl};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunResult r = RunLatdoc(args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args[1];
    EXPECT_EQ(r.err, c.err) << c.args[0] << " " << c.args[1];
  }
  RunResult r = RunLatdoc({"sweep", "--url", kDeadUrl, "--min-elasticity", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc sweep: --min-elasticity -1: must be more than 0\n");
  r = RunLatdoc({"net", "--url", kDeadUrl, "--timeout", "nan"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc net: --timeout nan: must be more than 0 and at most 86400 seconds\n");
  r = RunLatdoc({"diagnose", "--url", kDeadUrl, "--requests", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "latdoc diagnose: --requests 0: must be more than 0\n");
}

// The rest of vLLM's flags: a duration with a unit, --request-rate inf, --goodput, the random
// dataset's knobs, --save-result's file name, and the percentiles shown.
TEST(CliTest, VllmResultFlags) {
  LoggedSim sim;
  TempDir results("cli_results");
  const std::string dir = results / "sub";  // created, as vLLM's os.makedirs
  RunResult r = RunLatdoc({"bench", "--base-url", sim.url(), "--backend", "vllm", "--dataset-name", "random",
                           "--num-prompts", "6", "--request-rate", "inf", "--max-concurrency", "3",
                           "--random-input-len", "16", "--random-output-len", "4", "--random-range-ratio", "0.5",
                           "--random-prefix-len", "4", "--ignore-eos", "--goodput", "ttft:60000", "tpot:60000",
                           "--save-result", "--result-dir", dir, "--percentile-metrics", "ttft,e2el",
                           "--metric-percentiles", "50,90"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') files.push_back(e->d_name);
    ::closedir(d);
  }
  ASSERT_EQ(files.size(), 1u);
  // vLLM's pattern: BACKEND-RATEqps-concurrencyN-MODEL-YYYYmmdd-HHMMSS.json.
  EXPECT_THAT(files[0], ContainsRegex("^vllm-infqps-concurrency3-[^/]+-[0-9]{8}-[0-9]{6}\\.json$"));
  EXPECT_EQ(r.err, "latdoc bench: saved " + dir + "/" + files[0] + "\n");
  json j = ReadJson(dir + "/" + files[0]);
  EXPECT_EQ(j["completed"], 6);
  EXPECT_EQ(j["max_concurrency"], 3);
  EXPECT_EQ(j["backend"], "vllm");
  EXPECT_EQ(j["request_goodput"], j["request_throughput"]);  // every request met a 60 s SLO
  for (const char* k : {"p50_ttft_ms", "p90_ttft_ms", "p50_e2el_ms", "p90_e2el_ms", "mean_ttft_ms"})
    EXPECT_TRUE(j.contains(k) && j[k].is_number()) << k;
  for (const char* k : {"p99_ttft_ms", "mean_itl_ms", "mean_tpot_ms", "p99_e2el_ms"}) EXPECT_FALSE(j.contains(k)) << k;
  EXPECT_THAT(r.out, HasSubstr("P50 TTFT (ms):"));
  EXPECT_THAT(r.out, HasSubstr("P90 E2EL (ms):"));
  EXPECT_THAT(r.out, Not(HasSubstr("Inter-token Latency")));
  EXPECT_THAT(r.out, HasSubstr("Request goodput (req/s):"));

  // vLLM's model flags: --served-model-name is what the requests ask for; --tokenizer is not needed.
  const std::string named = TempPath("cli_named.json");
  const std::string named_dir = named.substr(0, named.rfind('/')), named_file = named.substr(named.rfind('/') + 1);
  r = RunLatdoc({"bench", "--url", sim.url(), "--model", "/models/llama-3-8b", "--served-model-name",
                 "latdoc-sim/llama-3-8b", "--tokenizer", "/models/llama-3-8b", "-n", "2", "--input-len", "8",
                 "--output-len", "4", "--save-result", "--result-filename", named_file, "--result-dir", named_dir,
                 "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "latdoc bench: note: --tokenizer is not used: latdoc counts tokens from the server's usage (or "
                   "the stream's chunks) and needs no tokenizer\n");
  EXPECT_EQ(ReadJson(named)["model_id"], "latdoc-sim/llama-3-8b");
  ::unlink(named.c_str());

  // ShareGPT through vLLM's two flags; a duration with a unit.
  const std::string sharegpt = TempPath("cli_sharegpt.json");
  {
    std::ofstream f(sharegpt);
    f << R"([{"conversations": [{"from": "human", "value": "hello there"}, {"from": "gpt", "value": "hi"}]}])";
  }
  const std::string out = TempPath("cli_sharegpt_out.json");
  r = RunLatdoc({"bench", "--url", sim.url(), "--dataset-name", "sharegpt", "--dataset-path", sharegpt,
                 "--duration", "500ms", "-c", "2", "--json", out, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json k = ReadJson(out);
  EXPECT_GT(k["completed"].get<int>(), 0);
  EXPECT_GE(k["duration"].get<double>(), 0.5);
  ::unlink(sharegpt.c_str());
  ::unlink(out.c_str());
}

// The same spelling in every subcommand: --no-color, --quiet, --show-ok, --json.
TEST(CliTest, SharedOutputFlags) {
  for (const char* cmd : {"bench", "sweep", "diagnose", "demo", "net", "logs", "doctor", "trace", "exporter"}) {
    RunResult r = RunLatdoc({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("--no-color")) << cmd;
    if (std::string(cmd) != "exporter") {
      EXPECT_THAT(r.out, HasSubstr("--quiet")) << cmd;
    }
  }
  for (const char* cmd : {"diagnose", "net", "logs", "doctor", "trace"}) {
    RunResult r = RunLatdoc({cmd, "--help"});
    EXPECT_THAT(r.out, HasSubstr("--show-ok")) << cmd;
    EXPECT_THAT(r.out, HasSubstr("--json")) << cmd;
  }
  // --quiet: the findings are still judged (the exit code), nothing is printed.
  RunResult loud = RunLatdoc({"logs", "tests/data/logs/vllm_journal.log", "--no-color"});
  RunResult quiet = RunLatdoc({"logs", "tests/data/logs/vllm_journal.log", "--quiet"});
  EXPECT_THAT(loud.out, Not(IsEmpty()));
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.exit_code, loud.exit_code);
  EXPECT_THAT(loud.out, Not(HasSubstr("\x1b[")));
}

// Colour only on a terminal that can show it: NO_COLOR, TERM=dumb and --no-color each turn it
// off (TERM=dumb was ignored). `script` gives latdoc a terminal.
TEST(CliTest, NoColorTermDumbAndTheFlag) {
  if (::access("/usr/bin/script", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/script";
  auto in_terminal = [](const std::string& env, const std::string& flags) {
    Process p({"/usr/bin/env", "-u", "NO_COLOR", env, "/usr/bin/script", "-qec",
               LatdocBinary() + " doctor --facts tests/data/host/facts/unhealthy_built.json" + flags, "/dev/null"});
    std::string out = p.ReadToEnd(60000);
    p.Wait();
    return out;
  };
  const std::string colour = in_terminal("TERM=xterm", "");
  EXPECT_THAT(colour, HasSubstr("FAIL"));
  EXPECT_THAT(colour, HasSubstr("\x1b["));
  for (const auto& [env, flags] : {std::pair<std::string, std::string>{"TERM=dumb", ""},
                                   {"NO_COLOR=1", ""},
                                   {"TERM=xterm", " --no-color"}}) {
    const std::string out = in_terminal(env, flags);
    EXPECT_THAT(out, HasSubstr("FAIL")) << env << flags;
    EXPECT_THAT(out, Not(HasSubstr("\x1b["))) << env << flags;
  }
}

}  // namespace
}  // namespace latdoc::testing
