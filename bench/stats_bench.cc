// LatencyHistogram::Record() cost per call, the load generator's hot-path operation (one per
// token gap). Target: a few ns/op, no allocation. Also the cost of a quantile query and of a
// merge of two per-worker histograms, and of the exact numpy-style summary per sample.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "stats/latency_histogram.h"
#include "stats/sample_summary.h"

namespace {

std::vector<int64_t> Latencies(size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(16.0, 1.0);  // median ~9 ms
  std::vector<int64_t> v(n);
  for (auto& x : v) x = static_cast<int64_t>(dist(rng));
  return v;
}

void BM_HistogramRecord(benchmark::State& state) {
  const std::vector<int64_t> values = Latencies(1 << 16);
  latdoc::stats::LatencyHistogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.Record(values[i++ & (values.size() - 1)]);
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HistogramRecord);

void BM_HistogramValueAtQuantile(benchmark::State& state) {
  latdoc::stats::LatencyHistogram h;
  for (int64_t v : Latencies(1 << 16)) h.Record(v);
  for (auto _ : state) benchmark::DoNotOptimize(h.ValueAtQuantile(0.99));
}
BENCHMARK(BM_HistogramValueAtQuantile);

void BM_HistogramMerge(benchmark::State& state) {
  latdoc::stats::LatencyHistogram a, b;
  for (int64_t v : Latencies(1 << 16)) b.Record(v);
  for (auto _ : state) a.Merge(b);
  benchmark::DoNotOptimize(a.count());
}
BENCHMARK(BM_HistogramMerge);

void BM_VllmStatKeys(benchmark::State& state) {
  const std::vector<int64_t> values = Latencies(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(latdoc::stats::VllmStatKeys("itl", values));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_VllmStatKeys)->Arg(1000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
