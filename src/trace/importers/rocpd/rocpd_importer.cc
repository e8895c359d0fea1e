#include "trace/importers/rocpd/rocpd_importer.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "trace/model/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"
#include "trace/importers/rocpd/rocpd_internal.h"

namespace latdoc::trace {

// Sample rows (ROCm 7.0, schema '3'; ROCm/rocm-systems@1b1610f
// projects/rocprofiler-sdk/source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql, rocpd_views.sql):
//   kernels:  id=1 name=__amd_rocclr_fillBufferAligned agent_type_index=0 stream_id=0
//             queue_id=16 start=127395708304699 end=127395708311676 stack_id=7 pid=15 tid=15
//   regions:  id=1 category=HIP_RUNTIME_API_EXT name=hipLaunchKernel pid=15 tid=15
//             start=... end=... stack_id=7      (stack_id = the internal correlation id)
//   memory_copies: name=MEMORY_COPY_HOST_TO_DEVICE size=4194304 src_agent_type=CPU
//             dst_agent_type=GPU dst_agent_type_index=0 stream_id=0 stack_id=9
// Join key: kernels.stack_id = regions.stack_id (same guid; one DB is one process).
//
// The fast path reads the per-table views instead (each `SELECT * FROM rocpd_<name>_<uuid>`, which
// SQLite flattens into a plain table scan) and does data_views.sql's joins with the small tables
// itself (the one with rocpd_event, too large to hold, it leaves to SQLite). Which rows the
// data views keep (every join key is an INTEGER PRIMARY KEY, so a join matches at most one row;
// every join also requires equal guid):
//   kernels:       K=rocpd_kernel_dispatch INNER agent(K.agent_id) event(K.event_id)
//                  string(K.region_name_id) kernel_symbol(K.kernel_id); LEFT stream, queue(K.queue_id);
//                  INNER process(Q.pid), so the queue must exist too; INNER thread(K.tid).
//                  name = symbol.display_name, agent_type_index = agent.type_index, stack_id = event's.
//   memory_copies: M=rocpd_memory_copy INNER string(M.name_id) agent(M.dst_agent_id)
//                  agent(M.src_agent_id) event(M.event_id) process(M.pid) thread(M.tid); LEFT the rest.
//   regions:       R=rocpd_region INNER event(R.event_id) string(R.name_id) process(R.pid)
//                  thread(R.tid); pid = process.pid, tid = thread.tid; category = the string of
//                  event.category_id (a scalar subquery: NULL when missing, the row stays).
// Rows come out in the scanned table's rowid order on both paths (the query plan scans the fact
// table and searches the others by primary key).
//
// Plan of the fast path: (1) LoadTables reads the small tables; (2) StageFacts stages the fact
// tables (kernel dispatches, memory copies, regions), each LEFT JOINed with rocpd_event by SQLite
// and joined against the small tables here, on two threads with a connection each, into spill
// tables; (3) JoinStaged emits events, issues and names in row order, on this thread. Memory
// holds the small tables and a block of each staged table, however many events the file has.

int RocpdImporter::Detect(const std::string& path, std::string_view head) const {
  if (!IsSqliteHeader(head)) return 0;
  auto db = SqliteDb::Open(path);
  if (!db.ok()) return 0;
  return (*db)->Has("rocpd_metadata") ? 100 : 0;
}

namespace {

using rocpd_internal::JoinStaged;
using rocpd_internal::LoadTables;
using rocpd_internal::RocpdTables;
using rocpd_internal::Staged;
using rocpd_internal::StagedFacts;
using rocpd_internal::StageFacts;

Status ReadDataViews(SqliteDb& db, uint16_t source, Trace& trace);

// rocpd's times are its host's CLOCK_BOOTTIME: on the wall clock only when that host is this one
// (options.local_boot_clock, one machine-id in rocpd_info_node, the same). A file of an earlier
// boot of this host is placed as if of this boot; a diagnosis places only kernels that overlap
// its own load, which such a file's rarely do.
Status PlaceOnWallClock(SqliteDb& db, const ImportOptions& options, SourceFile& src) {
  if (!options.local_boot_clock || !db.Has("rocpd_info_node")) return Status::Ok();
  Status st;
  ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare("SELECT DISTINCT machine_id FROM rocpd_info_node"));
  std::vector<std::string> hosts;
  while (q.Step(&st)) hosts.emplace_back(q.Text(0));
  RETURN_IF_ERROR(st);
  if (hosts.size() == 1 && hosts[0] == options.local_boot_clock->machine_id)
    src.wall_clock_base_ns = options.local_boot_clock->realtime_minus_boottime_ns;
  return Status::Ok();
}

}  // namespace

