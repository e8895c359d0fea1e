#include "diagnose/diagnose.h"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>

#include <fmt/core.h>

#include "base/clock.h"
#include "diagnose/attribution_step.h"
#include "diagnose/diagnose_steps.h"
#include "diagnose/sessions_step.h"
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

using namespace steps;  // NOLINT: the steps are this file's own, split out for length

// One diagnosis, layer by layer: network first, while the server is idle; then the load (a
// low-load baseline, the target load with /metrics scraped, the sweep, sessions); the host's
// facts; the network findings on the load's scale; --profile-at; the traces; the logs; the
// system and the server's flags; then the ranking. A signal ends it after the step it comes in,
// with what was done written.
class DiagnoseRun {
 public:
  explicit DiagnoseRun(const DiagnoseOptions& options) : o(options) {}

  DiagnoseResult Run() {
    SignalScope signals;
    Header();
    NetworkLayer();
    LoadLayer();
    SessionsLayer();
    load_window.end_ns = WallNowNs();
    if (!o.url.empty()) res.diagnosis.target_reachable = reachable;
    // Host facts, here or from a file, read before the network findings are final: those
    // compare the server's own certificate and interface MTU with what the client was shown.
    if (!Stopped() && (!o.facts_path.empty() || o.local)) {
      Say(o, o.local ? "host: collecting facts on this machine" : "host: judging " + o.facts_path);
      host_facts = ReadHostFacts(&host_why);
    }
    NetFindings();
    ProfileAtLayer();
    KernelLayer();
    LogsLayer();
    SystemLayer();
    Finish();
    return std::move(res);
  }

 private:
  // Whether the run was stopped (a signal came); says why in `stop`.
  bool Stopped() {
    if (stop.empty() && g_signal) {
      stop = g_signal == SIGTERM ? "interrupted by SIGTERM" : "interrupted by SIGINT";
      stop_signal = g_signal;
    }
    return !stop.empty();
  }

