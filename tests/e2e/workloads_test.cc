// End-to-end: the workloads of docs/workloads.md (`latdoc bench --dataset-name multi-turn`)
// against a real `latdoc sim`, whose request trace (--trace-requests: each request's prompt
// tokens, prefix-cache hit and token times) is the ground truth.
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
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
using ::testing::Not;

#ifdef LATDOC_SANITIZED
constexpr double kTolScale = 10;
#else
constexpr double kTolScale = 1;
#endif

const std::vector<std::string> kSim = {
    "--sim-step-base-ms", "4", "--sim-prefill-token-us", "40", "--sim-decode-seq-us", "50",
    "--sim-context-token-ns", "0", "--log-file", "/dev/null", "--disable-log-stats"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The trace's lines once `n` requests have been written (a line goes out when the server is
// done with the request's connection, which may be just after the client exits).
std::vector<json> ReadTrace(const std::string& path, size_t n) {
  std::vector<json> out;
  for (int i = 0; i < 1000; ++i) {
    out.clear();
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) out.push_back(json::parse(line));
    if (out.size() >= n) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return out;
}

json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? json::parse(*text) : json();
}

// Synthetic sessions: S sessions of T turns; turn t (from 0) carries the shared system prompt
// (P words), t earlier user messages (I words) and answers (O words each), and its own user
// message: P + t * (I + O) + I prompt tokens, as the simulator counts them.
constexpr int kSessions = 3, kTurns = 3, kSystem = 100, kInput = 40, kOutput = 10;
int PromptOfTurn(int t) { return kSystem + t * (kInput + kOutput) + kInput; }

std::vector<std::string> MultiTurnArgs(const std::string& url, const std::string& json_out) {
  return {"bench", "--url", url, "--endpoint", "chat", "--dataset-name", "multi-turn",
          "--num-sessions", std::to_string(kSessions), "--turns", std::to_string(kTurns),
          "--prefix-len", std::to_string(kSystem), "--input-len", std::to_string(kInput),
          "--output-len", std::to_string(kOutput), "--json", json_out};
}

