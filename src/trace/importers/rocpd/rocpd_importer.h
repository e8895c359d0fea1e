// rocpd SQLite (rocprofv3's default output since ROCm 7.0, `<host>/<pid>_results.db`), read
// through its views (`kernels`, `memory_copies`, `regions`), never its UUID-suffixed tables.
// Checks rocpd_metadata.schema_version: 3 and 3.x are read; anything else is refused.
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

class RocpdImporter : public Importer {
 public:
  std::string_view format() const override { return "rocpd"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

}  // namespace latdoc::trace
