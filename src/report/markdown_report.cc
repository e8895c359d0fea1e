#include "report/markdown_report.h"

#include <algorithm>

#include <fmt/core.h>

#include "report/findings_text.h"
#include "report/html_report_data.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;

std::string Num(const ordered_json& v) {
  return FormatNumber(v.is_number() ? std::optional(v.get<double>()) : std::nullopt);
}

std::string Count(const ordered_json& v) {
  return FormatCountValue(v.is_number() ? std::optional(v.get<double>()) : std::nullopt);
}

std::string NotMeasured(std::string_view what) { return fmt::format("_{}: not measured._\n\n", what); }

// Peak of a column of numbers-or-null (nullopt when all are null).
std::optional<double> Peak(const ordered_json& col) {
  std::optional<double> m;
  for (const auto& v : col) {
    if (v.is_number()) m = std::max(m.value_or(v.get<double>()), v.get<double>());
  }
  return m;
}

// The title, what was diagnosed, and the count of findings by severity.
std::string HeaderSection(const Diagnosis& diagnosis) {
  std::string out = "# latdoc diagnosis\n\n";
  const ReportSubject subject = SubjectOf(diagnosis);
  out += fmt::format("- target: {}\n", subject.target.empty() ? "n/a" : MarkdownCode(subject.target));
  out += fmt::format("- model: {}\n", subject.model.empty() ? "n/a" : MarkdownCode(subject.model));
  if (!subject.server.empty()) out += "- server: " + MarkdownText(subject.server) + "\n";
  const std::string& generated = diagnosis.generated_at;
  if (!generated.empty()) out += "- generated: " + MarkdownText(generated) + "\n";
  int counts[5] = {0, 0, 0, 0, 0};
  for (const auto& f : diagnosis.findings) ++counts[static_cast<int>(f.severity)];
  out += fmt::format("- findings: {} fail, {} warn, {} info, {} ok, {} skipped\n\n", counts[4], counts[3],
                     counts[2], counts[1], counts[0]);
  return out;
}

// The one change to make first, when a finding explains a share of the latency.
std::string ChangeFirstSection(const Diagnosis& diagnosis) {
  std::string out;
  if (const rules::Finding* first = diagnosis.ChangeFirst()) {
    out += fmt::format("## Change first\n\n**{}** ({})", MarkdownText(first->title), MarkdownCode(first->id));
    if (first->latency_share)
      out += fmt::format(": about {:.0f}% of the {}", *first->latency_share * 100, rules::ShareOf(*first));
    out += "\n\n" + MarkdownAdvice(first->advice) + "\n\n";
  }
  return out;
}

// Every finding, problems first.
std::string FindingsSection(const Diagnosis& diagnosis) {
  std::string out;
  out += "## Findings checklist\n\nProblems (fail, warn) first, ranked by the estimated share of the mean end-to-end latency each explains (a trace's only when it was recorded from the server under test), then severity; then the rest.\n\n";
  out += diagnosis.findings.empty() ? std::string("No findings.\n")
                                    : RenderFindingsMarkdown(diagnosis.findings);
  if (diagnosis.unreadable_findings > 0)
    out += fmt::format("\n{} unreadable findings not shown.\n", diagnosis.unreadable_findings);
  return out;
}

// What each layer of the stack yielded.
std::string LayersSection(const ordered_json& d) {
  std::string out;
  out += "\n## Layers checked\n\n| layer | status |\n|---|---|\n";
  for (const auto& l : d["layers"]) {
    out += fmt::format("| {} | {} |\n", l["layer"].get<std::string>(), MarkdownText(l["status"].get<std::string>()));
  }
  return out;
}

// The client's TTFT split into its parts.
std::string TtftSection(const ordered_json& d) {
  std::string out;
  out += "\n## TTFT decomposition\n\n";
  if (const ordered_json& w = d["waterfall"]; w.is_object()) {
    out += "| part | ms | share of TTFT |\n|---|---:|---:|\n";
    const double client = w["client_ttft_ms"].get<double>();
    for (const auto& s : w["segments"]) {
      std::string share = "n/a";
      if (s["ms"].is_number() && client > 0) share = SharePercent(s["ms"].get<double>(), client);
      out += fmt::format("| {} | {} | {} |\n", s["label"].get<std::string>(), Num(s["ms"]), share);
    }
    out += fmt::format("| **client TTFT** | **{}** | 100% |\n\n", Num(w["client_ttft_ms"]));
  } else {
    out += NotMeasured("TTFT waterfall");
  }
  return out;
}

// The load run's latency percentiles and throughput.
std::string LoadRunSection(const ordered_json& d) {
  std::string out;
  out += "## Load run\n\n";
  if (const ordered_json& b = d["bench"]; b.is_object()) {
    out += "| metric | mean | median | p99 |\n|---|---:|---:|---:|\n";
    for (auto [m, label] : {std::pair{"ttft", "TTFT (ms)"}, std::pair{"tpot", "TPOT (ms)"},
                            std::pair{"itl", "ITL (ms)"}, std::pair{"e2el", "E2E latency (ms)"}}) {
      out += fmt::format("| {} | {} | {} | {} |\n", label, Num(b[fmt::format("mean_{}_ms", m)]),
                         Num(b[fmt::format("median_{}_ms", m)]), Num(b[fmt::format("p99_{}_ms", m)]));
    }
    out += fmt::format("\n{} completed, {} failed, concurrency {}; {} req/s, {} output tokens/s.\n\n",
                       Count(b["completed"]), Count(b["failed"]), Count(b["max_concurrency"]),
                       Num(b["request_throughput"]), Num(b["output_throughput"]));
  } else {
    out += NotMeasured("Load run");
  }
  return out;
}

