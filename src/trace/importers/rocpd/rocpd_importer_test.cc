#include "trace/importers/rocpd/rocpd_importer.h"

#include <sqlite3.h>
#include <gtest/gtest.h>

#include <fstream>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kFixture[] = "tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db";
constexpr char kSyntheticFixture[] = "tests/data/trace/rocpd/synthetic_200_results.db";

TEST(RocpdImporterTest, ReadsFixtureThroughViewsAndJoinsEveryDispatch) {
  Trace trace;
  auto r = ImportFiles({kFixture}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocpd");
  // The fixture (HGLiu1998/batched_gemm@f7b92d93 15_results.db) holds 301 dispatches,
  // 623 regions, 0 memory copies; 301/301 join.
  EXPECT_EQ(trace.gpu_ops.size(), 301u);
  EXPECT_EQ(trace.api_calls.size(), 623u);
  size_t linked = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) linked += op.api != kNoLink;
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

// rocpd's times are its host's boot clock: a file is on the wall clock only when latdoc runs
// on the host that recorded it (the same machine-id in rocpd_info_node).
TEST(RocpdImporterTest, OnTheWallClockOnlyOnTheHostThatRecordedIt) {
  const std::string recorded_on = "66a0384146474b3e96c75a0b6e9a9181";  // the fixture's node
  constexpr int64_t kOffset = 1'764'900'000'000'000'000;
  for (const char* path : {kFixture}) {
    Trace here, elsewhere, unknown;
    ImportOptions o;
    o.local_boot_clock = LocalBootClock{recorded_on, kOffset};
    ASSERT_TRUE(ImportFiles({path}, o, here)[0].status.ok());
    EXPECT_EQ(here.sources[0].wall_clock_base_ns, kOffset);
    ASSERT_TRUE(GpuWorkWallClockWindow(here).has_value());
    // The first kernel's start (CLOCK_BOOTTIME 127395708304699 ns) plus the offset.
    EXPECT_EQ(GpuWorkWallClockWindow(here)->start_ns, kOffset + 127395708304699);
    o.local_boot_clock->machine_id = "00000000000000000000000000000000";
    ASSERT_TRUE(ImportFiles({path}, o, elsewhere)[0].status.ok());
    EXPECT_FALSE(elsewhere.sources[0].wall_clock_base_ns.has_value());
    ASSERT_TRUE(ImportFiles({path}, ImportOptions{}, unknown)[0].status.ok());
    EXPECT_FALSE(unknown.sources[0].wall_clock_base_ns.has_value());
  }
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

std::string CopyFixtureFrom(const std::string& from, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ifstream in(from, std::ios::binary);
  std::ofstream(path, std::ios::binary) << in.rdbuf();
  return path;
}

std::string CopyFixture(const std::string& name) { return CopyFixtureFrom(kFixture, name); }

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

// A table that cannot be read (its root page overwritten) fails the file with the path, the
// tables read (rocpd_event is read joined with each fact table, the kernels first) and the rows
// read before the break.
TEST(RocpdImporterTest, UnreadableEventTableIsNamedWithThePath) {
  const std::string path = CopyFixture("rocpd_bad_event_page.db");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp((21 - 1) * 4096);  // rocpd_event_<uuid>'s root page; the fixture's page size
    const std::string garbage(4096, '\xee');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ASSERT_TRUE(f.good());
  }
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(r[0].status.message(),
            path + ": reading rocpd_kernel_dispatch LEFT JOIN rocpd_event after 0 rows: database "
                   "disk image is malformed (SQLite error 11)");
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

Status ImportThrough(RocpdPath p, const std::string& path, Trace& trace) {
  std::vector<std::string> consumed;
  return RocpdImporter(p).Import(path, ImportOptions{}, trace, consumed);
}

// Every field of every event, device and issue, with names compared as text.
void ExpectSameTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.gpu_ops.size(), b.gpu_ops.size());
  ASSERT_EQ(a.api_calls.size(), b.api_calls.size());
  ASSERT_EQ(a.cpu_ops.size(), b.cpu_ops.size());
  ASSERT_EQ(a.names.size(), b.names.size());
  for (size_t i = 0; i < a.names.size(); ++i) {
    EXPECT_EQ(a.names.Get(static_cast<NameId>(i)), b.names.Get(static_cast<NameId>(i)));
  }
  for (size_t i = 0; i < a.gpu_ops.size(); ++i) {
    const GpuOp &x = a.gpu_ops[i], &y = b.gpu_ops[i];
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.dur_ns, y.dur_ns) << i;
    EXPECT_EQ(x.correlation, y.correlation) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
    EXPECT_EQ(a.Name(x.name), b.Name(y.name)) << i;
    EXPECT_EQ(x.name, y.name) << i;
    EXPECT_EQ(x.device, y.device) << i;
    EXPECT_EQ(x.stream, y.stream) << i;
    EXPECT_EQ(x.source, y.source) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.direction, y.direction) << i;
    EXPECT_EQ(x.src_kind, y.src_kind) << i;
    EXPECT_EQ(x.dst_kind, y.dst_kind) << i;
    EXPECT_EQ(x.api, y.api) << i;
  }
  for (size_t i = 0; i < a.api_calls.size(); ++i) {
    const ApiCall &x = a.api_calls[i], &y = b.api_calls[i];
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.dur_ns, y.dur_ns) << i;
    EXPECT_EQ(x.correlation, y.correlation) << i;
    EXPECT_EQ(x.name, y.name) << i;
    EXPECT_EQ(x.pid, y.pid) << i;
    EXPECT_EQ(x.tid, y.tid) << i;
    EXPECT_EQ(x.source, y.source) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
  }
  for (size_t i = 0; i < a.cpu_ops.size(); ++i) {
    const CpuOp &x = a.cpu_ops[i], &y = b.cpu_ops[i];
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.dur_ns, y.dur_ns) << i;
    EXPECT_EQ(x.name, y.name) << i;
    EXPECT_EQ(x.pid, y.pid) << i;
    EXPECT_EQ(x.tid, y.tid) << i;
    EXPECT_EQ(x.source, y.source) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t i = 0; i < a.devices.size(); ++i) {
    EXPECT_EQ(a.devices[i].device, b.devices[i].device);
    EXPECT_EQ(a.devices[i].name, b.devices[i].name);
    EXPECT_EQ(a.devices[i].arch, b.devices[i].arch);
  }
  ASSERT_EQ(a.sources.size(), b.sources.size());
  for (size_t i = 0; i < a.sources.size(); ++i) {
    EXPECT_EQ(a.sources[i].events_read, b.sources[i].events_read);
    EXPECT_EQ(a.sources[i].issues.count_by_reason, b.sources[i].issues.count_by_reason);
    ASSERT_EQ(a.sources[i].issues.examples.size(), b.sources[i].issues.examples.size());
    for (size_t j = 0; j < a.sources[i].issues.examples.size(); ++j) {
      EXPECT_EQ(a.sources[i].issues.examples[j].where, b.sources[i].issues.examples[j].where);
      EXPECT_EQ(a.sources[i].issues.examples[j].what, b.sources[i].issues.examples[j].what);
    }
  }
}

