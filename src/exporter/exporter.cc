#include "exporter/exporter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <tuple>
#include <utility>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "exporter/metric_text.h"
#include "host/collector.h"
#include "base/command_runner.h"
#include "http/client.h"
#include "http/event_loop.h"
#include "http/server.h"
#include "loadgen/record.h"
#include "loadgen/results.h"
#include "net/probe.h"
#include "net/route.h"
#include "rules/net_rules.h"
#include "rules/host_rules.h"
#include "rules/load_rules.h"

namespace latdoc::exporter {
namespace {

// Buckets in seconds: TTFT from a few ms (a warm small model) to 10 s (a queue); ITL from
// 1 ms (speculative decoding) to 1 s (a stalled step).
const std::vector<double> kTtftBounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                         0.5,   0.75, 1,     2.5,  5,     7.5, 10};
const std::vector<double> kItlBounds = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04,
                                        0.06,  0.08,   0.1,   0.25, 0.5,  1};

// The canary's prompt: short, so that it costs the server one tiny prefill.
constexpr const char* kCanaryPrompt =
    "latdoc canary: a short request that times the first token and the tokens after it";

loadgen::BenchOptions CanaryBenchOptions(const ExporterOptions& o, const std::string& model) {
  loadgen::BenchOptions b;
  b.url = o.target;
  b.api_key = o.api_key;
  b.model = model;
  b.concurrency = 1;
  b.num_requests = 1;
  b.ignore_eos = true;
  b.scrape_metrics = false;
  b.client.keep_alive = false;
  // The request's own timeout ends it a little before the collector's deadline, so a server
  // that stalls, or a stream that runs too long, shows as a failed canary (outcome "timeout")
  // and is not left running into the next cycle.
  const int64_t limit_ns = o.collector_timeout_ns * 4 / 5;
  b.client.connect_timeout_ns = limit_ns;
  b.client.first_byte_timeout_ns = limit_ns;
  b.client.idle_timeout_ns = limit_ns;
  b.client.request_timeout_ns = limit_ns;
  b.drain_timeout_ns = limit_ns;
  loadgen::Prompt p;
  p.text = kCanaryPrompt;
  p.input_tokens = 15;  // words, as latdoc sim counts them
  p.output_tokens = o.canary_output_tokens;
  b.prompts = {p};
  b.command = "exporter";
  return b;
}

// One canary request. A request that fails is a result (its outcome is counted); only a
// failure to start is an error. `model` caches the served model between runs; runs of one
// collector never overlap (collector_runner.h), so it needs no lock.
// A canary that ended without a response as one failed request, so the load rules, canary_up
// and the outcome counters see it like any other failure.
loadgen::BenchRun FailedCanary(const ExporterOptions& o, const std::string& model, int64_t start_ns,
                               loadgen::Outcome outcome, std::string error) {
  loadgen::BenchRun failed;
  failed.model = model;
  failed.start_ns = start_ns;
  failed.end_ns = std::max(MonoNowNs(), start_ns + 1);
  loadgen::RequestRecord rec;
  rec.scheduled_ns = rec.sent_ns = start_ns;
  rec.end_ns = failed.end_ns;
  rec.outcome = outcome;
  rec.error = std::move(error);
  rec.requested_output_tokens = o.canary_output_tokens;
  failed.records.push_back(std::move(rec));
  return failed;
}

StatusOr<Observation> RunCanary(const ExporterOptions& o, std::shared_ptr<std::string> model) {
  loadgen::BenchOptions b = CanaryBenchOptions(o, *model);
  const int64_t start = MonoNowNs();
  StatusOr<loadgen::BenchRun> run = loadgen::RunBench(b);
  Observation obs;
  if (run.ok()) {
    if (!run->model.empty()) *model = run->model;
    obs.canary = std::move(*run);
    return obs;
  }
  // Unreachable, refused (a key the server does not take) or /v1/models unusable.
  loadgen::Outcome outcome = loadgen::Outcome::kProtocol;
  if (run.status().code() == StatusCode::kUnavailable) outcome = loadgen::Outcome::kConnect;
  if (run.status().code() == StatusCode::kPermissionDenied) outcome = loadgen::Outcome::kHttpStatus;
  obs.canary = FailedCanary(o, *model, start, outcome, run.status().message());
  return obs;
}

