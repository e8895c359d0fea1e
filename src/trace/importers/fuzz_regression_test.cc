// Inputs found by the fuzz targets (fuzz/fuzz_trace_importer.cc), checked in under
// tests/data/fuzz/ and named after the crash. Each is imported as the fuzz target does (the
// importer for its format, the trace finalized and analysed, the report dumped as JSON, as
// `latdoc trace --json` and `latdoc diagnose` do) and must not crash or throw.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

namespace latdoc::trace {
namespace {

namespace fs = std::filesystem;

std::string Crash(const std::string& name) {
  std::ifstream in("tests/data/fuzz/" + name, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes;
}

// Writes `content` to a temporary file named as its format expects, imports it, and returns
// the JSON report.
std::string ImportAndDump(const Importer& importer, const std::string& content,
                          const std::string& file_name) {
  const fs::path dir = fs::temp_directory_path() / ("latdoc_fuzzreg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / file_name).string();
  std::ofstream(path, std::ios::binary) << content;
  Trace trace;
  std::vector<std::string> consumed;
  (void)importer.Import(path, ImportOptions{}, trace, consumed);
  trace.Finalize();
  for (const GpuOp& op : trace.gpu_ops.ToVector()) EXPECT_LT(op.name, trace.names.size());
  for (const ApiCall& a : trace.api_calls.ToVector()) EXPECT_LT(a.name, trace.names.size());
  for (size_t i = 0; i < trace.names.size(); ++i) {
    const std::string_view n = trace.names.Get(NameId(i));
    EXPECT_EQ(ValidUtf8Prefix(n), n.size()) << "name " << i;
  }
  std::string out;
  EXPECT_NO_THROW(out = ReportToJson(Analyze(trace, AnalysisOptions{})).dump(2));
  fs::remove_all(dir);
  return out;
}

// Kernel names with bytes that are not UTF-8 (0xFD, 0x98, 0x95 in a CSV field) reached the
// JSON report, and nlohmann::json::dump threw type_error 316: `latdoc trace --json` aborted.
TEST(FuzzRegressionTest, FuzzCrashA1c82ca7_StatsCsvNameNotUtf8) {
  EXPECT_NE(ImportAndDump(StatsCsvImporter(), Crash("trace_rocprof_stats_crash-a1c82ca7"),
                          "results.stats.csv"), "");
}
TEST(FuzzRegressionTest, FuzzCrashD86dffa7_RocprofV1CsvNameNotUtf8) {
  EXPECT_NE(ImportAndDump(RocprofV1CsvImporter(), Crash("trace_rocprof_v1_csv_crash-d86dffa7"),
                          "results.csv"), "");
}
// A FETCH_SIZE of ~1e17 KB overflowed the int64 byte count (UBSan: float-cast-overflow); it is
// now a bad field, counted, and the row is kept without bytes.
TEST(FuzzRegressionTest, FuzzCrashAb0f2f66_RocprofV1CsvHugeFetchSize) {
  EXPECT_NE(ImportAndDump(RocprofV1CsvImporter(), Crash("trace_rocprof_v1_csv_crash-ab0f2f66"),
                          "results.csv"), "");
}
TEST(FuzzRegressionTest, FuzzCrashB3b9477d_Rocprofv3CsvNameNotUtf8) {
  // The fuzz input is a CSV set joined by form feeds; its first part is the kernel trace.
  const std::string set = Crash("trace_rocprofv3_csv_crash-b3b9477d");
  EXPECT_NE(ImportAndDump(Rocprofv3CsvImporter(), set.substr(0, set.find('\f')),
                          "set_kernel_trace.csv"), "");
}

// A rocprofv3 JSON document damaged after its kernel records: the import stopped with an
// error before the names were resolved, leaving GPU ops with name id 0 in an empty string
// table, and the GPU timeline read past the table (SEGV).
TEST(FuzzRegressionTest, FuzzCrash8e468a40_Rocprofv3JsonDamagedAfterRecords) {
  EXPECT_NE(ImportAndDump(Rocprofv3JsonImporter(), Crash("trace_rocprofv3_json_crash-8e468a40"),
                          "results.json"), "");
}

TEST(StringTableTest, NamesAreAlwaysUtf8AndKeyedByTheirBytes) {
  StringTable t;
  const NameId bad = t.Intern("k\xFD\x80x");
  EXPECT_EQ(t.Get(bad), "k\xEF\xBF\xBD\xEF\xBF\xBDx");
  EXPECT_EQ(t.Intern("k\xFD\x80x"), bad);   // the same bytes, the same id
  EXPECT_NE(t.Intern("k\xEF\xBF\xBD\xEF\xBF\xBDx"), bad);  // the repaired text is another name
  EXPECT_EQ(t.Get(t.Intern("h\xC3\xA9llo")), "h\xC3\xA9llo");  // valid UTF-8 is kept
  EXPECT_EQ(ValidUtf8Prefix("a\xED\xA0\x80"), 1u);  // a surrogate is not UTF-8
  EXPECT_EQ(ValidUtf8Prefix("a\xC0\xAF"), 1u);      // nor an overlong form
  EXPECT_EQ(ToValidUtf8("\xF4\x90\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // > U+10FFFF
}

}  // namespace
}  // namespace latdoc::trace
