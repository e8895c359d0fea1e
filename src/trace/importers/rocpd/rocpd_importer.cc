#include "trace/importers/rocpd/rocpd_importer.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "trace/importers/common/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"

namespace latdoc::trace {

// Sample rows (ROCm 7.0, schema '3'; trace-formats.md 3.5):
//   kernels:  id=1 name=__amd_rocclr_fillBufferAligned agent_type_index=0 stream_id=0
//             queue_id=16 start=127395708304699 end=127395708311676 stack_id=7 pid=15 tid=15
//   regions:  id=1 category=HIP_RUNTIME_API_EXT name=hipLaunchKernel pid=15 tid=15
//             start=... end=... stack_id=7      (stack_id = the internal correlation id)
//   memory_copies: name=MEMORY_COPY_HOST_TO_DEVICE size=4194304 src_agent_type=CPU
//             dst_agent_type=GPU dst_agent_type_index=0 stream_id=0 stack_id=9
// Join key: kernels.stack_id = regions.stack_id (same guid; one DB is one process).
//
// The fast path reads the per-table views instead (each `SELECT * FROM rocpd_<name>_<uuid>`, which
// SQLite flattens into a plain table scan) and does data_views.sql's joins itself. Which rows the
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

int RocpdImporter::Detect(const std::string& path, std::string_view head) const {
  if (!IsSqliteHeader(head)) return 0;
  auto db = SqliteDb::Open(path);
  if (!db.ok()) return 0;
  return (*db)->Has("rocpd_metadata") ? 100 : 0;
}

namespace {

bool Negative(SourceFile& src, std::string_view view, int64_t id, int64_t start, int64_t end) {
  if (end >= start) return false;
  src.issues.Add("negative duration", fmt::format("{} row id={}", view, id),
                 fmt::format("end {} < start {}", end, start));
  return true;
}

constexpr NameId kUnset = UINT32_MAX;

// The fast path reads a nullable join key as ifnull(key, kNullKey) and a row's guid as
// `guid IS ?1`, so each is one sqlite3_column_int64 call (a type test plus a value read, or a
// string copy, cost a third of the scan). LoadTables makes sure no id equals kNullKey, so the
// sentinel joins nothing, as NULL does in SQL.
constexpr int64_t kNullKey = INT64_MIN;
#define LATDOC_NULL_KEY "(-9223372036854775807 - 1)"
std::string Key(std::string_view column) {
  return fmt::format("ifnull({}, " LATDOC_NULL_KEY ")", column);
}

// The columns the fast path reads, per per-table view.
struct NeededView {
  const char* view;
  std::vector<const char*> columns;
};
const std::vector<NeededView>& NeededViews() {
  static const std::vector<NeededView> v = {
      {"rocpd_kernel_dispatch", {"id", "guid", "tid", "agent_id", "kernel_id", "queue_id",
                                 "stream_id", "start", "end", "region_name_id", "event_id"}},
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
  static const NeededView v = {
      "rocpd_memory_copy", {"id", "guid", "pid", "tid", "start", "end", "name_id", "dst_agent_id",
                            "src_agent_id", "size", "stream_id", "event_id"}};
  return v;
}

// rocpd's small tables and rocpd_event, in memory for the joins. Rows of another guid are left
// out (a join also matches guids); positions come from each table's IdIndex.
struct RocpdTables {
  struct String {
    std::string value;
    bool marker = false;               // as a category: MARKER_*
    NameId name = kUnset;              // interned on first use, in row order as the data path
    bool api_classified = false;
    ApiKind api_kind = ApiKind::kOther;
    bool copy_classified = false;
    CopyDirection direction = CopyDirection::kUnknown;
  };
  struct Agent {
    bool gpu = false;
    int64_t type_index = 0;            // NULL reads 0, as SqliteStmt::Int on the data view
  };
  struct Symbol {
    std::string display_name;
    NameId name = kUnset;
    GpuOpKind kind = GpuOpKind::kKernel;
  };
  struct Event {
    int64_t stack_id = kNoCorrelation;
    int32_t category = IdIndex::kNone; // position in `strings`
  };

  std::string guid;
  bool has_memory_copies = false;
  std::vector<String> strings;
  IdIndex string_index;
  std::vector<Agent> agents;
  IdIndex agent_index;
  std::vector<Symbol> symbols;
  IdIndex symbol_index;
  std::vector<int64_t> process_pids;
  IdIndex process_index;
  std::vector<int64_t> thread_tids;
  IdIndex thread_index;
  std::vector<bool> queue_has_process; // the kernels view's INNER JOIN process ON P.id = Q.pid
  IdIndex queue_index;
  std::vector<Event> events;
  IdIndex event_index;

  NameId Name(String& s, Trace& trace) {
    if (s.name == kUnset) s.name = trace.names.Intern(s.value);
    return s.name;
  }
};

size_t CountRows(SqliteDb& db, std::string_view view) {
  const int64_t n = db.QueryInt(fmt::format("SELECT count(*) FROM {}", view)).value_or(0);
  return n > 0 ? static_cast<size_t>(n) : 0;
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

// Loads what the fast path joins against. Returns nullptr, with the reason in *why, when the
// file does not allow the fast path: not one guid, a view or column missing, a small table
// holding rows of another guid or a repeated id.
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
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, type, type_index FROM rocpd_info_agent",
                                 t->guid, t->agent_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) {
    t->agents.push_back(RocpdTables::Agent{q.Text(2) == "GPU", q.Int(3)});
  }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, display_name FROM rocpd_info_kernel_symbol",
                                 t->guid, t->symbol_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) {
    RocpdTables::Symbol s;
    s.display_name = std::string(q.Text(2));
    t->symbols.push_back(std::move(s));
  }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, pid FROM rocpd_info_process", t->guid,
                                 t->process_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) { t->process_pids.push_back(q.Int(2)); }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, tid FROM rocpd_info_thread", t->guid,
                                 t->thread_index, &foreign, &repeated,
                                 [&](const SqliteStmt& q) { t->thread_tids.push_back(q.Int(2)); }));
  RETURN_IF_ERROR(LoadSmallTable(db, "SELECT id, guid, pid FROM rocpd_info_queue", t->guid,
                                 t->queue_index, &foreign, &repeated, [&](const SqliteStmt& q) {
    // After rocpd_info_process: LoadSmallTable has built its index by now.
    t->queue_has_process.push_back(t->process_index.Find(q.OptInt(2)) != IdIndex::kNone);
  }));
  if (foreign || repeated) {
    *why = foreign ? "a small table holds rows of another guid" : "a small table repeats an id";
    return std::unique_ptr<RocpdTables>();
  }
  // rocpd_event: as many rows as regions + dispatches + copies. A row of another guid can join
  // no fact row that the data views keep (those need agents, strings... of that guid, and the
  // small tables hold none), so such rows are just left out.
  {
    ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(fmt::format(
        "SELECT id, guid IS ?1, {}, ifnull(stack_id, {}) FROM rocpd_event", Key("category_id"),
        kNoCorrelation)));
    q.BindText(1, t->guid);
    const size_t n = CountRows(db, "rocpd_event");
    std::vector<int64_t> ids;
    ids.reserve(n);
    t->events.reserve(n);
    Status st;
    bool null_key_id = false;
    while (q.Step(&st)) {
      const int64_t id = q.Int(0);
      if (q.Int(1) == 0) continue;
      null_key_id |= id == kNullKey;
      ids.push_back(id);
      RocpdTables::Event e;
      e.category = t->string_index.Find(q.Int(2));
      e.stack_id = q.Int(3);
      t->events.push_back(e);
    }
    RETURN_IF_ERROR(st);
    if (!t->event_index.Build(ids) || null_key_id) {
      *why = "rocpd_event repeats an id";
      return std::unique_ptr<RocpdTables>();
    }
  }
  return t;
}

