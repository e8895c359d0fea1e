// The list of trace importers, and reading a set of files into one Trace.
//
// Formats are detected from content (the first 64 KiB, decompressed), never from the name
// alone; the importer with the highest Detect() score reads the file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/importers/importer.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

// Every importer, in a fixed order (ties in Detect() go to the earlier one).
const std::vector<std::unique_ptr<Importer>>& AllImporters();

// The importer for `path`, or an error naming the path (unreadable, a directory, unknown format).
StatusOr<const Importer*> DetectFormat(const std::string& path);

struct FileResult {
  std::string path;
  std::string format;     // empty when undetected
  Status status;          // not OK: the file was unreadable or damaged (events before the
                          // damage are kept in the trace)
  double import_s = 0;    // wall time of detection and import
  int64_t peak_rss_kib = 0;  // the process's peak resident memory once it was read
  int source = -1;        // index of its SourceFile in the trace; -1 when none was added (the
                          // file was refused before its first event, or read with its set)
};

// Where an import's time went, for `latdoc trace --timings` and bench/trace_bench.py.
struct ImportTimings {
  double finalize_s = 0;  // Trace::Finalize(): sorting and linking
  int64_t finalize_peak_rss_kib = 0;  // the process's peak resident memory after it
};

// The process's peak resident memory so far (getrusage), in KiB.
int64_t PeakRssKib();

// Reads every path into `trace` (one SourceFile each, siblings of a CSV set included) and
// finalizes it. One result per path given; files a previous importer consumed are skipped.
std::vector<FileResult> ImportFiles(const std::vector<std::string>& paths,
                                    const ImportOptions& options, Trace& trace,
                                    ImportTimings* timings = nullptr);

}  // namespace latdoc::trace
