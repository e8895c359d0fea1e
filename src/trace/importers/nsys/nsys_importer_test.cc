#include "trace/importers/nsys/nsys_importer.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kFixture[] = "tests/data/trace/nsys/vecadd_pageable_report1.sqlite";

TEST(NsysImporterTest, ReadsVecAddFixture) {
  Trace trace;
  auto r = ImportFiles({kFixture}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "nsys");
  int kernels = 0, h2d = 0, d2h = 0, pageable = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind == GpuOpKind::kKernel) ++kernels;
    if (op.direction == CopyDirection::kHtoD) ++h2d;
    if (op.direction == CopyDirection::kDtoH) ++d2h;
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) ++pageable;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(h2d, 2);
  EXPECT_EQ(d2h, 1);
  EXPECT_EQ(pageable, 3);
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].arch, "sm86");
  // The launch joins on correlationId: cudaLaunchKernel end -> kernel start = 1,119,214 ns.
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind != GpuOpKind::kKernel) continue;
    ASSERT_NE(op.api, kNoLink);
    const ApiCall& a = trace.api_calls[op.api];
    EXPECT_EQ(trace.Name(a.name), "cudaLaunchKernel");
    EXPECT_EQ(a.kind, ApiKind::kKernelLaunch);
    EXPECT_EQ(op.start_ns - a.end_ns(), 1119214);
    // The kernel's own times and stream, as the export has them.
    EXPECT_EQ(op.start_ns, 1143927944);
    EXPECT_EQ(op.dur_ns, 38912);
    EXPECT_EQ(op.stream, 7);
  }
  // Each copy's bytes and duration (the export's start, end - start, bytes).
  std::vector<std::tuple<int64_t, int64_t, int64_t, CopyDirection>> copies;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind == GpuOpKind::kMemcpy) copies.emplace_back(op.start_ns, op.dur_ns, op.bytes, op.direction);
  }
  std::sort(copies.begin(), copies.end());
  const std::vector<std::tuple<int64_t, int64_t, int64_t, CopyDirection>> want = {
      {1139398153, 676416, 4194304, CopyDirection::kHtoD},
      {1140380393, 1781856, 4194304, CopyDirection::kHtoD},
      {1144088264, 586464, 4194304, CopyDirection::kDtoH}};
  EXPECT_EQ(copies, want);
}

TEST(NsysImporterTest, CopiesAreSynchronousAndPageable) {
  Trace trace;
  ImportFiles({kFixture}, ImportOptions{}, trace);
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  int64_t sync = 0, pageable = 0;
  for (const auto& d : rep.copies.by_direction) {
    sync += d.sync_count;
    pageable += d.pageable_count;
    if (d.direction == CopyDirection::kHtoD) {
      EXPECT_EQ(d.bytes, 2 * 4194304);
    }
  }
  EXPECT_EQ(sync, 3);
  // The three copies are pageable, but from synchronous cudaMemcpy calls: counted as such, not
  // as pageable copies that should have been asynchronous (nsys's cuda_memcpy_async rule).
  EXPECT_EQ(pageable, 0);
  int pageable_kind = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) ++pageable_kind;
  }
  EXPECT_EQ(pageable_kind, 3);
  EXPECT_FALSE(rep.copies.pageable_is_heuristic);
}

// A copy of the fixture with `sql` applied to it.
std::string ChangedFixture(const std::string& name, const char* sql) {
  const std::string path = ::testing::TempDir() + name;
  std::filesystem::copy_file(kFixture, path, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
  return path;
}

// A report of two processes (tensor-parallel workers) whose CUDA correlation ids repeat: each
// kernel is linked to the launch of its own process. The second process (pid 777) launches
// with the same correlation id 126, 5 ms later.
TEST(NsysImporterTest, CorrelationIdsRepeatedByAnotherProcessLinkWithinTheirProcess) {
  const std::string path = ChangedFixture("nsys_two_processes.sqlite",
      "CREATE TEMP TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 126;"
      "UPDATE k SET start = start + 5000000, end = end + 5000000, globalPid = 777 << 24;"
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k;"
      "CREATE TEMP TABLE r AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 126;"
      "UPDATE r SET start = start + 5000000, end = end + 5000000, globalTid = (777 << 24) | 778;"
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM r;");
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  int kernels = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind != GpuOpKind::kKernel) continue;
    ++kernels;
    ASSERT_NE(op.api, kNoLink);
    const ApiCall& a = trace.api_calls[op.api];
    EXPECT_EQ(a.pid, op.start_ns > 1143927944 ? 777 : 1246) << op.start_ns;
    EXPECT_EQ(op.start_ns - a.end_ns(), 1119214);  // each to its own launch
  }
  EXPECT_EQ(kernels, 2);
}