Status ReadDataViews(SqliteDb& db, uint16_t source, Trace& trace);

// Reads the fact tables through the per-table views, joining against `t` (see the top of the
// file for what each data view keeps). Same events, in the same order, as ReadDataViews; rows the
// data views would drop are counted as "unresolved reference".
Status ReadPerTableViews(SqliteDb& db, RocpdTables& t, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  Status st;
  auto unresolved = [&](std::string_view table, int64_t id, std::string_view data_view,
                        std::string what) {
    src.issues.Add("unresolved reference", fmt::format("{} row id={}", table, id),
                   fmt::format("{} (the {} view leaves the row out)", what, data_view));
  };
  const std::string foreign_guid = fmt::format("guid is not the file's guid {}", t.guid);
  auto ref = [](int64_t key) { return key == kNullKey ? std::string("NULL") : std::to_string(key); };
  {
    size_t rows = CountRows(db, "rocpd_kernel_dispatch");
    if (t.has_memory_copies) rows += CountRows(db, "rocpd_memory_copy");
    trace.gpu_ops.reserve(trace.gpu_ops.size() + rows);
    trace.api_calls.reserve(trace.api_calls.size() + CountRows(db, "rocpd_region"));
  }

  {
    ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(fmt::format(
        "SELECT id, guid IS ?1, {}, {}, {}, {}, stream_id, start IS NULL OR end IS NULL, start, end, "
        "{}, {} FROM rocpd_kernel_dispatch", Key("tid"), Key("agent_id"), Key("kernel_id"),
        Key("queue_id"), Key("region_name_id"), Key("event_id"))));
    q.BindText(1, t.guid);
    while (q.Step(&st)) {
      const int64_t id = q.Int(0);
      const bool same_guid = q.Int(1) != 0;
      const int64_t tid = q.Int(2), agent_id = q.Int(3), kernel_id = q.Int(4),
                    queue_id = q.Int(5), stream_id = q.Int(6);
      const bool missing_time = q.Int(7) != 0;
      const int64_t start = q.Int(8), end = q.Int(9), region_name_id = q.Int(10),
                    event_id = q.Int(11);
      const int32_t thread = t.thread_index.Find(tid), agent = t.agent_index.Find(agent_id),
                    symbol = t.symbol_index.Find(kernel_id), queue = t.queue_index.Find(queue_id),
                    region_name = t.string_index.Find(region_name_id),
                    event = t.event_index.Find(event_id);
      if (!same_guid || agent < 0 || event < 0 || region_name < 0 || symbol < 0 || queue < 0 ||
          !t.queue_has_process[static_cast<size_t>(queue)] || thread < 0) {
        std::string what;
        if (!same_guid) {
          what = foreign_guid;
        } else if (agent < 0) {
          what = fmt::format("agent_id {} is not in rocpd_info_agent", ref(agent_id));
        } else if (event < 0) {
          what = fmt::format("event_id {} is not in rocpd_event", ref(event_id));
        } else if (region_name < 0) {
          what = fmt::format("region_name_id {} is not in rocpd_string", ref(region_name_id));
        } else if (symbol < 0) {
          what = fmt::format("kernel_id {} is not in rocpd_info_kernel_symbol", ref(kernel_id));
        } else if (queue < 0) {
          what = fmt::format("queue_id {} is not in rocpd_info_queue", ref(queue_id));
        } else if (thread >= 0) {
          what = fmt::format("the pid of queue {} is not in rocpd_info_process", queue_id);
        } else {
          what = fmt::format("tid {} is not in rocpd_info_thread", ref(tid));
        }
        unresolved("rocpd_kernel_dispatch", id, "kernels", std::move(what));
        continue;
      }
      if (missing_time) {
        src.issues.Add("missing start or end", fmt::format("kernels row id={}", id));
        continue;
      }
      if (Negative(src, "kernels", id, start, end)) continue;
      GpuOp op;
      op.start_ns = start;
      op.dur_ns = end - start;
      RocpdTables::Symbol& s = t.symbols[static_cast<size_t>(symbol)];
      if (s.name == kUnset) {
        s.name = trace.names.Intern(s.display_name);
        s.kind = ClassifyRocmInternalKernel(s.display_name).value_or(GpuOpKind::kKernel);
      }
      op.name = s.name;
      op.device = static_cast<int32_t>(t.agents[static_cast<size_t>(agent)].type_index);
      op.stream = static_cast<int32_t>(stream_id);
      op.correlation = t.events[static_cast<size_t>(event)].stack_id;
      op.source = source;
      op.kind = s.kind;
      trace.gpu_ops.push_back(op);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st);
  }

  if (t.has_memory_copies) {
    ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(fmt::format(
        "SELECT id, guid IS ?1, {}, {}, start, end, {}, {}, {}, ifnull(size, -1), stream_id, {} "
        "FROM rocpd_memory_copy", Key("pid"), Key("tid"), Key("name_id"), Key("dst_agent_id"),
        Key("src_agent_id"), Key("event_id"))));
    q.BindText(1, t.guid);
    while (q.Step(&st)) {
      const int64_t id = q.Int(0);
      const bool same_guid = q.Int(1) != 0;
      const int64_t pid = q.Int(2), tid = q.Int(3), start = q.Int(4), end = q.Int(5),
                    name_id = q.Int(6), dst_agent_id = q.Int(7), src_agent_id = q.Int(8),
                    bytes = q.Int(9), stream_id = q.Int(10), event_id = q.Int(11);
      const int32_t process = t.process_index.Find(pid), thread = t.thread_index.Find(tid),
                    name = t.string_index.Find(name_id), dst = t.agent_index.Find(dst_agent_id),
                    srca = t.agent_index.Find(src_agent_id), event = t.event_index.Find(event_id);
      if (!same_guid || name < 0 || dst < 0 || srca < 0 || event < 0 || process < 0 ||
          thread < 0) {
        std::string what;
        if (!same_guid) {
          what = foreign_guid;
        } else if (name < 0) {
          what = fmt::format("name_id {} is not in rocpd_string", ref(name_id));
        } else if (dst < 0) {
          what = fmt::format("dst_agent_id {} is not in rocpd_info_agent", ref(dst_agent_id));
        } else if (srca < 0) {
          what = fmt::format("src_agent_id {} is not in rocpd_info_agent", ref(src_agent_id));
        } else if (event < 0) {
          what = fmt::format("event_id {} is not in rocpd_event", ref(event_id));
        } else if (process < 0) {
          what = fmt::format("pid {} is not in rocpd_info_process", ref(pid));
        } else {
          what = fmt::format("tid {} is not in rocpd_info_thread", ref(tid));
        }
        unresolved("rocpd_memory_copy", id, "memory_copies", std::move(what));
        continue;
      }
      if (Negative(src, "memory_copies", id, start, end)) continue;
      GpuOp op;
      op.kind = GpuOpKind::kMemcpy;
      op.start_ns = start;
      op.dur_ns = end - start;
      RocpdTables::String& s = t.strings[static_cast<size_t>(name)];
      op.name = t.Name(s, trace);
      op.bytes = bytes;
      if (!s.copy_classified) {
        s.direction = ParseCopyDirection(s.value);
        s.copy_classified = true;
      }
      op.direction = s.direction;
      const RocpdTables::Agent& dst_agent = t.agents[static_cast<size_t>(dst)];
      op.device = static_cast<int32_t>(
          dst_agent.gpu ? dst_agent.type_index : t.agents[static_cast<size_t>(srca)].type_index);
      op.stream = static_cast<int32_t>(stream_id);
      op.correlation = t.events[static_cast<size_t>(event)].stack_id;
      op.source = source;
      trace.gpu_ops.push_back(op);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st);
  }

  {
    ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(fmt::format(
        "SELECT id, guid IS ?1, {}, {}, start, end, {}, {} FROM rocpd_region", Key("pid"),
        Key("tid"), Key("name_id"), Key("event_id"))));
    q.BindText(1, t.guid);
    while (q.Step(&st)) {
      const int64_t id = q.Int(0);
      const bool same_guid = q.Int(1) != 0;
      const int64_t pid = q.Int(2), tid = q.Int(3), start = q.Int(4), end = q.Int(5),
                    name_id = q.Int(6), event_id = q.Int(7);
      const int32_t process = t.process_index.Find(pid), thread = t.thread_index.Find(tid),
                    name = t.string_index.Find(name_id), event = t.event_index.Find(event_id);
      if (!same_guid || event < 0 || name < 0 || process < 0 || thread < 0) {
        std::string what;
        if (!same_guid) {
          what = foreign_guid;
        } else if (event < 0) {
          what = fmt::format("event_id {} is not in rocpd_event", ref(event_id));
        } else if (name < 0) {
          what = fmt::format("name_id {} is not in rocpd_string", ref(name_id));
        } else if (process < 0) {
          what = fmt::format("pid {} is not in rocpd_info_process", ref(pid));
        } else {
          what = fmt::format("tid {} is not in rocpd_info_thread", ref(tid));
        }
        unresolved("rocpd_region", id, "regions", std::move(what));
        continue;
      }
      if (Negative(src, "regions", id, start, end)) continue;
      const RocpdTables::Event& e = t.events[static_cast<size_t>(event)];
      RocpdTables::String& s = t.strings[static_cast<size_t>(name)];
      const int32_t os_pid = static_cast<int32_t>(t.process_pids[static_cast<size_t>(process)]);
      const int32_t os_tid = static_cast<int32_t>(t.thread_tids[static_cast<size_t>(thread)]);
      if (e.category >= 0 && t.strings[static_cast<size_t>(e.category)].marker) {
        CpuOp c;
        c.start_ns = start;
        c.dur_ns = end - start;
        c.name = t.Name(s, trace);
        c.pid = os_pid;
        c.tid = os_tid;
        c.source = source;
        c.kind = CpuOpKind::kMarker;
        trace.cpu_ops.push_back(c);
      } else {
        ApiCall a;
        a.start_ns = start;
        a.dur_ns = end - start;
        a.name = t.Name(s, trace);
        a.pid = os_pid;
        a.tid = os_tid;
        a.correlation = e.stack_id;
        a.source = source;
        if (!s.api_classified) {
          s.api_kind = ClassifyApi(s.value);
          s.api_classified = true;
        }
        a.kind = s.api_kind;
        trace.api_calls.push_back(a);
      }
      ++src.events_read;
    }
    RETURN_IF_ERROR(st);
  }
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
  if (path_ != RocpdPath::kDataViews) {
    std::string why;
    StatusOr<std::unique_ptr<RocpdTables>> loaded = LoadTables(dbr, &why);
    if (!loaded.ok()) return loaded.status().WithContext(path);
    tables = std::move(loaded).value();
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
  if (tables != nullptr) return ReadPerTableViews(dbr, *tables, source, trace).WithContext(path);
  return ReadDataViews(dbr, source, trace).WithContext(path);
}

namespace {

// The data-view path: SQLite runs data_views.sql's joins.
Status ReadDataViews(SqliteDb& dbr, uint16_t source, Trace& trace) {
  SqliteDb* db = &dbr;
  SourceFile& src = trace.sources[source];
  Status st;
  {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
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
  }

  if (db->Has("memory_copies")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT id, start, end, name, size, src_agent_type, dst_agent_type, src_agent_type_index, "
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
  }

  {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT id, start, end, name, pid, tid, stack_id, category FROM regions"));
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
  }
  return Status::Ok();
}

}  // namespace
}  // namespace latdoc::trace
