#include "report/html_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "report/assets/assets.h"
#include "report/html_escape.h"
#include "report/html_report_data.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;
using rules::Finding;
using rules::Severity;

std::string E(std::string_view s) { return HtmlEscape(s); }

// The JSON of the data block, safe inside <script type="application/json">: '<', '>' and '&'
// can only occur inside JSON strings, where \u003c etc. mean the same characters.
std::string ScriptSafeJson(const ordered_json& j) {
  const std::string raw = j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + 64);
  for (char c : raw) {
    switch (c) {
      case '<': out += "\\u003c"; break;
      case '>': out += "\\u003e"; break;
      case '&': out += "\\u0026"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(const ordered_json& v) {
  return FormatNumber(v.is_number() ? std::optional(v.get<double>()) : std::nullopt);
}

// A count: "39", never "39.0".
std::string Count(const ordered_json& v) {
  return FormatCountValue(v.is_number() ? std::optional(v.get<double>()) : std::nullopt);
}

std::string EvidenceHtml(const rules::Evidence& e) {
  std::string v;
  if (e.value) {
    v = FormatNumber(e.value);
    if (!e.unit.empty()) v += (e.unit == "%" ? "" : " ") + E(e.unit);
  } else if (e.text.empty()) {
    v = "n/a";
  }
  if (!e.text.empty()) v += v.empty() ? E(e.text) : " (" + E(e.text) + ")";
  return fmt::format("<li><span class=\"mono\">{}</span>: {}</li>", E(e.name), v);
}

std::string FindingHtml(const Finding& f) {
  const std::string_view sev = rules::SeverityName(f.severity);
  std::string out = "<li class=\"finding\" data-severity=\"" + std::string(sev) + "\">\n";
  out += fmt::format("<div class=\"fhead\"><span class=\"pill {0}\">{0}</span><span class=\"layer\">{1}"
                     "</span><span class=\"title\">{2}</span>",
                     sev, rules::LayerName(f.layer), E(f.title));
  if (f.latency_share) {
    const double pct = std::clamp(*f.latency_share * 100, 0.0, 100.0);
    out += fmt::format("<span class=\"share\" title=\"estimated share of the {2} this explains\">"
                       "<span class=\"bar\"><i style=\"width:{0:.0f}%\"></i></span>{1:.0f}% of {2}"
                       "</span>",
                       pct, pct, rules::ShareOf(f));
  }
  if (!f.latency_share && f.share_basis == rules::ShareBasis::kOffRequestPath)
    out += fmt::format("<span class=\"share\">share: {}</span>", rules::ShareOf(f));
  out += fmt::format("<span class=\"fid mono\">{}</span></div>\n", E(f.id));
  if (!f.evidence.empty()) {
    out += "<ul class=\"evidence\">";
    for (const auto& e : f.evidence) out += EvidenceHtml(e);
    out += "</ul>\n";
  }
  if (!f.advice.empty()) out += "<div class=\"fix mono\"><b>FIX</b>" + E(f.advice) + "</div>\n";
  out += "</li>\n";
  return out;
}

std::string NotMeasured(std::string_view what, std::string_view missing_key, std::string_view why) {
  return fmt::format("<div class=\"not-measured\" data-missing=\"{}\"><b>{}: not measured.</b> {}</div>\n",
                     missing_key, what, why);
}

// `figure_class` "wide": the figure takes a whole row of its grid.
std::string Chart(std::string_view name, std::string_view title, std::string_view caption,
                  std::string_view size_class = "", int index = -1, std::string_view figure_class = "") {
  std::string idx = index >= 0 ? fmt::format(" data-index=\"{}\"", index) : "";
  return fmt::format("<figure{}><h3>{}</h3><div class=\"chart {}\"><canvas data-chart=\"{}\"{} role=\"img\" "
                     "aria-label=\"{}\"></canvas></div><figcaption>{}</figcaption></figure>\n",
                     figure_class.empty() ? "" : fmt::format(" class=\"{}\"", figure_class), title,
                     size_class, name, idx, title, caption);
}

// Why a layer was not measured, from `layers` ("skipped: no --trace given"); `hint` otherwise.
std::string Why(const ordered_json& data, std::string_view layer, std::string_view hint) {
  for (const auto& l : data["layers"]) {
    if (l["layer"] == layer) {
      const std::string s = l["status"].get<std::string>();
      if (s != "measured" && s != "not reported") return E(s) + ". " + std::string(hint);
    }
  }
  return std::string(hint);
}

std::string SummarySection(const Diagnosis& df) {
  int counts[5] = {0, 0, 0, 0, 0};
  for (const Finding& f : df.findings) ++counts[static_cast<int>(f.severity)];
  std::string out = "<section id=\"summary\"><h2>Summary</h2>\n<div class=\"summary\">\n";
  for (auto [sev, label] : {std::pair{Severity::kFail, "fail"}, std::pair{Severity::kWarn, "warn"},
                            std::pair{Severity::kInfo, "info"}, std::pair{Severity::kOk, "ok"},
                            std::pair{Severity::kSkip, "skipped"}}) {
    out += fmt::format("<div class=\"tile {}\"><div class=\"n\">{}</div><div class=\"l\">{}</div></div>\n",
                       rules::SeverityName(sev), counts[static_cast<int>(sev)], label);
  }
  out += "</div>\n";
  const Severity worst = rules::WorstSeverity(df.findings);
  const Finding* first = df.ChangeFirst();
  std::string verdict =
      worst == Severity::kFail   ? "At least one check failed"
      : worst == Severity::kWarn ? "No check failed; the warnings below are worth a look"
                                 : "No problems found in the layers that were checked.";
  if (worst >= Severity::kWarn)
    verdict += first ? ": change the first item below first." : "; none comes with a change to make.";
  out += "<p class=\"verdict\">" + verdict + "</p>\n";
  // What to change first (the diagnosis's change_first, as the terminal and Markdown name it),
  // then the next problems in rank order.
  std::vector<const Finding*> top;
  if (first) top.push_back(first);
  for (const Finding& f : df.findings)
    if (f.severity >= Severity::kWarn && &f != first && top.size() < 3) top.push_back(&f);
  int shown = 0;
  for (const Finding* f : top) {
    std::string share = f->latency_share
                            ? fmt::format(" (explains about {:.0f}% of the {})", *f->latency_share * 100,
                                          rules::ShareOf(*f))
                        : f->share_basis == rules::ShareBasis::kOffRequestPath
                            ? fmt::format(" (share: {})", rules::ShareOf(*f))
                            : "";
    out += fmt::format("<div class=\"first\"><div class=\"t\">{}. {}{}</div>{}</div>\n", ++shown,
                       E(f->title), share,
                       f->advice.empty() ? "" : "<div class=\"mono\">Change: " + E(f->advice) + "</div>");
  }
  return out + "</section>\n";
}

std::string FindingsSection(const Diagnosis& df) {
  std::string out =
      "<section id=\"findings\"><h2>Findings checklist</h2>\n<p class=\"lead\">Problems first, ranked by the "
      "estimated share of latency each explains, then by severity. Each item gives its evidence and the exact "
      "change to try; latdoc never applies it.</p>\n";
  std::string main, rest;
  int rest_n = 0;
  for (const Finding& f : df.findings) {
    if (f.severity == Severity::kOk || f.severity == Severity::kSkip) {
      rest += FindingHtml(f);
      ++rest_n;
    } else {
      main += FindingHtml(f);
    }
  }
  if (main.empty()) out += "<p>No problems found.</p>\n";
  else out += "<ol class=\"findings\">\n" + main + "</ol>\n";
  if (rest_n > 0) {
    out += fmt::format("<details><summary>{} checks passed or skipped</summary>\n<ol class=\"findings\">\n{}"
                       "</ol></details>\n",
                       rest_n, rest);
  }
  if (df.unreadable_findings > 0) {
    out += fmt::format(
        "<p class=\"lead\">{} findings in the input had no id, layer or severity and are "
        "not shown.</p>\n",
        df.unreadable_findings);
  }
  return out + "</section>\n";
}

std::string LayersSection(const ordered_json& data) {
  std::string out = "<section id=\"layers\"><h2>Layers checked</h2>\n<table class=\"layers\"><thead><tr>"
                    "<th>layer</th><th>status</th></tr></thead><tbody>\n";
  for (const auto& l : data["layers"]) {
    const std::string s = l["status"].get<std::string>();
    const char* cls = s == "measured" ? "measured" : "skipped";
    out += fmt::format("<tr><td>{}</td><td class=\"status {}\">{}</td></tr>\n",
                       E(l["layer"].get<std::string>()), cls, E(s));
  }
  return out + "</tbody></table></section>\n";
}

// The TTFT decomposition's table: each part's mean and share of the client's TTFT.
std::string TtftTable(const ordered_json& w) {
  std::string out;
  out +=
      "<h3>TTFT decomposition (means)</h3><table><thead><tr><th>part</th><th class=\"num\">ms</th>"
      "<th class=\"num\">share of TTFT</th></tr></thead><tbody>\n";
  const double client = w["client_ttft_ms"].get<double>();
  for (const auto& s : w["segments"]) {
    std::string share = "n/a";
    if (s["ms"].is_number() && client > 0) share = SharePercent(s["ms"].get<double>(), client);
    out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                       E(s["label"].get<std::string>()), Num(s["ms"]), share);
  }
  out += fmt::format(
      "<tr><th>client TTFT</th><th class=\"num\">{}</th><th class=\"num\">100%</th></tr>\n",
      Num(w["client_ttft_ms"]));
  out += "</tbody></table>\n";
  return out;
}

// The load run's table: mean, median and p99 of each latency, then the counts and rates.
std::string LoadRunTable(const ordered_json& b) {
  std::string out;
  out +=
      "<h3>Load run (client side)</h3><table><thead><tr><th>metric</th><th class=\"num\">mean</th>"
      "<th class=\"num\">median</th><th class=\"num\">p99</th></tr></thead><tbody>\n";
  for (auto [m, label] : {std::pair{"ttft", "TTFT (ms)"}, std::pair{"tpot", "TPOT (ms)"},
                          std::pair{"itl", "ITL (ms)"}, std::pair{"e2el", "E2E latency (ms)"}}) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td></tr>\n",
        label, Num(b[fmt::format("mean_{}_ms", m)]), Num(b[fmt::format("median_{}_ms", m)]),
        Num(b[fmt::format("p99_{}_ms", m)]));
  }
  out += fmt::format(
      "</tbody></table><p class=\"lead\" style=\"margin-top:8px\">{} requests completed, {} "
      "failed, concurrency {}; {} req/s, {} output tokens/s.</p>\n",
      Count(b["completed"]), Count(b["failed"]), Count(b["max_concurrency"]),
      Num(b["request_throughput"]), Num(b["output_throughput"]));
  return out;
}

