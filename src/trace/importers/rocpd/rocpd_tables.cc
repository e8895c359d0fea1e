// The rocpd importer's small tables (rocpd_internal.h): the columns the fast path needs, and
// rocpd_string, the agents, the kernel symbols, the processes, threads and queues of the file's
// guid, in memory for the joins.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "trace/importers/common/sqlite_db.h"
#include "trace/importers/rocpd/rocpd_internal.h"

namespace latdoc::trace::rocpd_internal {
namespace {

// The columns the fast path reads, per per-table view.
struct NeededView {
  const char* view;
  std::vector<const char*> columns;
};
const std::vector<NeededView>& NeededViews() {
  static const std::vector<NeededView> v = {
      {"rocpd_kernel_dispatch",
       {"id", "guid", "tid", "agent_id", "kernel_id", "queue_id", "stream_id", "start", "end",
        "region_name_id", "event_id"}},
      {"rocpd_region", {"id", "guid", "pid", "tid", "start", "end", "name_id", "event_id"}},
      {"rocpd_event", {"id", "guid", "category_id", "stack_id"}},
      {"rocpd_string", {"id", "guid", "string"}},
      {"rocpd_info_agent", {"id", "guid", "type", "type_index"}},
      {"rocpd_info_kernel_symbol", {"id", "guid", "display_name"}},
      {"rocpd_info_process", {"id", "guid", "pid"}},
      {"rocpd_info_thread", {"id", "guid", "tid"}},
      {"rocpd_info_queue", {"id", "guid", "pid"}},
  };
  return v;
}
const NeededView& MemoryCopyView() {
  static const NeededView v = {"rocpd_memory_copy",
                               {"id", "guid", "pid", "tid", "start", "end", "name_id",
                                "dst_agent_id", "src_agent_id", "size", "stream_id", "event_id"}};
  return v;
}

// Reads one small table: `row(q)` for each row of `guid`, collecting ids (column 0). Sets
// *foreign when a row has another guid (column 1), *repeated when an id repeats (or is kNullKey).
template <typename RowFn>
Status LoadSmallTable(SqliteDb& db, std::string_view sql, const std::string& guid, IdIndex& index,
                      bool* foreign, bool* repeated, RowFn&& row) {
  ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(sql));
  std::vector<int64_t> ids;
  Status st;
  while (q.Step(&st)) {
    if (q.Text(1) != guid) {
      *foreign = true;
      continue;
    }
    const int64_t id = q.Int(0);
    if (id == kNullKey) *repeated = true;
    ids.push_back(id);
    row(q);
  }
  RETURN_IF_ERROR(st);
  if (!index.Build(ids)) *repeated = true;
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<RocpdTables>> LoadTables(SqliteDb& db, std::string* why) {
  auto t = std::make_unique<RocpdTables>();
  const int64_t guids =
      db.QueryInt("SELECT count(DISTINCT value) FROM rocpd_metadata WHERE tag='guid'").value_or(0);
  if (guids != 1) {
    *why = fmt::format("rocpd_metadata holds {} guids, not 1", guids);
    return std::unique_ptr<RocpdTables>();
  }
  t->guid = db.QueryText("SELECT value FROM rocpd_metadata WHERE tag='guid'").value_or("");
  t->has_memory_copies = db.Has("memory_copies");
  std::vector<const NeededView*> needed;
  for (const NeededView& v : NeededViews()) needed.push_back(&v);
  if (t->has_memory_copies) needed.push_back(&MemoryCopyView());
  for (const NeededView* v : needed) {
    const std::vector<std::string> have = db.Columns(v->view);
    for (const char* c : v->columns) {
      if (std::find(have.begin(), have.end(), c) == have.end()) {
        *why = have.empty() ? fmt::format("no view {}", v->view)
                            : fmt::format("view {} has no column {}", v->view, c);
        return std::unique_ptr<RocpdTables>();
      }
    }
  }
  bool foreign = false, repeated = false;
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, string FROM rocpd_string", t->guid,
                                 t->string_index, &foreign, &repeated, [&](const SqliteStmt& q) {
                                   RocpdTables::String s;
                                   s.value = std::string(q.Text(2));
                                   s.marker = s.value.rfind("MARKER", 0) == 0;
                                   t->strings.push_back(std::move(s));
                                 }));
  RETURN_IF_ERROR(
      LoadSmallTable(db, "SELECT id, guid, type, type_index FROM rocpd_info_agent", t->guid,
                     t->agent_index, &foreign, &repeated, [&](const SqliteStmt& q) {
                       t->agents.push_back(RocpdTables::Agent{q.Text(2) == "GPU", q.Int(3)});
                     }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, display_name FROM rocpd_info_kernel_symbol",
                                 t->guid, t->symbol_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) {
                                   RocpdTables::Symbol s;
                                   s.display_name = std::string(q.Text(2));
                                   t->symbols.push_back(std::move(s));
                                 }));
  RETURN_IF_ERROR(LoadSmallTable(
      db, "SELECT id, guid, pid FROM rocpd_info_process", t->guid, t->process_index, &foreign,
      &repeated, [&](const SqliteStmt& q) { t->process_pids.push_back(q.Int(2)); }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, tid FROM rocpd_info_thread", t->guid,
                                 t->thread_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) { t->thread_tids.push_back(q.Int(2)); }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, pid FROM rocpd_info_queue", t->guid,
                                 t->queue_index, &foreign, &repeated, [&](const SqliteStmt& q) {
                                   // After rocpd_info_process: LoadSmallTable has built its index
                                   // by now.
                                   t->queue_has_process.push_back(
                                       t->process_index.Find(q.OptInt(2)) != IdIndex::kNone);
                                 }));
  if (foreign || repeated) {
    *why = foreign ? "a small table holds rows of another guid" : "a small table repeats an id";
    return std::unique_ptr<RocpdTables>();
  }
  return t;
}

}  // namespace latdoc::trace::rocpd_internal
