// Parse rate of a 200 KB /metrics page (vLLM V1, many engines), and the cost of mapping it
// onto a ServerSnapshot. The scraper reads /metrics every second during `latdoc bench`, so
// this must stay far below a millisecond of one core per scrape. Run from the repository root.
#include <benchmark/benchmark.h>

#include <string>

#include "base/file_util.h"
#include "servermetrics/server_snapshot.h"

namespace {

// The synthetic vLLM page of tests/data/servermetrics, repeated with distinct engine labels
// until it reaches 200 KB (a data-parallel deployment with many engines).
std::string Page200K() {
  // Run from the repository root.
  auto page = latdoc::ReadFileToString("tests/data/servermetrics/vllm_v1_after.prom");
  if (!page.ok()) return std::string();
  std::string out;
  for (int copy = 0; out.size() < 200 * 1024; ++copy) {
    std::string p = *page;
    const std::string from = "engine=\"";
    for (size_t at = p.find(from); at != std::string::npos; at = p.find(from, at + 1)) {
      p.insert(at + from.size(), std::to_string(copy) + "-");
    }
    out += p;
  }
  return out;
}

void BM_ParsePrometheus200K(benchmark::State& state) {
  const std::string page = Page200K();
  if (page.empty()) {
    state.SkipWithError("tests/data/servermetrics/vllm_v1_after.prom not found: run from the repository root");
    return;
  }
  size_t samples = 0;
  for (auto _ : state) {
    auto parsed = latdoc::servermetrics::ParsePrometheusText(page);
    samples = parsed.samples.size();
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(state.iterations() * page.size());
  state.counters["page_bytes"] = static_cast<double>(page.size());
  state.counters["samples"] = static_cast<double>(samples);
}
BENCHMARK(BM_ParsePrometheus200K)->Unit(benchmark::kMicrosecond);

void BM_ParseAndSnapshot200K(benchmark::State& state) {
  const std::string page = Page200K();
  for (auto _ : state) {
    benchmark::DoNotOptimize(latdoc::servermetrics::SnapshotFromText(page));
  }
  state.SetBytesProcessed(state.iterations() * page.size());
}
BENCHMARK(BM_ParseAndSnapshot200K)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
