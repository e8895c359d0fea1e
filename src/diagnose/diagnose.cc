#include "diagnose/diagnose.h"

#include <algorithm>
#include <ctime>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/file_util.h"
#include "host/collector.h"
#include "host/host_facts.h"
#include "logs/log_analyzer.h"
#include "logs/log_facts.h"
#include "report/findings_text.h"
#include "rules/host_rules.h"
#include "rules/load_rules.h"
#include "rules/log_rules.h"
#include "rules/trace_rules.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

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
  for (const auto& f : fs) a.push_back(ordered_json::parse(rules::ToJson(f).dump()));
  return a;
}

rules::Finding Unreachable(const std::string& url, const std::string& why) {
  rules::Finding f;
  f.id = "load.unreachable";
  f.layer = rules::Layer::kLoad;
  f.severity = rules::Severity::kFail;
  f.title = fmt::format("the target {} could not be reached", url);
  f.evidence = {{"error", std::nullopt, "", why}};
  f.advice = "Check that the server is up and the URL (scheme, host, port) is right; "
             "`latdoc net --url ...` separates DNS, connect and TLS problems.";
  return f;
}

// One load step: returns the bench document, or null with `why` set.
ordered_json LoadStep(const DiagnoseOptions& o, int concurrency, int requests, uint64_t seed,
                      std::string* why) {
  loadgen::BenchOptions b = o.bench;
  b.url = o.url;
  b.concurrency = concurrency;
  b.request_rate = 0;
  b.num_requests = requests;
  b.duration_s = 0;
  b.progress = false;
  loadgen::RandomWorkloadOptions w = o.workload;
  w.seed = seed;
  b.prompts = loadgen::RandomPrompts(w, size_t(requests));
  auto run = loadgen::RunBench(b);
  if (!run.ok()) {
    *why = run.status().message();
    return nullptr;
  }
  loadgen::ResultOptions ro;
  ro.slo = o.slo;
  return loadgen::SummarizeRun(*run, b, ro).json;
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

  // Load: a low-load baseline, then the target load with /metrics scraped.
  if (o.url.empty()) {
    layers["load"] = "skipped: no --url";
    layers["network"] = "skipped: no --url";
  } else {
    std::string why;
    Say(o, fmt::format("baseline: {} requests at concurrency 1", o.baseline_requests));
    ordered_json base = LoadStep(o, 1, o.baseline_requests, o.workload.seed + 1, &why);
    ordered_json load;
    if (!base.is_null()) {
      Say(o, fmt::format("load: {} requests at concurrency {}", o.requests, o.concurrency));
      load = LoadStep(o, o.concurrency, o.requests, o.workload.seed, &why);
    }
    if (load.is_null()) {
      layers["load"] = "failed: " + why;
      all.push_back(Unreachable(o.url, why));
    } else {
      layers["load"] = "measured";
      doc["baseline"] = base;
      doc["bench"] = load;
      const ordered_json& srv = load["server_metrics"];
      if (srv.contains("ttft_breakdown")) doc["ttft_waterfall"] = srv["ttft_breakdown"];
      Append(all, rules::EvaluateLoadRules(base, load));
    }
    layers["network"] = "inferred from the load test (client TTFT - server TTFT)";
  }

  // Kernel: profiler traces.
  if (o.traces.empty()) {
    layers["kernel"] = "skipped: no --trace";
  } else {
    Say(o, fmt::format("trace: {} file(s)", o.traces.size()));
    trace::Trace t;
    auto results = trace::ImportFiles(o.traces, trace::ImportOptions{}, t);
    std::string errors;
    for (const auto& r : results)
      if (!r.status.ok()) errors += (errors.empty() ? "" : "; ") + r.status.message();
    if (t.gpu_ops.empty() && t.api_calls.empty() && t.aggregates.empty()) {
      layers["kernel"] = "failed: " + (errors.empty() ? std::string("no GPU events in the traces") : errors);
    } else {
      trace::TraceReport report = trace::Analyze(t, trace::AnalysisOptions{});
      rules::AddKnowledgeFacts(report);
      auto fs = rules::EvaluateTraceRules(report, rules::TraceRuleOptions{});
      ordered_json tj;
      tj["schema"] = "latdoc.trace/1";
      tj["complete"] = errors.empty();
      if (!errors.empty()) tj["errors"] = errors;
      tj["facts"] = ordered_json::parse(trace::ReportToJson(report).dump());
      tj["findings"] = FindingsJson(fs);
      doc["trace"] = std::move(tj);
      Append(all, std::move(fs));
      std::string status = errors.empty() ? "measured" : "measured (some files failed: " + errors + ")";
      if (!o.trace_note.empty()) status += " — " + o.trace_note;
      layers["kernel"] = status;
    }
  }

  // Logs.
  if (o.logs.empty()) {
    layers["logs"] = "skipped: no --logs";
  } else {
    Say(o, fmt::format("logs: {} file(s)", o.logs.size()));
    auto facts = logs::AnalyzeInputs(o.logs);
    if (!facts.ok()) {
      layers["logs"] = "failed: " + facts.status().message();
    } else {
      auto fs = rules::EvaluateLogRules(*facts);
      ordered_json lj;
      lj["schema"] = "latdoc.logs/1";
      lj["facts"] = ordered_json::parse(logs::ToJson(*facts).dump());
      lj["findings"] = FindingsJson(fs);
      doc["logs"] = std::move(lj);
      Append(all, std::move(fs));
      layers["logs"] = "measured";
    }
  }

  // System and configuration: host facts, here or from a file.
  if (!o.facts_path.empty() || o.local) {
    Say(o, o.local ? "host: collecting facts on this machine" : "host: judging " + o.facts_path);
    std::optional<host::HostFacts> facts;
    std::string why;
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
    if (!facts) {
      layers["system"] = layers["config"] = "failed: " + why;
    } else {
      auto fs = rules::JudgeHost(*facts, rules::HostRuleOptions{});
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

  rules::RankFindings(all);
  doc["layers"] = layers;
  doc["findings"] = FindingsJson(all);
  auto worst = rules::WorstSeverity(all);
  doc["worst_severity"] = rules::SeverityName(worst);
  return res;
}

std::string RenderDiagnoseText(const DiagnoseResult& r, bool color, bool show_ok) {
  const ordered_json& d = r.doc;
  std::string out = fmt::format("latdoc diagnose: {}\n\n",
                                d["target"].is_null() ? "(no live target)" : d["target"].get<std::string>());
  out += "Layers:\n";
  for (const auto& [k, v] : d["layers"].items()) out += fmt::format("  {:<8} {}\n", k, v.get<std::string>());
  if (d.contains("ttft_waterfall")) {
    const ordered_json& w = d["ttft_waterfall"];
    auto ms = [&](const char* k) {
      return w.contains(k) && w[k].is_number() ? fmt::format("{:.1f} ms", w[k].get<double>()) : std::string("n/a");
    };
    out += fmt::format(
        "\nWhere TTFT goes (mean {}): queue {} (measured) + prefill {} (measured) + network and "
        "front end {} (inferred)\n",
        ms("client_ttft_ms"), ms("queue_ms"), ms("prefill_ms"), ms("network_and_front_end_ms"));
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
  out += report::RenderFindingsText(r.findings, to);
  // What to change first: the top-ranked `fail`, else the top-ranked `warn`.
  for (auto level : {rules::Severity::kFail, rules::Severity::kWarn}) {
    auto it = std::find_if(r.findings.begin(), r.findings.end(), [&](const rules::Finding& f) {
      return f.severity == level && !f.advice.empty();
    });
    if (it == r.findings.end()) continue;
    out += fmt::format("\nChange first: {}\n  {}\n", it->title, it->advice);
    if (it->latency_share)
      out += fmt::format("  (about {:.0f}% of the mean end-to-end latency)\n", *it->latency_share * 100);
    break;
  }
  return out;
}

}  // namespace latdoc::diagnose