// The sweep's steps, folded: p99 latencies and throughput per step.
std::string SweepStepsTable(const ordered_json& sweep) {
  std::string out;
  out += fmt::format(
      "<details><summary>Sweep steps ({})</summary><table><thead><tr><th class=\"num\">{}</th>"
      "<th class=\"num\">p99 TTFT (ms)</th><th class=\"num\">p99 ITL (ms)</th>"
      "<th class=\"num\">p99 E2EL (ms)</th><th class=\"num\">output tok/s</th></tr></thead>"
      "<tbody>\n",
      sweep["steps"].size(), E(sweep["x_name"].get<std::string>()));
  for (const auto& s : sweep["steps"]) {
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        Num(s["x"]), Num(s[loadgen::keys::kP99TtftMs]), Num(s[loadgen::keys::kP99ItlMs]),
        Num(s[loadgen::keys::kP99E2elMs]), Num(s[loadgen::keys::kOutputThroughput]));
  }
  out += "</tbody></table></details>\n";
  return out;
}

std::string LatencySection(const ordered_json& data) {
  std::string out = "<section id=\"latency\"><h2>Latency</h2>\n<div class=\"grid\">\n";
  const ordered_json& sweep = data["sweep"];
  if (sweep.is_object()) {
    std::string cap = "p99 latency and output throughput at each load step of the sweep";
    if (sweep["knee"].is_object()) {
      cap += fmt::format("; the dashed line marks the knee at {} = {}", E(sweep["x_name"].get<std::string>()),
                         Num(sweep["knee"]["x"]));
      if (sweep["knee"]["reached"] == false) cap += " (not reached inside the range: sweep higher)";
    }
    out += Chart("sweep", "Latency curve", cap + ".", "tall");
  } else {
    out += "<figure><h3>Latency curve</h3>" +
           NotMeasured("Latency curve", "sweep",
                       Why(data, "load", "No sweep was run (<code>latdoc diagnose --sweep</code>).")) +
           "</figure>\n";
  }
  const ordered_json& w = data["waterfall"];
  if (w.is_object()) {
    out += Chart("ttft-waterfall", "Where TTFT goes",
                 fmt::format("Mean client TTFT {} ms. Queue and prefill are measured by the server "
                             "(its histograms); network + front end is the client's TTFT minus the "
                             "server's (inferred).",
                             Num(w["client_ttft_ms"])),
                 "tall");
  } else {
    out += "<figure><h3>Where TTFT goes</h3>" +
           NotMeasured("TTFT waterfall", "waterfall",
                       Why(data, "load", "Needs a load run with the server's /metrics readable.")) +
           "</figure>\n";
  }
  out += "</div>\n";

  if (w.is_object()) out += TtftTable(w);
  const ordered_json& b = data["bench"];
  if (b.is_object()) out += LoadRunTable(b);
  if (sweep.is_object()) out += SweepStepsTable(sweep);
  return out + "</section>\n";
}

