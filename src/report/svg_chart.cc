#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

namespace latdoc::report {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A "nice" axis: 0 (or the data minimum when negative) up to a round maximum, 5 ticks.
struct Axis {
  double lo = 0, hi = 1;
};

Axis NiceAxis(double lo, double hi) {
  Axis a;
  a.lo = std::min(0.0, lo);
  if (!(hi > a.lo)) hi = a.lo + 1;
  double span = hi - a.lo;
  double step = std::pow(10.0, std::floor(std::log10(span / 5)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (span / (step * m) <= 5) {
      step *= m;
      break;
    }
  }
  a.hi = a.lo + std::ceil(span / step - 1e-9) * step;
  return a;
}

std::string Tick(double v) {
  if (v == 0) return "0";
  double av = std::fabs(v);
  if (av >= 10000) return fmt::format("{:.0f}k", v / 1000);
  if (av >= 100) return fmt::format("{:.0f}", v);
  if (av >= 1) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2g}", v);
}

// The plot's geometry: margins, plot area, the x range and the two y axes.
struct Plot {
  double W, H;
  double ml = 64, mr = 64, mt = 56, mb = 48;
  double pw, ph;
  bool log_x;
  double xmin, xmax;
  bool has_axis[2] = {false, false};
  Axis ya[2];
  double fx(double x) const {
    double t = log_x ? (std::log(x) - std::log(xmin)) / (std::log(xmax) - std::log(xmin))
                     : (x - xmin) / (xmax - xmin);
    return ml + t * pw;
  }
  double fy(int ax, double y) const {
    return mt + ph - (y - ya[ax].lo) / (ya[ax].hi - ya[ax].lo) * ph;
  }
};

// The x range (log or linear) over the series and markers, and one nice range per y axis.
Plot Layout(const LineChart& c) {
  Plot p;
  p.W = c.width_px;
  p.H = c.height_px;
  p.pw = p.W - p.ml - p.mr;
  p.ph = p.H - p.mt - p.mb;
  p.log_x = c.log_x;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  double ymax[2] = {0, 0}, ymin[2] = {0, 0};
  for (const auto& s : c.series) {
    for (auto [x, y] : s.points) {
      if (c.log_x && !(x > 0)) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      int ax = s.right_axis ? 1 : 0;
      ymax[ax] = std::max(ymax[ax], y);
      ymin[ax] = std::min(ymin[ax], y);
      p.has_axis[ax] = true;
    }
  }
  for (const auto& m : c.markers) {
    if (c.log_x && !(m.x > 0)) continue;
    xmin = std::min(xmin, m.x);
    xmax = std::max(xmax, m.x);
  }
  if (!(xmin <= xmax)) xmin = c.log_x ? 1 : 0, xmax = xmin + 1;
  if (xmax == xmin) xmax = c.log_x ? xmin * 2 : xmin + 1;
  p.xmin = xmin;
  p.xmax = xmax;
  p.ya[0] = NiceAxis(ymin[0], ymax[0]);
  p.ya[1] = NiceAxis(ymin[1], ymax[1]);
  return p;
}

// The background, title, grid with the y ticks of each axis, x ticks, frame and axis labels.
void DrawFrame(const LineChart& c, const Plot& p, std::string& o) {
  const double W = p.W, H = p.H, ml = p.ml, mt = p.mt, pw = p.pw, ph = p.ph;
  const double xmin = p.xmin, xmax = p.xmax;
  const bool* has_axis = p.has_axis;
  const Axis* ya = p.ya;
  o += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      c.width_px, c.height_px);
  o += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", c.width_px,
                   c.height_px);
  o += fmt::format("<text x=\"{:.1f}\" y=\"18\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
                   W / 2, Escape(c.title));
  // Grid and y ticks (left axis drives the grid).
  for (int i = 0; i <= 5; ++i) {
    double y = mt + ph - i * ph / 5;
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n",
                     ml, y, ml + pw, y);
    if (has_axis[0]) {
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", ml - 6,
                       y + 4, Tick(ya[0].lo + i * (ya[0].hi - ya[0].lo) / 5));
    }
    if (has_axis[1]) {
      o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"start\">{}</text>\n",
                       ml + pw + 6, y + 4, Tick(ya[1].lo + i * (ya[1].hi - ya[1].lo) / 5));
    }
  }
  // X ticks: powers of two on a log axis, else 5 even ticks.
  std::vector<double> xt;
  if (c.log_x) {
    for (double v = std::pow(2.0, std::floor(std::log2(xmin))); v <= xmax * 1.0001; v *= 2)
      if (v >= xmin * 0.9999) xt.push_back(v);
  } else {
    for (int i = 0; i <= 5; ++i) xt.push_back(xmin + i * (xmax - xmin) / 5);
  }
  for (double v : xt) {
    double x = p.fx(v);
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#999999\"/>\n",
                     x, mt + ph, mt + ph + 4);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", x,
                     mt + ph + 16, Tick(v));
  }
  o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
                   "stroke=\"#333333\"/>\n", ml, mt, pw, ph);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", ml + pw / 2,
                   H - 10, Escape(c.x_label));
  o += fmt::format("<text x=\"14\" y=\"{0:.1f}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0:.1f})\">{1}</text>\n",
                   mt + ph / 2, Escape(c.left_label));
  o += fmt::format("<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" transform=\"rotate(90 {0:.1f} {1:.1f})\">{2}</text>\n",
                   W - 14, mt + ph / 2, Escape(c.right_label));
}

