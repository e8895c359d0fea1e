// Exporter: the engine of `latdoc exporter`, continuous diagnosis served to Prometheus.
//
// Every interval it runs one cycle: the collectors that are due (schedule.h), each on its own
// thread with a deadline (collector_runner.h), in order:
//   canary          one short streamed completion against the target (loadgen's runner), for
//                   TTFT and ITL measured from outside; its failures are data, not errors;
//   server_metrics  a scrape of the target's /metrics (servermetrics), for the TTFT split and
//                   the load rules;
//   host            `latdoc doctor`'s collectors and rules (host facts -> JudgeHost), the
//                   expensive one, run once per `host_period_ns`;
//   net             `latdoc net`'s probe with one sample (a cheap GET and two one-token
//                   completions, each connection's TCP_INFO read) and the route and path MTU
//                   check, judged by the net rules; once per `host_period_ns` too.
// Then it judges the canary and the /metrics delta with the load rules, splits TTFT
// (ttft_decomposition.h), renders the page (RenderMetrics) and publishes it. A scrape is
// answered from the last published page, so a slow or hung collection never delays it.
// Nothing is written to disk.
//
// Bounded cost: one canary request of `canary_output_tokens` tokens per interval at most
// (intervals are at least 1 s, enforced by the command line), one /metrics scrape per
// interval, the host checks once per host period; the process's own CPU and RSS are served.
//
// Threading: RunCycle() and RunUntilStopped() on one thread (the cycle thread); the HTTP
// server on its own EventLoop thread (Start()); page() and Stop() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "exporter/collector_runner.h"
#include "exporter/schedule.h"
#include "exporter/ttft_decomposition.h"
#include "loadgen/runner.h"
#include "net/net_facts.h"
#include "rules/finding.h"
#include "servermetrics/server_snapshot.h"

namespace latdoc::exporter {

struct ExporterOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t listen_port = 9464;            // 0: any free port
  std::string target;                     // the server's base URL; "" runs the host checks only
  std::string model;                      // "" : the first of /v1/models
  std::string api_key;                    // sent by the canary as a Bearer token; never shown
  int64_t interval_ns = 15'000'000'000;
  int64_t host_period_ns = 60'000'000'000;  // 0: no host checks
  int64_t collector_timeout_ns = 10'000'000'000;
  int canary_output_tokens = 16;
  bool canary = true;
  std::string sysroot = "/";              // host checks read this tree (doctor --sysroot)
  std::optional<int64_t> pid;             // the server process for the host checks
  std::string version;                    // latdoc_build_info
};

// What one collector run yields; each collector fills its part.
struct Observation {
  std::vector<rules::Finding> findings;               // host rules
  std::optional<loadgen::BenchRun> canary;
  std::optional<servermetrics::ServerSnapshot> snapshot;
  std::optional<net::NetFacts> net;
};

struct CollectorSpec {
  std::string name;        // "canary", "server_metrics", "host": the `collector` label
  int64_t period_ns = 0;   // 0: cheap, every cycle; > 0: expensive, once per period
  std::function<StatusOr<Observation>()> run;  // must own what it touches (collector_runner.h)
};

// The canary, server_metrics and host collectors for `options`.
std::vector<CollectorSpec> DefaultCollectors(const ExporterOptions& options);

// A Prometheus histogram with fixed bounds (seconds).
struct FixedHistogram {
  std::vector<double> upper_bounds;  // ascending, finite
  std::vector<uint64_t> counts;      // per bucket (not cumulative); the last is +Inf
  double sum = 0;
  uint64_t count = 0;

  explicit FixedHistogram(std::vector<double> bounds);
  void Record(double v);
};

struct CollectorStats {
  uint64_t runs = 0, errors = 0, timeouts = 0, skipped_busy = 0;
  double last_duration_s = 0;
  bool last_ok = false;
  int64_t period_ns = 0;
};

// Everything the page shows, as plain data (RenderMetrics is pure, for golden tests).
struct ExporterState {
  std::string version;
  std::string target;
  double interval_s = 0;
  double canary_max_rate_per_s = 0;   // 1 / interval when the canary is on, else 0
  std::vector<rules::Finding> findings;  // host and load rules, latest of each
  std::map<std::string, uint64_t> canary_outcomes;  // "ok", "connect", "http_status", ...
  FixedHistogram canary_ttft_s;
  FixedHistogram canary_itl_s;
  std::optional<bool> canary_last_ok;
  std::string canary_last_error;       // "reset: ..." of the latest failed canary; never served
  std::optional<bool> server_up;      // nullopt: no target
  std::optional<double> server_running, server_waiting, server_kv_usage;
  // The net collector: its probes' TCP segments, summed over runs, and the latest path.
  uint64_t net_tcp_segments_sent = 0, net_tcp_retransmitted_segments = 0;
  std::optional<double> net_tcp_srtt_s;
  std::optional<double> net_path_mtu_bytes, net_interface_mtu_bytes;
  uint64_t server_restarts = 0;       // scrapes whose counters went down since the last one
  TtftDecomposition ttft;
  std::map<std::string, CollectorStats> collectors;
  uint64_t cycles = 0, skipped_ticks = 0;
  double last_cycle_duration_s = 0;
  std::optional<double> last_cycle_unix_s;
  double cpu_s = 0;                   // this process, user + system
  std::optional<double> rss_bytes;

  ExporterState();
};

// The /metrics page for `state`.
std::string RenderMetrics(const ExporterState& state);

class Exporter {
 public:
  Exporter(ExporterOptions options, std::vector<CollectorSpec> collectors);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Listens and serves the last page on its own thread. Errors name the address.
  Status Start();
  uint16_t port() const { return port_; }
  // Runs cycles on the schedule until Stop() (or SIGINT/SIGTERM after Start()).
  void RunUntilStopped();
  // One cycle for the tick at `tick_ns` (a CLOCK_MONOTONIC time): runs what is due, then
  // publishes a new page.
  void RunCycle(int64_t tick_ns);
  void Stop();

  // The last published page (never null: a page with the exporter's own metrics is
  // published at construction).
  std::shared_ptr<const std::string> page() const;
  const ExporterState& state() const { return state_; }  // cycle thread only

 private:
  void Apply(const std::string& name, Observation obs);
  void JudgeLoad(std::optional<loadgen::BenchRun> canary);
  void Publish();

  ExporterOptions options_;
  std::vector<CollectorSpec> specs_;
  std::vector<std::unique_ptr<CollectorRunner>> runners_;
  std::map<std::string, std::optional<int64_t>> last_tick_;  // expensive collectors
  std::map<std::string, std::vector<rules::Finding>> findings_by_source_;
  std::optional<servermetrics::ServerSnapshot> prev_snapshot_, snapshot_;
  std::optional<servermetrics::ServerSnapshot> last_good_snapshot_;  // kept across failed scrapes
  bool snapshot_fresh_ = false;
  std::optional<loadgen::BenchRun> canary_run_;
  std::optional<Schedule> schedule_;
  ExporterState state_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::shared_ptr<const std::string> page_;

  struct Server;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
};

}  // namespace latdoc::exporter
