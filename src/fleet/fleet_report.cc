#include "fleet/fleet_report.h"

#include <algorithm>
#include <map>

#include <fmt/core.h>

#include "report/findings_text.h"
#include "report/html_escape.h"
#include "rules/fleet_rules.h"

namespace latdoc::fleet {
namespace {

using report::HtmlEscape;
using rules::Severity;

std::string Num(const std::optional<double>& v, double scale, int digits) {
  if (!v) return "n/a";
  return fmt::format("{:.{}f}", *v * scale, digits);
}

nlohmann::ordered_json J(const std::optional<double>& v, double scale = 1) {
  if (!v) return nullptr;
  return *v * scale;
}

std::string UpText(const rules::ReplicaFacts& r) {
  if (r.up && !*r.up) return "down";
  if (r.stale) return "stale";
  return r.up ? "up" : "n/a";
}

std::string ExporterText(const rules::ReplicaFacts& r) {
  if (!r.has_exporter) return "-";
  if (r.exporter_findings.empty()) return "ok";
  // The worst two; the JSON lists them all.
  std::string out;
  for (size_t i = 0; i < r.exporter_findings.size() && i < 2; ++i)
    out += fmt::format("{}{} ({})", i ? ", " : "", r.exporter_findings[i].rule,
                       rules::SeverityName(r.exporter_findings[i].severity));
  if (r.exporter_findings.size() > 2) out += fmt::format(" +{}", r.exporter_findings.size() - 2);
  return out;
}


struct Row {
  std::vector<std::string> cells;
};

const std::vector<std::string> kHeader = {"replica",  "verdict", "up",   "req/s",
                                          "TTFT p50", "p99",     "ITL p50", "p99",
                                          "queue",    "run",     "wait", "KV",
                                          "preempt",  "exporter"};

std::vector<Row> Rows(const FleetFacts& facts, const std::vector<rules::Finding>& findings) {
  std::vector<Row> rows;
  for (const rules::ReplicaFacts* r : ReplicasInReportOrder(facts, findings)) {
    rows.push_back({{r->replica, std::string(rules::SeverityName(ReplicaSeverity(r->replica, findings))),
                     UpText(*r), Num(r->request_rate_per_s, 1, 2), Num(r->ttft_p50_s, 1e3, 1),
                     Num(r->ttft_p99_s, 1e3, 1), Num(r->itl_p50_s, 1e3, 1), Num(r->itl_p99_s, 1e3, 1),
                     r->queue_share ? Num(r->queue_share, 100, 0) + "%" : "n/a",
                     Num(r->running_mean, 1, 1), Num(r->waiting_mean, 1, 1),
                     r->kv_usage_ratio ? Num(r->kv_usage_ratio, 100, 0) + "%" : "n/a",
                     Num(r->preemptions, 1, 0), ExporterText(*r)}});
  }
  return rows;
}

std::string Heading(const FleetFacts& facts) {
  return fmt::format("Fleet: {} replica{} matching {} at {}, last {} (by {}; times in ms)",
                     facts.replicas.size(), facts.replicas.size() == 1 ? "" : "s", facts.selector,
                     facts.prometheus, WindowText(facts.window_ns), facts.replica_label);
}

}  // namespace

Severity ReplicaSeverity(const std::string& replica, const std::vector<rules::Finding>& findings) {
  Severity worst = Severity::kOk;
  for (const rules::Finding& f : findings)
    if (rules::ReplicaOf(f) == replica && f.severity > worst) worst = f.severity;
  return worst;
}

std::vector<const rules::ReplicaFacts*> ReplicasInReportOrder(
    const FleetFacts& facts, const std::vector<rules::Finding>& findings) {
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < findings.size(); ++i)
    first.emplace(std::string(rules::ReplicaOf(findings[i])), i);
  std::vector<const rules::ReplicaFacts*> out;
  for (const rules::ReplicaFacts& r : facts.replicas) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [&](const auto* a, const auto* b) {
    const Severity sa = ReplicaSeverity(a->replica, findings);
    const Severity sb = ReplicaSeverity(b->replica, findings);
    if (sa != sb) return sa > sb;
    const size_t fa = first.count(a->replica) ? first[a->replica] : findings.size();
    const size_t fb = first.count(b->replica) ? first[b->replica] : findings.size();
    if (fa != fb) return fa < fb;
    return a->replica < b->replica;
  });
  return out;
}

