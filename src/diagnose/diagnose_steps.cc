// The steps of a diagnosis (diagnose_steps.h): the network probe, the load and sweep steps, the
// network split of TTFT, --profile-at, the signals, and where a trace comes from.
#include "diagnose/diagnose_steps.h"
#include "diagnose/profile_at.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "http/client.h"
#include "loadgen/results.h"
#include "loadgen/sweep.h"
#include "loadgen/sweep_report.h"
#include "net/probe.h"
#include "net/route.h"
#include "rules/diagnosis_rules.h"
#include "rules/net_rules.h"
#include "rules/sweep_rules.h"

namespace latdoc::diagnose::steps {
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
                      std::string* why, bool* unreachable, LoadCapture* capture) {
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
    if (o.local)
      sampler.emplace(o.sysroot, o.logs.empty() ? std::string() : o.logs.front(), o.url, o.host_counters_root);
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

trace::ImportOptions TraceImportOptions(const DiagnoseOptions& o) {
  trace::ImportOptions io;
  if (!o.local) return io;
  const std::string root = o.sysroot.empty() || o.sysroot == "/" ? "" : o.sysroot;
  auto id = ReadFileToString(root + "/etc/machine-id");
  if (!id.ok()) return io;
  std::string machine_id = std::string(Trim(*id));
  if (machine_id.empty()) return io;
  // The offset between the two clocks, read between two readings of the boot clock.
  timespec b1, r, b2;
  clock_gettime(CLOCK_BOOTTIME, &b1);
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_BOOTTIME, &b2);
  auto ns = [](const timespec& t) { return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec; };
  io.local_boot_clock = trace::LocalBootClock{std::move(machine_id), ns(r) - (ns(b1) + ns(b2)) / 2};
  return io;
}

}  // namespace latdoc::diagnose::steps