// The sweep: p99 latencies and throughput per step, and the knee.
std::string SweepSection(const ordered_json& d) {
  std::string out;
  out += "## Latency curve (sweep)\n\n";
  if (const ordered_json& s = d["sweep"]; s.is_object()) {
    out += fmt::format("| {} | p99 TTFT (ms) | p99 ITL (ms) | p99 E2EL (ms) | output tok/s |\n"
                       "|---:|---:|---:|---:|---:|\n",
                       s["x_name"].get<std::string>());
    for (const auto& p : s["steps"]) {
      out +=
          fmt::format("| {} | {} | {} | {} | {} |\n", Num(p["x"]),
                      Num(p[loadgen::keys::kP99TtftMs]), Num(p[loadgen::keys::kP99ItlMs]),
                      Num(p[loadgen::keys::kP99E2elMs]), Num(p[loadgen::keys::kOutputThroughput]));
    }
    if (s["knee"].is_object()) {
      out += fmt::format("\nKnee at {} = {}{}.\n", s["x_name"].get<std::string>(), Num(s["knee"]["x"]),
                         s["knee"]["reached"] == false ? " (not reached inside the range)" : "");
    }
    out += "\n";
  } else {
    out += NotMeasured("Latency curve");
  }
  return out;
}

// The trace's GPU time by part.
std::string GpuTimeSection(const ordered_json& d) {
  std::string out;
  out += "## GPU time (trace)\n\n";
  if (const ordered_json& g = d["gpu_time"]; g.is_object()) {
    out += "| part | ms | share |\n|---|---:|---:|\n";
    const double total = g["total_ms"].get<double>();
    for (const auto& p : g["parts"]) {
      out += fmt::format("| {} | {} | {:.1f}% |\n", p["label"].get<std::string>(), Num(p["ms"]),
                         100 * p["ms"].get<double>() / total);
    }
    out += fmt::format("| **traced** | **{}** | 100% |\n\n", Num(g["total_ms"]));
  } else {
    out += NotMeasured("GPU timeline");
  }
  return out;
}

// The kernels that took the most GPU time.
std::string KernelsSection(const ordered_json& d) {
  std::string out;
  if (const ordered_json& k = d["kernels"]; k.is_object()) {
    out += fmt::format("Top {} of {} kernels by GPU time:\n\n| kernel | calls | total (ms) | mean (us) | % of busy |\n"
                       "|---|---:|---:|---:|---:|\n",
                       k["items"].size(), Count(k["shown_of"]));
    // Names cut from the middle to the label width (different names stay different).
    for (const auto& i : k["items"]) {
      out += fmt::format("| {} | {} | {} | {} | {} |\n", MarkdownCode(i["label"].get<std::string>()), Count(i["count"]),
                         Num(i["total_ms"]), Num(i["mean_us"]), Num(i["busy_pct"]));
    }
    out += "\n";
  } else {
    out += NotMeasured("Kernel time breakdown");
  }
  return out;
}

// The trace's GPU idle time by cause, and the longest gaps.
std::string IdleSection(const ordered_json& d) {
  std::string out;
  out += "## GPU idle gaps (trace)\n\n";
  if (const ordered_json& g = d["idle"]; g.is_object()) {
    if (!g["split"].empty()) {
      out += "| cause | ms |\n|---|---:|\n";
      for (const auto& s : g["split"]) out += fmt::format("| {} | {} |\n", s["label"].get<std::string>(), Num(s["ms"]));
      out += "\n";
    }
    if (!g["gaps"].empty()) {
      out += "| at (ms) | idle (us) | device | next op |\n|---:|---:|---:|---|\n";
      for (const auto& x : g["gaps"]) {
        out += fmt::format("| {} | {} | {} | {} |\n", Num(x["at_ms"]), Num(x["dur_us"]), Count(x["device"]),
                           MarkdownCode(x["next_op"].get<std::string>()));
      }
      out += "\n";
    }
  } else {
    out += NotMeasured("GPU idle gaps");
  }
  return out;
}

// The server's running and waiting requests and KV cache use, per source.
std::string ServerQueueSection(const ordered_json& d) {
  std::string out;
  out += "## Server queue and KV cache\n\n";
  if (const ordered_json& s = d["server_series"]; s.is_array()) {
    out += "| source | points | duration (s) | max running | max waiting | max KV (%) |\n|---|---:|---:|---:|---:|---:|\n";
    for (const auto& x : s) {
      const ordered_json& t = x["t_s"];
      std::optional<double> dur;
      if (t.size() >= 1 && t.front().is_number() && t.back().is_number())
        dur = t.back().get<double>() - t.front().get<double>();
      out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", MarkdownText(x["source"].get<std::string>()), t.size(),
                         FormatNumber(dur), FormatCountValue(Peak(x["running"])), FormatCountValue(Peak(x["waiting"])),
                         FormatNumber(Peak(x["kv_pct"])));
    }
  } else {
    out += NotMeasured("Queue and KV-cache series");
  }
  return out;
}

}  // namespace

std::string RenderMarkdownReport(const Diagnosis& diagnosis) {
  const ordered_json d = ReportData(diagnosis);
  std::string out = HeaderSection(diagnosis);
  out += ChangeFirstSection(diagnosis);
  out += FindingsSection(diagnosis);
  out += LayersSection(d);
  out += TtftSection(d);
  out += LoadRunSection(d);
  out += SweepSection(d);
  out += GpuTimeSection(d);
  out += KernelsSection(d);
  out += IdleSection(d);
  out += ServerQueueSection(d);
  return out;
}

}  // namespace latdoc::report
