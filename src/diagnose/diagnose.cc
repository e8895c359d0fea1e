#include "diagnose/diagnose.h"
#include "diagnose/profile_at.h"
#include "diagnose/sessions_step.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <fmt/core.h>

#include "base/clock.h"
#include "diagnose/attribution_step.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "host/collector.h"
#include "base/command_runner.h"
#include "host/host_facts.h"
#include "http/client.h"
#include "loadgen/results.h"
#include "loadgen/sweep.h"
#include "loadgen/sweep_report.h"
#include "logs/log_analyzer.h"
#include "logs/log_facts.h"
#include "net/probe.h"
#include "net/route.h"
#include "report/findings_text.h"
#include "rules/diagnosis_rules.h"
#include "rules/host_rules.h"
#include "rules/load_rules.h"
#include "rules/log_rules.h"
#include "rules/net_rules.h"
#include "rules/sweep_rules.h"
#include "rules/trace_rules.h"
#include "servermetrics/server_dialect.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"
#include "whatif/effects.h"

namespace latdoc::diagnose {
namespace {

using nlohmann::ordered_json;

void Say(const DiagnoseOptions& o, const std::string& msg) {
  if (o.progress) fmt::print(stderr, "[latdoc diagnose] {}\n", msg);
}

void Append(std::vector<rules::Finding>& all, std::vector<rules::Finding> more) {
  for (auto& f : more) all.push_back(std::move(f));
}

ordered_json FindingsJson(const std::vector<rules::Finding>& fs) {
  ordered_json a = ordered_json::array();
  for (const auto& f : fs) a.push_back(ordered_json::parse(JsonText(rules::ToJson(f))));
  return a;
}

// The sweep (--sweep): steps up the load from 1 to `sweep_max` concurrent requests with the same
// workload as the load step, as `latdoc sweep` does. Returns its document (latdoc.sweep/1) and
// one finding that compares the target load with the knee, or null with `why` set.
ordered_json SweepStep(const DiagnoseOptions& o, std::vector<rules::Finding>& out,
                       std::optional<int64_t>* knee_concurrency, std::string* why,
                       int* stop_signal) {
  loadgen::BenchOptions b = o.bench;
  b.url = o.url;
  b.command = "diagnose";
  b.request_rate = 0;
  b.duration_s = 0;
  b.progress = false;
  // As `latdoc sweep`: the server's running batch at each step (its recommendations rest on
  // it) is read from /metrics 10 times a second; once a second misses short rounds.
  b.scrape_interval_s = 0.1;
  loadgen::RandomWorkloadOptions w = o.workload;
  w.seed = o.workload.seed + 2;
  loadgen::SweepOptions s;
  s.hi = o.sweep_max;
  s.slo = o.slo;
  s.input_len = o.workload.input_len;
  s.output_len = o.workload.output_len;
  auto runner = loadgen::MakeBenchStepRunner(b, w);
  auto r = loadgen::RunSweep(*runner, s, [&](const loadgen::SweepStep& step) {
    Say(o, fmt::format("sweep: concurrency {:g}", step.load));
  });
  *stop_signal = runner->stop_signal();
  runner.reset();
  if (!r.ok()) {
    *why = r.status().message();
    return nullptr;
  }
  rules::AddSweepAdvice(s, *r);
  loadgen::SweepContext ctx;
  ctx.url = o.url;
  ordered_json doc = loadgen::SweepJson(*r, s, ctx);
  doc["workload"] = loadgen::SweepWorkloadJson(w, "");

  if (r->knee_index && r->knee_reached) {
    *knee_concurrency = static_cast<int64_t>(r->steps[*r->knee_index].load);
  }
  out.push_back(rules::SweepKneeFinding(*r, o.concurrency, o.sweep_max));
  return doc;
}

// One load step: returns the bench document, or null with `why` set.
// `capture`: when given, the run is kept for stall attribution, /metrics is scraped 10 times a
// second, and under --local the host is sampled during it (attribution_step.h).
ordered_json LoadStep(const DiagnoseOptions& o, int concurrency, int requests, uint64_t seed,
                      std::string* why, bool* unreachable, LoadCapture* capture = nullptr) {
  loadgen::BenchOptions b = o.bench;
  b.url = o.url;
  b.command = "diagnose";
  b.concurrency = concurrency;
  b.request_rate = 0;
  b.num_requests = requests;
  b.duration_s = 0;
  b.progress = false;
  loadgen::RandomWorkloadOptions w = o.workload;
  w.seed = seed;
  b.prompts = loadgen::RandomPrompts(w, size_t(requests));
  std::optional<attribution::HostSampler> sampler;
  if (capture) {
    b.scrape_interval_s = 0.1;
    capture->clock = {WallNowNs(), MonoNowNs()};
    if (o.local) sampler.emplace(o.sysroot, o.logs.empty() ? std::string() : o.logs.front(), o.url);
    if (sampler) sampler->Start();
    if (o.profile_load) capture->profile = StartLoadProfile(o.url, b, o.profile_dir);
  }
  auto run = loadgen::RunBench(b);
  if (capture && o.profile_load) StopLoadProfile(o.url, b, &capture->profile);
  if (sampler) {
    sampler->Stop();
    capture->host = sampler->samples();
    capture->server_cpu = sampler->server_cpu();
  }
  if (!run.ok()) {
    *why = run.status().message();
    *unreachable = run.status().code() == StatusCode::kUnavailable;
    return nullptr;
  }
  loadgen::ResultOptions ro;
  ro.slo = o.slo;
  ordered_json out = loadgen::SummarizeRun(*run, b, ro).json;
  if (capture) capture->run = std::move(*run);
  return out;
}

std::optional<double> NumAt(const ordered_json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// No sample got an answer from the server: every one failed before its first request was
// answered (name lookup, connect, TLS, or no first byte in time). A server that answers with
// errors, or resets a completion, is reachable: the load test runs and counts its failures.
bool NoSampleReached(const net::ProbeFacts& p) {
  if (p.samples.empty()) return false;
  for (const auto& s : p.samples) {
    if (s.failure == net::FailureReason::kNone || s.ttfb_ms || s.failed_phase != "cheap" ||
        s.failure == net::FailureReason::kHttpStatus || s.failure == net::FailureReason::kProtocol)
      return false;
  }
  return true;
}

// A log finding judged from the server's logged startup flags (the `non-default args` line),
// which the server's own command line, when the doctor finds it, replaces. What the log
// measured (KV pressure, preemptions, request logging...) stays.
bool FromLoggedFlags(std::string_view id) { return id.rfind("config.", 0) == 0; }

// The network layer: the target probed (and the direct path, when given: then `probe` is the
// direct path and `compare_probe` the target). Returns the facts, or null with the layer status
// in `status`.
std::optional<net::NetFacts> ProbeNetwork(const DiagnoseOptions& o, std::string* status) {
  net::ProbeOptions po;
  po.url = o.url;
  po.samples = o.net_samples;
  po.insecure = o.bench.client.insecure;
  po.model = o.bench.model;
  po.api_key = o.bench.api_key;  // as the load sends it
  po.sample_timeout_ns = o.net_timeout_ns;
  po.idle_wait_ns = 0;     // holding a connection idle for seconds: `latdoc net` does it
  po.stream_tokens = 0;    // bandwidth needs a link rate: `latdoc net --link-mbps`
  auto p = net::RunProbe(po);
  if (!p.ok()) {
    *status = "failed: " + p.status().message();
    return std::nullopt;
  }
  net::NetFacts f;
  if (o.direct_url.empty()) {
    f.probe = std::move(*p);
  } else {
    // As `latdoc net --url DIRECT --compare TARGET`: B - A is what the gateway adds.
    po.url = o.direct_url;
    auto d = net::RunProbe(po);
    if (!d.ok()) {
      *status = "failed: --direct-url: " + d.status().message();
      return std::nullopt;
    }
    f.probe = std::move(*d);
    f.compare_probe = std::move(*p);
    f.compare = net::ComparePhases(f.probe, *f.compare_probe);
  }
  // The route and path MTU of the path the load takes (the target's).
  if (auto u = http::ParseUrl(o.url); u.ok()) {
    auto runner = MakeExecCommandRunner();
    f.route = net::InspectRoute(*runner, u->host, u->port);
  }
  return f;
}

// What `latdoc doctor` read on the server host, given to the network rules: the certificate
// vLLM serves (--ssl-certfile), for an https target, unless the user named one; and the largest
// MTU of the server's interfaces that are up. Returns whether anything was added.
bool AddServerSide(const host::HostFacts& h, const std::string& url, net::NetFacts& nf) {
  bool added = false;
  if (nf.expected_cert_sha256.empty() && url.rfind("https://", 0) == 0 && h.server &&
      h.server->tls_cert.known()) {
    const host::ServerCert& c = *h.server->tls_cert;
    nf.expected_cert_sha256 = c.sha256_hex;
    nf.expected_cert_source = "the server's --ssl-certfile " + c.path;
    nf.expected_cert_subject = c.subject;
    nf.expected_cert_issuer = c.issuer;
    added = true;
  }
  if (h.net.interfaces.known()) {
    for (const host::NetInterface& i : *h.net.interfaces) {
      if (i.mtu_bytes <= 0) continue;
      if (!nf.server_iface_mtu_bytes || static_cast<uint32_t>(i.mtu_bytes) > *nf.server_iface_mtu_bytes) {
        nf.server_iface_mtu_bytes = static_cast<uint32_t>(i.mtu_bytes);
        nf.server_iface = i.name;
        added = true;
      }
    }
  }
  return added;
}

// Splits the waterfall's "network and front end" (client TTFT - server TTFT, inferred) into
// the network time the probe measured and the rest (front end, inferred), and re-weighs
// load.network_front_end to the part no network finding explains.
void SplitNetworkPart(ordered_json& w, const net::ProbeFacts& target, bool load_kept_alive,
                      std::optional<double> mean_e2el_ms, std::vector<rules::Finding>& all,
                      const rules::LoadRuleOptions& lo) {
  std::optional<double> per_request = rules::PerRequestNetworkMs(target);
  std::optional<double> outside = NumAt(w, "network_and_front_end_ms");
  if (!per_request || !outside) return;
  double net_ms = *per_request;
  std::string how = fmt::format("measured: {} ms per request on a kept-alive connection "
                                "(network probe of {})", fmt::format("{:.2f}", *per_request),
                                target.url);
  if (!load_kept_alive) {
    double handshake = target.keepalive.handshake_cost_ms
                           ? std::max(0.0, *target.keepalive.handshake_cost_ms)
                           : target.connect.p50_ms.value_or(0) + target.tls.p50_ms.value_or(0);
    net_ms += handshake;
    how += fmt::format(" + {:.2f} ms per new connection (the load test did not keep them alive)",
                       handshake);
  }
  double front_end = *outside - net_ms;
  if (front_end < 0 && *outside >= 0) {
    // The probe's network time is more than the load saw outside the server at all: the two
    // measure within each other's noise, and the network gets all of it, the front end none.
    how += fmt::format("; capped at the {:.2f} ms the load saw outside the server", *outside);
    net_ms = *outside;
    front_end = 0;
  }
  w["network_ms"] = net_ms;
  w["front_end_ms"] = front_end;
  w["parts"] = {{"queue_ms", "measured (server /metrics)"},
                {"prefill_ms", "measured (server /metrics)"},
                {"network_ms", how},
                {"front_end_ms", "inferred: client TTFT - server TTFT - measured network"}};
  rules::ReweighFrontEnd(all, rules::FrontEndSplit{*outside, net_ms, front_end, NumAt(w, "client_ttft_ms")},
                         mean_e2el_ms, lo);
}

// Ctrl-C and SIGTERM. The load runner catches them while a load step runs (the step ends
// early, marked partial) and leaves them at their default action when it is done, which would
// kill the process before the report is written; so between steps this flag handler is
// installed (again after every step), and a signal at any point ends the run with the layers
// done written and the document marked partial.
volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) { g_signal = sig; }

void CatchSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

struct SignalScope {
  SignalScope() {
    g_signal = 0;
    CatchSignals();
  }
  ~SignalScope() {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
  }
};

}  // namespace

// --profile-at: the load that hurts (the knee of the sweep, or N running requests) held while
// the server's profiler records; the files found join the kernel layer's traces. Returns the
// document's "profile_at".
ordered_json ProfileAtStep(const DiagnoseOptions& o, std::optional<int64_t> knee,
                           const ordered_json& sweep, std::vector<std::string>* traces) {
  ProfileRequest r;
  r.url = o.url;
  r.metrics_url = o.bench.metrics_url;
  r.bench = o.bench;
  r.dir = o.profile_dir;
  r.seconds = o.profile_seconds;
  ordered_json j;
  j["at"] = o.profile_at;
  j["dir"] = o.profile_dir;
  if (o.profile_at == "knee") {
    // No knee reached: the sweep's highest load (its knee block's concurrency) is the load that
    // hurts most of those tried.
    std::optional<int64_t> top;
    if (sweep.is_object() && sweep.contains("knee") && sweep["knee"].is_object() &&
        sweep["knee"].contains("concurrency") && sweep["knee"]["concurrency"].is_number())
      top = int64_t(sweep["knee"]["concurrency"].get<double>());
    if (!knee && !top) {
      j["recorded"] = false;
      j["status"] = "skipped: the sweep found no knee to profile at";
      j["files"] = ordered_json::array();
      return j;
    }
    const int64_t at = knee ? *knee : *top;
    r.concurrency = int(at);
    // At a knee of C in flight the running count dips below C between a stream's requests.
    r.running_at = std::max(1, int(std::ceil(0.9 * double(at))));
    r.why = knee ? fmt::format("at the knee (concurrency {})", at)
                 : fmt::format("at the sweep's highest load (concurrency {}: no knee reached)", at);
    j["knee_reached"] = knee.has_value();
  } else {
    r.concurrency = std::max(1, std::atoi(o.profile_at.c_str()));
    r.running_at = r.concurrency;
    r.why = fmt::format("at {} running requests", r.running_at);
  }
  j["concurrency"] = r.concurrency;
  j["running_at"] = r.running_at;
  // Enough requests that the load outlasts the profiler: 8 per stream, at least 64.
  r.requests = std::max(64, 8 * r.concurrency);
  loadgen::RandomWorkloadOptions w = o.workload;
  w.seed = o.workload.seed + 7;
  r.bench.prompts = loadgen::RandomPrompts(w, size_t(r.requests));
  ProfileCapture c = CaptureProfile(r);
  const ordered_json cj = c.Json();
  for (const auto& [k, v] : cj.items()) j[k] = v;
  for (const std::string& f : c.files) traces->push_back(f);
  return j;
}

namespace {

// The flags whose profiler captures recorded trace files in this run.
std::string ProfiledBy(size_t load_files, size_t at_files) {
  return load_files > 0 && at_files > 0 ? "--profile-load, --profile-at"
         : load_files > 0               ? "--profile-load"
                                        : "--profile-at";
}

// How the trace is known to be of the server under test ("" when it is not): recorded by
// --profile-at or --profile-load in this run (`profiled_by` names which), said by
// --trace-of-server, or GPU work on the wall clock within the load this run measured (Kineto's
// baseTimeNanoseconds; other formats do not record it).
std::string TraceRecordedFrom(const DiagnoseOptions& o, size_t profiled_files, const std::string& profiled_by,
                              const trace::Trace& t, const trace::WallClockWindow& load) {
  if (profiled_files > 0) return "server under test (" + profiled_by + ")";
  if (o.trace_of_target) return "server under test (--trace-of-server)";
  if (load.start_ns <= 0 || load.end_ns <= load.start_ns) return "";
  std::optional<trace::WallClockWindow> w = trace::GpuWorkWallClockWindow(t);
  if (w && w->start_ns < load.end_ns && w->end_ns > load.start_ns)
    return "server under test (its GPU work overlaps this run's load on the wall clock)";
  return "";
}

}  // namespace

DiagnoseResult RunDiagnose(const DiagnoseOptions& o) {
  DiagnoseResult res;
  ordered_json& doc = res.doc;
  std::vector<rules::Finding>& all = res.findings;
  doc["schema"] = "latdoc.diagnose/1";
  doc["target"] = o.url.empty() ? ordered_json(nullptr) : ordered_json(o.url);
  char when[32];
  time_t now = ::time(nullptr);
  tm g;
  gmtime_r(&now, &g);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &g);
  doc["generated_at"] = when;
  ordered_json layers = ordered_json::object();
  SignalScope signals;
  std::string stop;  // why the run ended early ("interrupted by SIGINT"); empty: it did not
  int stop_signal = 0;
  auto stopped = [&] {
    if (stop.empty() && g_signal) {
      stop = g_signal == SIGTERM ? "interrupted by SIGTERM" : "interrupted by SIGINT";
      stop_signal = g_signal;
    }
    return !stop.empty();
  };