std::map<std::string, int> CallNames(const Trace& trace, size_t first, size_t last) {
  std::map<std::string, int> out;
  for (size_t i = first; i < last; ++i) ++out[std::string(trace.Name(trace.api_calls[i].name))];
  return out;
}

// The runtime table is read on a second thread while the GPU tables are read on the first; the
// result must be what one thread reading the tables in order gives: bad rows reported in table
// order, GPU names interned before runtime names, every call named (a nameId missing from
// StringIds: "unknown API"), and a second file's calls named too.
TEST(NsysImporterTest, RuntimeReadBesideTheGpuTablesKeepsTheOneThreadResult) {
  constexpr char kChanges[] =
      "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = start - 5 WHERE rowid = 3;"
      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET end = start - 7 WHERE rowid = 2;"
      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 987654321 WHERE rowid = 7;";
  const std::string rank0 = ChangedFixture("nsys_runtime_thread0.sqlite", kChanges);
  const std::string rank1 = ChangedFixture("nsys_runtime_thread1.sqlite", kChanges);
  Trace trace;
  auto r = ImportFiles({rank0, rank1}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_TRUE(r[1].status.ok()) << r[1].status.ToString();
  ASSERT_EQ(trace.sources.size(), 2u);
  for (const SourceFile& src : trace.sources) {
    EXPECT_EQ(src.events_read, 1 + 2 + 14);  // kernel, copies, calls: one copy, one call bad
    EXPECT_EQ(src.issues.count_by_reason.at("negative duration"), 2);
    ASSERT_EQ(src.issues.examples.size(), 2u);
    EXPECT_EQ(src.issues.examples[0].where, "CUPTI_ACTIVITY_KIND_MEMCPY rowid=3");
    EXPECT_EQ(src.issues.examples[1].where, "CUPTI_ACTIVITY_KIND_RUNTIME rowid=2");
    EXPECT_NE(src.issues.examples[1].what.find(" < start "), std::string::npos)
        << src.issues.examples[1].what;
  }
  ASSERT_EQ(trace.api_calls.size(), 28u);
  const std::map<std::string, int> expected = {
      {"cuModuleGetLoadingMode", 1}, {"cudaMalloc", 2}, {"cudaMemcpy", 3},
      {"unknown API", 1}, {"cuLibraryGetKernel", 1}, {"cuKernelGetName", 1},
      {"cudaLaunchKernel", 1}, {"cudaDeviceSynchronize", 1}, {"cudaFree", 3}};
  std::map<std::string, int> both = expected;
  for (auto& [name, n] : both) n *= 2;
  EXPECT_EQ(CallNames(trace, 0, trace.api_calls.size()), both);
  NameId max_gpu_name = 0, min_call_name = UINT32_MAX;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) max_gpu_name = std::max(max_gpu_name, op.name);
  for (const ApiCall& a : trace.api_calls.ToVector()) {
    min_call_name = std::min(min_call_name, a.name);
    if (trace.Name(a.name) == "cudaLaunchKernel") {
      EXPECT_EQ(a.kind, ApiKind::kKernelLaunch);
    }
    if (trace.Name(a.name) == "cudaDeviceSynchronize") {
      EXPECT_EQ(a.kind, ApiKind::kSync);
    }
  }
  EXPECT_LT(max_gpu_name, min_call_name);  // GPU names were interned first
}

TEST(NsysImporterTest, UnknownExportSchemaMajorIsRefusedWithPath) {
  const std::string path = ChangedFixture("nsys_schema4.sqlite",
      "UPDATE META_DATA_EXPORT SET value = '4' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR';");
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r[0].status.message(),
            path + ": Nsight Systems export schema major version 4 is not supported (3 is)");
}