Status RocpdImporter::Import(const std::string& path, const ImportOptions& options, Trace& trace,
                             std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  SqliteDb& dbr = *db;
  const std::string version =
      db->QueryText("SELECT value FROM rocpd_metadata WHERE tag='schema_version'").value_or("");
  if (version != "3" && version.rfind("3.", 0) != 0) {
    return Unimplemented(fmt::format("{}: rocpd schema_version '{}' is not supported (3.x is)",
                                     path, version));
  }
  for (const char* view : {"kernels", "regions"}) {
    if (!db->Has(view)) return InvalidArgument(fmt::format("{}: rocpd file without the '{}' view", path, view));
  }
  std::unique_ptr<RocpdTables> tables;
  StagedFacts staged(trace.BlockRowsFor<Staged<GpuOp>::Row>());
  if (path_ != RocpdPath::kDataViews) {
    std::string why;
    StatusOr<std::unique_ptr<RocpdTables>> loaded = LoadTables(dbr, &why);
    if (!loaded.ok()) return loaded.status().WithContext(path);
    tables = std::move(loaded).value();
    if (tables != nullptr) {
      bool repeated = false;
      RETURN_IF_ERROR(StageFacts(dbr, *tables, staged, &repeated).WithContext(path));
      if (repeated) {
        why = "rocpd_event repeats an id";
        tables.reset();
        staged = StagedFacts();
      }
    }
    if (tables == nullptr && path_ == RocpdPath::kPerTableViews) {
      return InvalidArgument(fmt::format("{}: the per-table fast path cannot read this file: {}",
                                         path, why));
    }
  }
  const uint16_t source = trace.AddSource(path, "rocpd");
  Status st;

  if (db->Has("rocpd_info_agent")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT type_index, product_name, name FROM rocpd_info_agent WHERE type='GPU' ORDER BY type_index"));
    while (q.Step(&st)) {
      DeviceInfo d;
      d.source = source;
      d.device = static_cast<int32_t>(q.Int(0));
      d.name = std::string(q.Text(1));
      d.arch = std::string(q.Text(2));
      trace.devices.push_back(std::move(d));
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  RETURN_IF_ERROR(PlaceOnWallClock(dbr, options, trace.sources[source]).WithContext(path));
  if (tables != nullptr) {
    JoinStaged(*tables, staged, source, trace);
    return Status::Ok();
  }
  return ReadDataViews(dbr, source, trace).WithContext(path);
}

namespace {

using rocpd_internal::Negative;

// The kernels view: one GpuOp a row, in row order.
Status ReadKernelsView(SqliteDb& db, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      db.Prepare(
          "SELECT id, start, end, name, agent_type_index, stream_id, stack_id FROM kernels"));
  while (q.Step(&st)) {
    const int64_t id = q.Int(0), start = q.Int(1), end = q.Int(2);
    if (q.IsNull(1) || q.IsNull(2)) {
      src.issues.Add("missing start or end", fmt::format("kernels row id={}", id));
      continue;
    }
    if (Negative(src, "kernels", id, start, end)) continue;
    GpuOp op;
    op.start_ns = start;
    op.dur_ns = end - start;
    const std::string_view name = q.Text(3);
    op.name = trace.names.Intern(name);
    op.device = static_cast<int32_t>(q.Int(4));
    op.stream = static_cast<int32_t>(q.Int(5));
    op.correlation = q.OptInt(6).value_or(kNoCorrelation);
    op.source = source;
    op.kind = ClassifyRocmInternalKernel(name).value_or(GpuOpKind::kKernel);
    trace.gpu_ops.push_back(op);
    ++src.events_read;
  }
  RETURN_IF_ERROR(st);
  return Status::Ok();
}

// The memory_copies view: one GpuOp (a copy) a row; the device is the GPU end of the copy.
Status ReadMemoryCopiesView(SqliteDb& db, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  Status st;
  ASSIGN_OR_RETURN(SqliteStmt q,
                   db.Prepare("SELECT id, start, end, name, size, src_agent_type, dst_agent_type, "
                              "src_agent_type_index, "
                              "dst_agent_type_index, stream_id, stack_id FROM memory_copies"));
  while (q.Step(&st)) {
    const int64_t id = q.Int(0), start = q.Int(1), end = q.Int(2);
    if (Negative(src, "memory_copies", id, start, end)) continue;
    GpuOp op;
    op.kind = GpuOpKind::kMemcpy;
    op.start_ns = start;
    op.dur_ns = end - start;
    const std::string_view name = q.Text(3);
    op.name = trace.names.Intern(name);
    op.bytes = q.OptInt(4).value_or(-1);
    op.direction = ParseCopyDirection(name);
    const bool dst_gpu = q.Text(6) == "GPU";
    op.device = static_cast<int32_t>(dst_gpu ? q.Int(8) : q.Int(7));
    op.stream = static_cast<int32_t>(q.Int(9));
    op.correlation = q.OptInt(10).value_or(kNoCorrelation);
    op.source = source;
    trace.gpu_ops.push_back(op);
    ++src.events_read;
  }
  RETURN_IF_ERROR(st);
  return Status::Ok();
}

// The regions view: MARKER_* categories become CPU markers, the rest API calls.
Status ReadRegionsView(SqliteDb& db, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      db.Prepare("SELECT id, start, end, name, pid, tid, stack_id, category FROM regions"));
  while (q.Step(&st)) {
    const int64_t id = q.Int(0), start = q.Int(1), end = q.Int(2);
    if (Negative(src, "regions", id, start, end)) continue;
    const std::string_view category = q.Text(7);
    const std::string_view name = q.Text(3);
    if (category.rfind("MARKER", 0) == 0) {
      CpuOp c;
      c.start_ns = start;
      c.dur_ns = end - start;
      c.name = trace.names.Intern(name);
      c.pid = static_cast<int32_t>(q.Int(4));
      c.tid = static_cast<int32_t>(q.Int(5));
      c.source = source;
      c.kind = CpuOpKind::kMarker;
      trace.cpu_ops.push_back(c);
    } else {
      ApiCall a;
      a.start_ns = start;
      a.dur_ns = end - start;
      a.name = trace.names.Intern(name);
      a.pid = static_cast<int32_t>(q.Int(4));
      a.tid = static_cast<int32_t>(q.Int(5));
      a.correlation = q.OptInt(6).value_or(kNoCorrelation);
      a.source = source;
      a.kind = ClassifyApi(name);
      trace.api_calls.push_back(a);
    }
    ++src.events_read;
  }
  RETURN_IF_ERROR(st);
  return Status::Ok();
}

// The data-view path: SQLite runs data_views.sql's joins.
Status ReadDataViews(SqliteDb& dbr, uint16_t source, Trace& trace) {
  RETURN_IF_ERROR(ReadKernelsView(dbr, source, trace));
  if (dbr.Has("memory_copies")) RETURN_IF_ERROR(ReadMemoryCopiesView(dbr, source, trace));
  return ReadRegionsView(dbr, source, trace);
}

}  // namespace
}  // namespace latdoc::trace