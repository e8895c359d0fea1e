// doctor_bench: the cost of `latdoc doctor`'s parts. Target: the whole live check (two
// counter samples 300 ms apart plus every probe) in <= 1 s wall, so the probes themselves must
// stay far below 700 ms. Run from the repository root (reads tests/data/host/...):
//   build/bench/doctor_bench
#include <benchmark/benchmark.h>

#include "base/file_util.h"
#include "host/collector.h"
#include "host/host_facts.h"
#include "rules/host_rules.h"

namespace {

using namespace latdoc;

// Every probe against the live host, without the sampling wait.
void BM_CollectLiveNoWait(benchmark::State& state) {
  host::CollectOptions o;
  o.sample_interval_ns = 0;
  for (auto _ : state) benchmark::DoNotOptimize(host::CollectHostFacts(o));
}
BENCHMARK(BM_CollectLiveNoWait)->Unit(benchmark::kMillisecond);

// Every probe against the built two-GPU MI300X tree (switch walk, KFD, replayed commands).
void BM_CollectRecordedTree(benchmark::State& state) {
  host::CollectOptions o;
  o.sysroot = "tests/data/host/mi300x_unhealthy_built/tree";
  o.sample_interval_ns = 0;
  for (auto _ : state) benchmark::DoNotOptimize(host::CollectHostFacts(o));
}
BENCHMARK(BM_CollectRecordedTree)->Unit(benchmark::kMillisecond);

void BM_JudgeHost(benchmark::State& state) {
  auto text = ReadFileToString("tests/data/host/facts/unhealthy_built.json");
  auto facts = host::FactsFromJson(text.ok() ? *text : "", "unhealthy_built.json");
  if (!facts.ok()) {
    state.SkipWithError(facts.status().message().c_str());
    return;
  }
  rules::HostRuleOptions opts;
  opts.sweep_knee_concurrency = 64;
  for (auto _ : state) benchmark::DoNotOptimize(rules::JudgeHost(*facts, opts));
}
BENCHMARK(BM_JudgeHost)->Unit(benchmark::kMicrosecond);

void BM_FactsJsonRoundTrip(benchmark::State& state) {
  auto text = ReadFileToString("tests/data/host/facts/unhealthy_built.json");
  for (auto _ : state) {
    auto f = host::FactsFromJson(text.ok() ? *text : "", "f");
    benchmark::DoNotOptimize(host::FactsToJson(*f));
  }
}
BENCHMARK(BM_FactsJsonRoundTrip)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