  // Network first, while the server is idle; then the load: a low-load baseline, then the
  // target load with /metrics scraped.
  std::optional<net::NetFacts> net_facts;
  const net::ProbeFacts* target_probe = nullptr;
  std::vector<rules::Finding> net_findings;
  bool reachable = true;
  std::optional<int64_t> knee_concurrency;  // from --sweep: judges max_num_seqs (host rules)
  std::vector<rules::Finding> log_config;   // config.* from a vLLM log's startup line
  trace::WallClockWindow load_window;       // the load layer's, on the wall clock (0: none ran)
  std::vector<std::string> load_profile_files;  // --profile-load's trace of the target load
  if (o.url.empty()) {
    layers["network"] = "skipped: no --url";
  } else if (o.net_samples <= 0) {
    layers["network"] = "inferred from the load test (client TTFT - server TTFT); probe off";
  } else if (stopped()) {
    layers["network"] = "skipped: " + stop;
  } else {
    Say(o, fmt::format("network: {} probe sample{} of {}", o.net_samples, o.net_samples == 1 ? "" : "s",
                       o.url));
    std::string status;
    net_facts = ProbeNetwork(o, &status);
    if (!net_facts) {
      layers["network"] = status;
    } else {
      // The path the load takes: the gateway's when a direct URL was probed too.
      target_probe = net_facts->compare_probe ? &*net_facts->compare_probe : &net_facts->probe;
      net_findings = rules::EvaluateNetRules(*net_facts);
      if (NoSampleReached(*target_probe)) {
        reachable = false;
        const net::ProbeSample& s = target_probe->samples.front();
        layers["network"] = fmt::format("failed: no probe sample reached {}: {}", o.url, s.error);
        all.push_back(rules::LoadUnreachable(o.url, s.error));
      } else {
        bool tls = target_probe->tls.count > 0;
        const net::RouteFacts& r = net_facts->route;
        std::string route;
        if (r.checked) {
          route = r.local ? ", the server on this host"
                  : r.gateway.empty() ? fmt::format(", direct on the subnet of {}", r.dev)
                                      : fmt::format(", via gateway {}", r.gateway);
          if (r.path_mtu_bytes)
            route += fmt::format(", path MTU {}{}", *r.path_mtu_bytes,
                                 r.pmtu_black_hole ? " (black hole above)" : "");
        }
        const net::TcpFacts& t = target_probe->tcp;
        std::string tcp = t.connections == 0 ? ""
                          : fmt::format(", {} of {} TCP segments retransmitted", t.retrans_segs,
                                        t.segs_out);
        layers["network"] = fmt::format(
            "measured ({} probe sample{}: round trip, first byte, keep-alive vs new connections{}{}{}{})",
            target_probe->loss.samples, target_probe->loss.samples == 1 ? "" : "s", tls ? ", TLS" : "",
            net_facts->compare ? ", direct vs " + o.url : "", tcp, route);
      }
    }
  }
  if (o.url.empty()) {
    layers["load"] = "skipped: no --url";
  } else if (!reachable) {
    layers["load"] = "skipped: the target could not be reached (see network)";
  } else if (stopped()) {
    layers["load"] = "skipped: " + stop;
  } else {
    std::string why;
    bool unreachable = false;  // with the probe off, the load step is the first to find out
    // A step the runner ended early on a signal says so in its results.
    auto note_partial = [&](const ordered_json& step) {
      CatchSignals();
      if (stop.empty() && step.is_object() && step.value("partial", false)) {
        stop = step.value("partial_reason", std::string("interrupted"));
        stop_signal = stop.find("SIGTERM") != std::string::npos ? SIGTERM : SIGINT;
      }
    };
    load_window.start_ns = WallNowNs();
    Say(o, fmt::format("baseline: {} requests at concurrency 1", o.baseline_requests));
    ordered_json base = LoadStep(o, 1, o.baseline_requests, o.workload.seed + 1, &why, &unreachable);
    note_partial(base);
    ordered_json load;
    LoadCapture capture;
    if (!base.is_null() && !stopped()) {
      Say(o, fmt::format("load: {} requests at concurrency {}{}", o.requests, o.concurrency,
                         o.profile_load ? " (profiled: --profile-load)" : ""));
      load = LoadStep(o, o.concurrency, o.requests, o.workload.seed, &why, &unreachable, &capture);
      note_partial(load);
      if (o.profile_load) {
        doc["profile_load"] = capture.profile.Json();
        load_profile_files = capture.profile.files;
        if (!capture.profile.recorded)
          fmt::print(stderr, "latdoc diagnose: --profile-load: {}\n", capture.profile.status);
      }
    }
    if (load.is_null() && !base.is_null() && stopped()) {
      layers["load"] = "partial (" + stop + "): the baseline only";
      doc["baseline"] = base;
    } else if (load.is_null() && !base.is_null() && unreachable) {
      // The baseline was answered, then the server stopped answering: it was reachable, and
      // what the baseline measured is kept.
      const uint64_t answered = base.value("completed", uint64_t{0});
      layers["load"] = fmt::format("failed: the server stopped answering after {} requests (the "
                                   "baseline's are kept): {}", answered, why);
      doc["baseline"] = base;
      doc["stopped_answering_after"] = answered;
      all.push_back(rules::LoadStoppedAnswering(o.url, answered, why));
    } else if (load.is_null()) {
      layers["load"] = "failed: " + why;
      if (unreachable) reachable = false;
      all.push_back(unreachable ? rules::LoadUnreachable(o.url, why) : rules::LoadRefused(o.url, why));
    } else {
      layers["load"] = stopped() ? "partial (" + stop + ")" : "measured";
      doc["baseline"] = base;
      doc["bench"] = load;
      const ordered_json& srv = load["server_metrics"];
      if (srv.contains("ttft_breakdown")) doc["ttft_waterfall"] = srv["ttft_breakdown"];
      if (o.net_samples <= 0 && doc.contains("ttft_waterfall") &&
          doc["ttft_waterfall"].contains("unsplit_ms")) {
        // No server TTFT to subtract (llama.cpp, TGI): the network part is not inferred either.
        layers["network"] = fmt::format(
            "not measurable: {} gives no server TTFT to subtract from the client's; probe off",
            servermetrics::ServerKindLabel(servermetrics::ServerKindFromId(
                srv.contains("server") && srv["server"].is_string() ? srv["server"].get<std::string>() : "")));
      }
      Append(all, rules::EvaluateLoadRules(base, load));
      std::vector<std::string> gpu_traces = o.traces;
      gpu_traces.insert(gpu_traces.end(), capture.profile.files.begin(), capture.profile.files.end());
      AddAttribution(capture, o.logs.empty() ? std::string() : o.logs.front(), gpu_traces, doc, all);
      if (o.sweep && !stopped()) {
        Say(o, fmt::format("sweep: concurrency 1 to {}", o.sweep_max));
        std::string sweep_why;
        int sweep_signal = 0;
        ordered_json sweep = SweepStep(o, all, &knee_concurrency, &sweep_why, &sweep_signal);
        CatchSignals();
        if (sweep.is_null()) {
          layers["load"] = layers["load"].get<std::string>() + "; sweep failed: " + sweep_why;
        } else {
          // Only a signal ends the diagnosis early; a sweep that stopped because the server
          // gave out at some load is a result, and the layers after it (logs above all) run.
          if (stop.empty() && sweep.value("partial", false) &&
              sweep.value("partial_reason", std::string()) == "interrupted") {
            stop = "interrupted during the sweep";
            stop_signal = sweep_signal ? sweep_signal : SIGINT;
          }
          layers["load"] = layers["load"].get<std::string>() +
                           fmt::format("; sweep of {} steps", sweep["steps"].size());
          doc["sweep"] = std::move(sweep);
        }
      }
    }
  }
  if (o.sessions > 0 && doc.contains("bench") && !stopped()) {
    Say(o, fmt::format("sessions: {} of {} turns", o.sessions, o.session_turns));
    loadgen::MultiTurnOptions mt{o.sessions, o.session_turns, o.workload.prefix_len,
                                 o.workload.input_len, o.workload.output_len, o.workload.seed};
    std::string why;
    loadgen::BenchOptions b = o.bench;
    b.url = o.url;
    b.command = "diagnose";
    ordered_json sessions = SessionsStep(b, mt, o.think_time_s, all, &why);
    layers["load"] = layers["load"].get<std::string>() +
                     (sessions.is_null() ? "; sessions failed: " + why
                                         : fmt::format("; {} sessions of {} turns", o.sessions, o.session_turns));
    if (!sessions.is_null()) doc["multi_turn"] = std::move(sessions);
  }
  load_window.end_ns = WallNowNs();
  doc["target_reachable"] = o.url.empty() ? ordered_json(nullptr) : ordered_json(reachable);
  // Host facts, here or from a file, read before the network findings are final: those compare
  // the server's own certificate and interface MTU with what the client was shown.
  std::optional<host::HostFacts> host_facts;
  std::string host_why;
  if (!stopped() && (!o.facts_path.empty() || o.local)) {
    Say(o, o.local ? "host: collecting facts on this machine" : "host: judging " + o.facts_path);
    if (!o.facts_path.empty()) {
      auto text = ReadFileToString(o.facts_path);
      if (!text.ok()) {
        host_why = text.status().message();
      } else {
        auto f = host::FactsFromJson(*text, o.facts_path);
        if (f.ok()) host_facts = std::move(*f);
        else host_why = f.status().message();
      }
    } else {
      host::CollectOptions co;
      co.sysroot = o.sysroot;
      host_facts = host::CollectHostFacts(co);
    }
  }
  if (net_facts && host_facts && AddServerSide(*host_facts, o.url, *net_facts))
    net_findings = rules::EvaluateNetRules(*net_facts);
  if (net_facts) {
    const bool kept_alive = o.bench.client.keep_alive;
    std::optional<double> e2el = doc.contains("bench") ? NumAt(doc["bench"], "mean_e2el_ms") : std::nullopt;
    rules::ScaleNetFindings(net_findings, rules::NetLoadContext{e2el, kept_alive});
    if (doc.contains("ttft_waterfall") && target_probe)
      SplitNetworkPart(doc["ttft_waterfall"], *target_probe, kept_alive, e2el, all,
                       rules::LoadRuleOptions{});
    ordered_json nj;
    nj["schema"] = "latdoc.net/1";
    nj["facts"] = ordered_json::parse(JsonText(net::ToJson(*net_facts)));
    nj["findings"] = FindingsJson(net_findings);
    doc["net"] = std::move(nj);
    Append(all, std::move(net_findings));
  }