// Contract: every turn resends the history (prompt tokens exactly as above, per the server);
// with the simulator's prefix cache on, turn t > 0 finds exactly the full blocks of the
// session's previous prompt cached (vLLM's block hashing: floor(P_{t-1} / 16) * 16 tokens);
// the result's per-turn figures and its prefix-cache counters match the trace; no finding.
TEST(MultiTurnE2E, TurnsResendHistoryAndHitThePrefixCache) {
  TempDir dir("latdoc-e2e-multiturn");
  const std::string trace = dir / "trace.jsonl", out = dir / "bench.json";
  SimProcess sim(With(kSim, {"--enable-prefix-caching", "--trace-requests", trace}));
  RunResult r = RunLatdoc(MultiTurnArgs(sim.url(), out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("TTFT by turn"));
  EXPECT_THAT(r.out, HasSubstr("Prefix cache (server /metrics):"));

  const auto lines = ReadTrace(trace, kSessions * kTurns);
  ASSERT_EQ(lines.size(), size_t(kSessions * kTurns));
  std::map<int, int> turn_of_prompt;
  for (int t = 0; t < kTurns; ++t) turn_of_prompt[PromptOfTurn(t)] = t;
  std::map<int, std::vector<double>> truth_ttft_ms;
  double queries = 0, hits = 0;
  for (const json& j : lines) {
    const int prompt = j["prompt_tokens"], cached = j["cached_tokens"];
    ASSERT_TRUE(turn_of_prompt.count(prompt)) << "unexpected prompt size " << prompt;
    const int t = turn_of_prompt[prompt];
    if (t > 0) {
      EXPECT_EQ(cached, PromptOfTurn(t - 1) / 16 * 16) << "turn " << t;
    }
    queries += prompt;
    hits += cached;
    const auto written = j["written_ns"].get<std::vector<int64_t>>();
    truth_ttft_ms[t].push_back(double(written.front() - j["received_ns"].get<int64_t>()) / 1e6);
  }

  const json res = ReadJson(out);
  const json& mt = res["multi_turn"];
  EXPECT_EQ(mt["sessions"], kSessions);
  EXPECT_EQ(mt["turns"], kTurns);
  ASSERT_EQ(mt["per_turn"].size(), size_t(kTurns));
  for (int t = 0; t < kTurns; ++t) {
    const json& pt = mt["per_turn"][size_t(t)];
    EXPECT_EQ(pt["turn"], t + 1);
    EXPECT_EQ(pt["completed"], kSessions);
    EXPECT_DOUBLE_EQ(pt["mean_prompt_tokens"].get<double>(), PromptOfTurn(t));
    // What was resent: the previous prompt (turn 0: the shared system prompt, sent before by
    // every session but the first).
    const double resent = t == 0 ? double(kSystem) * (kSessions - 1) / kSessions : PromptOfTurn(t - 1);
    EXPECT_DOUBLE_EQ(pt["mean_resent_tokens"].get<double>(), resent);
    double truth = 0;
    for (double v : truth_ttft_ms[t]) truth += v / double(truth_ttft_ms[t].size());
    // The client's TTFT counts from its dispatch, the truth from the server's receipt: the
    // client's is later by its send and the connection, never earlier.
    EXPECT_GE(pt["mean_ttft_ms"].get<double>(), truth - 0.5 * kTolScale) << "turn " << t + 1;
    EXPECT_LE(pt["mean_ttft_ms"].get<double>(), truth + 5 * kTolScale) << "turn " << t + 1;
  }
  EXPECT_DOUBLE_EQ(mt["prefix_cache"]["queries_tokens"].get<double>(), queries);
  EXPECT_DOUBLE_EQ(mt["prefix_cache"]["hits_tokens"].get<double>(), hits);
  EXPECT_GT(hits, 0);
  EXPECT_TRUE(res["findings"].empty()) << res["findings"].dump();
  EXPECT_EQ(res["completed"], kSessions * kTurns);
}

// Contract: the diagnosis names prefix-cache misses (load.prefix_cache_misses, warn, with the
// flags to try) when the server's prefix cache is off, and not when it is on; a warning alone
// does not fail the run (exit 0).
TEST(MultiTurnE2E, DiagnosisNamesPrefixCacheMissesOnlyWhenTheCacheIsOff) {
  for (const bool cache : {false, true}) {
    SCOPED_TRACE(cache ? "cache on" : "cache off");
    TempDir dir("latdoc-e2e-multiturn-diag");
    const std::string out = dir / "bench.json";
    SimProcess sim(With(kSim, {cache ? "--enable-prefix-caching" : "--no-enable-prefix-caching"}));
    RunResult r = RunLatdoc(MultiTurnArgs(sim.url(), out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = ReadJson(out);
    bool named = false;
    for (const json& f : res["findings"])
      if (f["id"] == "load.prefix_cache_misses") named = true;
    EXPECT_EQ(named, !cache) << res["findings"].dump();
    if (cache) {
      EXPECT_THAT(r.out, Not(HasSubstr("prefix_cache_misses")));
      EXPECT_GT(res["multi_turn"]["prefix_cache"]["hit_rate"].get<double>(), 0.3);
    } else {
      EXPECT_THAT(r.out, HasSubstr("warn: load.prefix_cache_misses: Prefix-cache misses: the "
                                   "sessions resent"));
      EXPECT_THAT(r.out, HasSubstr("--enable-prefix-caching"));
      EXPECT_THAT(r.out, HasSubstr("--gpu-memory-utilization"));
      EXPECT_THAT(r.out, HasSubstr("session affinity"));
      EXPECT_THAT(r.out, HasSubstr("--max-num-batched-tokens"));
      EXPECT_EQ(res["multi_turn"]["prefix_cache"]["hit_rate"].get<double>(), 0.0);
    }
  }
}

// Contract: a session file's conversations are sent turn by turn with their history (the
// server counts system + earlier prompts + stand-in answers of output_len words + the new
// prompt); a bad line is skipped and named; the turns of shorter sessions end early.
TEST(MultiTurnE2E, SessionFileTurnsAndBadLines) {
  TempDir dir("latdoc-e2e-sessions");
  const std::string file = dir / "sessions.jsonl", trace = dir / "trace.jsonl", out = dir / "b.json";
  {
    std::ofstream f(file);
    f << R"({"session_id":"a","system":"you are terse","turns":[{"prompt":"one two three","output_len":4},{"prompt":"four five","output_len":2}]})"
      << "\n"
      << "not json\n"
      << R"({"session_id":"b","turns":[{"prompt":"six seven eight nine","max_tokens":3}]})" << "\n";
  }
  SimProcess sim(With(kSim, {"--trace-requests", trace}));
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--endpoint", "chat", "--dataset-name",
                           "multi-turn", "--dataset-path", file, "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("latdoc bench: skipped " + file + ":2: not a JSON object"));
  const auto lines = ReadTrace(trace, 3);
  std::multiset<int> prompts;
  for (const json& j : lines) prompts.insert(j["prompt_tokens"].get<int>());
  // a1: 3 + 3 = 6; b1: 4; a2: 3 + 3 + 4 (answer) + 2 = 12.
  EXPECT_EQ(prompts, (std::multiset<int>{4, 6, 12}));
  const json res = ReadJson(out);
  ASSERT_EQ(res["multi_turn"]["per_turn"].size(), 2u);
  EXPECT_EQ(res["multi_turn"]["per_turn"][0]["requests"], 2);
  EXPECT_DOUBLE_EQ(res["multi_turn"]["per_turn"][0]["mean_prompt_tokens"].get<double>(), 5.0);
  EXPECT_EQ(res["multi_turn"]["per_turn"][1]["requests"], 1);
  EXPECT_DOUBLE_EQ(res["multi_turn"]["per_turn"][1]["mean_prompt_tokens"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(res["multi_turn"]["per_turn"][1]["mean_resent_tokens"].get<double>(), 6.0);
}

// Contract: bad usage exits 2 with a message naming the flag, before any load is sent.
TEST(MultiTurnE2E, BadUsage) {
  RunResult a = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--turns", "3"});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_THAT(a.err, HasSubstr("--num-sessions, --turns and --think-time go with --dataset-name multi-turn"));
  RunResult b = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--dataset-name", "multi-turn",
                           "--request-rate", "5"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_THAT(b.err, HasSubstr("--request-rate is not used with --dataset-name multi-turn"));
  TempDir dir("latdoc-e2e-sessions-bad");
  {
    std::ofstream f(dir / "s.jsonl");
    f << R"({"turns":[]})" << "\n";
  }
  RunResult c = RunLatdoc({"bench", "--url", "http://127.0.0.1:1", "--dataset-name", "multi-turn",
                           "--dataset-path", dir / "s.jsonl"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_THAT(c.err, HasSubstr(dir / "s.jsonl" + ": no usable session (1 bad lines; first: " +
                               dir / "s.jsonl" + ":1: no \"turns\" list)"));
}

// The time from the server's receipt of each request to the write of the chunk that carried
// its generated token number `k` (from 0), from the simulator's trace.
std::vector<double> TruthTokenMs(const std::vector<json>& lines, int k) {
  std::vector<double> out;
  for (const json& j : lines) {
    const auto written = j["written_ns"].get<std::vector<int64_t>>();
    const auto counts = j["token_counts"].get<std::vector<int>>();
    int cum = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cum += counts[i];
      if (cum > k) {
        out.push_back(double(written[i] - j["received_ns"].get<int64_t>()) / 1e6);
        break;
      }
    }
  }
  return out;
}

double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x / double(v.size());
  return v.empty() ? 0 : s;
}

// Contract: a reasoning model's stream (the simulator's first 6 tokens as reasoning_content)
// is counted apart: reasoning and answer tokens exactly, the time to the first reasoning token
// equal to TTFT (the first token of any kind), the time to the first answer token matching the
// server's write of token 7.
// Both ways a server streams reasoning: reasoning_content deltas (a reasoning parser), or
// a <think> span in the content (none).
TEST(ReasoningE2E, FirstReasoningAndFirstAnswerTokensTimedApart) {
  for (const bool tags : {false, true}) {
  SCOPED_TRACE(tags ? "<think> tags" : "reasoning_content");
  TempDir dir("latdoc-e2e-reasoning");
  const std::string trace = dir / "trace.jsonl", out = dir / "bench.json";
  SimProcess sim(With(kSim, tags ? std::vector<std::string>{"--sim-reasoning-tokens", "6", "--sim-think-tags", "--trace-requests", trace}
                                 : std::vector<std::string>{"--sim-reasoning-tokens", "6", "--trace-requests", trace}));
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--endpoint", "chat", "--input-len", "20",
                           "--output-len", "10", "-n", "4", "-c", "2", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Mean time to first answer token (ms):"));
  const json res = ReadJson(out);
  const json& rs = res["reasoning"];
  EXPECT_EQ(rs["requests"], 4);
  EXPECT_EQ(rs["reasoning_tokens"], 24);
  EXPECT_EQ(rs["answer_tokens"], 16);
  EXPECT_EQ(rs["requests_without_answer"], 0);
  EXPECT_NEAR(rs["mean_ttfr_ms"].get<double>(), res["mean_ttft_ms"].get<double>(), 1e-6);
  const auto lines = ReadTrace(trace, 4);
  ASSERT_EQ(lines.size(), 4u);
  const double truth = MeanOf(TruthTokenMs(lines, 6));
  EXPECT_GE(rs["mean_ttfo_ms"].get<double>(), truth - 0.5 * kTolScale);
  EXPECT_LE(rs["mean_ttfo_ms"].get<double>(), truth + 5 * kTolScale);
  EXPECT_GT(rs["mean_ttfo_ms"].get<double>(), res["mean_ttft_ms"].get<double>());
  EXPECT_FALSE(res.contains("tool_calls"));
  }
}

// Contract: a TTFT SLO is judged on the first visible answer token: the same bound is met by a
// plain model and missed (exit 1, "SLO missed") by a reasoning model whose answer comes 10
// decode steps of 30 ms after its first reasoning token.
TEST(ReasoningE2E, TtftSloJudgedOnTheVisibleAnswer) {
  for (const bool reasoning : {false, true}) {
    SCOPED_TRACE(reasoning ? "reasoning" : "plain");
    SimProcess sim({"--sim-step-base-ms", "30", "--sim-prefill-token-us", "10", "--log-file",
                    "/dev/null", "--disable-log-stats", "--sim-reasoning-tokens", reasoning ? "10" : "0"});
    RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--endpoint", "chat", "--input-len", "10",
                             "--output-len", "12", "-n", "3", "-c", "1", "--slo", "ttft:150"});
    EXPECT_EQ(r.exit_code, reasoning ? 1 : 0) << r.err;
    if (reasoning) {
      EXPECT_THAT(r.err, HasSubstr("SLO missed"));
    }
  }
}

// Contract: with --tools, the simulator answers with a tool call; the client counts its deltas
// (one per token here) and times the first, which is the first token (TTFT).
TEST(ToolCallsE2E, ToolCallDeltasCountedAndTimed) {
  TempDir dir("latdoc-e2e-tools");
  const std::string tools = dir / "tools.json", out = dir / "bench.json";
  {
    std::ofstream f(tools);
    f << R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}])";
  }
  SimProcess sim(kSim);
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--endpoint", "chat", "--tools", tools,
                           "--input-len", "10", "--output-len", "8", "-n", "3", "-c", "1", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Tool-call deltas:"));
  const json res = ReadJson(out);
  EXPECT_EQ(res["tool_calls"]["requests"], 3);
  EXPECT_EQ(res["tool_calls"]["deltas"], 24);
  EXPECT_NEAR(res["tool_calls"]["mean_time_to_first_tool_call_ms"].get<double>(),
              res["mean_ttft_ms"].get<double>(), 1e-6);
  EXPECT_EQ(res["total_output_tokens"], 24);
  EXPECT_FALSE(res.contains("reasoning"));

  RunResult bad = RunLatdoc({"bench", "--url", sim.url(), "--tools", tools});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--tools goes with --endpoint chat"));
}

