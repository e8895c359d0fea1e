#include "servermetrics/server_dialect.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::servermetrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The counters of a real llama-server (the release node-llama-cpp 3.22.1 bundles, serving the
// tiny model of scripts/make-tiny-gguf.py) after 40 requests, abridged to the counters used.
constexpr char kLlamaCppPage[] =
    "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed, excluding cached tokens\n"
    "# TYPE llamacpp:prompt_tokens_total counter\n"
    "llamacpp:prompt_tokens_total 6757\n"
    "# TYPE llamacpp:prompt_tokens_cached_total counter\n"
    "llamacpp:prompt_tokens_cached_total 84\n"
    "# TYPE llamacpp:prompt_seconds_total counter\n"
    "llamacpp:prompt_seconds_total 0.075532\n"
    "# TYPE llamacpp:tokens_predicted_total counter\n"
    "llamacpp:tokens_predicted_total 640\n"
    "# TYPE llamacpp:tokens_predicted_seconds_total counter\n"
    "llamacpp:tokens_predicted_seconds_total 0.317876\n"
    "# TYPE llamacpp:n_decode_total counter\n"
    "llamacpp:n_decode_total 169\n"
    "# TYPE llamacpp:requests_processing gauge\n"
    "llamacpp:requests_processing 0\n"
    "# TYPE llamacpp:requests_deferred gauge\n"
    "llamacpp:requests_deferred 0\n";

TEST(ServerDialectTest, KindIdsRoundTrip) {
  for (ServerKind k : {ServerKind::kVllm, ServerKind::kLlamaCpp, ServerKind::kSglang, ServerKind::kTgi})
    EXPECT_EQ(ServerKindFromId(ServerKindId(k)), k);
  EXPECT_EQ(ServerKindFromId(""), ServerKind::kUnknown);
  EXPECT_EQ(ServerKindFromId("ollama"), ServerKind::kUnknown);
  EXPECT_EQ(ServerKindLabel(ServerKind::kLlamaCpp), "llama.cpp");
  EXPECT_EQ(ServerKindLabel(ServerKind::kSglang), "SGLang");
  EXPECT_EQ(ServerKindLabel(ServerKind::kUnknown), "unknown");
}

TEST(ServerDialectTest, SnapshotCarriesTheKindItsMetricNamesSay) {
  EXPECT_EQ(SnapshotFromText(kLlamaCppPage).kind, ServerKind::kLlamaCpp);
  EXPECT_EQ(SnapshotFromText("vllm:num_requests_running{model_name=\"m\"} 1\n").kind, ServerKind::kVllm);
  EXPECT_EQ(SnapshotFromText("sglang:num_running_reqs{model_name=\"m\"} 1\n").kind, ServerKind::kSglang);
  EXPECT_EQ(SnapshotFromText("tgi_queue_size 3\n").kind, ServerKind::kTgi);
  EXPECT_EQ(SnapshotFromText("process_cpu_seconds_total 3\n").kind, ServerKind::kUnknown);
}

TEST(ServerDialectTest, LlamaCppCachedPromptTokensAreTheirOwnCounter) {
  // prompt_tokens_total leaves out the tokens a slot reused: the two add up to the prompts'.
  ServerSnapshot s = SnapshotFromText(kLlamaCppPage);
  ASSERT_TRUE(s.prompt_tokens_total && s.prefix_cache_hits_total);
  EXPECT_EQ(*s.prompt_tokens_total + *s.prefix_cache_hits_total, 6841);
  EXPECT_EQ(s.generation_tokens_total, 640);
}

TEST(ServerDialectTest, IdentifyPrefersMetricsThenOwnedByThenHeaderThenCommandLine) {
  ServerIdentity a = IdentifyServer(ServerKind::kVllm, "llamacpp", "llama.cpp", "llama-server -m x");
  EXPECT_EQ(a.kind, ServerKind::kVllm);
  EXPECT_EQ(a.evidence, "/metrics names (vllm:)");
  ServerIdentity b = IdentifyServer(ServerKind::kUnknown, "llamacpp", "uvicorn");
  EXPECT_EQ(b.kind, ServerKind::kLlamaCpp);
  EXPECT_EQ(b.evidence, "/v1/models owned_by \"llamacpp\"");
  ServerIdentity c = IdentifyServer(ServerKind::kUnknown, "meta-llama/Llama-3.1-8B", "llama.cpp");
  EXPECT_EQ(c.kind, ServerKind::kLlamaCpp);
  EXPECT_EQ(c.evidence, "Server header \"llama.cpp\"");
  // /proc/PID/cmdline: the arguments separated by NULs.
  constexpr char kCmdline[] = "python3\0-m\0sglang.launch_server\0--port\0" "30000";
  ServerIdentity d = IdentifyServer(ServerKind::kUnknown, "", "uvicorn",
                                    std::string_view(kCmdline, sizeof kCmdline - 1));
  EXPECT_EQ(d.kind, ServerKind::kSglang);
  EXPECT_EQ(d.evidence, "command line");
  EXPECT_EQ(IdentifyServer(ServerKind::kTgi).evidence, "/metrics names (tgi_)");
  EXPECT_EQ(IdentifyServer(ServerKind::kUnknown, "", "uvicorn", "python3 app.py").kind, ServerKind::kUnknown);
  EXPECT_EQ(ServerKindFromCommandLine("text-generation-launcher --model-id m"), ServerKind::kTgi);
  EXPECT_EQ(ServerKindFromCommandLine("/usr/bin/vllm serve m --max-num-seqs 8"), ServerKind::kVllm);
  EXPECT_EQ(ServerKindFromOwnedBy("SGLang"), ServerKind::kSglang);
}

