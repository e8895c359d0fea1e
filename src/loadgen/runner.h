// The load runner behind `latdoc bench` and `latdoc sweep`: drives an OpenAI-compatible server
// with streaming requests, closed loop (fixed concurrency) or open loop (a request rate with
// gamma inter-arrivals), scrapes the server's /metrics around and during the run, and returns
// one record per request sent.
//
// Open loop: every request has a scheduled send time; its latencies count from that time, so a
// stalled server cannot hide its stall (no coordinated omission). Time spent waiting for a
// --max-concurrency slot is the client queue time, reported on its own.
//
// Threading: the load runs on `threads` event-loop threads, each with its own HTTP client
// (sockets, epoll set) and its own records: nothing is shared on the hot path. The calling
// thread coordinates (the start, /metrics scrapes, signals, the progress line) and merges the
// threads' records when all have finished; percentiles come from the merged records, so they
// are exactly those one thread would report for the same requests. The load is dealt:
// closed loop, thread i runs DealtCount(concurrency) streams and sends DealtCount(num_requests)
// requests; open loop, all threads follow one schedule (the seed's) and arrival k goes to
// thread k % threads, its latencies counting from its scheduled time; --max-concurrency is dealt
// like the concurrency (each thread caps its own share). SIGINT/SIGTERM stop sending; streams in flight get `drain_timeout_ns` to finish, then are cancelled (a
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
  // Chat: a JSON array of tool definitions sent as every request's "tools" (--tools FILE);
  // empty: none. Checked by the caller to be a JSON array.
  std::string tools_json;
  // Trace replay (loadgen/replay.h): open loop with arrival k due at the start plus
  // arrival_offsets_ns[k] instead of gamma gaps (request_rate must be > 0, e.g. inf, and
  // num_requests at most the offsets' count). REQUIRES: sorted, the first 0.
  std::vector<int64_t> arrival_offsets_ns;
  // Event-loop threads of the load (--threads); 0: DefaultThreads(). Never more than there are
  // streams (closed loop), --max-concurrency slots or requests.
  int threads = 0;
};

// What one load thread spent during the measured phase (the client's own load: when a thread
// is saturated, its timings are suspect).
struct ThreadLoad {
  double cpu_s = 0;          // the thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
  double wall_s = 0;         // the thread's measured phase
  uint64_t events = 0;       // SSE events decoded
  uint64_t reads = 0;        // socket reads that returned bytes (plain HTTP)
  uint64_t late_reads = 0;   // of `reads`: handled more than kLateReadNs after they arrived
  double busy() const { return wall_s > 0 ? cpu_s / wall_s : 0; }
  // Busy at least kSaturatedBusy of the time: its reads wait for it.
  bool saturated() const;
};
constexpr int64_t kLateReadNs = 1'000'000;  // 1 ms
constexpr double kSaturatedBusy = 0.9;

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
  std::vector<ThreadLoad> thread_load;  // one per load thread
};

// The default of --threads: the cores this process may run on (sched_getaffinity), less one
// when `host` is this machine (loopback or one of its addresses: the server needs a core),
// at least 1.
int DefaultThreads(const std::string& host);

// Of `total` items dealt round robin to `threads` threads, how many thread `thread` gets
// (thread i gets items i, i + threads, i + 2 * threads, ...).
uint64_t DealtCount(uint64_t total, int threads, int thread);

// Merges the runs of a run's threads into one: records (each `index` the request's number in
// the whole run) ordered by scheduled time, then number, and renumbered from 0; counts summed;
// the measured phase from the earliest start to the latest end. `max_in_flight` is the sum of
// the threads' maxima. Exact: the result's records are the threads' records, unchanged.
BenchRun MergeThreadRuns(std::vector<BenchRun> parts);

// Errors: bad options (kInvalidArgument); the target could not be reached at all, or
// /v1/models failed (kUnavailable); /v1/models answered 401 or 403 (kPermissionDenied). When
// requests were sent and every one failed to connect, the run (its records say why each
// failed) is moved into `unreachable_run` when given, for the caller to report.
StatusOr<BenchRun> RunBench(const BenchOptions& options, BenchRun* unreachable_run = nullptr);

// The JSON body of one request (exposed for tests).
std::string RequestBody(const BenchOptions& o, const std::string& model, const Prompt& p);

}  // namespace latdoc::loadgen
