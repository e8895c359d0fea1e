// Writes a Chrome-trace JSON (opens in Perfetto UI / chrome://tracing) holding the trace's GPU
// ops and API calls plus the findings as marked ranges on their own "latdoc findings" tracks.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

struct Annotation {
  std::string track;        // finding id: one track per id
  std::string name;         // short label shown on the range
  int64_t start_ns = 0;     // absolute, on the trace's clock
  int64_t dur_ns = 0;
  std::string detail;       // shown in the range's args
};

struct AnnotateOptions {
  // Above this many GPU ops + API calls, only the annotations are written.
  size_t max_events = 2'000'000;
};

// Renders the document; WriteFileAtomic it. Times are written as µs with 3 decimals.
std::string RenderAnnotatedTrace(const Trace& trace, const std::vector<Annotation>& annotations,
                                 const AnnotateOptions& options);

}  // namespace latdoc::trace