// The per-table fast path must reproduce the data views exactly: same events, same order, same
// interned names, before and after Finalize() links them. The real fixture has no memory copies;
// the synthetic one (tools/gen_trace_sqlite.py --format rocpd --kernels 200, schema copied from
// the fixture) has 25, plus a negative duration to show issues match too.
class RocpdBothPathsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RocpdBothPathsTest, SameEventsThroughDataViewsAndPerTableViews) {
  std::string path = GetParam();
  if (path.find("synthetic") != std::string::npos) {
    path = CopyFixtureFrom(path, "rocpd_both_paths.db");
    Exec(path, "UPDATE rocpd_memory_copy_0000abcd_1234_7000_8000_00000000beef "
               "SET start = end + 1 WHERE id = 4");
  }
  Trace a, b;
  const Status s1 = ImportThrough(RocpdPath::kDataViews, path, a);
  const Status s2 = ImportThrough(RocpdPath::kPerTableViews, path, b);
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  ASSERT_TRUE(s2.ok()) << s2.ToString();
  EXPECT_GT(a.gpu_ops.size(), 0u);
  ExpectSameTrace(a, b);
  // The staged fact rows spill as the trace's tables do: with blocks of 3 rows nearly all of
  // them go through the file, failures and the negative duration included.
  Trace small(3);
  const Status s3 = ImportThrough(RocpdPath::kPerTableViews, path, small);
  ASSERT_TRUE(s3.ok()) << s3.ToString();
  EXPECT_GT(small.gpu_ops.spilled(), 0u);
  ExpectSameTrace(a, small);
  a.Finalize();
  b.Finalize();
  ExpectSameTrace(a, b);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, RocpdBothPathsTest,
                         ::testing::Values(std::string(kFixture),
                                           std::string(kSyntheticFixture)));

