// Prometheus text parser on arbitrary bytes. Contract beyond "no crash": feeding the page in
// slices (size from the first input byte) gives the same page as parsing it whole.
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "servermetrics/prometheus_parser.h"

using latdoc::servermetrics::PrometheusPage;
using latdoc::servermetrics::PrometheusParser;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 13;
  std::string_view text = latdoc::fuzz::AsView(data + 1, size - 1);
  PrometheusPage whole = latdoc::servermetrics::ParsePrometheusText(text);
  PrometheusParser p;
  for (size_t at = 0; at < text.size(); at += step) p.Feed(text.substr(at, step));
  PrometheusPage split = p.Finish();
  if (whole.DebugString() != split.DebugString() || whole.lines != split.lines ||
      whole.bad_line_count != split.bad_line_count) {
    __builtin_trap();
  }
  for (const auto& s : whole.samples) (void)whole.TypeOf(s.name);
  return 0;
}