TEST(ServerDialectTest, AdviceSpeaksEachServersFlags) {
  const std::string advice =
      "Raise `--max-num-seqs` (and `--max-num-batched-tokens`), or give the cache more room "
      "(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`).";
  EXPECT_EQ(InServerFlags(ServerKind::kVllm, advice), advice);
  EXPECT_EQ(InServerFlags(ServerKind::kUnknown, advice), advice);
  const std::string llama = InServerFlags(ServerKind::kLlamaCpp, advice);
  EXPECT_EQ(llama,
            "Raise `--parallel` (`-np`) (and `--batch-size` (`-b`) and `--ubatch-size` (`-ub`)), or "
            "give the cache more room (a larger `--ctx-size` (`-c`), which the `--parallel` slots "
            "share, or a quantised cache: `--cache-type-k q8_0 --cache-type-v q8_0`).");
  const std::string sglang = InServerFlags(ServerKind::kSglang, advice);
  EXPECT_THAT(sglang, HasSubstr("`--max-running-requests`"));
  EXPECT_THAT(sglang, HasSubstr("`--chunked-prefill-size`"));
  EXPECT_THAT(sglang, HasSubstr("`--mem-fraction-static 0.9`"));
  const std::string tgi = InServerFlags(ServerKind::kTgi, advice);
  EXPECT_THAT(tgi, HasSubstr("`--max-batch-total-tokens`"));
  EXPECT_THAT(tgi, HasSubstr("`--max-batch-prefill-tokens`"));
  EXPECT_THAT(tgi, HasSubstr("`--cuda-memory-fraction`"));
  for (const std::string& t : {llama, sglang, tgi}) {
    EXPECT_THAT(t, Not(HasSubstr("max-num"))) << t;
    EXPECT_THAT(t, Not(HasSubstr("gpu-memory-utilization"))) << t;
  }
  // Plain flag names (the sweep's recommendations) too.
  EXPECT_EQ(InServerFlags(ServerKind::kLlamaCpp, "depends on --max-num-seqs"), "depends on --parallel");
}

HistogramDelta Hist(double count, double sum) {
  HistogramDelta h;
  h.count = count;
  h.sum = sum;
  return h;
}

TEST(ServerDialectTest, TtftPartsPerServer) {
  SnapshotDelta d;
  d.ttft_s = Hist(10, 1.0);
  d.queue_s = Hist(10, 0.2);
  d.prefill_s = Hist(10, 0.5);
  d.prompt_seconds = 0.4;

  TtftParts v = MeanTtftParts(ServerKind::kVllm, d);
  EXPECT_DOUBLE_EQ(*v.server_ttft_s, 0.1);
  EXPECT_DOUBLE_EQ(*v.queue_s, 0.02);
  EXPECT_DOUBLE_EQ(*v.prefill_s, 0.05);
  EXPECT_EQ(v.not_measurable, "");

  // llama.cpp: summed prompt time over the requests the caller counted; no queue, no TTFT.
  TtftParts l = MeanTtftParts(ServerKind::kLlamaCpp, d, 8);
  EXPECT_DOUBLE_EQ(*l.prefill_s, 0.05);
  EXPECT_FALSE(l.queue_s);
  EXPECT_FALSE(l.server_ttft_s);
  EXPECT_THAT(l.not_measurable, HasSubstr("not measurable on llama.cpp"));
  TtftParts l0 = MeanTtftParts(ServerKind::kLlamaCpp, d);
  EXPECT_FALSE(l0.prefill_s);
  EXPECT_THAT(l0.not_measurable, HasSubstr("prefill needs the count of requests served"));

  TtftParts s = MeanTtftParts(ServerKind::kSglang, d);
  EXPECT_DOUBLE_EQ(*s.server_ttft_s, 0.1);
  EXPECT_DOUBLE_EQ(*s.queue_s, 0.02);
  EXPECT_FALSE(s.prefill_s);
  EXPECT_EQ(s.not_measurable, "prefill is not measurable on SGLang (no prefill-time histogram)");

  TtftParts t = MeanTtftParts(ServerKind::kTgi, d);
  EXPECT_FALSE(t.server_ttft_s);
  EXPECT_DOUBLE_EQ(*t.queue_s, 0.02);
  EXPECT_FALSE(t.prefill_s);
  EXPECT_THAT(t.not_measurable, HasSubstr("not measurable on TGI"));
}

}  // namespace
}  // namespace latdoc::servermetrics