StatusOr<Observation> ScrapeServerMetrics(const ExporterOptions& o) {
  ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(o.target));
  http::EventLoop loop;
  http::ClientOptions co;
  co.keep_alive = false;
  co.connect_timeout_ns = co.first_byte_timeout_ns = co.idle_timeout_ns =
      o.collector_timeout_ns * 4 / 5;
  http::HttpClient client(loop, url, co);
  Status st;
  Observation obs;
  http::FetchAll(client, {"GET", "/metrics", "", {}},
                 [&](const http::ExchangeResult& r, std::string body) {
                   loop.Stop();
                   if (r.failure != http::FailureKind::kNone) {
                     st = Unavailable(fmt::format("{}: {}", url.Spec("/metrics"), r.error));
                   } else if (r.status != 200) {
                     st = Unavailable(
                         fmt::format("{} answered HTTP {}", url.Spec("/metrics"), r.status));
                   } else {
                     obs.snapshot = servermetrics::SnapshotFromText(body, o.model);
                   }
                 });
  loop.Run();
  RETURN_IF_ERROR(st);
  if (obs.snapshot->server.empty())
    return InvalidArgument(fmt::format("{}: no metric of a known server (vLLM, "
                                       "llama.cpp, SGLang, TGI)", url.Spec("/metrics")));
  return obs;
}

StatusOr<Observation> RunHostChecks(const ExporterOptions& o) {
  host::CollectOptions co;
  co.sysroot = o.sysroot;
  co.pid = o.pid;
  host::HostFacts facts = host::CollectHostFacts(co);
  Observation obs;
  obs.findings = rules::JudgeHost(facts, {});
  return obs;
}

// One sample of `latdoc net`'s probe: no idle wait, no bandwidth stream (bounded: three small
// exchanges), then the route and the path MTU; the net rules judge them.
StatusOr<Observation> RunNetCheck(const ExporterOptions& o) {
  ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(o.target));
  net::ProbeOptions po;
  po.url = o.target;
  po.samples = 1;
  po.model = o.model;
  po.api_key = o.api_key;
  po.sample_timeout_ns = std::max<int64_t>(o.collector_timeout_ns / 5, 1'000'000'000);
  po.idle_wait_ns = 0;
  po.stream_tokens = 0;
  ASSIGN_OR_RETURN(net::ProbeFacts probe, net::RunProbe(po));
  net::NetFacts facts;
  facts.probe = std::move(probe);
  facts.path.skipped_reason = "not traced by the exporter";
  auto runner = MakeExecCommandRunner();
  facts.route = net::InspectRoute(*runner, url.host, url.port);
  Observation obs;
  obs.findings = rules::EvaluateNetRules(facts);
  // Only what the path itself says: one sample's keep-alive, jitter and round trip verdicts
  // are `latdoc net`'s, with enough samples, and a failing target is the canary's to report.
  std::erase_if(obs.findings, [](const rules::Finding& f) {
    return f.id != "net.probe_retransmits" && f.id != "net.path_mtu" && f.id != "net.route";
  });
  obs.net = std::move(facts);
  return obs;
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// /proc/self/statm: "size resident shared text lib data dt", in pages.
std::optional<double> ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  if (!(f >> size >> resident)) return std::nullopt;
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

}  // namespace

std::vector<CollectorSpec> DefaultCollectors(const ExporterOptions& o) {
  std::vector<CollectorSpec> out;
  if (!o.target.empty()) {
    if (o.canary) {
      auto model = std::make_shared<std::string>(o.model);
      out.push_back({"canary", 0, [o, model] { return RunCanary(o, model); }});
    }
    out.push_back({"server_metrics", 0, [o] { return ScrapeServerMetrics(o); }});
  }
  if (o.host_period_ns > 0) {
    out.push_back({"host", o.host_period_ns, [o] { return RunHostChecks(o); }});
    if (!o.target.empty() && o.canary)
      out.push_back({"net", o.host_period_ns, [o] { return RunNetCheck(o); }});
  }
  return out;
}

FixedHistogram::FixedHistogram(std::vector<double> bounds)
    : upper_bounds(std::move(bounds)), counts(upper_bounds.size() + 1, 0) {}

