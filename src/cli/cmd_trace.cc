// latdoc trace FILE... [--json FILE] [--annotate OUT.json]: kernel-level analysis of profiler
// traces (Kineto JSON, rocprof v1, rocprofv3 CSV/JSON, rocpd SQLite, Nsight Systems SQLite).
// Argument parsing, output and exit codes only; the work is in trace/ and rules/trace_rules.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/exit_codes.h"
#include "base/file_util.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "rules/trace_rules.h"
#include "trace/analysis/annotate.h"
#include "trace/analysis/summary_text.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::cli {
namespace {

struct TraceArgs {
  std::vector<std::string> files;
  std::string json_path;
  std::string annotate_path;
  bool show_ok = false;
  bool no_color = false;
  bool quiet = false;
  bool timings = false;
  trace::AnalysisOptions analysis;
  rules::TraceRuleOptions rules;
  double small_copy_kib = 64;
  double outlier_min_excess_us = 20;
  double kernel_wait_us = 30;
  double tiny_kernel_us = 10;
};

// Ranges worth marking in Perfetto: the largest idle gaps, the slowest steps and the outlier
// instances.
std::vector<trace::Annotation> Annotations(const trace::Trace& t, const trace::TraceReport& r,
                                           const std::vector<rules::Finding>& findings) {
  std::vector<trace::Annotation> out;
  const int64_t t0 = trace::TraceStartNs(t);
  std::string idle_id = "kernel.gpu_idle";
  for (const auto& f : findings) {
    if (f.id.rfind("kernel.gpu_idle", 0) == 0) idle_id = f.id;
  }
  for (const auto& g : r.idle.largest_gaps) {
    out.push_back({idle_id, fmt::format("GPU idle {:.1f} us", static_cast<double>(g.dur_ns) / 1e3),
                   t0 + g.at_ns, g.dur_ns,
                   fmt::format("before {}; launch {}", g.next_op, g.next_launch.value_or("n/a"))});
  }
  // The slowest steps, for kernel.step_outliers' advice to open the trace at them.
  for (const auto& x : r.steps.slowest) {
    const auto& st = r.steps.steps[static_cast<size_t>(x.index)];
    out.push_back({"kernel.step_outliers", fmt::format("step {}: {:.2f}x median", x.index, x.ratio_to_median),
                   t0 + st.at_ns, st.wall_ns,
                   fmt::format("step {} took {:.3f} ms, GPU busy {:.3f} ms", x.index,
                               static_cast<double>(st.wall_ns) / 1e6, static_cast<double>(st.gpu_busy_ns) / 1e6)});
  }
  for (const auto& x : r.outliers) {
    out.push_back({"kernel.outlier_instances",
                   fmt::format("{:.1f}x median", static_cast<double>(x.dur_ns) / std::max(1.0, x.median_ns)),
                   t0 + x.at_ns, x.dur_ns,
                   fmt::format("{} ran {:.1f} us, median {:.1f} us", x.name,
                               static_cast<double>(x.dur_ns) / 1e3, x.median_ns / 1e3)});
  }
  return out;
}

// --timings: where the time went, on stderr (events/s per file is the import rate; for the
// SQLite formats an event is one row read).
void PrintTimings(const std::vector<trace::FileResult>& results, const trace::Trace& t,
                  const trace::ImportTimings& timings, double analysis_s) {
  for (const auto& r : results) {
    int64_t events = 0;
    for (const auto& s : t.sources) {
      if (s.path == r.path) events += s.events_read;
    }
    std::fprintf(stderr, "timing: import %s (%s): %.3f s, %lld events, %.2f M events/s; peak RSS %.1f MiB\n",
                 r.path.c_str(), r.format.c_str(), r.import_s, static_cast<long long>(events),
                 r.import_s > 0 ? static_cast<double>(events) / r.import_s / 1e6 : 0.0,
                 static_cast<double>(r.peak_rss_kib) / 1024);
  }
  std::fprintf(stderr, "timing: finalize (sort, link): %.3f s; peak RSS %.1f MiB\n", timings.finalize_s,
               static_cast<double>(timings.finalize_peak_rss_kib) / 1024);
  std::fprintf(stderr, "timing: analyses and rules: %.3f s; peak RSS %.1f MiB\n", analysis_s,
               static_cast<double>(trace::PeakRssKib()) / 1024);
}

// The --json document: every input with its bad records or its error, then the facts and
// findings (null and empty when nothing could be analysed). kExitOk, or the write's exit code.
int WriteJson(const std::string& path, const trace::Trace& t, const std::vector<trace::FileResult>& results,
              bool bad_input, const trace::TraceReport* report, const std::vector<rules::Finding>& findings) {
  nlohmann::json doc;
  doc["schema"] = "latdoc.trace/1";
  doc["complete"] = !bad_input;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& s : t.sources) {
    nlohmann::json ex = nlohmann::json::array();
    for (const auto& e : s.issues.examples) ex.push_back({{"where", e.where}, {"what", e.what}});
    inputs.push_back({{"path", s.path}, {"format", s.format}, {"events", s.events_read},
                      {"bad_records", s.issues.total()}, {"bad_by_reason", s.issues.count_by_reason},
                      {"bad_examples", ex},
                      {"error", s.fatal_error ? nlohmann::json(*s.fatal_error) : nlohmann::json(nullptr)}});
  }
  for (const auto& res : results) {
    if (!res.status.ok() && res.source < 0) {
      inputs.push_back({{"path", res.path},
                        {"format", res.format.empty() ? nlohmann::json(nullptr) : nlohmann::json(res.format)},
                        {"error", res.status.message()}});
    }
  }
  doc["inputs"] = std::move(inputs);
  doc["facts"] = report != nullptr ? trace::ReportToJson(*report) : nlohmann::json(nullptr);
  nlohmann::json fj = nlohmann::json::array();
  for (const auto& f : findings) fj.push_back(rules::ToJson(f));
  doc["findings"] = std::move(fj);
  const Status st = WriteFileAtomic(path, JsonText(doc, 2) + "\n");
  if (!st.ok()) {
    std::fprintf(stderr, "latdoc trace: %s\n", st.message().c_str());
    return ExitCodeFor(st);
  }
  return kExitOk;
}

