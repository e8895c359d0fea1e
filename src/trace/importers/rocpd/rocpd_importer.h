// rocpd SQLite (rocprofv3's default output since ROCm 7.0, `<host>/<pid>_results.db`), read
// through its views, never its UUID-suffixed tables. Checks rocpd_metadata.schema_version: 3 and
// 3.x are read; anything else is refused.
//
// Two paths give the same events. The data-view path reads `kernels`, `memory_copies` and
// `regions` (data_views.sql): multi-way joins that SQLite runs slowly. The fast path reads the
// per-table views (`rocpd_kernel_dispatch`, `rocpd_region`, `rocpd_event`, ...; rocpd_views.sql)
// and does the same joins in C++; a row whose references do not resolve, which the data views
// drop silently, is counted as a bad record. The fast path is taken when the file holds one
// guid and every view and column it reads exists, and its small tables are all of that guid.
// The fast path reads the file on three threads, each through its own read-only connection;
// Import() returns once they are done.
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

enum class RocpdPath {
  kAuto,           // the per-table fast path when the file allows it, else the data views
  kDataViews,      // always the data views
  kPerTableViews,  // always the fast path; an error if the file does not allow it
};

class RocpdImporter : public Importer {
 public:
  explicit RocpdImporter(RocpdPath path = RocpdPath::kAuto) : path_(path) {}
  std::string_view format() const override { return "rocpd"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;

 private:
  RocpdPath path_;
};

}  // namespace latdoc::trace
