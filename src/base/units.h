// Units at the edges: formatting of bytes, durations and rates for humans. Inside the program
// every quantity carries its unit in its name (dur_ns, bytes, power_mw).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace latdoc {

// "1.5 KiB", "3.2 GiB".
std::string FormatBytes(double bytes);
// "850 ns", "12.3 us", "4.56 ms", "2.10 s".
std::string FormatDurationNs(int64_t ns);
// A value the hardware or the input did not give renders as "n/a", never 0.
std::string FormatOptional(const std::optional<double>& v, int precision = 1,
                           const char* unit = "");

}  // namespace latdoc