// A threshold outside its range (or NaN) would judge nonsense, and past int64 nanoseconds the
// conversion is undefined: refused, as bad input, before any file is read.
Status CheckThresholds(const TraceArgs& a) {
  struct Bound {
    const char* flag;
    double value, lo, hi;
  };
  const Bound bounds[] = {
      {"--outlier-factor", a.analysis.outlier_factor, 1, 1e6},
      {"--outlier-min-excess-us", a.outlier_min_excess_us, 0, 1e9},
      {"--small-copy-kib", a.small_copy_kib, 0, 1e9},
      {"--kernel-wait-us", a.kernel_wait_us, 0, 1e9},
      {"--tiny-kernel-us", a.tiny_kernel_us, 0, 1e9},
      {"--idle-warn", a.rules.idle_warn_share, 0, 1},
      {"--idle-fail", a.rules.idle_fail_share, 0, 1},
  };
  for (const Bound& b : bounds) {
    if (!(b.value >= b.lo && b.value <= b.hi)) {
      return InvalidArgument(fmt::format("{} {}: must be {:g} to {:g}", b.flag, b.value, b.lo, b.hi));
    }
  }
  if (a.rules.idle_warn_share > a.rules.idle_fail_share) {
    return InvalidArgument(fmt::format("--idle-warn {} is above --idle-fail {}", a.rules.idle_warn_share,
                                       a.rules.idle_fail_share));
  }
  return Status();
}

