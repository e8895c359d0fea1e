#include "trace/importers/kineto/kineto_importer.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "base/file_util.h"
#include "base/read_ahead.h"
#include "trace/importers/kineto/kineto_parse.h"
#include "trace/importers/kineto/kineto_split.h"

namespace latdoc::trace {

std::optional<int64_t> ParseMicrosToNs(std::string_view t) {
  // 2^62 ns (146 years) at most either way, so that a start plus a duration, or an end less a
  // start, never overflows; an epoch time in microseconds is about 1.8e15 today.
  constexpr int64_t kMaxMicros = (int64_t{1} << 62) / 1000;
  if (t.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (t[0] == '-') {
    neg = true;
    i = 1;
  }
  int64_t whole = 0;
  size_t digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    if (whole > (INT64_MAX / 10 - 10) / 1000) return std::nullopt;
    whole = whole * 10 + (t[i] - '0');
    ++i;
    ++digits;
  }
  int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    int n = 0;
    bool round_up = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 3) {
        frac_ns = frac_ns * 10 + (t[i] - '0');
      } else if (n == 3) {
        round_up = t[i] >= '5';
      }
      ++n;
      ++i;
      ++digits;
    }
    for (int k = n; k < 3; ++k) frac_ns *= 10;
    if (round_up) ++frac_ns;
  }
  if (digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    // Rare (exponent form): fall back to double arithmetic.
    char* end = nullptr;
    const std::string s(t);
    const double us = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !(std::fabs(us) <= kMaxMicros)) return std::nullopt;
    return static_cast<int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  const int64_t ns = whole * 1000 + frac_ns;
  if (ns > kMaxMicros * 1000) return std::nullopt;
  return neg ? -ns : ns;
}

int KinetoImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' ||
                             head[i] == '\t')) {
    ++i;
  }
  if (i >= head.size() || (head[i] != '{' && head[i] != '[')) return 0;
  if (head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos) return 0;
  if (head.find("\"traceEvents\"") != std::string_view::npos) return 90;
  if (head.find("\"ph\"") != std::string_view::npos) return 60;
  return 10;
}

Status KinetoImporter::Import(const std::string& path, const ImportOptions& options,
                              Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  return ImportKineto(path, options, trace, nullptr);
}

Status ImportKineto(const std::string& path, const ImportOptions& options, Trace& trace,
                    KinetoSplitStats* stats) {
  const uint16_t source = trace.AddSource(path, "kineto");
  kineto::KinetoParse main(trace, source);
  uint64_t decompressed = 0, events = 0;
  KinetoSplitStats split_stats;
  std::optional<Status> split =
      kineto::ImportSplit(path, options, trace, source, main, &decompressed, &events, split_stats);
  if (!split) {
    split = kineto::ImportSplitStream(path, options, trace, source, main, &decompressed, &events,
                                      split_stats);
  }
  if (stats) *stats = split_stats;
  Status st;
  if (split) {
    st = *split;
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
    // Read (and inflate) on a second core while this one parses. Even a plain file gains: the
    // kernel's page-cache copy was a sixth of a single-threaded import.
    in = ReadAhead(std::move(in), options.chunk_bytes);
    st = ForEachSlice(*in, options.chunk_bytes, [&](std::string_view bytes) { return main.Feed(bytes); });
    if (st.ok()) st = main.scanner().Finish();
    decompressed = main.fed();
    events = main.scanner().events();
  }
  main.reader().FinishDevices();
  main.reader().FinishDistributedInfo();
  if (st.ok() && !main.scanner().saw_trace_events()) {
    st = InvalidArgument("no \"traceEvents\" array: not a Chrome/Kineto trace");
  }
  if (!st.ok()) {
    // Keep what was read before the break; the caller reports the file as damaged.
    // Stream errors already name the path; scanner errors do not.
    if (st.message().rfind(path, 0) != 0) st = st.WithContext(path);
    main.reader().source().fatal_error = st.message();
    if (decompressed > 0 && events > 0) {
      main.reader().source().issues.Add("file cut short", fmt::format("byte {}", decompressed),
                                        st.message());
    }
  }
  return st;
}

}  // namespace latdoc::trace
