#include "trace/importers/rocpd/rocpd_importer.h"

#include <sqlite3.h>
#include <gtest/gtest.h>

#include <fstream>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kFixture[] = "tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db";

TEST(RocpdImporterTest, ReadsFixtureThroughViewsAndJoinsEveryDispatch) {
  Trace trace;
  auto r = ImportFiles({kFixture}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocpd");
  // trace-formats.md 8: 301 dispatches, 623 regions, 0 memory copies; 301/301 join.
  EXPECT_EQ(trace.gpu_ops.size(), 301u);
  EXPECT_EQ(trace.api_calls.size(), 623u);
  size_t linked = 0;
  for (const GpuOp& op : trace.gpu_ops) linked += op.api != kNoLink;
  EXPECT_EQ(linked, 301u);
  ASSERT_EQ(trace.devices.size(), 8u);   // an 8-GPU node; the dispatches ran on GPU 0
  EXPECT_EQ(trace.devices[0].device, 0);
  EXPECT_EQ(trace.devices[0].arch, "gfx942");
  EXPECT_EQ(trace.devices[0].name, "AMD Instinct MI300X");
  // The first dispatch is a runtime fill kernel: a memset, not computation.
  EXPECT_EQ(trace.Name(trace.gpu_ops[0].name), "__amd_rocclr_fillBufferAligned");
  EXPECT_EQ(trace.gpu_ops[0].kind, GpuOpKind::kMemset);
  EXPECT_EQ(trace.gpu_ops[0].dur_ns, 127395708311676 - 127395708304699);
  EXPECT_EQ(trace.sources[0].issues.total(), 0);
}

TEST(RocpdImporterTest, LaunchDelayFromTheRegionJoin) {
  Trace trace;
  ImportFiles({kFixture}, ImportOptions{}, trace);
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  EXPECT_EQ(rep.launch.kernels_linked + 0, rep.launch.kernels);
  ASSERT_TRUE(rep.launch.delay_p50_ns.has_value());
  EXPECT_GT(*rep.launch.delay_p50_ns, 0);
  EXPECT_FALSE(rep.timeline_used_all_ops);
}

std::string CopyFixture(const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ifstream in(kFixture, std::ios::binary);
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  return path;
}

void Exec(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
}

TEST(RocpdImporterTest, UnknownSchemaVersionIsRefusedWithPath) {
  const std::string path = CopyFixture("rocpd_v4.db");
  Exec(path, "UPDATE rocpd_metadata_00000797_e16d_716d_b3cc_a4a0629bb1d1 SET value='4.1.0' WHERE tag='schema_version'");
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r[0].status.message(), path + ": rocpd schema_version '4.1.0' is not supported (3.x is)");
}

TEST(RocpdImporterTest, NegativeDurationsAreCountedWithTheRow) {
  const std::string path = CopyFixture("rocpd_neg.db");
  // Swap start and end of one dispatch through the view's underlying table.
  Exec(path,
       "UPDATE rocpd_kernel_dispatch_00000797_e16d_716d_b3cc_a4a0629bb1d1 "
       "SET start = end + 5 WHERE id = 3");
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok());
  EXPECT_EQ(trace.gpu_ops.size(), 300u);
  ASSERT_EQ(trace.sources[0].issues.total(), 1);
  EXPECT_EQ(trace.sources[0].issues.examples[0].where, "kernels row id=3");
}

}  // namespace
}  // namespace latdoc::trace
