// MetricText: writes the Prometheus text exposition format (version 0.0.4) that
// `latdoc exporter` serves on /metrics. It only formats; what is measured lives in exporter.h.
//
// Output rules (https://prometheus.io/docs/instrumenting/exposition_formats/):
//   - every family is written once, as "# HELP", "# TYPE", then all of its samples, in the
//     order families were first declared and samples added;
//   - label values escape '\\', '"' and '\n'; HELP text escapes '\\' and '\n';
//   - values print in the shortest form that reads back exactly ("0.25", "1e-06"), with
//     "+Inf", "-Inf" and "NaN" for the special values;
//   - a histogram writes cumulative <name>_bucket{le=...} lines ending with le="+Inf", then
//     <name>_sum and <name>_count.
// Names are not checked at run time: callers pass literals that follow Prometheus naming.
// Not thread-safe; build one per rendering.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace latdoc::exporter {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricKind { kGauge, kCounter, kHistogram };

class MetricText {
 public:
  // Declares a family; declaring it again keeps the first HELP and kind.
  void Family(std::string_view name, MetricKind kind, std::string_view help);
  // One sample of a declared gauge or counter family.
  // REQUIRES: Family(name, ...) was called.
  void Add(std::string_view name, const MetricLabels& labels, double value);
  // One histogram series: `upper_bounds` ascending and finite (the +Inf bucket is added),
  // `cumulative_counts` the same size, `count` >= the last cumulative count.
  // REQUIRES: Family(name, kHistogram, ...) was called.
  void AddHistogram(std::string_view name, const MetricLabels& labels,
                    std::span<const double> upper_bounds,
                    std::span<const uint64_t> cumulative_counts, double sum, uint64_t count);

  // The whole page, ending in '\n' (empty when nothing was declared).
  std::string Render() const;

 private:
  struct FamilyText {
    std::string name;
    MetricKind kind;
    std::string help;
    std::string samples;
  };
  FamilyText& Find(std::string_view name);

  std::vector<FamilyText> families_;
  std::map<std::string, size_t, std::less<>> index_;
};

// "0.25", "1e-06", "+Inf", "NaN": Prometheus's (Go's) float text, shortest round-trip form.
std::string FormatMetricValue(double v);

}  // namespace latdoc::exporter
