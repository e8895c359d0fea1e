// PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip, CUDA and ROCm variants; also
// reads any Chrome-trace JSON whose events use Kineto's categories.
//
// Streamed: the document is read (and inflated) in slices on a read-ahead thread and split into
// events by JsonEventScanner; each event is read in one pass from the scanner's buffer
// (kineto_event.h), or, when that reader declines it, parsed alone with simdjson On-Demand.
// Memory is bounded by the model's rows, never by the file.
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

class KinetoImporter : public Importer {
 public:
  std::string_view format() const override { return "kineto"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

// Parses a decimal number of microseconds ("4203669603438.301", "12", "-0.5", "1e3") into
// integer nanoseconds exactly when it has at most 3 decimals (rounded half away beyond).
// nullopt when `text` is not a number.
std::optional<int64_t> ParseMicrosToNs(std::string_view text);

}  // namespace latdoc::trace