void FixedHistogram::Record(double v) {
  size_t i = std::lower_bound(upper_bounds.begin(), upper_bounds.end(), v) - upper_bounds.begin();
  ++counts[i];
  sum += v;
  ++count;
}

ExporterState::ExporterState() : canary_ttft_s(kTtftBounds), canary_itl_s(kItlBounds) {}

namespace {

// The findings of the latest run of each rule.
void AddFindingMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  // Findings: one series per rule, layer and severity; the value counts the rule's findings
  // at that severity (one per GPU or NIC for per-subject rules).
  m.Family("latdoc_finding", K::kGauge,
           "Findings of the latest run of each rule, by rule id, layer and severity "
           "(the number of subjects, e.g. GPUs, the rule found at that severity).");
  std::map<std::tuple<std::string, std::string, std::string>, int> by_key;
  for (const rules::Finding& f : s.findings) {
    ++by_key[{f.id, std::string(rules::LayerName(f.layer)),
              std::string(rules::SeverityName(f.severity))}];
  }
  for (const auto& [k, n] : by_key) {
    m.Add("latdoc_finding",
          {{"rule", std::get<0>(k)}, {"layer", std::get<1>(k)}, {"severity", std::get<2>(k)}},
          n);
  }
}

// The canary's requests, outcomes and latency histograms.
void AddCanaryMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_canary_requests_total", K::kCounter,
           "Canary requests sent, by outcome (ok, connect, timeout, http_status, reset, ...).");
  for (const auto& [outcome, n] : s.canary_outcomes)
    m.Add("latdoc_canary_requests_total", {{"outcome", outcome}}, double(n));
  m.Family("latdoc_canary_up", K::kGauge, "1 when the latest canary request succeeded.");
  if (s.canary_last_ok) m.Add("latdoc_canary_up", {}, *s.canary_last_ok ? 1 : 0);
  m.Family("latdoc_canary_max_requests_per_second", K::kGauge,
           "Upper bound of the canary's request rate (one request per interval).");
  m.Add("latdoc_canary_max_requests_per_second", {}, s.canary_max_rate_per_s);
  auto hist = [&](const char* name, const char* help, const FixedHistogram& h) {
    m.Family(name, K::kHistogram, help);
    std::vector<uint64_t> cum;
    uint64_t c = 0;
    for (size_t i = 0; i < h.upper_bounds.size(); ++i) cum.push_back(c += h.counts[i]);
    m.AddHistogram(name, {}, h.upper_bounds, cum, h.sum, h.count);
  };
  hist("latdoc_canary_ttft_seconds",
       "Time to first token of the canary, measured by the client (first content chunk).",
       s.canary_ttft_s);
  hist("latdoc_canary_itl_seconds", "Inter-token latency of the canary's stream.",
       s.canary_itl_s);
}

// The server's /metrics as scraped: up, restarts, queue and KV cache.
void AddServerMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_server_up", K::kGauge,
           "1 when the latest scrape of the server's /metrics worked.");
  if (s.server_up) m.Add("latdoc_server_up", {}, *s.server_up ? 1 : 0);
  m.Family("latdoc_server_restarts_total", K::kCounter,
           "Scrapes of the server's /metrics whose counters went down since the last one.");
  if (s.server_up) m.Add("latdoc_server_restarts_total", {}, double(s.server_restarts));
  m.Family("latdoc_server_requests_running", K::kGauge, "Requests the server is running.");
  if (s.server_running) m.Add("latdoc_server_requests_running", {}, *s.server_running);
  m.Family("latdoc_server_requests_waiting", K::kGauge, "Requests waiting in the server's queue.");
  if (s.server_waiting) m.Add("latdoc_server_requests_waiting", {}, *s.server_waiting);
  m.Family("latdoc_server_kv_cache_usage_ratio", K::kGauge,
           "KV cache in use, 0..1 (the fullest engine).");
  if (s.server_kv_usage) m.Add("latdoc_server_kv_cache_usage_ratio", {}, *s.server_kv_usage);
}