std::string RenderFleetSummary(const FleetFacts& facts,
                               const std::vector<rules::Finding>& findings) {
  std::vector<Row> rows = Rows(facts, findings);
  std::vector<size_t> width(kHeader.size());
  for (size_t c = 0; c < kHeader.size(); ++c) width[c] = kHeader[c].size();
  for (const Row& row : rows)
    for (size_t c = 0; c + 1 < row.cells.size(); ++c) width[c] = std::max(width[c], row.cells[c].size());
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c + 1 == cells.size()) {
        out += cells[c];
      } else if (c == 0 || c == 1 || c == 2) {
        out += fmt::format("{:<{}}  ", cells[c], width[c]);
      } else {
        out += fmt::format("{:>{}}  ", cells[c], width[c]);
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = Heading(facts) + "\n\n" + line(kHeader);
  for (const Row& row : rows) out += line(row.cells);
  return out;
}

nlohmann::ordered_json FleetToJson(const FleetFacts& facts,
                                   const std::vector<rules::Finding>& findings) {
  nlohmann::ordered_json j;
  j["schema"] = "latdoc.fleet/1";
  j["prometheus"] = facts.prometheus;
  j["selector"] = facts.selector;
  j["replica_label"] = facts.replica_label;
  j["window_s"] = double(facts.window_ns) / 1e9;
  j["at_unix_s"] = facts.at_unix_s;
  j["query_ms"] = double(facts.query_ns) / 1e6;
  j["replicas"] = nlohmann::ordered_json::array();
  for (const rules::ReplicaFacts* r : ReplicasInReportOrder(facts, findings)) {
    nlohmann::ordered_json x;
    x["replica"] = r->replica;
    x["up"] = r->up ? nlohmann::ordered_json(*r->up) : nlohmann::ordered_json(nullptr);
    x["stale"] = r->stale;
    x["worst_severity"] = rules::SeverityName(ReplicaSeverity(r->replica, findings));
    x["request_rate_per_s"] = J(r->request_rate_per_s);
    x["ttft_p50_ms"] = J(r->ttft_p50_s, 1e3);
    x["ttft_p99_ms"] = J(r->ttft_p99_s, 1e3);
    x["itl_p50_ms"] = J(r->itl_p50_s, 1e3);
    x["itl_p99_ms"] = J(r->itl_p99_s, 1e3);
    x["queue_share"] = J(r->queue_share);
    x["running_mean"] = J(r->running_mean);
    x["waiting_mean"] = J(r->waiting_mean);
    x["kv_usage_ratio"] = J(r->kv_usage_ratio);
    x["preemptions"] = J(r->preemptions);
    x["exporter"] = r->has_exporter;
    x["exporter_findings"] = nlohmann::ordered_json::array();
    for (const rules::ExporterFinding& f : r->exporter_findings)
      x["exporter_findings"].push_back({{"rule", f.rule}, {"severity", rules::SeverityName(f.severity)}});
    for (const auto& [key, rows] :
         {std::pair{"ttft_p99_ms_over_time", &facts.ttft_p99_over_time_s},
          std::pair{"itl_p99_ms_over_time", &facts.itl_p99_over_time_s}}) {
      x[key] = nlohmann::ordered_json::array();
      if (auto it = rows->find(r->replica); it != rows->end())
        for (const std::optional<double>& v : it->second) x[key].push_back(J(v, 1e3));
    }
    j["replicas"].push_back(std::move(x));
  }
  j["times_unix_s"] = facts.times_unix_s;
  j["heat_rate_window_s"] = facts.heat_rate_window_s;
  j["findings"] = nlohmann::ordered_json::array();
  for (const rules::Finding& f : findings) j["findings"].push_back(nlohmann::ordered_json::parse(rules::ToJson(f).dump()));
  j["worst_severity"] = rules::SeverityName(rules::WorstSeverity(findings));
  return j;
}

std::string RenderFleetMarkdown(const FleetFacts& facts,
                                const std::vector<rules::Finding>& findings) {
  std::string out = "# latdoc fleet\n\n" + report::MarkdownText(Heading(facts)) + "\n\n|";
  for (const std::string& h : kHeader) out += " " + report::MarkdownText(h) + " |";
  out += "\n|";
  for (size_t c = 0; c < kHeader.size(); ++c) out += c < 3 ? "---|" : "---:|";
  out += "\n";
  for (const Row& row : Rows(facts, findings)) {
    out += "|";
    for (const std::string& cell : row.cells) out += " " + report::MarkdownText(cell) + " |";
    out += "\n";
  }
  out += "\n## Findings\n\n" + report::RenderFindingsMarkdown(findings);
  return out;
}

