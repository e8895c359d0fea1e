// End-to-end: `latdoc bench`, `sweep` and `diagnose` against a real llama.cpp `llama-server`
// (scripts/build-llama-server.sh; CPU, one thread) serving a tiny random-weight model
// (scripts/make-tiny-gguf.py). The server's own counters on /metrics are the ground truth:
// every token latdoc reports must be one the server counted, the TTFT split must be what
// llama.cpp's counters allow, and the advice must be in llama.cpp's flags.
//
// The workload's model has an ASCII-only vocabulary, so no output can stop inside a UTF-8
// character; the "bytes" model of the last test has lone high bytes and checks that such
// output costs neither a failure nor a token.
//
// When the server binary, llama.cpp's gguf-py or numpy is missing, every test skips and says
// which (tests/e2e/llama_server.h).
#include <cmath>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/llama_server.h"
#include "tests/e2e/process.h"

namespace latdoc::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// The counters that the checks compare with latdoc's figures.
struct Counters {
  double prompt_tokens = 0, cached_prompt_tokens = 0, predicted_tokens = 0;
  double prompt_seconds = 0, predicted_seconds = 0;
};

Counters Read(const LlamaServerProcess& s) {
  return {s.Metric("llamacpp:prompt_tokens_total"), s.Metric("llamacpp:prompt_tokens_cached_total"),
          s.Metric("llamacpp:tokens_predicted_total"), s.Metric("llamacpp:prompt_seconds_total"),
          s.Metric("llamacpp:tokens_predicted_seconds_total")};
}

class LlamaCppTest : public ::testing::Test {
 protected:
  void StartServer(const std::string& vocab = "ascii") {
    const std::string why = LlamaServerSkipReason();
    if (!why.empty()) GTEST_SKIP() << "llama.cpp server not available: " << why;
    dir_ = std::make_unique<TempDir>("llamacpp_" + vocab);
    const std::string model = *dir_ / ("tiny-" + vocab + ".gguf");
    const std::string err = MakeTinyGguf(model, vocab);
    ASSERT_EQ(err, "") << "scripts/make-tiny-gguf.py failed";
    LlamaServerProcess::Options o;
    o.model_path = model;
    o.parallel = 4;
    o.ctx_tokens = 2048;
    server_ = std::make_unique<LlamaServerProcess>(o, *dir_ / "server.log");
    ASSERT_TRUE(server_->WaitReady()) << "llama-server did not answer /health; its log:\n"
                                      << ReadFileOrEmpty(*dir_ / "server.log");
    // /metrics answers (the test reads the counters from it).
    ASSERT_GE(server_->Metric("llamacpp:tokens_predicted_total"), 0);
  }

