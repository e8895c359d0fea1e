// SSE decode throughput on one core. Target (issue 3): >= 5 M events/s for typical vLLM
// completion chunks (~250 bytes each), fed in socket-read-sized slices.
#include <benchmark/benchmark.h>

#include <string>

#include "http/sse_decoder.h"

namespace {

// A vLLM /v1/completions stream chunk with continuous usage stats, about 250 bytes.
std::string Chunk(int i) {
  return "data: {\"id\":\"cmpl-3f1b2c9a8e7d4c6b9a0f1e2d3c4b5a69\",\"object\":\"text_completion\","
         "\"created\":1764460000,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":"
         "[{\"index\":0,\"text\":\" tok" +
         std::to_string(i % 1000) +
         "\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],"
         "\"usage\":null}\n\n";
}

void BM_SseDecode(benchmark::State& state) {
  const size_t slice_bytes = static_cast<size_t>(state.range(0));
  std::string stream;
  int n_events = 0;
  while (stream.size() < (1 << 20)) stream += Chunk(n_events++);
  latdoc::http::SseDecoder decoder;
  size_t sink = 0;
  for (auto _ : state) {
    for (size_t off = 0; off < stream.size(); off += slice_bytes) {
      auto st = decoder.Feed(std::string_view(stream).substr(off, slice_bytes),
                             [&sink](const latdoc::http::SseEvent& ev) { sink += ev.data.size(); });
      benchmark::DoNotOptimize(st);
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetItemsProcessed(state.iterations() * n_events);
  state.SetBytesProcessed(state.iterations() * stream.size());
  state.counters["event_bytes"] = static_cast<double>(stream.size()) / n_events;
}
BENCHMARK(BM_SseDecode)->Arg(1460)->Arg(16384)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