std::string KernelSection(const ordered_json& data) {
  std::string out = "<section id=\"gpu\"><h2>GPU time (trace)</h2>\n";
  const ordered_json& g = data["gpu_time"];
  const ordered_json& k = data["kernels"];
  const std::string why = Why(data, "kernel", "No profiler trace was given (<code>--trace FILE</code>).");
  if (!g.is_object() && !k.is_object()) return out + NotMeasured("Kernel time breakdown", "kernels", why) + "</section>\n";
  out += "<div class=\"grid\">\n";
  if (g.is_object()) {
    out += Chart("gpu-time", "GPU timeline",
                 fmt::format("TraceLens breakdown of the {} ms traced: busy time by kind, and idle.",
                             Num(g["total_ms"])));
  } else {
    out += "<figure><h3>GPU timeline</h3>" + NotMeasured("GPU timeline", "gpu_time", why) + "</figure>\n";
  }
  if (k.is_object()) {
    out += Chart("kernels", "Kernel time breakdown",
                 fmt::format("The {} kernels with the most GPU time, of {} kernel names in the trace.",
                             k["items"].size(), Count(k["shown_of"])),
                 "tall", -1, "wide");  // a whole row: the names need the width
  } else {
    out += "<figure><h3>Kernel time breakdown</h3>" + NotMeasured("Kernel time breakdown", "kernels", why) +
           "</figure>\n";
  }
  out += "</div>\n";
  if (k.is_object()) {
    out += "<details><summary>Kernel hot list</summary><table><thead><tr><th>kernel</th><th class=\"num\">calls"
           "</th><th class=\"num\">total (ms)</th><th class=\"num\">mean (us)</th><th class=\"num\">% of busy"
           "</th></tr></thead><tbody>\n";
    for (const auto& i : k["items"]) {
      // The name as the chart labels it (cut from the middle), the full name as its tooltip.
      out += fmt::format("<tr><td class=\"name mono\" title=\"{}\">{}</td><td class=\"num\">{}</td>"
                         "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                         E(i["name"].get<std::string>()), E(i["label"].get<std::string>()), Count(i["count"]),
                         Num(i["total_ms"]),
                         Num(i["mean_us"]), Num(i["busy_pct"]));
    }
    out += "</tbody></table></details>\n";
  }
  return out + "</section>\n";
}