  json ReadJson(const std::string& file) {
    json j = json::parse(ReadFileOrEmpty(*dir_ / file), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << file;
    return j;
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<LlamaServerProcess> server_;
};

// Every advice text in `j` (recursively: recommendations' reasons, findings' advice) is free of
// vLLM's batch flags.
void ExpectNoVllmFlags(const std::string& text) {
  EXPECT_THAT(text, Not(HasSubstr("--max-num-seqs")));
  EXPECT_THAT(text, Not(HasSubstr("--max-num-batched-tokens")));
  EXPECT_THAT(text, Not(HasSubstr("--gpu-memory-utilization")));
}

TEST_F(LlamaCppTest, BenchCountsExactlyTheServersTokensAndSplitsTtftByItsCounters) {
  StartServer();
  if (IsSkipped()) return;
  const Counters before = Read(*server_);
  RunResult r = RunLatdoc({"bench", "--url", server_->url(), "-n", "24", "--max-concurrency", "4",
                           "--input-len", "16", "--output-len", "12", "--json", *dir_ / "b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Counters after = Read(*server_);
  json j = ReadJson("b.json");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["completed"], 24);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["warmup_requests"], 0);
  // Exact token counts: every generated token (24 x 12), and every prompt token, which
  // llama.cpp counts as processed or reused from a slot's cache.
  EXPECT_EQ(j["total_output_tokens"].get<double>(), after.predicted_tokens - before.predicted_tokens);
  EXPECT_EQ(j["total_output_tokens"], 24 * 12);
  EXPECT_EQ(j["total_input_tokens"].get<double>(),
            (after.prompt_tokens - before.prompt_tokens) +
                (after.cached_prompt_tokens - before.cached_prompt_tokens));
  EXPECT_EQ(j["token_count_mismatches"], 0);

  EXPECT_EQ(j["server_kind"]["id"], "llamacpp");
  EXPECT_EQ(j["server_kind"]["name"], "llama.cpp");
  EXPECT_EQ(j["server_kind"]["evidence"], "/metrics names (llamacpp:)");
  EXPECT_THAT(r.out, HasSubstr("(its /metrics in llama.cpp's names)"));

  // TTFT split: prefill from the summed prompt time over the 24 requests; no queue, no server
  // TTFT; the rest is the client's TTFT less the measured parts.
  const json& srv = j["server_metrics"];
  EXPECT_EQ(srv["server_kind"], "llamacpp");
  const json& b = srv["ttft_breakdown"];
  ASSERT_TRUE(b.is_object()) << srv.dump(1);
  const double prefill_ms = (after.prompt_seconds - before.prompt_seconds) / 24 * 1e3;
  EXPECT_NEAR(b["prefill_ms"].get<double>(), prefill_ms, 1e-9 + 1e-6 * prefill_ms);
  EXPECT_NEAR(srv["prefill_mean_ms"].get<double>(), prefill_ms, 1e-9 + 1e-6 * prefill_ms);
  EXPECT_TRUE(b["queue_ms"].is_null());
  EXPECT_TRUE(b["server_ttft_ms"].is_null());
  EXPECT_NEAR(b["unsplit_ms"].get<double>(),
              b["client_ttft_ms"].get<double>() - b["client_queue_ms"].get<double>() - prefill_ms, 1e-6);
  EXPECT_NEAR(b["client_ttft_ms"].get<double>(), j["mean_ttft_ms"].get<double>(), 1e-6);
  EXPECT_EQ(b["not_measurable"],
            "queue time and server TTFT are not measurable on llama.cpp (it exposes no "
            "per-request times, only a gauge of deferred requests and the summed prompt time)");
  // The server's ITL: its summed generation time per generated token.
  const double itl_ms = (after.predicted_seconds - before.predicted_seconds) /
                        (after.predicted_tokens - before.predicted_tokens) * 1e3;
  EXPECT_NEAR(srv["itl_mean_ms"].get<double>(), itl_ms, 1e-6 * itl_ms);
  EXPECT_THAT(r.out, HasSubstr("TTFT breakdown (mean, llama.cpp): client "));
  EXPECT_THAT(r.out, HasSubstr("(server queue, network, front end and the first decode step: not split)"));
}

TEST_F(LlamaCppTest, SweepAdvisesInLlamaCppFlags) {
  StartServer();
  if (IsSkipped()) return;
  const Counters before = Read(*server_);
  RunResult r = RunLatdoc({"sweep", "--url", server_->url(), "--concurrency", "1:8", "--input-len",
                           "16", "--output-len", "12", "--json", *dir_ / "s.json"},
                          300000);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Counters after = Read(*server_);
  json j = ReadJson("s.json");
  ASSERT_TRUE(j.is_object());
  const json& recs = j["recommendations"];
  for (const char* key : {"parallel", "ctx_size", "batch_size", "ubatch_size"})
    EXPECT_TRUE(recs.contains(key)) << key << " in " << recs.dump(1);
  EXPECT_FALSE(recs.contains("max_num_seqs"));
  EXPECT_FALSE(recs.contains("max_num_batched_tokens"));
  EXPECT_EQ(recs["parallel"]["flag"], "--parallel");
  for (const auto& [k, v] : recs.items())
    if (v.contains("reason")) ExpectNoVllmFlags(v["reason"].get<std::string>());
  ExpectNoVllmFlags(r.out);
  EXPECT_THAT(r.out, HasSubstr("  --parallel "));
  EXPECT_THAT(r.out, HasSubstr("(its /metrics in llama.cpp's names)"));
  // --ctx-size holds every slot's prompt and output: slots x (16 + 12), in 256s.
  if (recs["parallel"]["value"].is_number()) {
    const int64_t slots = recs["parallel"]["value"].get<int64_t>();
    EXPECT_EQ(recs["ctx_size"]["value"].get<int64_t>(), (slots * 28 + 255) / 256 * 256);
  }
  // Every generated token of every step is one the server counted.
  int64_t tokens = 0;
  for (const json& s : j["steps"]) {
    ASSERT_TRUE(s.contains("completed")) << s.dump();
    tokens += s["completed"].get<int64_t>() * 12;
    // llama.cpp's summed counters give each step its engine step time and prefill.
    EXPECT_GT(s["server_metrics"]["step_time_ms"].get<double>(), 0) << s.dump();
    EXPECT_GT(s["server_metrics"]["prefill_mean_ms"].get<double>(), 0) << s.dump();
  }
  EXPECT_GT(tokens, 0);
  EXPECT_EQ(double(j["requests_spent"].get<int64_t>()) * 12, after.predicted_tokens - before.predicted_tokens)
      << "every request the sweep spent generated its 12 tokens, and no other";
}

TEST_F(LlamaCppTest, DiagnoseSplitsTtftAndAdvisesInLlamaCppFlags) {
  StartServer();
  if (IsSkipped()) return;
  const Counters before = Read(*server_);
  RunResult r = RunLatdoc({"diagnose", "--url", server_->url(), "--concurrency", "4", "--requests",
                           "24", "--baseline-requests", "4", "--input-len", "16", "--output-len",
                           "12", "--net-samples", "0", "--show-ok", "--no-color", "--json",
                           *dir_ / "d.json"},
                          300000);
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.exit_code << r.out << r.err;
  const Counters after = Read(*server_);
  json d = ReadJson("d.json");
  ASSERT_TRUE(d.is_object());
  // The baseline's and the load's tokens are all the server generated.
  EXPECT_EQ(d["baseline"]["total_output_tokens"].get<double>() + d["bench"]["total_output_tokens"].get<double>(),
            after.predicted_tokens - before.predicted_tokens);
  EXPECT_EQ(d["bench"]["total_output_tokens"], 24 * 12);
  EXPECT_EQ(d["bench"]["server_kind"]["id"], "llamacpp");
  const json& w = d["ttft_waterfall"];
  ASSERT_TRUE(w.is_object()) << d.dump(1).substr(0, 2000);
  EXPECT_TRUE(w.contains("unsplit_ms"));
  EXPECT_TRUE(w["prefill_ms"].is_number());
  EXPECT_EQ(d["layers"]["network"],
            "not measurable: llama.cpp gives no server TTFT to subtract from the client's; probe off");
  EXPECT_THAT(r.out, HasSubstr("Where TTFT goes (mean "));
  EXPECT_THAT(r.out, HasSubstr("(inferred, not split)"));
  EXPECT_THAT(r.out, HasSubstr("queue time and server TTFT are not measurable on llama.cpp"));
  EXPECT_THAT(r.out, HasSubstr("not checked: queue time is not measurable on llama.cpp"));
  ExpectNoVllmFlags(r.out);
  for (const json& f : d["findings"]) {
    if (f.contains("advice") && f["advice"].is_string()) ExpectNoVllmFlags(f["advice"].get<std::string>());
  }
}

// Lone UTF-8 lead and continuation bytes at any point, max_tokens included: this llama.cpp
// holds back an incomplete character and sends U+FFFD for invalid bytes (no error event), so
// every request succeeds, and the usage it reports still counts every token the server did.
TEST_F(LlamaCppTest, ByteTokensCostNoFailureAndNoToken) {
  StartServer("bytes");
  if (IsSkipped()) return;
  const Counters before = Read(*server_);
  RunResult r = RunLatdoc({"bench", "--url", server_->url(), "-n", "24", "--max-concurrency", "4",
                           "--input-len", "16", "--output-len", "15", "--json", *dir_ / "b.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Counters after = Read(*server_);
  json j = ReadJson("b.json");
  EXPECT_EQ(j["completed"], 24);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_output_tokens"], 24 * 15);
  EXPECT_EQ(j["total_output_tokens"].get<double>(), after.predicted_tokens - before.predicted_tokens);
}

}  // namespace
}  // namespace latdoc::testing
