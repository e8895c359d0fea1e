// One trace importer on arbitrary file content. Built once per format (fuzz/CMakeLists.txt
// defines LATDOC_FUZZ_IMPORTER, the importer class, and LATDOC_FUZZ_FILE, the file name the
// importer expects). The input is written to a temporary file and imported, then the trace is
// finalized and analysed as `latdoc trace` would, its tables spilling past blocks of 3 rows (so
// the importers' working tables, Finalize's external sort and join and the analyses' passes
// read back from files as on a trace of gigabytes). For a rocprofv3 CSV set the input is split
// at form feeds ('\f') into kernel_trace.csv, memory_copy_trace.csv and hip_api_trace.csv; the
// SQLite formats read the mutated database file.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include <nlohmann/json.hpp>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/kineto/kineto_importer.h"
#include "trace/importers/nsys/nsys_importer.h"
#include "trace/importers/rocpd/rocpd_importer.h"
#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes = latdoc::fuzz::AsView(data, size);
  std::string path;
#ifdef LATDOC_FUZZ_CSV_SET
  const char* stems[] = {"set_kernel_trace.csv", "set_memory_copy_trace.csv",
                         "set_hip_api_trace.csv"};
  for (int i = 0; i < 3; ++i) {
    size_t ff = i < 2 ? bytes.find('\f') : std::string_view::npos;
    std::string written = latdoc::fuzz::WriteScratch(stems[i], bytes.substr(0, ff));
    if (i == 0) path = written;
    bytes = ff == std::string_view::npos ? std::string_view() : bytes.substr(ff + 1);
  }
#else
  path = latdoc::fuzz::WriteScratch(LATDOC_FUZZ_FILE, bytes);
#endif
  LATDOC_FUZZ_IMPORTER importer;
  latdoc::trace::Trace trace(3);
  std::vector<std::string> consumed;
  latdoc::trace::ImportOptions options;
  options.chunk_bytes = 4096;  // many slices, so slice boundaries are exercised
  (void)importer.Detect(path, latdoc::fuzz::AsView(data, size < 65536 ? size : 65536));
  (void)importer.Import(path, options, trace, consumed);
  trace.Finalize();
  latdoc::trace::TraceReport report = latdoc::trace::Analyze(trace, latdoc::trace::AnalysisOptions{});
  (void)latdoc::trace::ReportToJson(report).dump(2);
  return 0;
}
