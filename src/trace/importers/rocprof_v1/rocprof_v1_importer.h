// rocprof v1 (ROCm/rocprofiler `rpl_run.sh`, also rocprofv2 file plugin v1/v2 and
// rocprofiler-compute timestamps.csv): the dispatch table `results.csv`, read by header name,
// and the Chrome trace `results.json` (integer µs strings, exact ns in args).
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

class RocprofV1CsvImporter : public Importer {
 public:
  std::string_view format() const override { return "rocprof_v1_csv"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

class RocprofV1JsonImporter : public Importer {
 public:
  std::string_view format() const override { return "rocprof_v1_json"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

// Profiler summary tables: rocprof v1 `results.stats.csv`, `results.hip_stats.csv`,
// `results.copy_stats.csv`, and rocprofv3 `*_kernel_stats.csv`, `*_hip_api_stats.csv`,
// `*_memory_copy_stats.csv` ("Name","Calls","TotalDurationNs","AverageNs","Percentage"[,...]).
class StatsCsvImporter : public Importer {
 public:
  std::string_view format() const override { return "rocprof_stats"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

}  // namespace latdoc::trace