// Each series as a polyline with dots.
void DrawSeries(const LineChart& c, const Plot& p, std::string& o) {
  // Series.
  for (const auto& s : c.series) {
    int ax = s.right_axis ? 1 : 0;
    std::vector<std::pair<double, double>> pts;
    for (auto [x, y] : s.points)
      if (!c.log_x || x > 0) pts.emplace_back(x, y);
    std::sort(pts.begin(), pts.end());
    if (pts.empty()) continue;
    std::string poly;
    for (auto [x, y] : pts)
      poly += fmt::format("{}{:.1f},{:.1f}", poly.empty() ? "" : " ", p.fx(x), p.fy(ax, y));
    o += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                     Escape(s.color), poly);
    for (auto [x, y] : pts)
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", p.fx(x),
                       p.fy(ax, y), Escape(s.color));
  }
}

// The markers as dashed verticals with their labels.
void DrawMarkers(const LineChart& c, const Plot& p, std::string& o) {
  const double mt = p.mt, ph = p.ph;
  // Markers.
  for (const auto& m : c.markers) {
    if (c.log_x && !(m.x > 0)) continue;
    double x = p.fx(m.x);
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000000\" "
                     "stroke-dasharray=\"5,4\"/>\n", x, mt, mt + ph);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"start\" font-weight=\"bold\">{}</text>\n",
                     x + 4, mt + 12, Escape(m.label));
  }
}

// The legend under the title.
void DrawLegend(const LineChart& c, const Plot& p, std::string& o) {
  double lx = p.ml;
  // Legend.
  for (const auto& s : c.series) {
    std::string name = s.name + (s.points.empty() ? " (n/a)" : "") + (s.right_axis ? " [right]" : "");
    o += fmt::format("<rect x=\"{:.1f}\" y=\"30\" width=\"12\" height=\"4\" fill=\"{}\"/>\n", lx,
                     Escape(s.color));
    o += fmt::format("<text x=\"{:.1f}\" y=\"36\">{}</text>\n", lx + 16, Escape(name));
    lx += 16 + 6.5 * double(name.size()) + 18;
  }
}

}  // namespace

// Plan: compute the x range (log or linear) and one nice range per y axis, draw the frame,
// grid and ticks, each series as a polyline with dots, the markers as dashed verticals, then
// the legend under the title.
std::string RenderSvg(const LineChart& c) {
  const Plot p = Layout(c);
  std::string o;
  DrawFrame(c, p, o);
  DrawSeries(c, p, o);
  DrawMarkers(c, p, o);
  DrawLegend(c, p, o);
  o += "</svg>\n";
  return o;
}

}  // namespace latdoc::report
