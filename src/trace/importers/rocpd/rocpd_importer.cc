#include "trace/importers/rocpd/rocpd_importer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "trace/importers/common/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"

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

bool Negative(SourceFile& src, std::string_view view, int64_t id, int64_t start, int64_t end) {
  if (end >= start) return false;
  src.issues.Add("negative duration", fmt::format("{} row id={}", view, id),
                 fmt::format("end {} < start {}", end, start));
  return true;
}

constexpr NameId kUnset = UINT32_MAX;

// A staged row keeps end - start as its duration before Negative has looked at it: in
// two's-complement arithmetic, so that any pair of times, however far apart, gives back its end.
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// The fast path reads a NULL join key as kNullKey. LoadTables makes sure no small table's id
// equals kNullKey, so the sentinel joins nothing, as NULL does in SQL.
constexpr int64_t kNullKey = INT64_MIN;
int64_t KeyOf(sqlite3_value* v) {
  return sqlite3_value_type(v) == SQLITE_NULL ? kNullKey : sqlite3_value_int64(v);
}
// As sqlite3_column_int64: NULL reads 0.
int64_t IntOf(sqlite3_value* v) { return sqlite3_value_int64(v); }
bool IsNull(sqlite3_value* v) { return sqlite3_value_type(v) == SQLITE_NULL; }

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

// rocpd's small tables, in memory for the joins. Rows of another guid are left out (a join also
// matches guids); positions come from each table's IdIndex. rocpd_event is joined by SQLite.
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

  NameId Name(String& s, Trace& trace) {
    if (s.name == kUnset) s.name = trace.names.Intern(s.value);
    return s.name;
  }
};

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

// Loads the small tables the fast path joins against. Returns nullptr, with the reason in *why,
// when the file does not allow the fast path: not one guid, a view or column missing, a small
// table holding rows of another guid or a repeated id. (rocpd_event repeating an id shows only
// later, in StageFacts.)
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
  return t;
}

enum FactTable { kKernelTable, kCopyTable, kRegionTable, kFactTables };
constexpr const char* kFactViews[kFactTables] = {"rocpd_kernel_dispatch", "rocpd_memory_copy",
                                                 "rocpd_region"};

// Whether the fact table holds a row of another guid (none does in a file rocprofv3 wrote).
// Reading `guid IS ?1` with every staged row costs a tenth of the scan; this scan, with no
// result rows, costs a little more, but on a thread with time to spare.
Status HasForeignRows(SqliteDb& db, const RocpdTables& t, FactTable f, bool* foreign) {
  if (f == kCopyTable && !t.has_memory_copies) return Status::Ok();
  ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(fmt::format(
      "SELECT 1 FROM {} WHERE guid IS NOT ?1 LIMIT 1", kFactViews[f])));
  q.BindText(1, t.guid);
  Status st;
  *foreign = q.Step(&st);
  return st;
}

std::string Ref(int64_t key) { return key == kNullKey ? std::string("NULL") : std::to_string(key); }

// A fact row after every join, staged as the event it becomes (GpuOp or ApiCall) for JoinStaged
// to complete: `name` holds the row's position in the small table (symbols for kernels, strings
// otherwise) and `correlation` its event's stack_id. Interning names and counting issues wait
// for JoinStaged, which runs them in row order as the data path would: the three tables are
// staged on two threads. A row a join failed for has a StagedFailure.
struct StagedFailure {
  size_t row = 0;             // position in Staged::rows
  std::string what;           // the first join (in the data view's order) that found nothing
  bool missing_time = false;  // kernels: start or end is NULL (checked after every join)
};
template <typename Event>
struct Staged {
  struct Row {
    Event event;
    int64_t id = 0;  // the fact row's id, for the issues' "row id="
  };
  explicit Staged(size_t block_rows = SpillTable<Row>::kDefaultBlockRows) : rows(block_rows) {}
  SpillTable<Row> rows;                  // one block in memory, the rest in a temporary file
  std::vector<StagedFailure> failures;   // in row order
  // Set when a fact row came out twice in a row: its event_id found two rocpd_event rows.
  bool repeated = false;
  // Adds the row; `failure`, when set, is the row's (its `row` is filled in here).
  void Add(int64_t id, const Event& e, std::optional<StagedFailure> failure) {
    repeated |= !rows.empty() && id == last_id_;
    last_id_ = id;
    if (failure) {
      failure->row = rows.size();
      failures.push_back(std::move(*failure));
    }
    rows.push_back(Row{e, id});
  }

