// Every /metrics page of tests/data/servermetrics/corpus (shapes seen in public reports;
// sources in its README) parses without a bad line and maps onto the snapshot the bench,
// diagnose and exporter read: the server, the queue, the KV cache and the token counters.
// `_created` series (prometheus_client counters) are samples of their own, never counted in
// the `_total` they belong to; label sets of several engines or data-parallel ranks add up.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "servermetrics/server_snapshot.h"

namespace latdoc::servermetrics {
namespace {

struct Case {
  const char* file;
  const char* server;
  std::optional<double> running, waiting, kv_fraction, prompt_tokens, generation_tokens;
};

const Case kCases[] = {
    {"vllm_v0_5_swapped.prom", "vllm", 5, 2, 0.4125, 90412, 41877},
    {"vllm_v1_created_prefix_queries.prom", "vllm", 3, 0, 0.0311, 88210, 12044},
    {"vllm_v011_two_engines.prom", "vllm", 35, 1, 0.251, 800211, 161141},
    {"sglang_2024_name_label.prom", "sglang", std::nullopt, std::nullopt, std::nullopt, 120488,
     30112},
    {"sglang_2025_dp_ranks.prom", "sglang", 80, 3, 0.61, std::nullopt, std::nullopt},
    {"tgi_router.prom", "tgi", 12, 4, std::nullopt, 98211, 40100},
    {"llamacpp_2025_decode_total.prom", "llamacpp", 2, 0, std::nullopt, 5120, 2210},
    {"llamacpp_2024_kv_ratio.prom", "llamacpp", 1, 0, 0.0825, 612, 1408},
};

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(MetricsCorpusTest, EveryPageParsesAndMapsItsServer) {
  size_t seen = 0;
  for (const Case& c : kCases) {
    const std::string path = std::string("tests/data/servermetrics/corpus/") + c.file;
    const std::string text = Read(path);
    ASSERT_FALSE(text.empty()) << path;
    ServerSnapshot s = SnapshotFromText(text);
    EXPECT_EQ(s.bad_line_count, 0u) << path;
    EXPECT_EQ(s.server, c.server) << path;
    EXPECT_EQ(s.requests_running, c.running) << path;
    EXPECT_EQ(s.requests_waiting, c.waiting) << path;
    EXPECT_EQ(s.kv_cache_usage_fraction, c.kv_fraction) << path;
    EXPECT_EQ(s.prompt_tokens_total, c.prompt_tokens) << path;
    EXPECT_EQ(s.generation_tokens_total, c.generation_tokens) << path;
    ++seen;
  }
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/data/servermetrics/corpus")) {
    files += e.path().extension() == ".prom";
  }
  EXPECT_EQ(files, seen);
}

// TGI's queue histogram has no label; llama.cpp's seconds counters split TTFT-relevant time.
TEST(MetricsCorpusTest, ServerSpecificSeries) {
  ServerSnapshot tgi = SnapshotFromText(Read("tests/data/servermetrics/corpus/tgi_router.prom"));
  ASSERT_TRUE(tgi.queue_s);
  EXPECT_DOUBLE_EQ(tgi.queue_s->count, 311);
  EXPECT_DOUBLE_EQ(tgi.queue_s->sum, 9.82);
  EXPECT_EQ(tgi.request_success_total, 311);
  ServerSnapshot ll =
      SnapshotFromText(Read("tests/data/servermetrics/corpus/llamacpp_2025_decode_total.prom"));
  EXPECT_EQ(ll.prompt_seconds_total, 2.412);
  EXPECT_EQ(ll.generation_seconds_total, 61.08);
  EXPECT_EQ(ll.engine_steps_total, 2240);
  ServerSnapshot v =
      SnapshotFromText(Read("tests/data/servermetrics/corpus/vllm_v011_two_engines.prom"));
  EXPECT_EQ(v.preemptions_total, 2);
  ASSERT_TRUE(v.queue_s);
  EXPECT_DOUBLE_EQ(v.queue_s->count, 433);
}

}  // namespace
}  // namespace latdoc::servermetrics