std::string IdleSection(const ordered_json& data) {
  std::string out = "<section id=\"idle\"><h2>GPU idle gaps (trace)</h2>\n";
  const ordered_json& g = data["idle"];
  if (!g.is_object()) {
    return out +
           NotMeasured("GPU idle gaps", "idle",
                       Why(data, "kernel", "No profiler trace was given (<code>--trace FILE</code>).")) +
           "</section>\n";
  }
  out += "<div class=\"grid\">\n";
  if (!g["gaps"].empty()) {
    out += Chart("idle-timeline", "Idle-gap timeline",
                 "Where in the trace the GPU sat idle (no op on any stream), and for how long: the "
                 "largest gaps, each ended by the op named in its tooltip.");
  } else {
    out += "<figure><h3>Idle-gap timeline</h3>" +
           NotMeasured("Idle-gap timeline", "idle_gaps", "The trace lists no idle gaps.") + "</figure>\n";
  }
  if (!g["histogram"].empty()) {
    std::string of = g["histogram_of"] == "all gaps"
                         ? std::string("all idle gaps of the trace")
                         : fmt::format("the {} largest gaps the trace analysis lists", g["gaps"].size());
    out += Chart("idle-histogram", "Idle-gap lengths",
                 "How many gaps of each length, of " + of +
                     ". Gaps under 30 us are launch latency; longer ones mean the host was late.");
  } else {
    out += "<figure><h3>Idle-gap lengths</h3>" +
           NotMeasured("Idle-gap histogram", "idle_histogram", "The trace lists no idle gaps.") +
           "</figure>\n";
  }
  out += "</div>\n";
  if (const ordered_json& st = data["steps"]; st.is_object()) {
    out += Chart("steps", "Step time",
                 fmt::format("Each step's time (from its first GPU op to the next step's), with its GPU-busy "
                             "part: {} steps found by {}, median {} ms, p99 {} ms{}. The rest of a bar is "
                             "the GPU waiting (host late, syncs, gaps).",
                             Num(st["count"]), E(st["method"].is_string() ? st["method"].get<std::string>() : ""),
                             Num(st["p50_ms"]), Num(st["p99_ms"]),
                             st["count"].is_number() && st["count"].get<double>() > static_cast<double>(st["items"].size())
                                 ? fmt::format("; the first {} shown", st["items"].size())
                                 : ""));
  }
  if (!g["split"].empty()) {
    out += "<h3>Idle time by cause (HTA rule)</h3><table><thead><tr><th>cause</th><th class=\"num\">ms</th>"
           "</tr></thead><tbody>\n";
    for (const auto& s : g["split"]) {
      out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td></tr>\n", E(s["label"].get<std::string>()),
                         Num(s["ms"]));
    }
    out += "</tbody></table>\n";
  }
  return out + "</section>\n";
}

