#include "exporter/metric_text.h"

#include <cassert>
#include <cmath>

#include <fmt/format.h>

#include "servermetrics/prometheus_parser.h"

namespace latdoc::exporter {
namespace {

std::string_view KindName(MetricKind k) {
  switch (k) {
    case MetricKind::kGauge: return "gauge";
    case MetricKind::kCounter: return "counter";
    case MetricKind::kHistogram: return "histogram";
  }
  return "untyped";
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// `name{a="x",b="y"}` (no braces when there are no labels), with an optional extra label
// appended last (the histogram's "le").
void AppendSeries(std::string& out, std::string_view name, const MetricLabels& labels,
                  std::string_view extra_name = {}, std::string_view extra_value = {}) {
  out += name;
  if (labels.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += servermetrics::EscapeLabelValue(v);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

}  // namespace

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // A negative zero (a difference of equal means: server_other = server - queue - prefill) is 0:
  // Prometheus reads "-0" fine, people do not.
  if (v == 0) return "0";
  // fmt's "{}" is the shortest representation that reads back to the same double.
  return fmt::format("{}", v);
}

MetricText::FamilyText& MetricText::Find(std::string_view name) {
  auto it = index_.find(name);
  assert(it != index_.end() && "family not declared");
  return families_[it->second];
}

void MetricText::Family(std::string_view name, MetricKind kind, std::string_view help) {
  if (index_.count(name)) return;
  index_.emplace(std::string(name), families_.size());
  families_.push_back(FamilyText{std::string(name), kind, std::string(help), {}});
}

void MetricText::Add(std::string_view name, const MetricLabels& labels, double value) {
  FamilyText& f = Find(name);
  AppendSeries(f.samples, name, labels);
  f.samples += ' ';
  f.samples += FormatMetricValue(value);
  f.samples += '\n';
}

void MetricText::AddHistogram(std::string_view name, const MetricLabels& labels,
                              std::span<const double> upper_bounds,
                              std::span<const uint64_t> cumulative_counts, double sum,
                              uint64_t count) {
  FamilyText& f = Find(name);
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < upper_bounds.size() && i < cumulative_counts.size(); ++i) {
    AppendSeries(f.samples, bucket, labels, "le", FormatMetricValue(upper_bounds[i]));
    f.samples += fmt::format(" {}\n", cumulative_counts[i]);
  }
  AppendSeries(f.samples, bucket, labels, "le", "+Inf");
  f.samples += fmt::format(" {}\n", count);
  AppendSeries(f.samples, std::string(name) + "_sum", labels);
  f.samples += ' ' + FormatMetricValue(sum) + '\n';
  AppendSeries(f.samples, std::string(name) + "_count", labels);
  f.samples += fmt::format(" {}\n", count);
}

std::string MetricText::Render() const {
  std::string out;
  for (const FamilyText& f : families_) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, EscapeHelp(f.help), f.name,
                       KindName(f.kind));
    out += f.samples;
  }
  return out;
}

}  // namespace latdoc::exporter
