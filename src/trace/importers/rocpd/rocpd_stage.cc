// The rocpd importer's fact tables (rocpd_internal.h): kernel dispatches, memory copies and
// regions staged on two threads (StageFacts), then joined into events in row order (JoinStaged).
#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "trace/model/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"
#include "trace/importers/rocpd/rocpd_internal.h"

namespace latdoc::trace::rocpd_internal {
namespace {

// A staged row keeps end - start as its duration before Negative has looked at it: in
// two's-complement arithmetic, so that any pair of times, however far apart, gives back its end.
int64_t WrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t WrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t KeyOf(sqlite3_value* v) {
  return sqlite3_value_type(v) == SQLITE_NULL ? kNullKey : sqlite3_value_int64(v);
}
// As sqlite3_column_int64: NULL reads 0.
int64_t IntOf(sqlite3_value* v) { return sqlite3_value_int64(v); }
bool IsNull(sqlite3_value* v) { return sqlite3_value_type(v) == SQLITE_NULL; }

enum FactTable { kKernelTable, kCopyTable, kRegionTable, kFactTables };
constexpr const char* kFactViews[kFactTables] = {"rocpd_kernel_dispatch", "rocpd_memory_copy",
                                                 "rocpd_region"};

// Whether the fact table holds a row of another guid (none does in a file rocprofv3 wrote).
// Reading `guid IS ?1` with every staged row costs a tenth of the scan; this scan, with no
// result rows, costs a little more, but on a thread with time to spare.
Status HasForeignRows(SqliteDb& db, const RocpdTables& t, FactTable f, bool* foreign) {
  if (f == kCopyTable && !t.has_memory_copies) return Status::Ok();
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      db.Prepare(fmt::format("SELECT 1 FROM {} WHERE guid IS NOT ?1 LIMIT 1", kFactViews[f])));
  q.BindText(1, t.guid);
  Status st;
  *foreign = q.Step(&st);
  return st;
}

std::string Ref(int64_t key) { return key == kNullKey ? std::string("NULL") : std::to_string(key); }

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
  return fmt::format(
      "{0} LEFT JOIN rocpd_event ON rocpd_event.id = {0}.event_id AND "
      "rocpd_event.guid IS ?1",
      table);
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
          f = Failure(
              fmt::format("kernel_id {} is not in rocpd_info_kernel_symbol", Ref(kernel_id)));
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
          op.device =
              static_cast<int32_t>(dst_agent.gpu ? dst_agent.type_index
                                                 : t.agents[static_cast<size_t>(srca)].type_index);
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
                      name = t.string_index.Find(name_id),
                      category = t.string_index.Find(KeyOf(v[9]));
        ApiCall a;
        a.start_ns = start;
        a.dur_ns = WrapSub(end, start);
        a.correlation = StackIdOf(v[8]);
        a.name = static_cast<NameId>(name);
        a.source =
            category >= 0 && t.strings[static_cast<size_t>(category)].marker ? kStagedMarker : 0;
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

}  // namespace

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
    if (regions_status.ok())
      regions_status = HasForeignRows(**own, t, kKernelTable, &foreign[kKernelTable]);
    if (regions_status.ok())
      regions_status = HasForeignRows(**own, t, kCopyTable, &foreign[kCopyTable]);
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

namespace {

// Whether row `row` becomes an event; if not, it is counted as an issue, in a fixed order
// (see the Stage*): the joins as the data view runs them, then (kernels) a NULL start or end,
// then a negative duration.
template <typename StagedTable, typename Row>
bool Kept(SourceFile& src, std::string_view table, std::string_view data_view,
          const StagedTable& staged, const Row& r, size_t row, size_t& next_failure) {
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
}

// The kernels in row order, named (and classified) once per symbol.
void JoinKernels(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  size_t row = 0, next_failure = 0;
  s.kernels.rows.ForEach([&](const Staged<GpuOp>::Row& r) {
    if (!Kept(src, "rocpd_kernel_dispatch", "kernels", s.kernels, r, row++, next_failure)) return;
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
}

// The copies in row order, their direction parsed once per name.
void JoinCopies(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  size_t row = 0, next_failure = 0;
  s.copies.rows.ForEach([&](const Staged<GpuOp>::Row& r) {
    if (!Kept(src, "rocpd_memory_copy", "memory_copies", s.copies, r, row++, next_failure)) return;
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
}

// The regions in row order: markers become CPU ops, the rest API calls classified once per name.
void JoinRegions(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace) {
  SourceFile& src = trace.sources[source];
  size_t row = 0, next_failure = 0;
  s.regions.rows.ForEach([&](const Staged<ApiCall>::Row& r) {
    if (!Kept(src, "rocpd_region", "regions", s.regions, r, row++, next_failure)) return;
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

void JoinStaged(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace) {
  JoinKernels(t, s, source, trace);
  JoinCopies(t, s, source, trace);
  JoinRegions(t, s, source, trace);
}

}  // namespace latdoc::trace::rocpd_internal