// Contract: a replayed trace is sent on its own times scaled by --replay-speed (the server
// receives request k at trace time / speed after the first, within timer slack), with its
// prompt and output lengths exactly; two requests of one session share their leading tokens
// (the second hits the prefix cache on the first's full blocks), other requests share none.
TEST(ReplayE2E, TraceTimesScaledAndLengthsExact) {
  TempDir dir("latdoc-e2e-replay");
  const std::string file = dir / "trace.jsonl", trace = dir / "sim.jsonl", out = dir / "b.json";
  {
    std::ofstream f(file);
    // Out of order on purpose: sent in time order.
    f << R"({"timestamp": 1400, "input_length": 50, "output_length": 3, "session_id": "u1"})" << "\n"
      << R"({"timestamp": 1000, "input_length": 40, "output_length": 5, "session_id": "u1"})" << "\n"
      << R"({"timestamp": 1200, "input_length": 33, "output_length": 4})" << "\n"
      << R"({"timestamp": "soon", "input_length": 3})" << "\n"
      << R"({"arrival_time_s": 1.8, "prompt": "one two three four five six seven", "max_tokens": 2})" << "\n";
  }
  SimProcess sim(With(kSim, {"--enable-prefix-caching", "--trace-requests", trace}));
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--dataset-name", "replay", "--dataset-path",
                           file, "--replay-speed", "2", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("skipped " + file + ":4: no \"timestamp\" (ms) or \"arrival_time_s\""));
  const auto lines = ReadTrace(trace, 4);
  ASSERT_EQ(lines.size(), 4u);
  // prompt tokens -> (offset from the first at 2x in ms, completion tokens)
  const std::map<int, std::pair<double, int>> want = {
      {40, {0, 5}}, {33, {100, 4}}, {50, {200, 3}}, {7, {400, 2}}};
  int64_t first_ns = INT64_MAX;
  for (const json& j : lines) first_ns = std::min(first_ns, j["received_ns"].get<int64_t>());
  for (const json& j : lines) {
    const int prompt = j["prompt_tokens"];
    ASSERT_TRUE(want.count(prompt)) << prompt;
    const auto [offset_ms, completion] = want.at(prompt);
    EXPECT_EQ(j["completion_tokens"], completion) << prompt;
    const double at_ms = double(j["received_ns"].get<int64_t>() - first_ns) / 1e6;
    // Timer slack on a loaded machine; at 1x the offsets would be 100 ms or more further off.
    EXPECT_NEAR(at_ms, offset_ms, 30 * kTolScale) << prompt;
    // u1's second request (50 tokens) starts with its first (40): 2 full blocks cached.
    EXPECT_EQ(j["cached_tokens"], prompt == 50 ? 32 : 0) << prompt;
  }
  const json res = ReadJson(out);
  EXPECT_EQ(res["replay"]["requests"], 4);
  EXPECT_DOUBLE_EQ(res["replay"]["speed"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(res["replay"]["span_s"].get<double>(), 0.4);
  EXPECT_EQ(res["completed"], 4);

  RunResult bad = RunLatdoc({"bench", "--url", sim.url(), "--dataset-name", "replay"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--dataset-name replay reads --dataset-path FILE"));
  RunResult speed = RunLatdoc({"bench", "--url", sim.url(), "--replay-speed", "2"});
  EXPECT_EQ(speed.exit_code, 2);
  EXPECT_THAT(speed.err, HasSubstr("--replay-speed goes with --dataset-name replay"));
}

// Contract: with speculative decoding (3 drafts a step, each accepted with p = 0.6 until the
// first rejection), the stream's tokens per decode chunk equal the simulator's (its trace), the
// /metrics accepted tokens equal the stream's extra tokens (each decode step yields 1 +
// accepted), and every request still gets exactly its tokens.
TEST(SpecDecodeE2E, TokensPerChunkAndAcceptanceMatchTheServer) {
  TempDir dir("latdoc-e2e-spec");
  const std::string trace = dir / "trace.jsonl", out = dir / "bench.json";
  SimProcess sim(With(kSim, {"--sim-spec-tokens", "3", "--sim-spec-accept", "0.6", "--trace-requests", trace}));
  RunResult r = RunLatdoc({"bench", "--url", sim.url(), "--input-len", "16", "--output-len", "40",
                           "-n", "6", "-c", "3", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Mean acceptance length (/metrics):"));
  const auto lines = ReadTrace(trace, 6);
  ASSERT_EQ(lines.size(), 6u);
  double chunks = 0, tokens = 0;
  for (const json& j : lines) {
    const auto counts = j["token_counts"].get<std::vector<int>>();
    EXPECT_EQ(j["completion_tokens"], 40);
    for (size_t i = 1; i < counts.size(); ++i) {
      chunks += 1;
      tokens += counts[i];
    }
  }
  const json res = ReadJson(out);
  const json& sd = res["spec_decode"];
  EXPECT_EQ(sd["stream_decode_chunks"].get<double>(), chunks);
  EXPECT_DOUBLE_EQ(sd["stream_tokens_per_chunk"].get<double>(), tokens / chunks);
  EXPECT_GT(tokens / chunks, 1.0);
  EXPECT_DOUBLE_EQ(sd["metrics_accepted_tokens"].get<double>(), tokens - chunks);
  const double drafts = sd["metrics_drafts"].get<double>();
  EXPECT_GT(drafts, 0);
  EXPECT_LE(drafts, chunks);
  EXPECT_DOUBLE_EQ(sd["metrics_mean_acceptance_length"].get<double>(), 1 + (tokens - chunks) / drafts);
  EXPECT_EQ(res["total_output_tokens"], 240);
}

// Contract: `latdoc diagnose --sessions N` runs multi-turn sessions after the load layer and
// ranks load.prefix_cache_misses among its findings when the server's prefix cache is off, and
// not when it is on; the document carries the sessions' "multi_turn" block.
TEST(MultiTurnE2E, DiagnoseSessionsNamePrefixCacheMissesOnlyWhenTheCacheIsOff) {
  for (const bool cache : {false, true}) {
    SCOPED_TRACE(cache ? "cache on" : "cache off");
    TempDir dir("latdoc-e2e-diagnose-sessions");
    SimProcess sim(With(kSim, {cache ? "--enable-prefix-caching" : "--no-enable-prefix-caching"}));
    RunResult r = RunLatdoc({"diagnose", "--url", sim.url(), "--concurrency", "2", "--requests", "6",
                             "--baseline-requests", "2", "--net-samples", "0", "--input-len", "40",
                             "--output-len", "10", "--prefix-len", "100", "--sessions", "3",
                             "--turns", "3", "--json", dir / "d.json", "--quiet"});
    ASSERT_NE(r.exit_code, 2) << r.err;
    ASSERT_NE(r.exit_code, 3) << r.err;
    const json d = ReadJson(dir / "d.json");
    ASSERT_TRUE(d.contains("multi_turn")) << d["layers"].dump();
    EXPECT_EQ(d["multi_turn"]["per_turn"].size(), 3u);
    bool named = false;
    for (const json& f : d["findings"])
      if (f["id"] == "load.prefix_cache_misses") named = true;
    EXPECT_EQ(named, !cache);
    EXPECT_THAT(d["layers"]["load"].get<std::string>(), HasSubstr("; 3 sessions of 3 turns"));
  }
}

}  // namespace
}  // namespace latdoc::testing
