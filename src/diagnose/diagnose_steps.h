// The steps RunDiagnose (diagnose.cc) runs layer by layer, private to diagnose/: each gathers
// facts or runs a load and returns its part of the document; the judgments are the rules'.
#pragma once

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnose/attribution_step.h"
#include "diagnose/diagnose.h"
#include "host/host_facts.h"
#include "net/net_facts.h"
#include "rules/finding.h"
#include "rules/load_rules.h"
#include "trace/importers/importer.h"
#include "trace/model/trace.h"

namespace latdoc::diagnose::steps {

using nlohmann::ordered_json;

// "[latdoc diagnose] MSG" on standard error with --progress.
void Say(const DiagnoseOptions& o, const std::string& msg);
void Append(std::vector<rules::Finding>& all, std::vector<rules::Finding> more);
ordered_json FindingsJson(const std::vector<rules::Finding>& fs);
// j[key] when it is a number.
std::optional<double> NumAt(const ordered_json& j, const char* key);

// The network layer: the target probed (and the direct path, when given). Returns the facts,
// or null with the layer's status in `status`.
std::optional<net::NetFacts> ProbeNetwork(const DiagnoseOptions& o, std::string* status);
// No probe sample got an answer from the server.
bool NoSampleReached(const net::ProbeFacts& p);
// Adds the server's side (its certificate, its interface MTU) from host facts; true when any
// was added (the net rules then run again).
bool AddServerSide(const host::HostFacts& h, const std::string& url, net::NetFacts& nf);
// Splits the waterfall's "network and front end" into the probe's network time and the front
// end, and re-weighs load.network_front_end (rules::ReweighFrontEnd).
void SplitNetworkPart(ordered_json& w, const net::ProbeFacts& target, bool load_kept_alive,
                      std::optional<double> mean_e2el_ms, std::vector<rules::Finding>& all,
                      const rules::LoadRuleOptions& lo);

// One load step at `concurrency` (latdoc.bench/1), or null with `why` set; `capture` keeps the
// run's records for the stall attribution and --profile-load's trace.
ordered_json LoadStep(const DiagnoseOptions& o, int concurrency, int requests, uint64_t seed,
                      std::string* why, bool* unreachable, LoadCapture* capture = nullptr);
// The sweep (--sweep): its document (latdoc.sweep/1) and load.sweep_knee, or null with `why`.
ordered_json SweepStep(const DiagnoseOptions& o, std::vector<rules::Finding>& out,
                       std::optional<int64_t>* knee_concurrency, std::string* why,
                       int* stop_signal);
// --profile-at: the document's "profile_at"; the files recorded join `traces`.
ordered_json ProfileAtStep(const DiagnoseOptions& o, std::optional<int64_t> knee,
                           const ordered_json& sweep, std::vector<std::string>* traces);

// The config.* findings of a vLLM log's startup line (they give way to the doctor's).
bool FromLoggedFlags(std::string_view id);
// The flags whose profiler captures recorded trace files in this run.
std::string ProfiledBy(size_t load_files, size_t at_files);
// How the trace is known to be of the server under test ("" when it is not).
std::string TraceRecordedFrom(const DiagnoseOptions& o, size_t profiled_files, const std::string& profiled_by,
                              const trace::Trace& t, const trace::WallClockWindow& load);

// Ctrl-C and SIGTERM between load steps: the signal is kept in g_signal and the run ends with
// what was done written (diagnose_steps.cc says why).
extern volatile sig_atomic_t g_signal;
void CatchSignals();

// How the diagnosis reads traces: with --local (latdoc on the server's host), a rocpd file
// recorded on this host is placed on the wall clock from its boot clock
// (trace::LocalBootClock: /etc/machine-id under o.sysroot, CLOCK_REALTIME - CLOCK_BOOTTIME).
trace::ImportOptions TraceImportOptions(const DiagnoseOptions& o);

// Catches the signals for a diagnosis's lifetime; restores the default actions after.
struct SignalScope {
  SignalScope() {
    g_signal = 0;
    CatchSignals();
  }
  ~SignalScope() {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
};

}  // namespace latdoc::diagnose::steps