// Memsets and NVTX ranges (tables the fixture's capture did not have; their columns as in
// nsys 2024.6.2's export, schema 3.16.1): a memset is a GPU op with its bytes; an NVTX range is
// a marker on the thread globalTid names, named by its text, else its textId's string, else
// "nvtx"; an instant mark (end NULL) is not a range; a negative duration is counted with the
// table and rowid.
TEST(NsysImporterTest, MemsetsAndNvtxRanges) {
  // globalTid = pid << 24 | tid: pid 4321, tid 8765.
  const std::string path = ChangedFixture("nsys_memset_nvtx.sqlite",
      "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, "
      "  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
      "  correlationId INTEGER, bytes INTEGER NOT NULL, value INTEGER NOT NULL);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (1000, 1500, 0, 1, 7, NULL, 4096, 0);"
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (2000, 1900, 0, 1, 7, NULL, 64, 0);"
      "INSERT INTO StringIds (id, value) VALUES (990001, 'prefill');"
      "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, "
      "  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
      "  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);"
      "INSERT INTO NVTX_EVENTS VALUES (100, 900, 59, NULL, NULL, NULL, 'decode step', 72494359101, NULL, NULL, 0);"
      "INSERT INTO NVTX_EVENTS VALUES (200, 300, 59, NULL, NULL, NULL, NULL, 72494359101, NULL, 990001, 0);"
      "INSERT INTO NVTX_EVENTS VALUES (400, NULL, 34, NULL, NULL, NULL, 'instant', 72494359101, NULL, NULL, 0);"
      "INSERT INTO NVTX_EVENTS VALUES (500, 600, 59, NULL, NULL, NULL, NULL, 72494359101, NULL, 424242, 0);"
      "INSERT INTO NVTX_EVENTS VALUES (700, 650, 59, NULL, NULL, NULL, 'backwards', 72494359101, NULL, NULL, 0);");
  static_assert(((int64_t{4321} << 24) | 8765) == 72494359101);
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  int memsets = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind != GpuOpKind::kMemset) continue;
    ++memsets;
    EXPECT_EQ(op.start_ns, 1000);
    EXPECT_EQ(op.dur_ns, 500);
    EXPECT_EQ(op.bytes, 4096);
    EXPECT_EQ(op.stream, 7);
    EXPECT_EQ(trace.Name(op.name), "Memset (Device)");
  }
  EXPECT_EQ(memsets, 1);
  std::map<std::string, int64_t> markers;  // name -> start
  trace.cpu_ops.ForEach([&](const CpuOp& c) {
    EXPECT_EQ(c.kind, CpuOpKind::kMarker);
    EXPECT_EQ(c.pid, 4321);
    EXPECT_EQ(c.tid, 8765);
    markers[std::string(trace.Name(c.name))] = c.start_ns;
  });
  EXPECT_EQ(markers, (std::map<std::string, int64_t>{{"decode step", 100}, {"prefill", 200}, {"nvtx", 500}}));
  const ImportIssues& issues = trace.sources[0].issues;
  EXPECT_EQ(issues.count_by_reason.at("negative duration"), 2);
  ASSERT_EQ(issues.examples.size(), 2u);
  EXPECT_EQ(issues.examples[0].where, "CUPTI_ACTIVITY_KIND_MEMSET rowid=2");
  EXPECT_EQ(issues.examples[0].what, "negative duration: end 1900 < start 2000");
  EXPECT_EQ(issues.examples[1].where, "NVTX_EVENTS rowid=5");
  EXPECT_EQ(trace.sources[0].events_read, 1 + 3 + 1 + 15 + 3);  // kernel, copies, memset, calls, ranges
}

// The root page of `table` in the SQLite file at `path`.
int64_t RootPage(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE name = ?1", -1, &q, nullptr);
  sqlite3_bind_text(q, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  const int64_t page = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return page;
}

// A GPU table that cannot be read fails the file with its path, while the runtime table is being
// read on the other thread: no call read there is left behind unnamed (the trace holds only
// valid names), and the other file given with it is read whole.
TEST(NsysImporterTest, AnUnreadableGpuTableLeavesNoHalfReadCalls) {
  const std::string bad = ChangedFixture("nsys_bad_kernel_table.sqlite", "SELECT 1;");
  const int64_t page = RootPage(bad, "CUPTI_ACTIVITY_KIND_KERNEL");
  ASSERT_GT(page, 1);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((page - 1) * 4096);  // the fixture's page size
    const std::string garbage(4096, '\xee');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ASSERT_TRUE(f.good());
  }
  Trace trace;
  auto r = ImportFiles({bad, kFixture}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].status.ok());
  // Where: the file, the table and the rows read before the break.
  EXPECT_EQ(r[0].status.message().rfind(bad + ": reading CUPTI_ACTIVITY_KIND_KERNEL after 0 rows: ", 0), 0u)
      << r[0].status.ToString();
  EXPECT_TRUE(r[1].status.ok()) << r[1].status.ToString();
  EXPECT_EQ(trace.api_calls.size(), 15u);  // the good file's, all named
  for (const ApiCall& a : trace.api_calls.ToVector()) {
    ASSERT_LT(a.name, trace.names.size());
    EXPECT_NE(trace.Name(a.name), "");
  }
}

}  // namespace
}  // namespace latdoc::trace
