// The terminal summary of a diagnosis (RenderDiagnoseText, diagnose.h).
#include <string>

#include <fmt/core.h>

#include "base/strings.h"
#include "diagnose/diagnose.h"
#include "report/findings_text.h"
#include "rules/finding.h"

namespace latdoc::diagnose {

using nlohmann::ordered_json;

namespace {

// The model and the server, where the load run or the log named them, and whether the run
// stopped early.
std::string SubjectLines(const report::Diagnosis& r) {
  const ordered_json& d = r.sections;
  std::string out;
  // The model and the server, where the load run or the log named them.
  const std::string model = r.Model();
  const ordered_json* version = nullptr;
  if (d.contains("logs") && d["logs"].is_object()) {
    const ordered_json& f = d["logs"].value("facts", ordered_json::object());
    if (f.contains("vllm_server") && f["vllm_server"].contains("version") && f["vllm_server"]["version"].is_string())
      version = &d["logs"]["facts"]["vllm_server"]["version"];
  }
  const std::string metrics_server = r.MetricsServer();
  if (!model.empty()) out += "model: " + ToTerminalText(model) + "\n";
  if (version) {
    out += "server: vLLM " + ToTerminalText(version->get<std::string>()) + " (from its log)\n";
  } else if (r.target) {
    out += "server: " + loadgen::ServerLabel(*r.target, metrics_server) + "\n";
  }
  if (r.partial) {
    out += fmt::format(
        "STOPPED EARLY ({}): partial results; the layers after the stop were "
        "skipped.\n",
        r.partial_reason.empty() ? "interrupted" : r.partial_reason);
  }
  return out;
}

// Where TTFT goes: the waterfall's parts, measured and inferred.
std::string TtftLine(const ordered_json& w) {
  std::string out;
  auto ms = [&](const char* k) {
    return w.contains(k) && w[k].is_number() ? fmt::format("{:.1f} ms", w[k].get<double>())
                                             : std::string("n/a");
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
  return out;
}

// The load run's latency percentiles and throughput.
std::string LoadLine(const loadgen::LoadFacts& b) {
  std::string out;
  auto v = [](std::optional<double> x) {
    return x ? fmt::format("{:.1f}", *x) : std::string("n/a");
  };
  auto stat = [&](const std::optional<loadgen::LatencyStats>& m, bool p99) {
    return v(!m ? std::nullopt : p99 ? m->p99_ms() : m->median_ms);
  };
  out += fmt::format(
      "At concurrency {}: TTFT p50 {} / p99 {} ms, ITL p50 {} / p99 {} ms, {} output tok/s\n",
      b.max_concurrency.value_or(0), stat(b.ttft, false), stat(b.ttft, true), stat(b.itl, false),
      stat(b.itl, true), v(b.output_throughput));
  return out;
}

// The findings' text, or why there are none: nothing measured, or stopped early.
std::string FindingsText(const report::Diagnosis& r, bool color, bool show_ok) {
  report::TextOptions to;
  to.color = color;
  to.show_ok = show_ok;
  std::string findings = report::RenderFindingsText(r.findings, to);
  bool measured = false;  // a layer that ran (not skipped, not failed)
  for (const report::LayerStatus& l : r.layers) {
    const std::string& status = l.status;
    measured = measured || (status.rfind("skipped", 0) != 0 && status.rfind("failed", 0) != 0);
  }
  if (!measured && findings == "No problems found.\n") {
    findings = "Nothing was diagnosed: no layer could be measured (see Layers above).\n";
  } else if (r.partial) {
    // Stopped early: the layers not run found nothing because they did not run.
    const std::string none = "No problems found.\n";
    if (findings == none) findings = "No problems found in the layers run before the stop.\n";
  }
  return findings;
}

}  // namespace

std::string RenderDiagnoseText(const report::Diagnosis& r, bool color, bool show_ok) {
  const ordered_json& d = r.sections;
  std::string out = fmt::format("latdoc diagnose: {}\n", r.target.value_or("(no live target)"));
  out += SubjectLines(r);
  out += "\n";
  out += "Layers:\n";
  for (const report::LayerStatus& l : r.layers)
    out += fmt::format("  {:<8} {}\n", l.layer, l.status);
  if (d.contains("ttft_waterfall")) out += TtftLine(d["ttft_waterfall"]);
  if (r.bench) out += LoadLine(*r.bench);
  out += "\nFindings, most important first:\n";
  out += FindingsText(r, color, show_ok);
  if (const rules::Finding* it = r.ChangeFirst()) {
    out += fmt::format("\nChange first: {}\n  {}\n", it->title, it->advice);
    if (it->latency_share)
      out += fmt::format("  (about {:.0f}% of the {})\n", *it->latency_share * 100, rules::ShareOf(*it));
    else if (it->share_basis == rules::ShareBasis::kOffRequestPath)
      out += fmt::format("  (share: {})\n", rules::ShareOf(*it));
  }
  return out;
}

}  // namespace latdoc::diagnose
