// Units at the edges: formatting of bytes, durations and rates for humans. Inside the program
// every quantity carries its unit in its name (dur_ns, bytes, power_mw).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace latdoc {

// "1.5 KiB", "3.2 GiB".
std::string FormatBytes(double bytes);
// "850 ns", "12.3 us", "4.56 ms", "2.10 s".
std::string FormatDurationNs(int64_t ns);
// A value the hardware or the input did not give renders as "n/a", never 0.
std::string FormatOptional(const std::optional<double>& v, int precision = 1,
                           const char* unit = "");

// A duration as people type it on a command line: a non-negative number with a unit, "250ms",
// "30s", "1.5m", "1h" (also "us" and "ns"), or a bare number, which is in `bare_unit_ns`
// (seconds by default; `--poll-ms 50` passes a millisecond). Returns nanoseconds. Errors
// (kInvalidArgument, message "'TEXT' is not a duration (e.g. 30s, 250ms, 5m)"): an empty text,
// a sign, NaN or inf, an unknown unit, or more than 10^18 ns (31 years).
StatusOr<int64_t> ParseDurationNs(std::string_view text, int64_t bare_unit_ns = 1'000'000'000);

// Numbers for people. None of these ever prints a negative zero ("-0", "-0.00"): a value that
// rounds to zero prints as zero, unsigned.
//
// A count (requests, preemptions, kernel names, a concurrency): the nearest whole number,
// "1414", "262144", never "1414.00" or "2.621e+05". NaN and infinities print "n/a".
std::string FormatCount(double count);
std::string FormatCount(const std::optional<double>& count);  // nullopt: "n/a"
// `v` with exactly `decimals` decimals ("0.12", "3.00").
std::string FormatFixed(double v, int decimals);
// `v` with at most `digits` significant digits, as %g does ("0.0123", "12.35", "1.5e-07"),
// except that a whole number, or one of more than `digits` digits before the point, below 1e15
// prints as a whole number ("85", "262144" and "55078", not "2.621e+05" and "5.508e+04").
std::string FormatSignificant(double v, int digits);

}  // namespace latdoc