// The mean TTFT on each side and its decomposition.
void AddTtftMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_ttft_mean_seconds", K::kGauge,
           "Mean TTFT in the latest interval: side=client (the canary) or server (its histogram).");
  if (s.ttft.client_s) m.Add("latdoc_ttft_mean_seconds", {{"side", "client"}}, *s.ttft.client_s);
  if (s.ttft.server_s) m.Add("latdoc_ttft_mean_seconds", {{"side", "server"}}, *s.ttft.server_s);
  m.Family("latdoc_ttft_decomposition_seconds", K::kGauge,
           "Where the mean TTFT of the latest interval went: queue, prefill and server_other from "
           "the server's histograms, network_front_end = client TTFT - server TTFT.");
  auto part = [&](const char* c, const std::optional<double>& v) {
    if (v) m.Add("latdoc_ttft_decomposition_seconds", {{"component", c}}, *v);
  };
  part("queue", s.ttft.queue_s);
  part("prefill", s.ttft.prefill_s);
  part("server_other", s.ttft.server_other_s);
  part("network_front_end", s.ttft.network_front_end_s);
}

// The net collector's TCP counters and MTUs.
void AddNetMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_net_tcp_segments_sent_total", K::kCounter,
           "TCP segments the net collector's probe connections sent (TCP_INFO segs_out).");
  m.Add("latdoc_net_tcp_segments_sent_total", {}, double(s.net_tcp_segments_sent));
  m.Family("latdoc_net_tcp_retransmitted_segments_total", K::kCounter,
           "TCP segments the net collector's probe connections retransmitted (TCP_INFO "
           "total_retrans).");
  m.Add("latdoc_net_tcp_retransmitted_segments_total", {}, double(s.net_tcp_retransmitted_segments));
  m.Family("latdoc_net_tcp_srtt_seconds", K::kGauge,
           "The largest smoothed RTT of the latest net probe's connections.");
  if (s.net_tcp_srtt_s) m.Add("latdoc_net_tcp_srtt_seconds", {}, *s.net_tcp_srtt_s);
  m.Family("latdoc_net_path_mtu_bytes", K::kGauge,
           "Path MTU to the target (UDP probe with Don't Fragment, as tracepath).");
  if (s.net_path_mtu_bytes) m.Add("latdoc_net_path_mtu_bytes", {}, *s.net_path_mtu_bytes);
  m.Family("latdoc_net_interface_mtu_bytes", K::kGauge,
           "MTU of the interface the route to the target leaves by.");
  if (s.net_interface_mtu_bytes) m.Add("latdoc_net_interface_mtu_bytes", {}, *s.net_interface_mtu_bytes);
}

// Per collector: runs, errors, timeouts, skips, and the latest run.
void AddCollectorMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_collector_runs_total", K::kCounter, "Collector runs started.");
  m.Family("latdoc_collector_errors_total", K::kCounter, "Collector runs that failed.");
  m.Family("latdoc_collector_timeouts_total", K::kCounter,
           "Collector runs that gave no result within the timeout.");
  m.Family("latdoc_collector_skipped_total", K::kCounter,
           "Cycles a collector was skipped because a timed-out run had not ended.");
  m.Family("latdoc_collector_up", K::kGauge, "1 when the collector's latest run gave a result.");
  m.Family("latdoc_collector_duration_seconds", K::kGauge, "Wall time of the latest run.");
  m.Family("latdoc_collector_period_seconds", K::kGauge,
           "How often the collector runs (the interval for cheap collectors).");
  for (const auto& [name, c] : s.collectors) {
    MetricLabels l = {{"collector", name}};
    m.Add("latdoc_collector_runs_total", l, double(c.runs));
    m.Add("latdoc_collector_errors_total", l, double(c.errors));
    m.Add("latdoc_collector_timeouts_total", l, double(c.timeouts));
    m.Add("latdoc_collector_skipped_total", l, double(c.skipped_busy));
    m.Add("latdoc_collector_up", l, c.last_ok ? 1 : 0);
    m.Add("latdoc_collector_duration_seconds", l, c.last_duration_s);
    m.Add("latdoc_collector_period_seconds", l,
          c.period_ns > 0 ? NsToSec(c.period_ns) : s.interval_s);
  }
}

