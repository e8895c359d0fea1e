// `latdoc diagnose`: walks the checklist — network, load, system, kernel, config, logs — runs
// every layer that applies, and ranks what all of them found. No layer's failure stops the
// others: an unreachable target still gets its traces, logs and host judged, and the result
// says which layers were measured, skipped (and why) or failed.
//
// With a live target the network is probed first, while the server is idle (net/probe.h: RTT,
// first byte, keep-alive vs new connections, TLS where https), so the TTFT waterfall's network
// part is measured: ttft_waterfall.network_ms (measured) and front_end_ms (inferred: client
// TTFT - server TTFT - network). A target no probe sample reaches is not load-tested: the
// result says so (target_reachable false) and the other layers still run.
//
// The Diagnosis it returns (report/diagnosis.h) is what every renderer reads: the findings
// (ranked), what to change first, the layers' statuses, and each layer's own document (bench,
// baseline, ttft_waterfall, trace, logs, doctor) among its sections. Not thread-safe; runs on the
// calling thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/results.h"
#include "loadgen/runner.h"
#include "report/diagnosis.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

struct DiagnoseOptions {
  std::string url;                    // empty: no live target (files and host only)
  int net_samples = 5;                // network probe samples (0: no probe; network inferred)
  int64_t net_timeout_ns = 5'000'000'000;  // bound of each probe exchange
  std::string direct_url;             // the same server by another path (direct, when --url
                                      // goes through a gateway): the gateway's delay is measured
  loadgen::BenchOptions bench;        // template for the load steps (url, model, key, client...)
  int concurrency = 32;               // the target load
  int requests = 200;
  int baseline_requests = 16;         // at concurrency 1
  bool sweep = false;                 // also sweep the load to find the knee (latdoc sweep)
  int sweep_max = 256;                // the sweep's highest concurrency
  loadgen::RandomWorkloadOptions workload;
  loadgen::SloSpec slo;
  std::vector<std::string> traces;
  std::string trace_note;             // said with the kernel layer's status (e.g. "example trace")
  // --trace-of-server: the traces were recorded from the server at `url`, so their findings
  // claim shares of its latency. Without it, only a trace recorded by --profile-at or one whose
  // GPU work overlaps the load on the wall clock does (rules::PlaceTraceFindings).
  bool trace_of_target = false;
  std::vector<std::string> logs;
  std::string facts_path;             // judge host facts collected elsewhere
  bool local = false;                 // collect host facts here
  std::string sysroot = "/";
  // --host-counters-root DIR (with --local): the host sampler reads /proc/vmstat and
  // /proc/pressure/* under DIR (a recorded or simulated tree: sim/host_counters.h); "" reads
  // them under `sysroot`. The server's threads and the run queue still come from `sysroot`.
  std::string host_counters_root;
  bool progress = false;              // say which layer runs, on standard error
  // --profile-at knee|N (diagnose/profile_at.h): "" none; "knee" (needs `sweep`) or a number of
  // running requests. The trace recorded goes to the kernel layer as the target's own.
  std::string profile_at;
  std::string profile_dir;            // the server's VLLM_TORCH_PROFILER_DIR, here or mounted
  double profile_seconds = 2;         // the profiler records at most this long
  // --profile-load (needs profile_dir): the profiler runs across the target load itself; its
  // trace goes to the kernel layer as the target's own and onto the stall attribution timeline.
  bool profile_load = false;
  // --sessions N (diagnose/sessions_step.h): multi-turn sessions after the load layer; 0: none.
  // The sessions' shape: turns, shared prefix (--prefix-len), user message (input_len) and
  // answer (output_len) from `workload`.
  int sessions = 0;
  int session_turns = 4;
  double think_time_s = 0;
};

struct DiagnoseResult {
  report::Diagnosis diagnosis;  // what every renderer shows; ToJson(diagnosis) is --json
  int stop_signal = 0;          // SIGINT or SIGTERM when a signal ended it early
};

DiagnoseResult RunDiagnose(const DiagnoseOptions& options);

// The terminal summary: layers, the TTFT waterfall, the ranked findings, what to change first.
std::string RenderDiagnoseText(const report::Diagnosis& diagnosis, bool color, bool show_ok);

}  // namespace latdoc::diagnose
