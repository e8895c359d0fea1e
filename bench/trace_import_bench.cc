// Benchmarks for the Kineto importer's hot path (issue 5: full import plus analyses >= 30x
// Python's json.load; bench/trace_bench.py measures that end to end). Here the import alone, on
// the H200 fixture (46.5 MB of PyTorch trace JSON, tests/data/trace/kineto), from the page cache:
//   OneThread   plain file, one thread (the per-core parse speed: bytes/s are JSON bytes)
//   Split       plain file, parts on one thread per core
//   GzipSplit   the .json.gz, inflated on one thread, parts parsed on the others
//   GzipOneThread  the .json.gz, inflated on a second thread while one parses
// Run from the repository root: build/release/bench/trace_import_bench.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "base/file_util.h"
#include "trace/importers/kineto/kineto_importer.h"

namespace {

using namespace latdoc;

const char kFixture[] = "tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz";

// The fixture inflated once into a temporary plain file.
const std::string& PlainFixture() {
  static const std::string path = [] {
    auto in = OpenInput(kFixture);
    if (!in.ok()) std::abort();
    auto text = ReadAll(**in);
    if (!text.ok()) std::abort();
    std::string p = "/tmp/latdoc_trace_import_bench.json";
    if (!WriteFileAtomic(p, *text).ok()) std::abort();
    return p;
  }();
  return path;
}

void Import(benchmark::State& state, const std::string& path, int parts) {
  trace::ImportOptions o;
  o.split_parts = parts;
  int64_t bytes = 0;
  for (auto _ : state) {
    trace::Trace t;
    trace::KinetoSplitStats stats;
    if (!trace::ImportKineto(path, o, t, &stats).ok()) state.SkipWithError("import failed");
    bytes = static_cast<int64_t>(t.sources[0].events_read);
    benchmark::DoNotOptimize(t.gpu_ops.size());
  }
  state.counters["events"] = static_cast<double>(bytes);
  state.SetBytesProcessed(state.iterations() * int64_t{46516992});
}

void BM_OneThread(benchmark::State& s) { Import(s, PlainFixture(), 1); }
void BM_Split(benchmark::State& s) { Import(s, PlainFixture(), 0); }
void BM_GzipOneThread(benchmark::State& s) { Import(s, kFixture, 1); }
void BM_GzipSplit(benchmark::State& s) { Import(s, kFixture, 0); }
BENCHMARK(BM_OneThread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Split)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GzipOneThread)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GzipSplit)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