// The exporter's own cycles and resources.
void AddExporterSelfMetrics(const ExporterState& s, MetricText& m) {
  using K = MetricKind;
  m.Family("latdoc_exporter_cycles_total", K::kCounter, "Collection cycles completed.");
  m.Add("latdoc_exporter_cycles_total", {}, double(s.cycles));
  m.Family("latdoc_exporter_skipped_cycles_total", K::kCounter,
           "Cycles not run because the previous one overran by more than an interval.");
  m.Add("latdoc_exporter_skipped_cycles_total", {}, double(s.skipped_ticks));
  m.Family("latdoc_exporter_interval_seconds", K::kGauge, "The collection interval.");
  m.Add("latdoc_exporter_interval_seconds", {}, s.interval_s);
  m.Family("latdoc_exporter_cycle_duration_seconds", K::kGauge, "Wall time of the latest cycle.");
  m.Add("latdoc_exporter_cycle_duration_seconds", {}, s.last_cycle_duration_s);
  m.Family("latdoc_exporter_last_cycle_timestamp_seconds", K::kGauge,
           "Unix time at which the latest cycle completed.");
  if (s.last_cycle_unix_s)
    m.Add("latdoc_exporter_last_cycle_timestamp_seconds", {}, *s.last_cycle_unix_s);
  m.Family("latdoc_exporter_cpu_seconds_total", K::kCounter,
           "CPU time (user + system) used by the exporter process.");
  m.Add("latdoc_exporter_cpu_seconds_total", {}, s.cpu_s);
  m.Family("latdoc_exporter_resident_memory_bytes", K::kGauge,
           "Resident memory of the exporter process.");
  if (s.rss_bytes) m.Add("latdoc_exporter_resident_memory_bytes", {}, *s.rss_bytes);
}

}  // namespace

std::string RenderMetrics(const ExporterState& s) {
  MetricText m;
  m.Family("latdoc_exporter_info", MetricKind::kGauge,
           "latdoc exporter version and target (always 1).");
  m.Add("latdoc_exporter_info", {{"version", s.version}, {"target", s.target}}, 1);
  AddFindingMetrics(s, m);
  AddCanaryMetrics(s, m);
  AddServerMetrics(s, m);
  AddTtftMetrics(s, m);
  AddNetMetrics(s, m);
  AddCollectorMetrics(s, m);
  AddExporterSelfMetrics(s, m);
  return m.Render();
}

struct Exporter::Server {
  http::EventLoop loop;
  std::unique_ptr<http::Server> server;
  std::thread thread;
};

Exporter::Exporter(ExporterOptions options, std::vector<CollectorSpec> collectors)
    : options_(std::move(options)), specs_(std::move(collectors)) {
  for (const CollectorSpec& s : specs_) {
    runners_.push_back(std::make_unique<CollectorRunner>(s.name, options_.collector_timeout_ns));
    state_.collectors[s.name].period_ns = s.period_ns;
  }
  state_.version = options_.version;
  // The target without what a URL may carry besides the server (a query's tokens).
  if (auto url = http::ParseUrl(options_.target); url.ok()) {
    state_.target = url->Origin() + url->base_path;
  } else {
    state_.target = options_.target;
  }
  state_.interval_s = NsToSec(options_.interval_ns);
  bool canary = std::any_of(specs_.begin(), specs_.end(),
                            [](const CollectorSpec& s) { return s.name == "canary"; });
  state_.canary_max_rate_per_s = canary ? 1.0 / state_.interval_s : 0;
  Publish();
}

Exporter::~Exporter() {
  Stop();
  if (server_) {
    Server* s = server_.get();
    s->loop.Post([s] {
      s->server->Stop();
      s->loop.Stop();
    });
    if (s->thread.joinable()) s->thread.join();
  }
}

Status Exporter::Start() {
  server_ = std::make_unique<Server>();
  http::ServerOptions so;
  so.host = options_.listen_host;
  so.port = options_.listen_port;
  so.server_header = "latdoc-exporter";
  server_->server = std::make_unique<http::Server>(
      server_->loop, so,
      [this](const http::Request& req, std::shared_ptr<http::ResponseStream> rs) {
        if (req.method != "GET" && req.method != "HEAD") {
          rs->Send(405, "text/plain; charset=utf-8", "method not allowed: GET or HEAD\n",
                   {{"allow", "GET, HEAD"}});
        } else if (req.path == "/metrics") {
          std::shared_ptr<const std::string> p = page();
          rs->Send(200, "text/plain; version=0.0.4; charset=utf-8", *p);
        } else if (req.path == "/") {
          rs->Send(200, "text/plain; charset=utf-8", "latdoc exporter: metrics at /metrics\n");
        } else {
          rs->Send(404, "text/plain; charset=utf-8", "not found: try /metrics\n");
        }
      });
  Status st = server_->server->Listen();
  if (!st.ok()) {
    server_.reset();
    return st;
  }
  port_ = server_->server->port();
  server_->loop.OnTerminationSignal([this](int) { Stop(); });
  Server* s = server_.get();
  s->thread = std::thread([s] { s->loop.Run(); });
  return Status::Ok();
}

