// rocprofv3 (rocprofiler-sdk) CSV sets and JSON output (ROCm 7.0;
// ROCm/rocm-systems@1b1610f projects/rocprofiler-sdk source/lib/output/generateCSV.cpp and
// source/docs/rocprofv3-schema.json).
//
// CSV: any file of a set (`<prefix>kernel_trace.csv`, `memory_copy_trace.csv`,
// `hip_api_trace.csv`, `hsa_api_trace.csv`, `marker_api_trace.csv`) pulls in its siblings, so
// the Correlation_Id join works; they become one source. Columns are found by name (ROCm 6.2
// and 7.0 headers, rocpd-convert's extra "Guid").
// JSON (`<pid>_results.json`): streamed in slices (common/json_walker.h); each record is parsed
// alone with simdjson On-Demand, so memory does not grow with the file beyond the events kept.
// A file cut short keeps the records before the cut.
#pragma once

#include "trace/importers/importer.h"

namespace latdoc::trace {

class Rocprofv3CsvImporter : public Importer {
 public:
  std::string_view format() const override { return "rocprofv3_csv"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

class Rocprofv3JsonImporter : public Importer {
 public:
  std::string_view format() const override { return "rocprofv3_json"; }
  int Detect(const std::string& path, std::string_view head) const override;
  Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                std::vector<std::string>& consumed) const override;
};

}  // namespace latdoc::trace
