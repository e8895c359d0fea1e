// A virtual-time runner of the simulator's engine (sim/engine.h): a load generator drives the
// same Engine that `latdoc sim` serves, on a simulated clock, with no sockets and no sleeping,
// and returns what `latdoc bench` would have measured: per-request TTFT, ITL, E2EL and the
// run's throughput.
//
// The clock follows SimServer's engine driver (sim/sim_server.cc): a step starts when a request
// arrives at an idle engine, or when the previous step was due; requests that arrive during a
// step join the next one; a step's tokens reach the client at the step's end. A request reaches
// the engine `front_ms` after the client sends it (HTTP, parsing, the API server); in closed
// loop a client sends its next request as it receives the last token of its previous one.
//
// The workload is bench's random dataset (loadgen/workload.cc): prompt and output lengths
// uniform in [len x (1 - range_ratio), len x (1 + range_ratio)], ignore_eos (every request
// generates its output length). Deterministic for a seed. Not thread-safe; each call is
// independent (callers may run several in parallel threads).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "sim/engine.h"

namespace latdoc::whatif {

struct Workload {
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0;
  uint64_t seed = 0;
};

struct VirtualRunOptions {
  sim::EngineConfig engine;
  Workload workload;
  bool rate_mode = false;   // load = requests/s (Poisson arrivals) instead of concurrency
  double load = 1;          // concurrency (closed loop) or request rate
  // The run is `rounds` runs of `round_requests` each, one after the other, each starting
  // from an idle server as `latdoc sweep` measures a step (a bench run per round; closed loop:
  // all clients send at once). Metrics are over every round.
  int round_requests = 400;
  int rounds = 1;
  // > 0: stop sending once this much virtual time has passed (the requests in flight finish
  // and count); bounds a long run instead of round_requests.
  double duration_s = 0;
  double front_ms = 0;      // client send -> engine arrival
};

// What bench reports (its JSON keys, in ms and per second), over the completed requests.
struct RunMetrics {
  int completed = 0;
  double duration_s = 0;
  double mean_ttft_ms = 0, median_ttft_ms = 0, p99_ttft_ms = 0;
  double mean_tpot_ms = 0, median_tpot_ms = 0, p99_tpot_ms = 0;
  double mean_itl_ms = 0, median_itl_ms = 0, p99_itl_ms = 0;
  double mean_e2el_ms = 0, median_e2el_ms = 0, p99_e2el_ms = 0;
  double output_throughput = 0;   // output tokens/s
  double request_throughput = 0;  // requests/s
  // What the server's /metrics would show.
  int max_running = 0;
  double max_kv_cache_usage = 0;
  uint64_t preemptions = 0;
  uint64_t steps = 0;
  double mean_step_ms = 0;
};

// Errors: kInvalidArgument for a load, workload or engine config that cannot run (what and
// why: a prompt longer than the token budget without chunked prefill, a request needing more
// KV blocks than exist).
StatusOr<RunMetrics> VirtualRun(const VirtualRunOptions& options);

}  // namespace latdoc::whatif