void Exporter::Stop() {
  std::lock_guard lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

std::shared_ptr<const std::string> Exporter::page() const {
  std::lock_guard lock(mu_);
  return page_;
}

void Exporter::RunUntilStopped() {
  schedule_.emplace(MonoNowNs(), options_.interval_ns);
  for (;;) {
    const int64_t tick = schedule_->NextCycleNs(MonoNowNs());
    {
      std::unique_lock lock(mu_);
      const int64_t wait_ns = std::max<int64_t>(0, tick - MonoNowNs());
      cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns), [&] { return stop_; });
      if (stop_) return;
    }
    // Woken early only by Stop(); a timer that fires late still stands for `tick`.
    if (MonoNowNs() < tick) continue;
    schedule_->CycleStarted(MonoNowNs());
    state_.skipped_ticks = schedule_->skipped_ticks();
    RunCycle(tick);
  }
}

void Exporter::Apply(const std::string& name, Observation obs) {
  findings_by_source_[name] = std::move(obs.findings);
  if (obs.canary) canary_run_ = std::move(obs.canary);
  if (obs.net) {
    const net::TcpFacts& t = obs.net->probe.tcp;
    state_.net_tcp_segments_sent += t.segs_out;
    state_.net_tcp_retransmitted_segments += t.retrans_segs;
    state_.net_tcp_srtt_s = t.srtt_max_ms ? std::optional<double>(*t.srtt_max_ms / 1e3) : std::nullopt;
    const net::RouteFacts& r = obs.net->route;
    state_.net_path_mtu_bytes = r.path_mtu_bytes ? std::optional<double>(*r.path_mtu_bytes) : std::nullopt;
    state_.net_interface_mtu_bytes =
        r.iface_mtu_bytes ? std::optional<double>(*r.iface_mtu_bytes) : std::nullopt;
  }
  if (obs.snapshot) {
    // Against the last scrape that worked, even across failed ones: a real restart (loading
    // the model) usually makes a scrape or two fail, which breaks the chain of deltas below.
    if (last_good_snapshot_ && servermetrics::Delta(*last_good_snapshot_, *obs.snapshot).counter_reset)
      ++state_.server_restarts;
    last_good_snapshot_ = *obs.snapshot;
    prev_snapshot_ = std::move(snapshot_);
    snapshot_ = std::move(obs.snapshot);
    snapshot_fresh_ = true;
  }
}

// The load rules on this cycle's canary and /metrics delta: the same rules `latdoc bench`
// and `diagnose` apply, on the same JSON document (a one-request bench run).
void Exporter::JudgeLoad(std::optional<loadgen::BenchRun> canary) {
  std::optional<servermetrics::SnapshotDelta> delta;
  if (snapshot_fresh_ && prev_snapshot_ && snapshot_)
    delta = servermetrics::Delta(*prev_snapshot_, *snapshot_);

  std::optional<double> client_ttft_s;
  if (canary) {
    for (const loadgen::RequestRecord& r : canary->records) {
      state_.canary_outcomes[std::string(loadgen::OutcomeName(r.outcome))]++;
      state_.canary_last_ok = r.outcome == loadgen::Outcome::kOk;
      if (r.outcome != loadgen::Outcome::kOk)
        state_.canary_last_error = fmt::format("{}: {}", loadgen::OutcomeName(r.outcome), r.error);
      if (r.outcome != loadgen::Outcome::kOk || r.first_token_ns < 0) continue;
      const double ttft_s = NsToSec(r.first_token_ns - r.sent_ns);
      state_.canary_ttft_s.Record(ttft_s);
      client_ttft_s = ttft_s;
      // A chunk carrying k tokens stands for k equal inter-token gaps (DESIGN.md).
      for (size_t i = 1; i < r.chunks.size(); ++i) {
        const int k = std::max(1, r.chunks[i].second);
        const double gap_s = NsToSec(r.chunks[i].first - r.chunks[i - 1].first) / k;
        for (int j = 0; j < k; ++j) state_.canary_itl_s.Record(gap_s);
      }
    }
    loadgen::BenchRun run = std::move(*canary);
    if (delta && !snapshot_->server.empty()) {
      run.before = *prev_snapshot_;
      run.after = *snapshot_;
      run.metrics_available = true;
    }
    loadgen::BenchOptions bo = CanaryBenchOptions(options_, run.model);
    loadgen::BenchSummary summary = loadgen::SummarizeRun(run, bo, {});
    findings_by_source_["load"] = rules::EvaluateLoadRules(nullptr, &summary.facts);
  }
  state_.ttft = delta ? DecomposeTtft(*delta, client_ttft_s, snapshot_ ? snapshot_->kind : servermetrics::ServerKind::kUnknown) : TtftDecomposition{};
  if (!delta) state_.ttft.client_s = client_ttft_s;
}

