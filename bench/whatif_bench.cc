// The what-if model's speed targets (issue 41): a prediction of 5 minutes of load at 256
// concurrent requests under 5 s on one core (the engine model in virtual time), and a
// calibration from an existing sweep JSON under 2 s. Run from the repository root (it reads
// bench/data/sim_sweep_hidden_params.json). Single-threaded, as measured.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "whatif/calibration.h"
#include "whatif/prediction.h"
#include "whatif/virtual_run.h"

namespace {

using latdoc::whatif::Calibration;

// The simulator's default model (Llama-3-8B-like on an 80 GiB GPU), as a usable calibration
// with 5% uncertainty on each step cost.
Calibration DefaultModel() {
  Calibration c;
  c.source = "defaults";
  c.usable = true;
  c.workload = {1024, 128, 0, 0};
  c.engine.max_num_seqs = 256;
  for (int i = 0; i < 3; ++i) c.cov[i][i] = 0.05 * 0.05;
  c.cov[3][3] = 0.1 * 0.1;
  c.front_ms = 0.5;
  c.rms_ttft = c.rms_itl = c.rms_throughput = 0.05;
  return c;
}

// One model run: 300 s of virtual time at 256 concurrent requests (1024 in / 128 out).
void BM_VirtualRun5MinAt256(benchmark::State& state) {
  latdoc::whatif::VirtualRunOptions o;
  o.engine = DefaultModel().engine;
  o.workload = {1024, 128, 0, 1};
  o.load = 256;
  o.duration_s = 300;
  for (auto _ : state) {
    auto m = latdoc::whatif::VirtualRun(o);
    if (!m.ok()) state.SkipWithError(m.status().message().c_str());
    benchmark::DoNotOptimize(m);
    state.counters["requests"] = m.ok() ? m->completed : 0;
    state.counters["steps"] = m.ok() ? double(m->steps) : 0;
  }
}
BENCHMARK(BM_VirtualRun5MinAt256)->Unit(benchmark::kMillisecond);

// What `latdoc whatif --load concurrency=256 --duration 300` does: the run and its interval's
// kDraws draws. Target: < 5 s.
void BM_Predict5MinAt256(benchmark::State& state) {
  Calibration c = DefaultModel();
  latdoc::whatif::WhatifRequest r;
  r.load = 256;
  r.duration_s = 300;
  r.sets = {{"max-num-seqs", "128"}};
  for (auto _ : state) {
    auto p = latdoc::whatif::Predict(c, r);
    if (!p.ok()) state.SkipWithError(p.status().message().c_str());
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_Predict5MinAt256)->Unit(benchmark::kMillisecond);

// `latdoc calibrate` on a stored 13-step sweep. Target: < 2 s.
void BM_CalibrateSweep(benchmark::State& state) {
  std::ifstream in("bench/data/sim_sweep_hidden_params.json");
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    state.SkipWithError("run from the repository root: bench/data/sim_sweep_hidden_params.json");
    return;
  }
  const nlohmann::json doc = nlohmann::json::parse(ss.str());
  for (auto _ : state) {
    auto c = latdoc::whatif::Calibrate(doc, {{}, "sweep.json", ""});
    if (!c.ok() || !c->usable) state.SkipWithError("calibration failed");
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_CalibrateSweep)->Unit(benchmark::kMillisecond);

// A sweep of bench's default workload (1024 in / 128 out) up a ladder 1..512 on the default
// model with max_num_seqs 256, each step's window max(32, 2 x load) requests as latdoc sweep
// measures it, produced by the model itself: the calibration's worst realistic input.
nlohmann::json LadderSweep() {
  nlohmann::json doc = {{"schema", "latdoc.sweep/1"}, {"mode", "concurrency"},
                        {"workload", {{"dataset", "random"}, {"input_len", 1024}, {"output_len", 128}}},
                        {"stability", {{"min_requests", 32}}}, {"steps", nlohmann::json::array()}};
  for (int c = 1; c <= 512; c *= 2) {
    latdoc::whatif::VirtualRunOptions o;
    o.engine = DefaultModel().engine;
    o.workload = {1024, 128, 0, uint64_t(c)};
    o.load = c;
    o.round_requests = c * ((16 + c - 1) / c);
    o.rounds = std::max(1, std::max(32, 2 * c) / o.round_requests);
    o.front_ms = 0.5;
    auto m = latdoc::whatif::VirtualRun(o);
    doc["steps"].push_back({{"concurrency", c}, {"requests", o.round_requests * o.rounds}, {"failed", 0},
                            {"median_ttft_ms", m->median_ttft_ms}, {"p99_ttft_ms", m->p99_ttft_ms},
                            {"median_itl_ms", m->median_itl_ms}, {"output_throughput", m->output_throughput},
                            {"server_metrics", {{"max_running", m->max_running},
                                                {"max_kv_cache_usage", m->max_kv_cache_usage},
                                                {"step_time_ms", m->mean_step_ms}}}});
  }
  return doc;
}

void BM_CalibrateLadderTo512(benchmark::State& state) {
  const nlohmann::json doc = LadderSweep();
  for (auto _ : state) {
    auto c = latdoc::whatif::Calibrate(doc, {{}, "sweep.json", ""});
    if (!c.ok() || !c->usable) state.SkipWithError("calibration failed");
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_CalibrateLadderTo512)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