  // --profile-at: a trace of the server under test, at the load that hurts.
  std::vector<std::string> traces = o.traces;
  traces.insert(traces.end(), load_profile_files.begin(), load_profile_files.end());
  size_t profiled_files = load_profile_files.size();  // --profile-load's, then --profile-at's too
  if (!o.profile_at.empty() && !stopped()) {
    if (!doc.contains("bench")) {
      doc["profile_at"] = {{"at", o.profile_at}, {"recorded", false},
                           {"status", "skipped: the load layer did not run"},
                           {"files", ordered_json::array()}};
    } else {
      Say(o, fmt::format("profile: at {} (--profile-dir {})", o.profile_at, o.profile_dir));
      doc["profile_at"] = ProfileAtStep(o, knee_concurrency,
                                        doc.contains("sweep") ? doc["sweep"] : ordered_json(), &traces);
      CatchSignals();
      profiled_files = traces.size() - o.traces.size();  // --profile-load's files included
    }
    if (!doc["profile_at"]["recorded"].get<bool>())
      fmt::print(stderr, "latdoc diagnose: --profile-at {}: {}\n", o.profile_at,
                 doc["profile_at"]["status"].get<std::string>());
  }

  // Kernel: profiler traces.
  if (stopped()) {
    layers["kernel"] = "skipped: " + stop;
  } else if (traces.empty()) {
    layers["kernel"] = "skipped: no --trace";
  } else {
    Say(o, fmt::format("trace: {} file(s)", traces.size()));
    try {
      trace::Trace t;
      auto results = trace::ImportFiles(traces, trace::ImportOptions{}, t);
      std::string errors;
      for (const auto& r : results)
        if (!r.status.ok()) errors += (errors.empty() ? "" : "; ") + r.status.message();
      if (t.gpu_ops.empty() && t.api_calls.empty() && t.aggregates.empty()) {
        layers["kernel"] = "failed: " + (errors.empty() ? std::string("no GPU events in the traces") : errors);
      } else {
        trace::TraceReport report = trace::Analyze(t, trace::AnalysisOptions{});
        rules::AddKnowledgeFacts(report);
        auto fs = rules::EvaluateTraceRules(report, rules::TraceRuleOptions{});
        // A trace's shares are of its own GPU time. Of the server under test, that is the
        // best estimate of its latency; of another server, or of a time not known, it says
        // nothing about this one's: no share, ranked below every measured one.
        const std::string profiled_by =
            ProfiledBy(load_profile_files.size(), profiled_files - load_profile_files.size());
        const std::string recorded_from = TraceRecordedFrom(o, profiled_files, profiled_by, t, load_window);
        rules::PlaceTraceFindings(fs, !recorded_from.empty(), doc.contains("bench"));
        ordered_json tj;
        tj["schema"] = "latdoc.trace/1";
        tj["recorded_from"] = recorded_from.empty() ? ordered_json(nullptr) : ordered_json(recorded_from);
        tj["share"] = recorded_from.empty() && doc.contains("bench")
                          ? "not on the measured request path (pass --trace-of-server if it is)"
                      : recorded_from.empty() ? "of the traced GPU time (no load measured)"
                                              : "of the mean end-to-end latency of the load measured";
        tj["files"] = traces;
        tj["complete"] = errors.empty();
        if (!errors.empty()) tj["errors"] = errors;
        tj["facts"] = ordered_json::parse(JsonText(trace::ReportToJson(report)));
        tj["findings"] = FindingsJson(fs);
        doc["trace"] = std::move(tj);
        Append(all, std::move(fs));
        std::string status = errors.empty() ? "measured" : "measured (some files failed: " + errors + ")";
        if (!o.trace_note.empty()) status += " — " + o.trace_note;
        if (profiled_files > 0)
          status += fmt::format(" — {} file(s) recorded from the server under test ({})", profiled_files,
                                profiled_by);
        layers["kernel"] = status;
      }
    } catch (const trace::SpillReadError& e) {
      // The trace's temporary files could not be read back (a disk error): no kernel layer.
      layers["kernel"] = std::string("failed: ") + e.what();
    }
  }

