// The load client's per-event user-space work after the SSE decoder: parsing a stream chunk's
// JSON (simdjson) and accounting its tokens (StreamAccountant: TTFT, per-token ITL, usage). Part
// of the client's cost per SSE event (issue 3: >= 500,000 events/s on one core in all).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "loadgen/record.h"

namespace {

// vLLM /v1/completions chunks with continuous usage stats (about 300 bytes each).
std::vector<std::string> Stream(int tokens) {
  std::vector<std::string> out;
  for (int i = 1; i <= tokens; ++i) {
    out.push_back(
        "{\"id\":\"cmpl-3f1b2c9a8e7d4c6b9a0f1e2d3c4b5a69\",\"object\":\"text_completion\","
        "\"created\":1764460000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":"
        "[{\"index\":0,\"text\":\" tok" + std::to_string(i) + "\",\"logprobs\":null,\"finish_reason\":" +
        (i == tokens ? std::string("\"length\"") : std::string("null")) +
        ",\"stop_reason\":null}],\"usage\":{\"prompt_tokens\":1024,\"total_tokens\":" +
        std::to_string(1024 + i) + ",\"completion_tokens\":" + std::to_string(i) + "}}");
  }
  out.push_back("[DONE]");
  return out;
}

void BM_ParseAndAccount(benchmark::State& state) {
  const std::vector<std::string> stream = Stream(static_cast<int>(state.range(0)));
  latdoc::loadgen::ChunkParser parser;
  int64_t t = 0;
  int64_t tokens = 0;
  for (auto _ : state) {
    latdoc::loadgen::RequestRecord rec;
    latdoc::loadgen::StreamAccountant acct(&rec);
    for (const std::string& payload : stream) acct.OnPayload(parser.Parse(payload), t += 1000);
    acct.Finish(true, t);
    tokens += rec.output_tokens;
  }
  benchmark::DoNotOptimize(tokens);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_ParseAndAccount)->Arg(128);

// The parse alone: the one-pass scan (Parse) against simdjson's DOM (ParseWithDom).
template <bool kDom>
void BM_Parse(benchmark::State& state) {
  const std::vector<std::string> stream = Stream(128);
  latdoc::loadgen::ChunkParser parser;
  int64_t n = 0;
  for (auto _ : state) {
    for (const std::string& payload : stream) {
      auto c = kDom ? parser.ParseWithDom(payload) : parser.Parse(payload);
      n += c.content;
    }
  }
  benchmark::DoNotOptimize(n);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(stream.size()));
}
BENCHMARK(BM_Parse<false>)->Name("BM_ParseScan");
BENCHMARK(BM_Parse<true>)->Name("BM_ParseDom");

}  // namespace

BENCHMARK_MAIN();
