// PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip, CUDA and ROCm variants; also
// reads any Chrome-trace JSON whose events use Kineto's categories.
//
// Streamed: the document is read (and inflated) in slices on a read-ahead thread and split into
// events by JsonEventScanner; each event is read in one pass from the scanner's buffer
// (kineto_event.h), or, when that reader declines it, parsed alone with simdjson On-Demand.
// Memory is bounded by the model's rows, never by the file.
//
// Split: a plain (uncompressed) file of at least ImportOptions::split_min_bytes is parsed in
// parts on one thread per core. Each part after the first starts at a seam, a '{' after a ','
// (FindSeam, importers/common/split_reader.h), parsed into its own Trace; a part is taken only
// when the part before it ended exactly at a traceEvents element boundary (the seam may have
// been inside an event's args or a string: then that part reads on to the end by itself and
// the later ones are dropped). Taken parts are appended in order with their names re-interned in the order they
// first appeared, so the result is exactly the one-thread result (kineto_importer_test.cc).
//
// A compressed file is one stream: this thread inflates it and cuts the document at seams into
// parts of about ImportOptions::split_part_bytes, parsed one per thread, a few at a time, and
// taken in order the same way as they finish; memory holds the parts in flight, not the
// document. Where a part cannot be taken, the last taken parse reads on over the rest.
// Both splits are in kineto_split.cc; the parse of a document or part in kineto_parse.h.
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

// What a split import did (for tests and --timings): parts planned after the first, parts
// taken, and whether a seam proved not to be an element boundary.
struct KinetoSplitStats {
  int parts_planned = 0;
  int parts_taken = 0;
  bool fell_back = false;
};

// KinetoImporter::Import, saying what the split did.
Status ImportKineto(const std::string& path, const ImportOptions& options, Trace& trace,
                    KinetoSplitStats* stats);

// Parses a decimal number of microseconds ("4203669603438.301", "12", "-0.5", "1e3") into
// integer nanoseconds exactly when it has at most 3 decimals (rounded half away beyond).
// nullopt when `text` is not a number.
std::optional<int64_t> ParseMicrosToNs(std::string_view text);

}  // namespace latdoc::trace
