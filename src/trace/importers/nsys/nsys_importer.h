// Nsight Systems SQLite export (`nsys export --type sqlite`): CUPTI kernel, memcpy, memset and
// runtime tables, NVTX ranges. Tables are created lazily by nsys, so each is optional.
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

class NsysImporter : public Importer {
 public:
  std::string_view format() const override { return "nsys"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

}  // namespace latdoc::trace
