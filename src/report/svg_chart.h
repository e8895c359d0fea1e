// A small dependency-free SVG line chart: several series against one x axis (linear or log),
// each series on the left or the right y axis, vertical markers (e.g. the knee) with a label.
// Used by `latdoc sweep --svg` (p99 TTFT, p99 ITL and tokens/s against concurrency) and
// embedded by the HTML report. Pure: data in, a standalone SVG document (UTF-8) out; the
// output is deterministic (fixed number formatting), so it can be compared to golden files.
#pragma once

#include <string>
#include <vector>

namespace latdoc::report {

struct ChartSeries {
  std::string name;                // legend text, e.g. "p99 TTFT (ms)"
  std::string color;               // CSS colour, e.g. "#d62728"
  bool right_axis = false;
  std::vector<std::pair<double, double>> points;  // (x, y); points may be omitted (n/a)
};

struct ChartMarker {
  double x = 0;
  std::string label;               // e.g. "knee 48"
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string left_label, right_label;
  bool log_x = false;              // REQUIRES: every x > 0 when set
  int width_px = 720, height_px = 400;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
};

// Series with no points are left out of the plot (and kept in the legend as "n/a").
std::string RenderSvg(const LineChart& chart);

}  // namespace latdoc::report