void Exporter::RunCycle(int64_t tick_ns) {
  const int64_t start = MonoNowNs();
  snapshot_fresh_ = false;
  canary_run_.reset();
  for (size_t i = 0; i < specs_.size(); ++i) {
    const CollectorSpec& spec = specs_[i];
    if (spec.period_ns > 0) {
      std::optional<int64_t>& last = last_tick_[spec.name];
      if (!Schedule::ExpensiveDue(last, spec.period_ns, tick_ns)) continue;
      last = tick_ns;
    }
    Observation obs;
    RunReport rep = runners_[i]->Run<Observation>(spec.run, &obs);
    CollectorStats& st = state_.collectors[spec.name];
    st.last_duration_s = NsToSec(rep.dur_ns);
    const bool was_ok = st.last_ok || st.runs == 0;
    st.last_ok = rep.outcome == RunOutcome::kOk;
    switch (rep.outcome) {
      case RunOutcome::kOk: ++st.runs; Apply(spec.name, std::move(obs)); break;
      case RunOutcome::kError: ++st.runs; ++st.errors; break;
      case RunOutcome::kTimeout: ++st.runs; ++st.timeouts; break;
      case RunOutcome::kBusy: ++st.skipped_busy; break;
    }
    if (spec.name == "canary" && rep.outcome == RunOutcome::kTimeout) {
      // The canary's own timeouts bound each wait (connect, first byte, between chunks), not
      // the whole stream: a slow stream outlives the deadline. That is a failed canary too,
      // judged by the load rules, not a silence that leaves the last run's findings standing.
      canary_run_ = FailedCanary(options_, "", MonoNowNs() - rep.dur_ns, loadgen::Outcome::kTimeout,
                                 rep.error);
    }
    // Say so once when a collector starts failing, not every cycle.
    if (!st.last_ok && was_ok) fmt::print(stderr, "latdoc exporter: {}\n", rep.error);
  }
  if (!options_.target.empty()) state_.server_up = snapshot_fresh_;
  if (!snapshot_fresh_) {
    // A missed scrape breaks the chain of deltas: the next one starts afresh.
    prev_snapshot_.reset();
    snapshot_.reset();
  }
  JudgeLoad(std::move(canary_run_));
  canary_run_.reset();
  state_.server_running = snapshot_ ? snapshot_->requests_running : std::nullopt;
  state_.server_waiting = snapshot_ ? snapshot_->requests_waiting : std::nullopt;
  state_.server_kv_usage = snapshot_ ? snapshot_->kv_cache_usage_fraction : std::nullopt;
  ++state_.cycles;
  state_.last_cycle_duration_s = NsToSec(MonoNowNs() - start);
  state_.last_cycle_unix_s = NsToSec(WallNowNs());
  Publish();
}

void Exporter::Publish() {
  state_.findings.clear();
  for (const auto& [source, fs] : findings_by_source_)
    state_.findings.insert(state_.findings.end(), fs.begin(), fs.end());
  state_.cpu_s = CpuSeconds();
  state_.rss_bytes = ResidentBytes();
  auto p = std::make_shared<const std::string>(RenderMetrics(state_));
  std::lock_guard lock(mu_);
  page_ = std::move(p);
}

}  // namespace latdoc::exporter