namespace {

// Green (ratio <= 1) to yellow (1.5) to red (>= 3), as an HSL hue 120 -> 60 -> 0.
std::string HeatColour(double ratio) {
  double hue = 120;
  if (ratio > 1 && ratio <= 1.5) hue = 120 - 60 * (ratio - 1) / 0.5;
  if (ratio > 1.5) hue = std::max(0.0, 60 - 60 * (ratio - 1.5) / 1.5);
  return fmt::format("hsl({:.0f},75%,50%)", hue);
}

std::string HeatMap(const FleetFacts& facts, const std::vector<const rules::ReplicaFacts*>& order,
                    const std::map<std::string, std::vector<std::optional<double>>>& rows,
                    std::string_view title) {
  const size_t steps = facts.times_unix_s.size();
  // The fleet's median at each step, over the replicas with traffic then.
  std::vector<std::optional<double>> median(steps);
  for (size_t k = 0; k < steps; ++k) {
    std::vector<double> v;
    for (const auto& [name, row] : rows)
      if (k < row.size() && row[k]) v.push_back(*row[k]);
    median[k] = rules::Median(std::move(v));
  }
  std::string out = fmt::format(
      "<h2>{}</h2>\n<p class=note>A column every {:g} s over the last {}, each over {:g} s of "
      "traffic; colour: the value over the fleet's median then (green at or under it, yellow "
      "1.5x, red 3x or more; grey: no traffic).</p>\n<table class=heat>\n",
      HtmlEscape(title), steps > 1 ? facts.times_unix_s[1] - facts.times_unix_s[0] : 0,
      WindowText(facts.window_ns), facts.heat_rate_window_s);
  for (const rules::ReplicaFacts* r : order) {
    out += "<tr><th>" + HtmlEscape(r->replica) + "</th>";
    auto it = rows.find(r->replica);
    for (size_t k = 0; k < steps; ++k) {
      std::optional<double> v;
      if (it != rows.end() && k < it->second.size()) v = it->second[k];
      if (!v) {
        out += "<td class=none title=\"no traffic\"></td>";
        continue;
      }
      const double ratio = median[k] && *median[k] > 0 ? *v / *median[k] : 1;
      out += fmt::format("<td style=\"background:{}\" title=\"{:.1f} ms ({:.1f}x median)\"></td>",
                         HeatColour(ratio), *v * 1e3, ratio);
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

std::string RenderFleetHtml(const FleetFacts& facts, const std::vector<rules::Finding>& findings) {
  std::vector<const rules::ReplicaFacts*> order = ReplicasInReportOrder(facts, findings);
  std::string out =
      "<!doctype html>\n<html lang=en><head><meta charset=utf-8><title>latdoc fleet</title>\n"
      "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{padding:2px 6px;text-align:right}th{text-align:left}"
      ".replicas td:nth-child(-n+3),.replicas td:last-child{text-align:left}.replicas tr:nth-child(even){background:#f4f4f4}"
      ".heat td{width:8px;height:14px;padding:0;border:1px solid #fff}.heat td.none{background:#ddd}"
      ".heat th{font-weight:normal;font-family:monospace;padding-right:8px}"
      ".fail{color:#b00;font-weight:bold}.warn{color:#a60;font-weight:bold}.note{color:#555}"
      "li{margin-bottom:.6em}</style></head><body>\n<h1>latdoc fleet</h1>\n<p>" +
      HtmlEscape(Heading(facts)) + "</p>\n<table class=replicas>\n<tr>";
  for (const std::string& h : kHeader) out += "<th>" + HtmlEscape(h) + "</th>";
  out += "</tr>\n";
  for (const Row& row : Rows(facts, findings)) {
    out += "<tr>";
    for (size_t c = 0; c < row.cells.size(); ++c)
      out += c == 1 ? "<td class=" + HtmlEscape(row.cells[c]) + ">" + HtmlEscape(row.cells[c]) + "</td>"
                    : "<td>" + HtmlEscape(row.cells[c]) + "</td>";
    out += "</tr>\n";
  }
  out += "</table>\n";
  out += HeatMap(facts, order, facts.ttft_p99_over_time_s, "p99 TTFT over time");
  out += HeatMap(facts, order, facts.itl_p99_over_time_s, "p99 ITL over time");
  out += "<h2>Findings</h2>\n<ul>\n";
  for (const rules::Finding& f : findings) {
    if (f.severity < rules::Severity::kInfo) continue;
    const std::string sev(rules::SeverityName(f.severity));
    out += "<li><span class=" + sev + ">" + HtmlEscape(sev) + "</span> <code>" + HtmlEscape(f.id) + "</code> " +
           HtmlEscape(f.title);
    if (!f.advice.empty()) out += "<br><span class=note>fix: " + HtmlEscape(f.advice) + "</span>";
    out += "</li>\n";
  }
  return out + "</ul>\n</body></html>\n";
}

}  // namespace latdoc::fleet