  // Logs.
  if (stopped()) {
    layers["logs"] = "skipped: " + stop;
  } else if (o.logs.empty()) {
    layers["logs"] = "skipped: no --logs";
  } else {
    Say(o, fmt::format("logs: {} file(s)", o.logs.size()));
    auto facts = logs::AnalyzeInputs(o.logs);
    if (!facts.ok()) {
      layers["logs"] = "failed: " + facts.status().message();
    } else if (std::string none = logs::NothingRecognised(*facts); !none.empty()) {
      layers["logs"] = "failed: " + none;
    } else {
      auto fs = rules::EvaluateLogRules(*facts, knee_concurrency);
      ordered_json lj;
      lj["schema"] = "latdoc.logs/1";
      lj["facts"] = ordered_json::parse(JsonText(logs::ToJson(*facts)));
      lj["findings"] = FindingsJson(fs);
      doc["logs"] = std::move(lj);
      for (auto& f : fs) {  // the checks of the server's logged flags wait for the doctor's
        (FromLoggedFlags(f.id) ? log_config : all).push_back(std::move(f));
      }
      layers["logs"] = "measured";
    }
  }

  // System and configuration: host facts, here or from a file.
  if (stopped()) {
    layers["system"] = layers["config"] = "skipped: " + stop;
  } else if (!o.facts_path.empty() || o.local) {
    std::optional<host::HostFacts> facts = std::move(host_facts);
    std::string why = host_why;
    if (!facts && why.empty()) {  // the run was stopped before they were read (and then went on)
      if (!o.facts_path.empty()) {
        auto text = ReadFileToString(o.facts_path);
        if (!text.ok()) {
          why = text.status().message();
        } else {
          auto f = host::FactsFromJson(*text, o.facts_path);
          if (f.ok()) facts = std::move(*f);
          else why = f.status().message();
        }
      } else {
        host::CollectOptions co;
        co.sysroot = o.sysroot;
        facts = host::CollectHostFacts(co);
      }
    }
    if (!facts) {
      layers["system"] = layers["config"] = "failed: " + why;
    } else {
      rules::HostRuleOptions hro;
      hro.sweep_knee_concurrency = knee_concurrency;
      auto fs = rules::JudgeHost(*facts, hro);
      // The server's own command line, where found, outranks the one its log gave.
      if (std::any_of(fs.begin(), fs.end(), [](const rules::Finding& f) {
            return f.layer == rules::Layer::kConfig && f.severity != rules::Severity::kSkip;
          })) {
        log_config.clear();
        if (doc.contains("logs")) {  // and the logs section shows only what still counts
          ordered_json kept = ordered_json::array();
          for (auto& f : doc["logs"]["findings"]) {
            if (!FromLoggedFlags(f.value("id", ""))) kept.push_back(std::move(f));
          }
          doc["logs"]["findings"] = std::move(kept);
        }
      }
      doc["doctor"] = {{"facts", ordered_json::parse(host::FactsToJson(*facts))},
                       {"findings", FindingsJson(fs)}};
      Append(all, std::move(fs));
      layers["system"] = "measured";
      layers["config"] = "measured (the server's command line, where found)";
    }
  } else {
    layers["system"] = "skipped: give --local on the server host, or --facts FILE";
    layers["config"] = "skipped: give --local on the server host, or --facts FILE";
  }

