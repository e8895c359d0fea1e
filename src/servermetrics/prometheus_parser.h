// Prometheus text exposition format (version 0.0.4), as served on /metrics by vLLM
// (prometheus_client), llama.cpp, SGLang and TGI. This file only parses; which metric means
// what for which server is metric_names.h, and the combined view is server_snapshot.h.
//
// Accepted (https://prometheus.io/docs/instrumenting/exposition_formats/):
//   # HELP <name> <text with \\ and \n escapes>
//   # TYPE <name> counter|gauge|histogram|summary|untyped
//   # any other comment
//   <name>[{<label>="<value with \\ \" \n escapes>",...}] <value> [<timestamp ms>]
// Values are floats, "+Inf", "-Inf" or "NaN"; a trailing comma inside the braces and blanks
// (spaces, tabs) between tokens are allowed; lines end with "\n" (a "\r" before it is
// dropped). An OpenMetrics exemplar after the value (" # {...} v") is ignored, as is
// "# EOF". A line that does not parse is counted with its line number and skipped.
//
// The parser is incremental: Feed() any slices of the page, then Finish(). It keeps a copy
// of one partial line between slices, and the samples it has parsed. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc::servermetrics {

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary };
std::string_view MetricTypeName(MetricType t);

struct Label {
  std::string name;
  std::string value;  // unescaped
  bool operator==(const Label&) const = default;
};

struct Sample {
  std::string name;           // as exposed, e.g. "vllm:time_to_first_token_seconds_bucket"
  std::vector<Label> labels;  // in page order
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  uint32_t line = 0;          // 1-based line number in the page

  // The value of label `name`, or nullopt.
  std::optional<std::string_view> label(std::string_view name) const;
};

struct MetricFamily {
  MetricType type = MetricType::kUntyped;
  std::string help;  // unescaped
};

struct BadLine {
  uint32_t line = 0;
  std::string message;  // e.g. "line 12: expected '=' after label name"
};

struct PrometheusPage {
  std::vector<Sample> samples;
  std::map<std::string, MetricFamily, std::less<>> families;  // from # HELP / # TYPE
  uint64_t lines = 0;
  uint64_t bad_line_count = 0;
  std::vector<BadLine> bad_lines;  // the first kMaxBadLinesKept

  static constexpr size_t kMaxBadLinesKept = 100;

  // The declared type of a sample name: the family itself, or the family with a
  // _bucket/_sum/_count (histogram, summary), _total or _created suffix removed.
  MetricType TypeOf(std::string_view sample_name) const;
  // A canonical text of the samples and families, for tests.
  std::string DebugString() const;
};

class PrometheusParser {
 public:
  // Parses every complete line of `bytes` (plus the partial line kept from earlier calls).
  void Feed(std::string_view bytes);
  // Parses a last line without "\n" and returns the page. The parser is empty afterwards.
  PrometheusPage Finish();

 private:
  void ParseLine(std::string_view line);
  void Bad(std::string message);

  PrometheusPage page_;
  std::string partial_;
  uint32_t line_no_ = 0;
};

// Parses a whole page.
PrometheusPage ParsePrometheusText(std::string_view text);

// A label value as the text format writes it: '\\' -> "\\\\", '"' -> "\\\"", newline -> "\\n".
std::string EscapeLabelValue(std::string_view v);

}  // namespace latdoc::servermetrics