 private:
  int64_t last_id_ = 0;
};
struct StagedFacts {
  // Staged tables of `block_rows` rows a block.
  explicit StagedFacts(size_t block_rows) : kernels(block_rows), copies(block_rows), regions(block_rows) {}
  StagedFacts() = default;
  Staged<GpuOp> kernels;
  Staged<GpuOp> copies;
  Staged<ApiCall> regions;
};

std::string ForeignGuid(const RocpdTables& t) {
  return fmt::format("guid is not the file's guid {}", t.guid);
}
std::string NoEvent(int64_t event_id) {
  return fmt::format("event_id {} is not in rocpd_event", Ref(event_id));
}
StagedFailure Failure(std::string what) {
  StagedFailure f;
  f.what = std::move(what);
  return f;
}

// Each Stage* reads one fact table in rowid order, LEFT JOINed with rocpd_event by SQLite (the
// event of the row's guid, found by its INTEGER PRIMARY KEY: a search in a B-tree whose pages the
// scan visits in order, since events and fact rows are written in the same order), with the
// fact row's `guid IS ?1` as a last column only when `with_guid` (else every row is taken to be
// of the file's guid). Only the columns the joins need: every one precedes the large ones
// (extdata and the like, last in each table), so SQLite walks the record header up to the last
// one needed and decodes nothing else. The events are never held: memory stays flat.
std::string Select(const char* table, const char* columns, const char* event_columns,
                   bool with_guid) {
  std::string out;
  std::string_view rest = columns;
  while (!rest.empty()) {
    const size_t comma = rest.find(", ");
    fmt::format_to(std::back_inserter(out), "{}{}.{}", out.empty() ? "" : ", ", table,
                   rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  fmt::format_to(std::back_inserter(out), ", rocpd_event.id IS NOT NULL, {}", event_columns);
  if (with_guid) fmt::format_to(std::back_inserter(out), ", {}.guid IS ?1", table);
  return out;
}
// The table joined with its events; ForEachRow names "<table> LEFT JOIN rocpd_event" in errors.
std::string JoinEvents(const char* table) {
  return fmt::format("{0} LEFT JOIN rocpd_event ON rocpd_event.id = {0}.event_id AND "
                     "rocpd_event.guid IS ?1", table);
}
constexpr char kKernelColumns[] =
    "id, tid, agent_id, kernel_id, queue_id, stream_id, start, end, region_name_id, event_id";
constexpr char kCopyColumns[] =
    "id, pid, tid, start, end, name_id, dst_agent_id, src_agent_id, size, stream_id, event_id";
constexpr char kRegionColumns[] = "id, pid, tid, start, end, name_id, event_id";

// A kernel or copy row as staged: its times, its event's stack_id in `correlation` and its
// small-table position in `name`, for JoinStaged to replace.
GpuOp StagedOp(int64_t start, int64_t end, int64_t stack_id, int32_t position, int64_t stream_id) {
  GpuOp op;
  op.start_ns = start;
  op.dur_ns = WrapSub(end, start);
  op.correlation = stack_id;
  op.name = static_cast<NameId>(position);
  op.stream = static_cast<int32_t>(stream_id);
  return op;
}
int64_t StackIdOf(sqlite3_value* v) { return IsNull(v) ? kNoCorrelation : IntOf(v); }

Status StageKernels(SqliteDb& db, const RocpdTables& t, bool with_guid, Staged<GpuOp>& s) {
  s = Staged<GpuOp>(s.rows.block_rows());
  return db.ForEachRow(
      Select("rocpd_kernel_dispatch", kKernelColumns, "rocpd_event.stack_id", with_guid),
      JoinEvents("rocpd_kernel_dispatch"), t.guid, [&](sqlite3_value** v) {
    const int64_t id = IntOf(v[0]), tid = KeyOf(v[1]), agent_id = KeyOf(v[2]),
                  kernel_id = KeyOf(v[3]), queue_id = KeyOf(v[4]), stream_id = IntOf(v[5]);
    const bool missing_time = IsNull(v[6]) || IsNull(v[7]);
    const int64_t start = IntOf(v[6]), end = IntOf(v[7]), region_name_id = KeyOf(v[8]),
                  event_id = KeyOf(v[9]);
    const bool has_event = IntOf(v[10]) != 0;
    const bool same_guid = !with_guid || IntOf(v[12]) != 0;
    const int32_t thread = t.thread_index.Find(tid), agent = t.agent_index.Find(agent_id),
                  symbol = t.symbol_index.Find(kernel_id), queue = t.queue_index.Find(queue_id),
                  region_name = t.string_index.Find(region_name_id);
    GpuOp op = StagedOp(start, end, StackIdOf(v[11]), symbol, stream_id);
    std::optional<StagedFailure> f;
    if (!same_guid) {
      f = Failure(ForeignGuid(t));
    } else if (agent < 0) {
      f = Failure(fmt::format("agent_id {} is not in rocpd_info_agent", Ref(agent_id)));
    } else if (!has_event) {
      f = Failure(NoEvent(event_id));
    } else if (region_name < 0) {
      f = Failure(fmt::format("region_name_id {} is not in rocpd_string", Ref(region_name_id)));
    } else if (symbol < 0) {
      f = Failure(fmt::format("kernel_id {} is not in rocpd_info_kernel_symbol", Ref(kernel_id)));
    } else if (queue < 0) {
      f = Failure(fmt::format("queue_id {} is not in rocpd_info_queue", Ref(queue_id)));
    } else if (thread < 0) {  // the data view's last two joins: process, then thread
      f = Failure(fmt::format("tid {} is not in rocpd_info_thread", Ref(tid)));
    } else if (!t.queue_has_process[static_cast<size_t>(queue)]) {
      f = Failure(fmt::format("the pid of queue {} is not in rocpd_info_process", queue_id));
    } else if (missing_time) {
      f = StagedFailure();
      f->missing_time = true;
    } else {
      op.device = static_cast<int32_t>(t.agents[static_cast<size_t>(agent)].type_index);
    }
    s.Add(id, op, std::move(f));
  });
}

Status StageCopies(SqliteDb& db, const RocpdTables& t, bool with_guid, Staged<GpuOp>& s) {
  s = Staged<GpuOp>(s.rows.block_rows());
  return db.ForEachRow(
      Select("rocpd_memory_copy", kCopyColumns, "rocpd_event.stack_id", with_guid),
      JoinEvents("rocpd_memory_copy"), t.guid, [&](sqlite3_value** v) {
    const int64_t id = IntOf(v[0]), pid = KeyOf(v[1]), tid = KeyOf(v[2]), start = IntOf(v[3]),
                  end = IntOf(v[4]), name_id = KeyOf(v[5]), dst_agent_id = KeyOf(v[6]),
                  src_agent_id = KeyOf(v[7]), bytes = IsNull(v[8]) ? -1 : IntOf(v[8]),
                  stream_id = IntOf(v[9]), event_id = KeyOf(v[10]);
    const bool has_event = IntOf(v[11]) != 0;
    const bool same_guid = !with_guid || IntOf(v[13]) != 0;
    const int32_t process = t.process_index.Find(pid), thread = t.thread_index.Find(tid),
                  name = t.string_index.Find(name_id), dst = t.agent_index.Find(dst_agent_id),
                  srca = t.agent_index.Find(src_agent_id);
    GpuOp op = StagedOp(start, end, StackIdOf(v[12]), name, stream_id);
    op.kind = GpuOpKind::kMemcpy;
    op.bytes = bytes;
    std::optional<StagedFailure> f;
    if (!same_guid) {
      f = Failure(ForeignGuid(t));
    } else if (name < 0) {
      f = Failure(fmt::format("name_id {} is not in rocpd_string", Ref(name_id)));
    } else if (dst < 0) {
      f = Failure(fmt::format("dst_agent_id {} is not in rocpd_info_agent", Ref(dst_agent_id)));
    } else if (srca < 0) {
      f = Failure(fmt::format("src_agent_id {} is not in rocpd_info_agent", Ref(src_agent_id)));
    } else if (!has_event) {
      f = Failure(NoEvent(event_id));
    } else if (process < 0) {
      f = Failure(fmt::format("pid {} is not in rocpd_info_process", Ref(pid)));
    } else if (thread < 0) {
      f = Failure(fmt::format("tid {} is not in rocpd_info_thread", Ref(tid)));
    } else {
      const RocpdTables::Agent& dst_agent = t.agents[static_cast<size_t>(dst)];
      op.device = static_cast<int32_t>(
          dst_agent.gpu ? dst_agent.type_index : t.agents[static_cast<size_t>(srca)].type_index);
    }
    s.Add(id, op, std::move(f));
  });
}

// A region whose event's category is MARKER_* becomes a CPU marker: staged with `source` 1
// (JoinStaged sets the real source).
constexpr uint16_t kStagedMarker = 1;

Status StageRegions(SqliteDb& db, const RocpdTables& t, bool with_guid, Staged<ApiCall>& s) {
  s = Staged<ApiCall>(s.rows.block_rows());
  return db.ForEachRow(
      Select("rocpd_region", kRegionColumns, "rocpd_event.stack_id, rocpd_event.category_id",
             with_guid),
      JoinEvents("rocpd_region"), t.guid, [&](sqlite3_value** v) {
    const int64_t id = IntOf(v[0]), pid = KeyOf(v[1]), tid = KeyOf(v[2]), start = IntOf(v[3]),
                  end = IntOf(v[4]), name_id = KeyOf(v[5]), event_id = KeyOf(v[6]);
    const bool has_event = IntOf(v[7]) != 0;
    const bool same_guid = !with_guid || IntOf(v[10]) != 0;
    const int32_t process = t.process_index.Find(pid), thread = t.thread_index.Find(tid),
                  name = t.string_index.Find(name_id), category = t.string_index.Find(KeyOf(v[9]));
    ApiCall a;
    a.start_ns = start;
    a.dur_ns = WrapSub(end, start);
    a.correlation = StackIdOf(v[8]);
    a.name = static_cast<NameId>(name);
    a.source = category >= 0 && t.strings[static_cast<size_t>(category)].marker ? kStagedMarker : 0;
    std::optional<StagedFailure> f;
    if (!same_guid) {
      f = Failure(ForeignGuid(t));
    } else if (!has_event) {
      f = Failure(NoEvent(event_id));
    } else if (name < 0) {
      f = Failure(fmt::format("name_id {} is not in rocpd_string", Ref(name_id)));
    } else if (process < 0) {
      f = Failure(fmt::format("pid {} is not in rocpd_info_process", Ref(pid)));
    } else if (thread < 0) {
      f = Failure(fmt::format("tid {} is not in rocpd_info_thread", Ref(tid)));
    } else {
      a.pid = static_cast<int32_t>(t.process_pids[static_cast<size_t>(process)]);
      a.tid = static_cast<int32_t>(t.thread_tids[static_cast<size_t>(thread)]);
    }
    s.Add(id, a, std::move(f));
  });
}

// Stages the fact tables on two threads, each with its own connection: kernel dispatches and
// memory copies (this one), regions and then the guid checks of the other two fact tables (the
// second). The shares take about equal time, each spent in SQLite's record decoding and B-tree
// searches rather than waiting on the disk (pages come from the OS's page cache, read with
// pread). A fact table that turns out to hold rows of another guid is staged again, with its
// guid column. Sets *repeated when rocpd_event repeats an id a fact row joins.
Status StageFacts(SqliteDb& db, const RocpdTables& t, StagedFacts& s, bool* repeated) {
  bool foreign[kFactTables] = {};  // regions read their guid column instead
  Status regions_status;
  SqliteWorker regions([&] {
    StatusOr<std::unique_ptr<SqliteDb>> own = SqliteDb::Open(db.path());
    if (!own.ok()) {
      regions_status = own.status();
      return;
    }
    regions_status = StageRegions(**own, t, true, s.regions);
    if (regions_status.ok()) regions_status = HasForeignRows(**own, t, kKernelTable, &foreign[kKernelTable]);
    if (regions_status.ok()) regions_status = HasForeignRows(**own, t, kCopyTable, &foreign[kCopyTable]);
  });
  Status st = StageKernels(db, t, false, s.kernels);
  if (st.ok() && t.has_memory_copies) st = StageCopies(db, t, false, s.copies);
  regions.Join();
  RETURN_IF_ERROR(st);
  RETURN_IF_ERROR(regions_status);
  if (foreign[kKernelTable]) RETURN_IF_ERROR(StageKernels(db, t, true, s.kernels));
  if (foreign[kCopyTable]) RETURN_IF_ERROR(StageCopies(db, t, true, s.copies));
  *repeated = s.kernels.repeated || s.copies.repeated || s.regions.repeated;
  return Status::Ok();
}

Status ReadDataViews(SqliteDb& db, uint16_t source, Trace& trace);

// Emits the staged rows' events: the same events, in the same order, with the same names
// interned in the same order, as ReadDataViews. Rows the data views would drop are counted as
// "unresolved reference". One pass over each staged table.
void JoinStaged(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  // Whether row `row` becomes an event; if not, it is counted as an issue, in a fixed order
  // (see the Stage*): the joins as the data view runs them, then (kernels) a NULL start or end,
  // then a negative duration.
  auto kept = [&](std::string_view table, std::string_view data_view, const auto& staged,
                  const auto& r, size_t row, size_t& next_failure) -> bool {
    const auto& e = r.event;
    if (next_failure == staged.failures.size() || staged.failures[next_failure].row != row) {
      return !Negative(src, data_view, r.id, e.start_ns, WrapAdd(e.start_ns, e.dur_ns));
    }
    const StagedFailure& f = staged.failures[next_failure++];
    if (f.missing_time) {
      src.issues.Add("missing start or end", fmt::format("kernels row id={}", r.id));
    } else {
      src.issues.Add("unresolved reference", fmt::format("{} row id={}", table, r.id),
                     fmt::format("{} (the {} view leaves the row out)", f.what, data_view));
    }
    return false;
  };

  size_t row = 0, next_failure = 0;
  s.kernels.rows.ForEach([&](const Staged<GpuOp>::Row& r) {
    if (!kept("rocpd_kernel_dispatch", "kernels", s.kernels, r, row++, next_failure)) return;
    GpuOp op = r.event;
    RocpdTables::Symbol& sym = t.symbols[op.name];
    if (sym.name == kUnset) {
      sym.name = trace.names.Intern(sym.display_name);
      sym.kind = ClassifyRocmInternalKernel(sym.display_name).value_or(GpuOpKind::kKernel);
    }
    op.name = sym.name;
    op.kind = sym.kind;
    op.source = source;
    trace.gpu_ops.push_back(op);
    ++src.events_read;
  });

  row = next_failure = 0;
  s.copies.rows.ForEach([&](const Staged<GpuOp>::Row& r) {
    if (!kept("rocpd_memory_copy", "memory_copies", s.copies, r, row++, next_failure)) return;
    GpuOp op = r.event;
    RocpdTables::String& name = t.strings[op.name];
    op.name = t.Name(name, trace);
    if (!name.copy_classified) {
      name.direction = ParseCopyDirection(name.value);
      name.copy_classified = true;
    }
    op.direction = name.direction;
    op.source = source;
    trace.gpu_ops.push_back(op);
    ++src.events_read;
  });

  row = next_failure = 0;
  s.regions.rows.ForEach([&](const Staged<ApiCall>::Row& r) {
    if (!kept("rocpd_region", "regions", s.regions, r, row++, next_failure)) return;
    ++src.events_read;
    ApiCall a = r.event;
    RocpdTables::String& name = t.strings[a.name];
    a.name = t.Name(name, trace);
    if (a.source == kStagedMarker) {
      CpuOp c;
      c.start_ns = a.start_ns;
      c.dur_ns = a.dur_ns;
      c.name = a.name;
      c.pid = a.pid;
      c.tid = a.tid;
      c.source = source;
      c.kind = CpuOpKind::kMarker;
      trace.cpu_ops.push_back(c);
      return;
    }
    a.source = source;
    if (!name.api_classified) {
      name.api_kind = ClassifyApi(name.value);
      name.api_classified = true;
    }
    a.kind = name.api_kind;
    trace.api_calls.push_back(a);
  });
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
  if (tables != nullptr) {
    JoinStaged(*tables, staged, source, trace);
    return Status::Ok();
  }
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