  if (!log_config.empty()) {
    layers["config"] = "measured (the flags in the vLLM log's startup line 'non-default args')";
    // The doctor's "no vLLM process here" gives way to the flags the log gave.
    all.erase(std::remove_if(all.begin(), all.end(),
                             [](const rules::Finding& f) {
                               return f.layer == rules::Layer::kConfig && f.severity == rules::Severity::kSkip;
                             }),
              all.end());
    Append(all, std::move(log_config));
  }

  if (stopped()) {
    doc["partial"] = true;
    doc["partial_reason"] = stop;
    res.stop_signal = stop_signal ? stop_signal : SIGINT;
  }
  // Each config finding that changes a flag of the engine model says what the change would
  // buy at the target load, from a calibration on the sweep (whatif/effects.h).
  if (doc.contains("sweep") && !stopped()) whatif::AddPredictedEffects(doc["sweep"], o.concurrency, all, o.requests);
  rules::RankFindings(all);
  doc["layers"] = layers;
  doc["findings"] = FindingsJson(all);
  auto worst = rules::WorstSeverity(all);
  doc["worst_severity"] = rules::SeverityName(worst);
  if (const rules::Finding* f = rules::ChangeFirst(all)) {
    doc["change_first"] = {{"id", f->id}, {"layer", rules::LayerName(f->layer)}, {"title", f->title}};
  } else {
    doc["change_first"] = nullptr;
  }
  return res;
}

