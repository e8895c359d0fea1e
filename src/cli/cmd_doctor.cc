// latdoc doctor [--sysroot DIR] [--pid PID] [--collect facts.json] [--facts facts.json]
//               [--json FILE] [--sweep sweep.json] [--interval-ms N] [--all] [--no-color]
// Host, stack and server-configuration checks. Collects facts (host/collector.h) or reads them
// (--facts), judges them (rules/host_rules.h), prints findings. Writes nothing unless asked
// (--collect, --json), and then atomically. Exit: 0 ok, 1 a `fail` finding, 2 bad input.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "host/collector.h"
#include "host/host_facts.h"
#include "loadgen/sweep_curve.h"
#include "report/findings_text.h"
#include "rules/host_rules.h"

namespace latdoc::cli {
namespace {

struct DoctorArgs {
  std::string sysroot = "/";
  int64_t pid = 0;
  std::string collect_path;
  std::string facts_path;
  std::string json_path;
  std::string sweep_path;
  int64_t interval_ms = 300;
  bool show_all = false;
  bool no_color = false;
};

// The flags that cannot go together or name no usable tree; OK when none.
Status CheckDoctorArgs(const DoctorArgs& a) {
  if (!a.facts_path.empty() && (a.sysroot != "/" || a.pid != 0 || !a.collect_path.empty())) {
    return InvalidArgument(
        "--facts judges recorded facts; it cannot be combined with "
        "--sysroot, --pid or --collect");
  }
  if (a.interval_ms < 0 || a.interval_ms > 10000) {
    return InvalidArgument("--interval-ms must be 0..10000");
  }
  if (a.facts_path.empty()) {
    // A wrong --sysroot would read nothing and report every check skipped, as a clean host.
    struct stat st;
    if (::stat(a.sysroot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("--sysroot " + a.sysroot + ": not a directory");
    }
    if (::access((a.sysroot + "/proc").c_str(), F_OK) != 0 && ::access((a.sysroot + "/sys").c_str(), F_OK) != 0) {
      return InvalidArgument("--sysroot " + a.sysroot +
                             ": holds neither proc/ nor sys/ (a recorded tree is OUT/tree)");
    }
  }
  return Status::Ok();
}

// --json: the facts and the findings, written atomically to `path`.
Status WriteDoctorJson(const std::string& path, const host::HostFacts& facts,
                       const std::vector<rules::Finding>& findings) {
  nlohmann::json doc;
  doc["schema"] = "latdoc.doctor/1";
  doc["facts"] = nlohmann::json::parse(host::FactsToJson(facts));
  nlohmann::json fj = nlohmann::json::array();
  for (const auto& f : findings) fj.push_back(rules::ToJson(f));
  doc["findings"] = std::move(fj);
  return WriteFileAtomic(path, JsonText(doc, 2) + "\n");
}

// The terminal text: the GPUs and the server found, then the findings.
std::string DoctorText(const DoctorArgs& a, const host::HostFacts& facts,
                       const std::vector<rules::Finding>& findings) {
  std::string out;
  for (const auto& g : facts.gpus) {
    out += "GPU " + std::to_string(g.index) + "  " + g.bdf + "  " +
           (g.name.known() ? *g.name : g.vendor + " (name n/a)") + "  [" +
           (g.vendor_source.empty() ? std::string("sysfs only") : g.vendor_source) + "]\n";
  }
  for (const auto& n : facts.gpu_notes) out += "note: " + n + "\n";
  if (facts.server) {
    out += "server: pid " + std::to_string(facts.server->pid) + " (" + facts.server->kind + ")\n";
  } else {
    out += "server: none found (" + facts.server_note + ")\n";
  }
  out += "\n";
  report::TextOptions to;
  to.color = !a.no_color && report::StdoutWantsColor();
  to.show_ok = a.show_all;
  out += report::RenderFindingsText(findings, to);
  if (!a.show_all) {
    int hidden = 0, skipped = 0;
    for (const auto& f : findings) {
      hidden += f.severity == rules::Severity::kOk;
      skipped += f.severity == rules::Severity::kSkip;
    }
    out += "(" + std::to_string(hidden) + " checks ok, " + std::to_string(skipped) +
           " skipped; --show-ok shows them)\n";
  }
  return out;
}

int RunDoctor(const DoctorArgs& a) {
  if (Status st = CheckDoctorArgs(a); !st.ok()) return Fail("doctor", st);
  rules::HostRuleOptions opts;
  if (!a.sweep_path.empty()) {
    auto text = ReadFileToString(a.sweep_path);
    if (!text.ok()) return Fail("doctor", text.status());
    auto knee = loadgen::SweepKneeFromJson(*text, a.sweep_path);
    if (!knee.ok()) return Fail("doctor", knee.status());
    opts.sweep_knee_concurrency = *knee;
  }

  host::HostFacts facts;
  if (!a.facts_path.empty()) {
    auto text = ReadFileToString(a.facts_path);
    if (!text.ok()) return Fail("doctor", text.status());
    auto f = host::FactsFromJson(*text, a.facts_path);
    if (!f.ok()) return Fail("doctor", f.status());
    facts = std::move(*f);
  } else {
    host::CollectOptions co;
    co.sysroot = a.sysroot;
    if (a.pid != 0) co.pid = a.pid;
    co.sample_interval_ns = a.interval_ms * 1'000'000;
    facts = host::CollectHostFacts(co);
    if (a.pid != 0 && !facts.server) {
      return Fail("doctor", NotFound("--pid " + std::to_string(a.pid) + ": " + facts.server_note));
    }
    if (!a.collect_path.empty()) {
      Status st = WriteFileAtomic(a.collect_path, host::FactsToJson(facts));
      if (!st.ok()) return Fail("doctor", st);
      std::fprintf(stderr, "latdoc doctor: facts written to %s\n", a.collect_path.c_str());
      return kExitOk;
    }
  }

  std::vector<rules::Finding> findings = rules::JudgeHost(facts, opts);
  if (!a.json_path.empty()) {
    Status st = WriteDoctorJson(a.json_path, facts, findings);
    if (!st.ok()) return Fail("doctor", st);
  }

  const std::string out = DoctorText(a, facts, findings);
  if (!QuietRequested()) std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return rules::WorstSeverity(findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

}  // namespace

Command RegisterDoctor(CLI::App& root) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* app = root.add_subcommand(
      "doctor", "Host, network-stack and server-configuration checks (read-only)");
  app->add_option("--sysroot", args->sysroot,
                  "Read /sys, /proc and recorded command outputs from this directory");
  app->add_option("--pid", args->pid, "The server process (default: found by command line)")
      ->check(Number(Bound::kPositive));
  app->add_option("--collect", args->collect_path, "Write the collected facts to this file and stop");
  app->add_option("--facts", args->facts_path, "Judge facts written by --collect");
  app->add_option("--json", args->json_path, "Also write facts and findings as JSON");
  app->add_option("--sweep", args->sweep_path, "A latdoc sweep JSON: compare --max-num-seqs to the knee");
  app->add_option("--interval-ms", args->interval_ms, "Gap between the two counter samples: ms, or 1s")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kNonNegative))->capture_default_str();
  app->add_flag("--show-ok,--all", args->show_all, "List ok and skipped checks too");
  AddQuietFlag(app, nullptr, "No terminal summary");
  AddNoColorFlag(app);
  return Command{app, [args]() { return RunDoctor(*args); }};
}

}  // namespace latdoc::cli
