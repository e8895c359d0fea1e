// `latdoc diagnose --profile-at knee|N --profile-dir DIR`: profile the server under test at the
// load that hurts, and hand the trace to the kernel layer of the same run.
//
// The server's profiler endpoints are vLLM's (vllm/entrypoints/openai/api_server.py, v0.10):
// POST /start_profile and POST /stop_profile, present only when the server was started with
// VLLM_TORCH_PROFILER_DIR (or --profiler-config); the trace files appear in that directory
// (on this host or a mounted path: --profile-dir) once the profiler stops.
//
// The capture: a closed-loop load at `concurrency` runs on a worker thread while this thread
// reads the server's /metrics every kPollMs; once the running requests reach `running_at`, it
// starts the profiler, lets it record for at most `seconds` (less when the load ends first),
// stops it (vLLM answers once the trace is flushed: up to kStopTimeoutS), and waits up to
// kFileWaitS more for new trace files in the directory (a file counts
// once its size held between two looks). A server without the endpoints (404), a load that
// never reaches `running_at`, or no file appearing: a status that says so, no files, and the
// rest of the diagnosis goes on.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/runner.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

inline constexpr int kPollMs = 20;
inline constexpr double kFileWaitS = 30;      // after /stop_profile answered
inline constexpr double kStopTimeoutS = 600;  // /stop_profile answers once the trace is flushed

struct ProfileRequest {
  std::string url;                   // the server (its /metrics, /start_profile, /stop_profile)
  std::string metrics_url;           // default: url
  loadgen::BenchOptions bench;       // the load's template (model, key, client, prompts)
  int concurrency = 1;               // the load while profiling
  int running_at = 1;                // start once /metrics reports this many running requests
  int requests = 0;                  // the load's requests (bounded)
  double seconds = 2;                // the profiler records at most this long
  std::string dir;                   // where the server writes its traces
  std::string why;                   // "at the knee (concurrency 24)": said in the status
};

struct ProfileCapture {
  bool recorded = false;
  std::string status;                // "recorded: ..." / "skipped: ..." / "failed: ..."
  std::vector<std::string> files;    // the new trace files, sorted
  double running_at_start = 0;       // the running requests /metrics reported at the start
  double profiled_s = 0;             // between the start and the stop
  nlohmann::ordered_json Json() const;
};

ProfileCapture CaptureProfile(const ProfileRequest& request);

// The trace layer over the files a capture recorded, as diagnose's kernel layer writes it: the
// "trace" block (schema latdoc.trace/1, "recorded_from": "server under test (--profile-at)",
// files, facts, findings with their latency shares), and the findings into `findings`. Null, with
// `status` saying why, when the files hold no GPU events; `status` is "measured" otherwise.
nlohmann::ordered_json AnalyseProfileTraces(const std::vector<std::string>& files,
                                            std::vector<rules::Finding>* findings,
                                            std::string* status);

// `latdoc diagnose --profile-load`: the profiler runs across the target load itself, so its
// trace can be laid on the stall attribution timeline (docs/attribution.md). Start before the
// load (POST /start_profile), Stop after it (POST /stop_profile, then new files in `dir` as
// CaptureProfile waits for them). A failure says so in `status`; the diagnosis goes on.
struct LoadProfile {
  std::string dir;
  bool started = false;
  bool recorded = false;
  std::string status;                // "recorded: ..." / "skipped: ..." / "failed: ..."
  std::vector<std::string> files;    // the new trace files, sorted
  double profiled_s = 0;
  std::vector<std::string> before;   // the directory's trace files before the start
  int64_t started_ns = 0;            // CLOCK_MONOTONIC
  nlohmann::ordered_json Json() const;
};
LoadProfile StartLoadProfile(const std::string& url, const loadgen::BenchOptions& bench,
                             const std::string& dir);
void StopLoadProfile(const std::string& url, const loadgen::BenchOptions& bench, LoadProfile* p);

// Trace files in `dir` (Kineto "*.json", "*.json.gz"; nsys "*.sqlite"; rocprof "*.csv"), by name.
std::vector<std::string> TraceFilesIn(const std::string& dir);

}  // namespace latdoc::diagnose