int RunTrace(TraceArgs& a) {
  if (Status st = CheckThresholds(a); !st.ok()) return Fail("trace", st);
  a.analysis.small_copy_bytes = static_cast<int64_t>(a.small_copy_kib * 1024);
  a.analysis.outlier_min_excess_ns = static_cast<int64_t>(a.outlier_min_excess_us * 1e3);
  a.analysis.kernel_wait_max_ns = static_cast<int64_t>(a.kernel_wait_us * 1e3);
  a.analysis.tiny_kernel_ns = static_cast<int64_t>(a.tiny_kernel_us * 1e3);

  trace::Trace t;
  trace::ImportTimings import_timings;
  const std::vector<trace::FileResult> results =
      trace::ImportFiles(a.files, trace::ImportOptions{}, t, &import_timings);
  bool bad_input = false;
  for (const auto& res : results) {
    if (!res.status.ok()) {
      bad_input = true;
      std::fprintf(stderr, "latdoc trace: %s\n", res.status.message().c_str());
    }
  }
  if (t.gpu_ops.empty() && t.api_calls.empty() && t.aggregates.empty()) {
    if (!bad_input) std::fprintf(stderr, "latdoc trace: no GPU or API events in the input\n");
    // The JSON still says which inputs failed and why (no facts, no findings).
    if (!a.json_path.empty()) WriteJson(a.json_path, t, results, true, nullptr, {});
    return kExitBadInput;
  }
  const int64_t analysis_start = MonoNowNs();
  trace::TraceReport report = trace::Analyze(t, a.analysis);
  rules::AddKnowledgeFacts(report);
  std::vector<rules::Finding> findings = rules::EvaluateTraceRules(report, a.rules);
  rules::RankFindings(findings);
  if (a.timings) PrintTimings(results, t, import_timings, NsToSec(MonoNowNs() - analysis_start));

  if (!a.json_path.empty()) {
    if (int rc = WriteJson(a.json_path, t, results, bad_input, &report, findings); rc != kExitOk) return rc;
  }
  if (!a.annotate_path.empty()) {
    const Status st = WriteFileAtomic(
        a.annotate_path, trace::RenderAnnotatedTrace(t, Annotations(t, report, findings), trace::AnnotateOptions{}));
    if (!st.ok()) {
      std::fprintf(stderr, "latdoc trace: %s\n", st.message().c_str());
      return ExitCodeFor(st);
    }
  }
  if (!a.quiet) {
    PrintSummaryAndFindings(trace::RenderTraceSummary(report, t.sources, a.analysis), findings, a.no_color,
                            a.show_ok);
  }
  if (bad_input) return kExitBadInput;
  return rules::WorstSeverity(findings) == rules::Severity::kFail ? kExitFindings : kExitOk;
}

// The trace's tables past one block live in temporary files: one that cannot be read back (a
// disk error) stops the run, with no half-written output.
int Run(TraceArgs& a) {
  try {
    return RunTrace(a);
  } catch (const trace::SpillReadError& e) {
    std::fprintf(stderr, "latdoc trace: %s\n", e.what());
    return kExitCannotRun;
  }
}

}  // namespace

Command RegisterTrace(CLI::App& root) {
  auto args = std::make_shared<TraceArgs>();
  CLI::App* app = root.add_subcommand(
      "trace",
      "Kernel-level analysis of GPU profiler traces: PyTorch/Kineto JSON (.json/.json.gz),\n"
      "rocprof v1 (results.csv/.json, stats CSVs), rocprofv3 CSV/JSON, rocpd SQLite, Nsight Systems\n"
      "SQLite; several files (one per rank or process) at once.");
  app->add_option("files", args->files, "Trace files; the format is detected from content")->required();
  app->add_option("--json", args->json_path, "Write facts and findings as JSON to FILE");
  app->add_option("--annotate", args->annotate_path,
                  "Write a Chrome trace with the findings as marked ranges (open in Perfetto UI)");
  app->add_option("--top", args->analysis.hot_list, "Kernels in the hot list")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  app->add_option("--outlier-factor", args->analysis.outlier_factor,
                  "Outlier: an instance slower than this many times its kernel's median")
      ->capture_default_str();
  app->add_option("--outlier-min-excess-us", args->outlier_min_excess_us,
                  "Outlier: and at least this many us above the median")
      ->capture_default_str();
  app->add_option("--small-copy-kib", args->small_copy_kib, "Small copy: below this size, in KiB")
      ->capture_default_str();
  app->add_option("--kernel-wait-us", args->kernel_wait_us,
                  "Idle gap split: shorter gaps with the next op already launched are kernel wait (HTA), in us")
      ->capture_default_str();
  app->add_option("--tiny-kernel-us", args->tiny_kernel_us, "Tiny kernel: shorter than this many us (TraceLens)")
      ->capture_default_str();
  app->add_option("--warmup-share", args->analysis.warmup_share,
                  "Share of the host timeline treated as warm-up for steady-state checks when no steps are found")
      ->check(CLI::Range(0.0, 0.99))->capture_default_str();
  app->add_option("--idle-warn", args->rules.idle_warn_share, "GPU idle share that warns")
      ->capture_default_str();
  app->add_option("--idle-fail", args->rules.idle_fail_share, "GPU idle share that fails")
      ->capture_default_str();
  app->add_flag("--show-ok", args->show_ok, "Also list checks that passed");
  AddNoColorFlag(app);
  AddQuietFlag(app, &args->quiet, "No terminal summary (with --json/--annotate)");
  app->add_flag("--timings", args->timings, "Print import, finalize and analysis times to stderr");
  return Command{app, [args]() -> int { return Run(*args); }};
}

}  // namespace latdoc::cli