  void Header() {
    if (!o.url.empty()) res.diagnosis.target = o.url;
    char when[32];
    time_t now = ::time(nullptr);
    tm g;
    gmtime_r(&now, &g);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &g);
    res.diagnosis.generated_at = when;
  }

  void NetworkLayer() {
    if (o.url.empty()) {
      layers["network"] = "skipped: no --url";
      return;
    }
    if (o.net_samples <= 0) {
      layers["network"] = "inferred from the load test (client TTFT - server TTFT); probe off";
      return;
    }
    if (Stopped()) {
      layers["network"] = "skipped: " + stop;
      return;
    }
    Say(o, fmt::format("network: {} probe sample{} of {}", o.net_samples, o.net_samples == 1 ? "" : "s",
                       o.url));
    std::string status;
    net_facts = ProbeNetwork(o, &status);
    if (!net_facts) {
      layers["network"] = status;
      return;
    }
    // The path the load takes: the gateway's when a direct URL was probed too.
    target_probe = net_facts->compare_probe ? &*net_facts->compare_probe : &net_facts->probe;
    net_findings = rules::EvaluateNetRules(*net_facts);
    if (NoSampleReached(*target_probe)) {
      reachable = false;
      const net::ProbeSample& s = target_probe->samples.front();
      layers["network"] = fmt::format("failed: no probe sample reached {}: {}", o.url, s.error);
      all.push_back(rules::LoadUnreachable(o.url, s.error));
      return;
    }
    layers["network"] = MeasuredNetworkStatus();
  }

  // "measured (N probe samples: ..., the route)" of a probe that reached the target.
  std::string MeasuredNetworkStatus() const {
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
    return fmt::format(
        "measured ({} probe sample{}: round trip, first byte, keep-alive vs new connections{}{}{}{})",
        target_probe->loss.samples, target_probe->loss.samples == 1 ? "" : "s", tls ? ", TLS" : "",
        net_facts->compare ? ", direct vs " + o.url : "", tcp, route);
  }

  // A step the runner ended early on a signal says so in its results.
  void NotePartial(const ordered_json& step) {
    CatchSignals();
    if (stop.empty() && step.is_object() && step.value("partial", false)) {
      stop = step.value("partial_reason", std::string("interrupted"));
      stop_signal = stop.find("SIGTERM") != std::string::npos ? SIGTERM : SIGINT;
    }
  }

  void LoadLayer() {
    if (o.url.empty()) {
      layers["load"] = "skipped: no --url";
      return;
    }
    if (!reachable) {
      layers["load"] = "skipped: the target could not be reached (see network)";
      return;
    }
    if (Stopped()) {
      layers["load"] = "skipped: " + stop;
      return;
    }
    std::string why;
    bool unreachable = false;  // with the probe off, the load step is the first to find out
    load_window.start_ns = WallNowNs();
    Say(o, fmt::format("baseline: {} requests at concurrency 1", o.baseline_requests));
    ordered_json base = LoadStep(o, 1, o.baseline_requests, o.workload.seed + 1, &why, &unreachable);
    NotePartial(base);
    ordered_json load;
    LoadCapture capture;
    if (!base.is_null() && !Stopped()) {
      Say(o, fmt::format("load: {} requests at concurrency {}{}", o.requests, o.concurrency,
                         o.profile_load ? " (profiled: --profile-load)" : ""));
      load = LoadStep(o, o.concurrency, o.requests, o.workload.seed, &why, &unreachable, &capture);
      NotePartial(load);
      if (o.profile_load) {
        doc["profile_load"] = capture.profile.Json();
        load_profile_files = capture.profile.files;
        if (!capture.profile.recorded)
          fmt::print(stderr, "latdoc diagnose: --profile-load: {}\n", capture.profile.status);
      }
    }
    if (load.is_null() && !base.is_null() && Stopped()) {
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
      LoadMeasured(base, load, capture);
      SweepLayer();
    }
  }

  // The target load ran: its document, the TTFT waterfall, the load rules and the stalls.
  void LoadMeasured(const ordered_json& base, const ordered_json& load, const LoadCapture& capture) {
    layers["load"] = Stopped() ? "partial (" + stop + ")" : "measured";
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
    // The two documents are SummarizeRun's JSON (LoadStep): their facts read back exactly.
    auto base_facts = loadgen::LoadFactsFromJson(base);
    auto load_facts = loadgen::LoadFactsFromJson(load);
    if (load_facts.ok()) target_load = *load_facts;
    Append(all, rules::EvaluateLoadRules(base_facts.ok() ? &*base_facts : nullptr,
                                         load_facts.ok() ? &*load_facts : nullptr));
    std::vector<std::string> gpu_traces = o.traces;
    gpu_traces.insert(gpu_traces.end(), capture.profile.files.begin(), capture.profile.files.end());
    AddAttribution(capture, o.logs.empty() ? std::string() : o.logs.front(), gpu_traces,
                   TraceImportOptions(o), doc, all);
  }

  void SweepLayer() {
    if (!o.sweep || Stopped()) return;
    Say(o, fmt::format("sweep: concurrency 1 to {}", o.sweep_max));
    std::string sweep_why;
    int sweep_signal = 0;
    ordered_json sweep = SweepStep(o, all, &knee_concurrency, &sweep_why, &sweep_signal);
    CatchSignals();
    if (sweep.is_null()) {
      layers["load"] = layers["load"].get<std::string>() + "; sweep failed: " + sweep_why;
      return;
    }
    // Only a signal ends the diagnosis early; a sweep that stopped because the server gave out
    // at some load is a result, and the layers after it (logs above all) run.
    if (stop.empty() && sweep.value("partial", false) &&
        sweep.value("partial_reason", std::string()) == "interrupted") {
      stop = "interrupted during the sweep";
      stop_signal = sweep_signal ? sweep_signal : SIGINT;
    }
    layers["load"] = layers["load"].get<std::string>() +
                     fmt::format("; sweep of {} steps", sweep["steps"].size());
    doc["sweep"] = std::move(sweep);
  }

  void SessionsLayer() {
    if (o.sessions <= 0 || !doc.contains("bench") || Stopped()) return;
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

  // Host facts from --facts, or collected here (--local); null with `why` set.
  std::optional<host::HostFacts> ReadHostFacts(std::string* why) const {
    if (o.facts_path.empty()) {
      host::CollectOptions co;
      co.sysroot = o.sysroot;
      return host::CollectHostFacts(co);
    }
    auto text = ReadFileToString(o.facts_path);
    if (!text.ok()) {
      *why = text.status().message();
      return std::nullopt;
    }
    auto f = host::FactsFromJson(*text, o.facts_path);
    if (!f.ok()) {
      *why = f.status().message();
      return std::nullopt;
    }
    return std::move(*f);
  }

  // The network findings, with the server's side when host facts came, on the load's scale.
  void NetFindings() {
    if (net_facts && host_facts && AddServerSide(*host_facts, o.url, *net_facts))
      net_findings = rules::EvaluateNetRules(*net_facts);
    if (!net_facts) return;
    const bool kept_alive = o.bench.client.keep_alive;
    std::optional<double> e2el =
        target_load && target_load->e2el ? target_load->e2el->mean_ms : std::nullopt;
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
  void ProfileAtLayer() {
    traces = o.traces;
    traces.insert(traces.end(), load_profile_files.begin(), load_profile_files.end());
    profiled_files = load_profile_files.size();  // --profile-load's, then --profile-at's too
    if (o.profile_at.empty() || Stopped()) return;
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
  void KernelLayer() {
    if (Stopped()) {
      layers["kernel"] = "skipped: " + stop;
      return;
    }
    if (traces.empty()) {
      layers["kernel"] = "skipped: no --trace";
      return;
    }
    Say(o, fmt::format("trace: {} file(s)", traces.size()));
    try {
      trace::Trace t;
      auto results = trace::ImportFiles(traces, TraceImportOptions(o), t);
      std::string errors;
      for (const auto& r : results)
        if (!r.status.ok()) errors += (errors.empty() ? "" : "; ") + r.status.message();
      if (t.gpu_ops.empty() && t.api_calls.empty() && t.aggregates.empty()) {
        layers["kernel"] = "failed: " + (errors.empty() ? std::string("no GPU events in the traces") : errors);
        return;
      }
      JudgeTrace(t, errors);
    } catch (const trace::SpillReadError& e) {
      // The trace's temporary files could not be read back (a disk error): no kernel layer.
      layers["kernel"] = std::string("failed: ") + e.what();
    }
  }

  // The imported traces analysed and judged, placed on the latency scale (the ranking rule).
  void JudgeTrace(const trace::Trace& t, const std::string& errors) {
    trace::TraceReport report = trace::Analyze(t, trace::AnalysisOptions{});
    rules::AddKnowledgeFacts(report);
    auto fs = rules::EvaluateTraceRules(report, rules::TraceRuleOptions{});
    // A trace's shares are of its own GPU time. Of the server under test, that is the best
    // estimate of its latency; of another server, or of a time not known, it says nothing
    // about this one's: no share, ranked below every measured one.
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

  void LogsLayer() {
    if (Stopped()) {
      layers["logs"] = "skipped: " + stop;
      return;
    }
    if (o.logs.empty()) {
      layers["logs"] = "skipped: no --logs";
      return;
    }
    Say(o, fmt::format("logs: {} file(s)", o.logs.size()));
    auto facts = logs::AnalyzeInputs(o.logs);
    if (!facts.ok()) {
      layers["logs"] = "failed: " + facts.status().message();
      return;
    }
    if (std::string none = logs::NothingRecognised(*facts); !none.empty()) {
      layers["logs"] = "failed: " + none;
      return;
    }
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

  // System and configuration: host facts, here or from a file.
  void SystemLayer() {
    if (Stopped()) {
      layers["system"] = layers["config"] = "skipped: " + stop;
    } else if (!o.facts_path.empty() || o.local) {
      std::optional<host::HostFacts> facts = std::move(host_facts);
      std::string why = host_why;
      // The run was stopped before they were read (and then went on).
      if (!facts && why.empty()) facts = ReadHostFacts(&why);
      if (!facts) {
        layers["system"] = layers["config"] = "failed: " + why;
      } else {
        JudgeHostFacts(*facts);
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
  }

  void JudgeHostFacts(const host::HostFacts& facts) {
    rules::HostRuleOptions hro;
    hro.sweep_knee_concurrency = knee_concurrency;
    auto fs = rules::JudgeHost(facts, hro);
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
    doc["doctor"] = {{"facts", ordered_json::parse(host::FactsToJson(facts))},
                     {"findings", FindingsJson(fs)}};
    Append(all, std::move(fs));
    layers["system"] = "measured";
    layers["config"] = "measured (the server's command line, where found)";
  }

  void Finish() {
    if (Stopped()) {
      res.diagnosis.partial = true;
      res.diagnosis.partial_reason = stop;
      res.stop_signal = stop_signal ? stop_signal : SIGINT;
    }
    // Each config finding that changes a flag of the engine model says what the change would
    // buy at the target load, from a calibration on the sweep (whatif/effects.h).
    if (doc.contains("sweep") && !Stopped())
      whatif::AddPredictedEffects(doc["sweep"], o.concurrency, all, o.requests);
    rules::RankFindings(all);
    for (const auto& [layer, status] : layers.items())
      res.diagnosis.layers.push_back({layer, status.get<std::string>()});
    report::SetFindings(res.diagnosis, std::move(all));
    report::ReadSectionFacts(res.diagnosis);
  }

  const DiagnoseOptions& o;
  DiagnoseResult res;
  ordered_json& doc = res.diagnosis.sections;  // each layer's own document
  std::vector<rules::Finding> all;
  ordered_json layers = ordered_json::object();
  std::string stop;  // why the run ended early ("interrupted by SIGINT"); empty: it did not
  int stop_signal = 0;
  std::optional<net::NetFacts> net_facts;
  const net::ProbeFacts* target_probe = nullptr;
  std::vector<rules::Finding> net_findings;
  bool reachable = true;
  std::optional<int64_t> knee_concurrency;  // from --sweep: judges max_num_seqs (host rules)
  std::vector<rules::Finding> log_config;   // config.* from a vLLM log's startup line
  std::optional<loadgen::LoadFacts> target_load;  // the target load's facts, when it ran
  trace::WallClockWindow load_window;       // the load layer's, on the wall clock (0: none ran)
  std::vector<std::string> load_profile_files;  // --profile-load's trace of the target load
  std::optional<host::HostFacts> host_facts;
  std::string host_why;
  std::vector<std::string> traces;          // the kernel layer's: --trace, then the profiles'
  size_t profiled_files = 0;
};

}  // namespace

DiagnoseResult RunDiagnose(const DiagnoseOptions& o) { return DiagnoseRun(o).Run(); }

}  // namespace latdoc::diagnose