// A dispatch whose agent does not exist, and one of another guid: the kernels view drops both
// without a word; the fast path (the default on this file) counts them with their row ids.
TEST(RocpdImporterTest, FastPathCountsRowsTheDataViewsDrop) {
  const std::string path = CopyFixture("rocpd_dangling.db");
  Exec(path, "UPDATE rocpd_kernel_dispatch_00000797_e16d_716d_b3cc_a4a0629bb1d1 "
             "SET agent_id = 99 WHERE id = 5");
  Exec(path, "UPDATE rocpd_kernel_dispatch_00000797_e16d_716d_b3cc_a4a0629bb1d1 "
             "SET guid = 'other' WHERE id = 7");
  Trace views;
  ASSERT_TRUE(ImportThrough(RocpdPath::kDataViews, path, views).ok());
  EXPECT_EQ(views.gpu_ops.size(), 299u);
  EXPECT_EQ(views.sources[0].issues.total(), 0);

  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(trace.gpu_ops.size(), 299u);
  const ImportIssues& issues = trace.sources[0].issues;
  ASSERT_EQ(issues.total(), 2);
  EXPECT_EQ(issues.count_by_reason.at("unresolved reference"), 2);
  EXPECT_EQ(issues.examples[0].where, "rocpd_kernel_dispatch row id=5");
  EXPECT_EQ(issues.examples[0].what,
            "unresolved reference: agent_id 99 is not in rocpd_info_agent (the kernels view "
            "leaves the row out)");
  EXPECT_EQ(issues.examples[1].where, "rocpd_kernel_dispatch row id=7");
  EXPECT_EQ(issues.examples[1].what,
            "unresolved reference: guid is not the file's guid "
            "00000797-e16d-716d-b3cc-a4a0629bb1d1 (the kernels view "
            "leaves the row out)");
}

// Rows of another guid in every fact table and in rocpd_event (the fast path reads the regions'
// guid column with the rows, and checks the other tables with a scan of their own on another
// thread): the data views drop each such row, or the row whose event it is, silently; the fast
// path drops the same rows and counts each, in row order, kernels first.
TEST(RocpdImporterTest, FastPathCountsForeignGuidRowsOfEveryTable) {
  const std::string path = CopyFixtureFrom(kSyntheticFixture, "rocpd_foreign_guids.db");
  Exec(path, "UPDATE rocpd_region_0000abcd_1234_7000_8000_00000000beef "
             "SET guid = 'other' WHERE id = 3");
  Exec(path, "UPDATE rocpd_memory_copy_0000abcd_1234_7000_8000_00000000beef "
             "SET guid = 'other' WHERE id = 2");
  Exec(path, "UPDATE rocpd_event_0000abcd_1234_7000_8000_00000000beef "
             "SET guid = 'other' WHERE id = (SELECT event_id FROM "
             "rocpd_kernel_dispatch_0000abcd_1234_7000_8000_00000000beef WHERE id = 4)");
  Trace views, fast(2);  // blocks of 2 rows: each failure is staged in a spilled block
  ASSERT_TRUE(ImportThrough(RocpdPath::kDataViews, path, views).ok());
  const Status st = ImportThrough(RocpdPath::kPerTableViews, path, fast);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(views.gpu_ops.size(), 200u + 25u - 2u);
  EXPECT_EQ(views.api_calls.size() + views.cpu_ops.size(), 225u - 1u);
  EXPECT_EQ(views.sources[0].issues.total(), 0);
  ASSERT_EQ(fast.gpu_ops.size(), views.gpu_ops.size());
  ASSERT_EQ(fast.api_calls.size(), views.api_calls.size());
  for (size_t i = 0; i < fast.gpu_ops.size(); ++i) {
    EXPECT_EQ(fast.gpu_ops[i].start_ns, views.gpu_ops[i].start_ns) << i;
    EXPECT_EQ(fast.gpu_ops[i].correlation, views.gpu_ops[i].correlation) << i;
  }
  for (size_t i = 0; i < fast.api_calls.size(); ++i) {
    EXPECT_EQ(fast.api_calls[i].start_ns, views.api_calls[i].start_ns) << i;
  }
  const ImportIssues& issues = fast.sources[0].issues;
  ASSERT_EQ(issues.total(), 3);
  ASSERT_EQ(issues.examples.size(), 3u);
  EXPECT_EQ(issues.examples[0].where, "rocpd_kernel_dispatch row id=4");
  EXPECT_NE(issues.examples[0].what.find("is not in rocpd_event"), std::string::npos)
      << issues.examples[0].what;
  EXPECT_EQ(issues.examples[1].where, "rocpd_memory_copy row id=2");
  EXPECT_NE(issues.examples[1].what.find("guid is not the file's guid"), std::string::npos);
  EXPECT_EQ(issues.examples[2].where, "rocpd_region row id=3");
  EXPECT_NE(issues.examples[2].what.find("guid is not the file's guid"), std::string::npos);
}

