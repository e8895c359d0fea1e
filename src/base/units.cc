#include "base/units.h"

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
  return fmt::format("{:.{}f}{}", *v, precision, unit);
}

}  // namespace latdoc