std::string ServerSection(const ordered_json& data) {
  std::string out = "<section id=\"server\"><h2>Server queue and KV cache</h2>\n";
  const ordered_json& s = data["server_series"];
  if (!s.is_array()) {
    return out +
           NotMeasured("Queue and KV-cache series", "server_series",
                       "Needs the server's /metrics during a load run, or its log (<code>--logs FILE"
                       "</code>).") +
           "</section>\n";
  }
  out += "<div class=\"grid\">\n";
  for (size_t i = 0; i < s.size(); ++i) {
    out += Chart("server-series", E(s[i]["source"].get<std::string>()),
                 "Requests running and waiting in the server's queue, and KV-cache use. Waiting above "
                 "zero while KV is full means requests queue for memory, not compute.",
                 "", static_cast<int>(i));
  }
  out += "</div>\n";
  if (data["attribution"].is_object()) {
    out += Chart("attribution-timeline", "Stalls on one clock",
                 "The p99 of inter-token latency per time bin with each decode stall marked by its "
                 "attributed cause (the <code>attribution.*</code> findings; docs/attribution.md); "
                 "under it, the server's running and waiting requests, the output token rate with "
                 "each throughput dip marked by its cause, and when they were sampled, the run "
                 "queue, the busiest server thread's CPU and PSI (<code>--local</code>), the server "
                 "log's write rate (<code>--local --logs</code>) and the GPU kernel time per bin (a "
                 "trace of the load).",
                 "tall", -1, "wide");
  }
  return out + "</section>\n";
}

constexpr std::string_view kStrippedLibrary = "/* Chart.js left out (HtmlReportOptions) */";

}  // namespace

std::string RenderHtmlReport(const Diagnosis& diagnosis) {
  return RenderHtmlReport(diagnosis, HtmlReportOptions{});
}

std::string RenderHtmlReport(const Diagnosis& diagnosis, const HtmlReportOptions& options) {
  const ordered_json data = ReportData(diagnosis);
  const ReportSubject subject = SubjectOf(diagnosis);
  const std::string& target = subject.target;
  const std::string& generated = diagnosis.generated_at;
  const std::string schema = "latdoc.diagnose/1";

  std::string out;
  out.reserve(300 * 1024);
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<meta name=\"generator\" content=\"latdoc\">\n";
  out += "<title>latdoc diagnosis" + (target.empty() ? "" : ": " + E(target)) + "</title>\n";
  out += "<style>\n" + std::string(assets::ReportCss()) + "</style>\n</head>\n<body>\n";
  out += "<header class=\"top\"><h1>latdoc diagnosis</h1><div class=\"meta\">";
  out += "<span>target: <b>" + (target.empty() ? std::string("n/a") : E(target)) + "</b></span>";
  out += "<span>model: <b>" + (subject.model.empty() ? std::string("n/a") : E(subject.model)) + "</b></span>";
  if (!subject.server.empty()) out += "<span>server: <b>" + E(subject.server) + "</b></span>";
  if (!generated.empty()) out += "<span>generated " + E(generated) + "</span>";
  if (!schema.empty()) out += "<span>" + E(schema) + "</span>";
  out += "</div></header>\n<main>\n";
  out += SummarySection(diagnosis);
  out += FindingsSection(diagnosis);
  out += LayersSection(data);
  out += LatencySection(data);
  out += KernelSection(data);
  out += IdleSection(data);
  out += ServerSection(data);
  out += fmt::format("<footer>Written by latdoc. Charts drawn offline by Chart.js {} (MIT licence), "
                     "embedded in this file.</footer>\n</main>\n",
                     E(assets::ChartJsVersion()));
  out += "<script type=\"application/json\" id=\"latdoc-data\">" + ScriptSafeJson(data) + "</script>\n";
  out += "<script>\n";
  out += options.embed_chart_library ? assets::ChartJs() : kStrippedLibrary;
  out += "\n</script>\n<script>\n" + std::string(assets::ReportJs()) + "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace latdoc::report
