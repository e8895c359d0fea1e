#include "fleet/fleet_report.h"

#include <algorithm>
#include <map>

#include <fmt/core.h>

#include "report/findings_text.h"
#include "rules/fleet_rules.h"

namespace latdoc::fleet {
namespace {

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

std::string WindowText(int64_t window_ns) {
  const int64_t s = window_ns / 1'000'000'000;
  if (s % 3600 == 0) return fmt::format("{}h", s / 3600);
  if (s % 60 == 0) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
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
    j["replicas"].push_back(std::move(x));
  }
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

}  // namespace latdoc::fleet