std::string RenderDiagnoseText(const DiagnoseResult& r, bool color, bool show_ok) {
  const ordered_json& d = r.doc;
  std::string out = fmt::format("latdoc diagnose: {}\n",
                                d["target"].is_null() ? "(no live target)" : d["target"].get<std::string>());
  // The model and the server, where the load run or the log named them.
  std::string model;
  for (const char* part : {"bench", "sweep", "baseline"}) {
    if (model.empty() && d.contains(part) && d[part].is_object() && d[part].contains("model_id") &&
        d[part]["model_id"].is_string())
      model = d[part]["model_id"].get<std::string>();
  }
  const ordered_json* version = nullptr;
  if (d.contains("logs") && d["logs"].is_object()) {
    const ordered_json& f = d["logs"].value("facts", ordered_json::object());
    if (f.contains("vllm_server") && f["vllm_server"].contains("version") && f["vllm_server"]["version"].is_string())
      version = &d["logs"]["facts"]["vllm_server"]["version"];
  }
  std::string metrics_server;
  if (d.contains("bench") && d["bench"].is_object() && d["bench"].contains("server_metrics") &&
      d["bench"]["server_metrics"].contains("server") && d["bench"]["server_metrics"]["server"].is_string())
    metrics_server = d["bench"]["server_metrics"]["server"].get<std::string>();
  if (!model.empty()) out += "model: " + ToTerminalText(model) + "\n";
  if (version) {
    out += "server: vLLM " + ToTerminalText(version->get<std::string>()) + " (from its log)\n";
  } else if (!d["target"].is_null()) {
    out += "server: " + loadgen::ServerLabel(d["target"].get<std::string>(), metrics_server) + "\n";
  }
  if (d.value("partial", false)) {
    out += fmt::format("STOPPED EARLY ({}): partial results; the layers after the stop were "
                       "skipped.\n", d.value("partial_reason", std::string("interrupted")));
  }
  out += "\n";
  out += "Layers:\n";
  for (const auto& [k, v] : d["layers"].items()) out += fmt::format("  {:<8} {}\n", k, v.get<std::string>());
  if (d.contains("ttft_waterfall")) {
    const ordered_json& w = d["ttft_waterfall"];
    auto ms = [&](const char* k) {
      return w.contains(k) && w[k].is_number() ? fmt::format("{:.1f} ms", w[k].get<double>()) : std::string("n/a");
    };
    if (w.contains("unsplit_ms")) {
      // A server whose metrics time only some parts (llama.cpp, TGI): what they do not time
      // stays one inferred rest, and the line says what is not measurable there.
      out += fmt::format(
          "\nWhere TTFT goes (mean {}): queue {} (measured) + prefill {} (measured) + rest {} "
          "(inferred, not split)\n",
          ms("client_ttft_ms"), ms("queue_ms"), ms("prefill_ms"), ms("unsplit_ms"));
      if (w.contains("not_measurable") && w["not_measurable"].is_string() &&
          !w["not_measurable"].get<std::string>().empty())
        out += "  " + w["not_measurable"].get<std::string>() + "\n";
    } else if (w.contains("network_ms")) {
      out += fmt::format(
          "\nWhere TTFT goes (mean {}): queue {} (measured) + prefill {} (measured) + network {} "
          "(measured by the probe) + front end {} (inferred)\n",
          ms("client_ttft_ms"), ms("queue_ms"), ms("prefill_ms"), ms("network_ms"),
          ms("front_end_ms"));
    } else {
      out += fmt::format(
          "\nWhere TTFT goes (mean {}): queue {} (measured) + prefill {} (measured) + network and "
          "front end {} (inferred)\n",
          ms("client_ttft_ms"), ms("queue_ms"), ms("prefill_ms"), ms("network_and_front_end_ms"));
    }
  }
  if (d.contains("bench")) {
    const ordered_json& b = d["bench"];
    auto v = [&](const char* k) {
      return b.contains(k) && b[k].is_number() ? fmt::format("{:.1f}", b[k].get<double>()) : std::string("n/a");
    };
    out += fmt::format("At concurrency {}: TTFT p50 {} / p99 {} ms, ITL p50 {} / p99 {} ms, {} output tok/s\n",
                       b.value("max_concurrency", 0), v("median_ttft_ms"), v("p99_ttft_ms"),
                       v("median_itl_ms"), v("p99_itl_ms"), v("output_throughput"));
  }
  out += "\nFindings, most important first:\n";
  report::TextOptions to;
  to.color = color;
  to.show_ok = show_ok;
  std::string findings = report::RenderFindingsText(r.findings, to);
  bool measured = false;  // a layer that ran (not skipped, not failed)
  for (const auto& [k, v] : d["layers"].items()) {
    const std::string status = v.get<std::string>();
    measured = measured || (status.rfind("skipped", 0) != 0 && status.rfind("failed", 0) != 0);
  }
  if (!measured && findings == "No problems found.\n") {
    findings = "Nothing was diagnosed: no layer could be measured (see Layers above).\n";
  } else if (d.value("partial", false)) {
    // Stopped early: the layers not run found nothing because they did not run.
    const std::string none = "No problems found.\n";
    if (findings == none) findings = "No problems found in the layers run before the stop.\n";
  }
  out += findings;
  if (const rules::Finding* it = rules::ChangeFirst(r.findings)) {
    out += fmt::format("\nChange first: {}\n  {}\n", it->title, it->advice);
    if (it->latency_share)
      out += fmt::format("  (about {:.0f}% of the {})\n", *it->latency_share * 100, rules::ShareOf(*it));
    else if (it->share_basis == rules::ShareBasis::kOffRequestPath)
      out += fmt::format("  (share: {})\n", rules::ShareOf(*it));
  }
  return out;
}

}  // namespace latdoc::diagnose
