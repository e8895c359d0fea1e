// The load runner behind `latdoc bench` and `latdoc sweep`: drives an OpenAI-compatible server
// with streaming requests, closed loop (fixed concurrency) or open loop (a request rate with
// gamma inter-arrivals), scrapes the server's /metrics around and during the run, and returns
// one record per request sent.
//
// Open loop: every request has a scheduled send time; its latencies count from that time, so a
// stalled server cannot hide its stall (no coordinated omission). Time spent waiting for a
// --max-concurrency slot is the client queue time, reported on its own.
//
// Threading: the run happens on one EventLoop on the calling thread (one core). SIGINT/SIGTERM
// stop sending; streams in flight get `drain_timeout_ns` to finish, then are cancelled (a
// second signal cancels them at once); the run is returned marked partial, with the signal. A
// cancelled stream ends `cancelled` and keeps the tokens it got (its TTFT and ITL count).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/client.h"
#include "http/tcp_info.h"
#include "loadgen/record.h"
#include "loadgen/workload.h"
#include "servermetrics/server_snapshot.h"

namespace latdoc::loadgen {

enum class Endpoint { kCompletions, kChat };

struct BenchOptions {
  std::string url;                 // base URL, e.g. http://127.0.0.1:8000
  std::string metrics_url;         // default: the base URL
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;               // empty: the first of /v1/models
  std::string api_key;             // sent as a Bearer token; never printed or written
  int concurrency = 1;             // closed loop when request_rate == 0
  double request_rate = 0;         // requests/s, open loop
  double burstiness = 1.0;         // gamma shape; 1 = Poisson
  int max_concurrency = 0;         // open loop: a client-side cap (0: none)
  int num_requests = 0;            // 0: bounded by duration
  double duration_s = 0;           // 0: bounded by num_requests
  int warmup = 0;                  // requests sent first and left out of the results
  size_t first_prompt = 0;         // the index in `prompts` of the first one sent (they cycle)
  bool ignore_eos = true;
  uint64_t seed = 0;
  http::ClientOptions client;      // keep-alive, TLS, timeouts
  std::vector<Prompt> prompts;     // cycled
  bool scrape_metrics = true;
  double scrape_interval_s = 1.0;
  int64_t drain_timeout_ns = 10'000'000'000;
  bool progress = false;           // a live line on standard error
  // The command named in what the run says on standard error when a signal stops it
  // ("latdoc bench: stopping: draining 4 in-flight streams ..."); empty: nothing is said.
  std::string command = "bench";
  // What the summary shows (vLLM's --percentile-metrics and --metric-percentiles): the metrics
  // ("ttft", "tpot", "itl", "e2el") with statistics, and their percentiles. Empty: all four
  // metrics; P99 in the text, p90/p95/p99/p99.9 in the JSON.
  std::vector<std::string> summary_metrics;
  std::vector<double> summary_percentiles;
  std::string backend;             // the JSON's "backend" (vLLM's --backend); "": from the endpoint
};

// One /metrics scrape during the run.
struct ServerSample {
  int64_t t_ns = 0;
  std::optional<double> running, waiting, kv_cache_usage, preemptions_total;
};

struct BenchRun {
  std::string model;
  std::string owned_by;                 // /v1/models' owned_by of that model, when it was asked
  std::vector<RequestRecord> records;   // measured requests only, in send order
  uint64_t warmup_requests = 0;
  int64_t start_ns = 0, end_ns = 0;     // the measured phase
  bool partial = false;
  std::string partial_reason;
  int stop_signal = 0;                  // SIGINT or SIGTERM when a signal stopped the run, else 0
  bool metrics_available = false;
  std::string metrics_error;
  servermetrics::ServerSnapshot before, after;
  std::vector<ServerSample> timeline;
  uint64_t connections_opened = 0;
  // TCP_INFO of the load's connections (each once, its last snapshot; a connection opened in
  // the warm-up counts whole, its warm-up segments included).
  http::TcpTotals tcp;
  int max_in_flight = 0;
  double client_cpu_s = 0;              // this process's CPU time during the run
};

// Errors: bad options (kInvalidArgument); the target could not be reached at all, or
// /v1/models failed (kUnavailable); /v1/models answered 401 or 403 (kPermissionDenied). When
// requests were sent and every one failed to connect, the run (its records say why each
// failed) is moved into `unreachable_run` when given, for the caller to report.
StatusOr<BenchRun> RunBench(const BenchOptions& options, BenchRun* unreachable_run = nullptr);

// The JSON body of one request (exposed for tests).
std::string RequestBody(const BenchOptions& o, const std::string& model, const Prompt& p);

}  // namespace latdoc::loadgen