// rocpd_event redefined to repeat one event (a view over a UNION, as a hand merge might leave):
// the join finds two events for one dispatch, so the fast path gives way to the data views,
// which read what SQLite's joins give; forcing the fast path says why.
TEST(RocpdImporterTest, RepeatedEventIdFallsBackToTheDataViews) {
  const std::string path = CopyFixture("rocpd_repeated_event.db");
  Exec(path, "DROP VIEW rocpd_event; CREATE VIEW rocpd_event AS "
             "SELECT * FROM rocpd_event_00000797_e16d_716d_b3cc_a4a0629bb1d1 UNION ALL "
             "SELECT * FROM rocpd_event_00000797_e16d_716d_b3cc_a4a0629bb1d1 WHERE id = "
             "(SELECT event_id FROM rocpd_kernel_dispatch_00000797_e16d_716d_b3cc_a4a0629bb1d1 "
             "WHERE id = 5)");
  Trace views, trace;
  ASSERT_TRUE(ImportThrough(RocpdPath::kDataViews, path, views).ok());
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  views.Finalize();  // as ImportFiles does
  EXPECT_GT(views.gpu_ops.size(), 300u);  // the dispatch more than once: each match the joins find
  ExpectSameTrace(views, trace);
  Trace forced;
  const Status st = ImportThrough(RocpdPath::kPerTableViews, path, forced);
  EXPECT_EQ(st.message(), path + ": the per-table fast path cannot read this file: rocpd_event "
                                 "repeats an id");
}

// With two guids in rocpd_metadata (DBs merged by hand) the fast path is not taken: the default
// reads the data views (the dangling row vanishes silently, as there), and forcing the fast path
// is an error saying why.
TEST(RocpdImporterTest, TwoGuidsFallBackToTheDataViews) {
  const std::string path = CopyFixture("rocpd_two_guids.db");
  Exec(path, "UPDATE rocpd_kernel_dispatch_00000797_e16d_716d_b3cc_a4a0629bb1d1 "
             "SET agent_id = 99 WHERE id = 5");
  Exec(path, "INSERT INTO rocpd_metadata_00000797_e16d_716d_b3cc_a4a0629bb1d1(tag, value) "
             "VALUES ('guid', '11111111-e16d-716d-b3cc-a4a0629bb1d1')");
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(trace.gpu_ops.size(), 300u);
  EXPECT_EQ(trace.sources[0].issues.total(), 0);
  Trace forced;
  const Status st = ImportThrough(RocpdPath::kPerTableViews, path, forced);
  EXPECT_EQ(st.message(), path + ": the per-table fast path cannot read this file: rocpd_metadata "
                                 "holds 2 guids, not 1");
}

}  // namespace
}  // namespace latdoc::trace
