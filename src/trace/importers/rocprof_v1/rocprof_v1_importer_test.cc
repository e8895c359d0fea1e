#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"

#include <fstream>

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/common/csv_reader.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kDir[] = "tests/data/trace/rocprof_v1/hip_vecadd/";

TEST(RocprofV1JsonTest, ReadsHipTraceAndLinksFlows) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "results.json"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocprof_v1_json");
  int kernels = 0, h2d = 0, d2h = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind == GpuOpKind::kKernel) {
      ++kernels;
      EXPECT_EQ(trace.Name(op.name), "vector_add(float*, float*, float*, int)");
      EXPECT_EQ(op.start_ns, 622109244416840);
      EXPECT_EQ(op.dur_ns, 622109247848451 - 622109244416840);
      ASSERT_NE(op.api, kNoLink);
      EXPECT_EQ(trace.Name(trace.api_calls[op.api].name), "hipLaunchKernel");
    }
    if (op.direction == CopyDirection::kHtoD) ++h2d;
    if (op.direction == CopyDirection::kDtoH) ++d2h;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(h2d, 2);
  EXPECT_EQ(d2h, 1);
  EXPECT_EQ(trace.api_calls.size(), 13u);
  for (const GpuOp& op : trace.gpu_ops.ToVector()) EXPECT_NE(op.api, kNoLink) << trace.Name(op.name);
}

TEST(RocprofV1StatsTest, StatsFilesBecomeAggregatesByKind) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "results.stats.csv", std::string(kDir) + "results.hip_stats.csv",
                        std::string(kDir) + "results.copy_stats.csv"},
                       ImportOptions{}, trace);
  for (const auto& x : r) ASSERT_TRUE(x.status.ok()) << x.status.ToString();
  ASSERT_EQ(trace.aggregates.size(), 1u + 7 + 2);   // every row of the three files, once
  const AggregateRow& k = trace.aggregates[0];
  EXPECT_EQ(k.kind, AggregateKind::kKernel);
  EXPECT_EQ(trace.Name(k.name), "vector_add(float*, float*, float*, int)");
  EXPECT_EQ(k.calls, 1);
  EXPECT_EQ(k.total_ns, 3431611);
  EXPECT_EQ(trace.aggregates[1].kind, AggregateKind::kApi);
  EXPECT_EQ(trace.Name(trace.aggregates[1].name), "hipMemcpy");
  EXPECT_EQ(trace.aggregates[1].calls, 3);
  EXPECT_EQ(trace.aggregates[1].total_ns, 1342822760);
  EXPECT_EQ(trace.aggregates.back().kind, AggregateKind::kCopy);
  EXPECT_EQ(trace.Name(trace.aggregates.back().name), "CopyHostToDevice");
  EXPECT_EQ(trace.aggregates.back().calls, 2);
  EXPECT_EQ(trace.aggregates.back().total_ns, 180717650);
}

TEST(RocprofV1CsvTest, CountersOnlyFileSaysHowToGetTimes) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "output_vec_add_gpu.csv"}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].format, "rocprof_v1_csv");
  EXPECT_EQ(r[0].status.message(),
            std::string(kDir) + "output_vec_add_gpu.csv: line 1: no BeginNs/EndNs columns (a "
            "counters-only file; profile with `rocprof --timestamp on` to get kernel times)");
}

// A header with BeginNs but no EndNs is damaged, not a counters-only file (it was called one).
TEST(RocprofV1CsvTest, OneTimeColumnMissingIsNamed) {
  std::ifstream in("tests/data/trace/handmade/v1_results.csv", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"EndNs\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at + 1, 5, "EndNx");
  const std::string path = ::testing::TempDir() + "v1_no_endns.csv";
  std::ofstream(path, std::ios::binary) << text;
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.message(), path + ": line 1: missing column EndNs (the header has BeginNs but not EndNs)");
}

TEST(RocprofV1CsvTest, ClockDomainMismatchAndNegativeDurations) {
  Trace trace;
  auto r = ImportFiles({"tests/data/trace/handmade/v1_results.csv"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_EQ(trace.gpu_ops.size(), 2u);
  EXPECT_EQ(trace.Name(trace.gpu_ops[0].name), "gemm_kernel.kd");
  EXPECT_EQ(trace.gpu_ops[0].bytes, (4096 + 2048) * 1024);   // FETCH_SIZE + WRITE_SIZE, KB
  const auto& issues = trace.sources[0].issues;
  ASSERT_EQ(issues.total(), 1);
  EXPECT_EQ(issues.examples[0].where, "line 4");
  EXPECT_EQ(issues.examples[0].what, "negative duration: EndNs 10000350000 < BeginNs 10000400000");
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  // Row 0: DispatchNs -> BeginNs = 50 us; row 1's DispatchNs is 12.4 s off: rejected.
  EXPECT_EQ(rep.launch.delays_rejected, 1);
  ASSERT_TRUE(rep.launch.delay_p50_ns.has_value());
  EXPECT_EQ(*rep.launch.delay_p50_ns, 50000);
}

// Every split of the byte stream gives the same rows (quotes, commas and newlines inside
// quotes, CRLF).
TEST(CsvReaderTest, QuotedFieldsAndHeaderLookup) {
  const std::string data = "\"Name\",calls,\"Total\"\r\n\"a, \"\"b\"\"\",1,2\r\n\r\nplain,3,\"x\ny\"\n";
  auto r = CsvReader::FromString(data, "t.csv");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Column({"NAME"}), 0);
  EXPECT_EQ((*r)->Column({"nope", "Calls"}), 1);
  EXPECT_EQ((*r)->Column({"nope"}), -1);
  ASSERT_TRUE(*(*r)->Next());
  EXPECT_EQ((*r)->Field(0), "a, \"b\"");
  EXPECT_EQ((*r)->Field(2), "2");
  EXPECT_EQ((*r)->line(), 2);
  ASSERT_TRUE(*(*r)->Next());
  EXPECT_EQ((*r)->Field(0), "plain");
  EXPECT_EQ((*r)->Field(2), "x\ny");
  EXPECT_EQ((*r)->line(), 4);
  EXPECT_FALSE(*(*r)->Next());
}

}  // namespace
}  // namespace latdoc::trace
