#include "base/units.h"

#include <charconv>
#include <cmath>

#include <fmt/core.h>

namespace latdoc {

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[u]);
}

std::string FormatDurationNs(int64_t ns) {
  double a = std::fabs(static_cast<double>(ns));
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (a < 1e9) return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

std::string FormatOptional(const std::optional<double>& v, int precision, const char* unit) {
  if (!v) return "n/a";
  return FormatFixed(*v, precision) + unit;
}

namespace {

// Drops the sign of a printed zero: "-0", "-0.00", "-0e+00" (every digit 0).
std::string Unsigned0(std::string s) {
  if (!s.empty() && s[0] == '-') {
    bool zero = true;
    for (size_t i = 1; i < s.size() && s[i] != 'e'; ++i) {
      if (s[i] >= '1' && s[i] <= '9') zero = false;
    }
    if (zero) s.erase(0, 1);
  }
  return s;
}

}  // namespace

std::string FormatCount(double count) {
  if (!std::isfinite(count)) return "n/a";
  return Unsigned0(fmt::format("{:.0f}", std::round(count)));
}

std::string FormatCount(const std::optional<double>& count) {
  return count ? FormatCount(*count) : std::string("n/a");
}

std::string FormatFixed(double v, int decimals) {
  if (!std::isfinite(v)) return std::isnan(v) ? "n/a" : (v > 0 ? "inf" : "-inf");
  return Unsigned0(fmt::format("{:.{}f}", v, decimals));
}

std::string FormatSignificant(double v, int digits) {
  if (!std::isfinite(v)) return std::isnan(v) ? "n/a" : (v > 0 ? "inf" : "-inf");
  // Whole numbers, and numbers too large for `digits` digits after the point, print as whole
  // numbers: "262144" and "55078", not "2.621e+05" and "5.508e+04".
  if (std::fabs(v) < 1e15 && (v == std::trunc(v) || std::fabs(v) >= std::pow(10.0, digits)))
    return FormatCount(v);
  return Unsigned0(fmt::format("{:.{}g}", v, digits));
}

StatusOr<int64_t> ParseDurationNs(std::string_view text, int64_t bare_unit_ns) {
  auto bad = [&] {
    return InvalidArgument("'" + std::string(text) + "' is not a duration (e.g. 30s, 250ms, 5m)");
  };
  // Digits and one '.', then the unit: from_chars alone would also take "inf", "nan", "1e3" and
  // a sign, none of which is a duration anyone types.
  const size_t unit_at = text.find_first_not_of("0123456789.");
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = unit_at == std::string_view::npos ? "" : text.substr(unit_at);
  double v = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) return bad();
  double scale = 0;
  if (unit.empty()) scale = double(bare_unit_ns);
  else if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m" || unit == "min") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return bad();
  const double ns = v * scale;
  if (!std::isfinite(ns) || ns > 1e18) return bad();
  return static_cast<int64_t>(std::llround(ns));
}

}  // namespace latdoc
