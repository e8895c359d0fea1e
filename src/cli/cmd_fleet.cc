// latdoc fleet --prometheus URL [--selector '{job="vllm"}'] [--window 15m]: which replicas of a
// fleet are sick, and why, from what Prometheus holds (fleet/fleet.h, rules/fleet_rules.h).
// Argument parsing, output and exit codes only.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "fleet/fleet.h"
#include "fleet/fleet_report.h"
#include "rules/fleet_rules.h"

namespace latdoc::cli {
namespace {

// Seconds become int64 nanoseconds; a window beyond a year is a typo.
constexpr double kMaxWindowSeconds = 366.0 * 86400;

struct FleetArgs {
  fleet::FleetOptions o;
  double window_s = 15 * 60;
  double timeout_s = 30;
  std::string json_path, markdown_path, html_path;
  double outlier_k = 3;
  bool show_ok = false;
  bool over_time = false;
  std::string token_env;
  bool no_color = false;
};

int RunFleet(FleetArgs& a) {
  if (!(a.window_s >= 1 && a.window_s <= kMaxWindowSeconds))
    return Fail("fleet", fmt::format("--window {:g}: must be 1s to 366 days", a.window_s),
                kExitBadInput);
  if (!(a.timeout_s > 0 && a.timeout_s <= 3600))
    return Fail("fleet", fmt::format("--timeout {:g}: must be more than 0 and at most 1h", a.timeout_s),
                kExitBadInput);
  if (!(a.outlier_k > 0 && a.outlier_k <= 100))
    return Fail("fleet", fmt::format("--outlier-k {:g}: must be more than 0 and at most 100", a.outlier_k),
                kExitBadInput);
  a.o.window_ns = int64_t(a.window_s * 1e9);
  a.o.timeout_ns = int64_t(a.timeout_s * 1e9);
  a.o.over_time = !a.html_path.empty() || a.over_time;
  if (!a.token_env.empty()) {
    const char* token = std::getenv(a.token_env.c_str());
    if (!token || !*token)
      return Fail("fleet", fmt::format("--prometheus-token-env {}: the variable is not set, or empty",
                                       a.token_env),
                  kExitBadInput);
    a.o.bearer_token = token;
  }
  StatusOr<fleet::FleetFacts> facts = fleet::CollectFleet(a.o);
  if (!facts.ok()) return Fail("fleet", facts.status());
  rules::FleetRuleOptions ro;
  ro.outlier_k = a.outlier_k;
  std::vector<rules::Finding> findings = rules::JudgeFleet(facts->replicas, ro);
  rules::RankFindings(findings);
  PrintSummaryAndFindings(fleet::RenderFleetSummary(*facts, findings), findings, a.no_color,
                          a.show_ok);
  if (!a.json_path.empty()) {
    if (Status st = WriteFileAtomic(a.json_path, JsonText(fleet::FleetToJson(*facts, findings), 2) + "\n");
        !st.ok())
      return Fail("fleet", st);
  }
  if (!a.markdown_path.empty()) {
    if (Status st = WriteFileAtomic(a.markdown_path, fleet::RenderFleetMarkdown(*facts, findings));
        !st.ok())
      return Fail("fleet", st);
  }
  if (!a.html_path.empty()) {
    if (Status st = WriteFileAtomic(a.html_path, fleet::RenderFleetHtml(*facts, findings)); !st.ok())
      return Fail("fleet", st);
  }
  return rules::WorstSeverity(findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

}  // namespace

Command RegisterFleet(CLI::App& root) {
  auto a = std::make_shared<FleetArgs>();
  CLI::App* app = root.add_subcommand(
      "fleet",
      "Which replicas of a fleet are sick, and why, from Prometheus: per replica request rate,\n"
      "TTFT and ITL p50/p99, queue share, running/waiting, KV usage, preemptions and its\n"
      "latdoc exporter's findings; verdicts: outliers, load imbalance, past the knee, targets\n"
      "down or stale.");
  app->add_option("--prometheus", a->o.prometheus_url,
                  "Prometheus's base URL, e.g. http://prometheus:9090")
      ->required();
  app->add_option("--prometheus-token-env", a->token_env,
                  "Environment variable holding a bearer token for Prometheus (never printed)");
  app->add_option("--selector", a->o.selector,
                  "PromQL label selector of the replicas' vLLM series, e.g. '{job=\"vllm\"}' "
                  "(default: every vLLM series)");
  app->add_option("--exporter-selector", a->o.exporter_selector,
                  "Label selector of the latdoc exporters' series (default: every exporter)");
  app->add_option("--by", a->o.replica_label, "The label that tells replicas apart")
      ->capture_default_str();
  app->add_option("--window", a->window_s, "How far back to look: 30s, 15m, 1h")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->default_str("15m");
  app->add_option("--timeout", a->timeout_s, "Bound of each query")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->default_str("30s");
  app->add_option("--outlier-k", a->outlier_k,
                  "An outlier's p99 is beyond median + K * 1.4826 * MAD of the fleet (and 1.5x "
                  "the median)")
      ->capture_default_str();
  app->add_option("--json", a->json_path, "Write replicas and findings as JSON (schema latdoc.fleet/1)");
  app->add_option("--markdown", a->markdown_path, "Write the replica table and findings as Markdown");
  app->add_option("--html", a->html_path,
                  "Write one HTML page: the replica table, heat maps of p99 TTFT and ITL over "
                  "the window, the findings");
  app->add_flag("--over-time", a->over_time,
                  "Also query each replica's p99 TTFT and ITL over the window (into --json; "
                  "--html does it anyway)");
  app->add_flag("--show-ok", a->show_ok, "List passed and skipped checks too");
  AddQuietFlag(app, nullptr, "No terminal summary");
  AddNoColorFlag(app);
  return Command{app, [a] { return RunFleet(*a); }};
}

}  // namespace latdoc::cli
