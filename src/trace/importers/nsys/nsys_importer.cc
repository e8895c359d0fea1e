#include "trace/importers/nsys/nsys_importer.h"

#include <algorithm>

#include <memory>
#include <vector>

#include <fmt/format.h>

#include "trace/model/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"

namespace latdoc::trace {

// Sample rows (nsys 2025.5.2, EXPORT_SCHEMA_VERSION 3.24.0; p4arth/cuda-perf-sandbox@8aa5f2e9
// report1.sqlite):
//   CUPTI_ACTIVITY_KIND_KERNEL: start=1143927944 end=1143966856 deviceId=0 streamId=7
//       correlationId=126 globalPid=281495881121792 demangledName=742 (-> StringIds)
//   CUPTI_ACTIVITY_KIND_MEMCPY: ... bytes=4194304 copyKind=1 (HTOD) srcKind=0 (PAGEABLE) dstKind=2
//   CUPTI_ACTIVITY_KIND_RUNTIME: start end globalTid=281495881123038 correlationId=126
//       nameId -> "cudaLaunchKernel_v7000"
// globalTid: pid = (g >> 24) & 0xFFFFFF, tid = g & 0xFFFFFF. ENUM_CUDA_MEM_KIND: 0 pageable,
// 1 pinned, 2 device, 3 array, 4 managed, 5 device static, 6 managed static, 7 unknown.

int NsysImporter::Detect(const std::string& path, std::string_view head) const {
  if (!IsSqliteHeader(head)) return 0;
  auto db = SqliteDb::Open(path);
  if (!db.ok()) return 0;
  return (*db)->Has("META_DATA_EXPORT") || (*db)->Has("CUPTI_ACTIVITY_KIND_KERNEL") ? 100 : 0;
}

namespace {

CopyDirection CopyKind(int64_t k) {
  switch (k) {
    case 1: case 11: return CopyDirection::kHtoD;
    case 2: case 12: return CopyDirection::kDtoH;
    case 8: case 13: return CopyDirection::kDtoD;
    case 9: return CopyDirection::kHtoH;
    case 10: return CopyDirection::kPtoP;
    default: return CopyDirection::kUnknown;
  }
}

MemKind NsysMemKind(std::optional<int64_t> k) {
  if (!k) return MemKind::kUnknown;
  switch (*k) {
    case 0: return MemKind::kPageable;
    case 1: return MemKind::kPinned;
    case 2: case 5: return MemKind::kDevice;
    case 3: return MemKind::kArray;
    case 4: case 6: return MemKind::kManaged;
    default: return MemKind::kUnknown;
  }
}

std::string_view MemKindLabel(MemKind k) {
  switch (k) {
    case MemKind::kPageable: return "Pageable";
    case MemKind::kPinned: return "Pinned";
    case MemKind::kDevice: return "Device";
    case MemKind::kArray: return "Array";
    case MemKind::kManaged: return "Managed";
    case MemKind::kUnknown: return "Unknown";
  }
  return "Unknown";
}

std::string_view StripVersion(std::string_view n) {
  const size_t u = n.rfind("_v");
  if (u == std::string_view::npos || u + 2 >= n.size()) return n;
  for (size_t i = u + 2; i < n.size(); ++i) {
    if (n[i] < '0' || n[i] > '9') return n;
  }
  return n.substr(0, u);
}

constexpr NameId kUnset = UINT32_MAX;

// StringIds, read once. Each string's NameId, and for runtime API names the NameId and ApiKind
// of the version-stripped name, is computed on its first use and cached, so a row costs an array
// index instead of a hash lookup plus a string hash in StringTable::Intern. First uses come in the
// same row order as per-row interning did, so names get the same NameIds.
class NsysStrings {
 public:
  struct Entry {
    std::string value;
    NameId name = kUnset;
    NameId api_name = kUnset;
    ApiKind api_kind = ApiKind::kOther;
  };

  Status Load(SqliteDb& db) {
    ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare("SELECT id, value FROM StringIds"));
    std::vector<int64_t> ids;
    Status st;
    while (q.Step(&st)) {
      ids.push_back(q.Int(0));
      entries_.push_back(Entry{std::string(q.Text(1))});
    }
    RETURN_IF_ERROR(st);
    index_.Build(ids);  // StringIds.id is the primary key: no repeats
    return Status::Ok();
  }
  // nullptr when the id is NULL or not in StringIds.
  Entry* Find(std::optional<int64_t> id) { return At(index_.Find(id)); }
  // The position of the id's entry, or IdIndex::kNone; reads only the index, so it may run on
  // another thread while this one names entries.
  int32_t Position(std::optional<int64_t> id) const { return index_.Find(id); }
  Entry* At(int32_t position) {
    return position == IdIndex::kNone ? nullptr : &entries_[static_cast<size_t>(position)];
  }
  NameId Name(Entry& e, Trace& trace) {
    if (e.name == kUnset) e.name = trace.names.Intern(e.value);
    return e.name;
  }

 private:
  std::vector<Entry> entries_;
  IdIndex index_;
};

// A constant name interned on first use (keeps the interning order of per-row code).
struct LazyName {
  std::string_view text;
  NameId id = kUnset;
  NameId Get(Trace& trace) {
    if (id == kUnset) id = trace.names.Intern(text);
    return id;
  }
};

// CUDA counts correlation ids per process, so a report of several processes (tensor-parallel
// workers profiled with --trace-fork-before-exec) repeats them: a launch is linked to GPU work
// by (process, id). The process is bits 24-47 of globalPid or globalTid; the key is the pid
// above the 32-bit id (ids of one process keep their order).
int64_t ProcessCorrelation(std::optional<int64_t> global_id, std::optional<int64_t> correlation) {
  if (!correlation) return kNoCorrelation;
  const int64_t pid = global_id ? (*global_id >> 24) & 0xFFFFFF : 0;
  return pid << 32 | (*correlation & 0xFFFFFFFF);
}

// The globalPid column of a GPU table, or NULL in a hand-made file without it.
std::string PidColumn(SqliteDb& db, std::string_view table) {
  const std::vector<std::string> cols = db.Columns(table);
  return std::find(cols.begin(), cols.end(), "globalPid") != cols.end() ? "globalPid" : "NULL";
}

// A row whose end is before its start, kept to be reported in row order.
struct NegativeRow {
  int64_t rowid, start, end;
};

// CUPTI_ACTIVITY_KIND_RUNTIME, read into `out` on a thread of its own with a connection of its
// own, while the caller's thread reads the GPU tables. Each call's name is left as the position
// of its StringIds entry (or IdIndex::kNone), for NameRuntimeCall to turn into a NameId on the
// caller's thread, in row order, so names are interned in the same order as a one-thread read.
Status ReadRuntime(SqliteDb& db, const NsysStrings& strings, uint16_t source,
                   SpillTable<ApiCall>& out, std::vector<NegativeRow>& negatives) {
  ASSIGN_OR_RETURN(SqliteStmt q, db.Prepare(
      "SELECT rowid, start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
  Status st;
  while (q.Step(&st)) {
    const int64_t start = q.Int(1), end = q.Int(2);
    if (end < start) {
      negatives.push_back(NegativeRow{q.Int(0), start, end});
      continue;
    }
    ApiCall a;
    a.start_ns = start;
    a.dur_ns = end - start;
    const int64_t g = q.Int(3);
    a.pid = static_cast<int32_t>((g >> 24) & 0xFFFFFF);
    a.tid = static_cast<int32_t>(g & 0xFFFFFF);
    a.correlation = ProcessCorrelation(g, q.OptInt(4));
    a.name = static_cast<NameId>(strings.Position(q.OptInt(5)));
    a.source = source;
    out.push_back(a);
  }
  return st;
}

// Names a call ReadRuntime left with a StringIds position: the version-stripped name and its
// classification, made once per StringIds entry.
void NameRuntimeCall(NsysStrings& strings, Trace& trace, ApiCall& a) {
  if (NsysStrings::Entry* e = strings.At(static_cast<int32_t>(a.name))) {
    if (e->api_name == kUnset) {
      const std::string_view name = StripVersion(e->value);
      e->api_name = trace.names.Intern(name);
      e->api_kind = ClassifyApi(name);
    }
    a.name = e->api_name;
    a.kind = e->api_kind;
  } else {
    a.name = trace.names.Intern("unknown API");
    a.kind = ClassifyApi("unknown API");
  }
}

// The export schema's major version must be 3 (a file without META_DATA_EXPORT passes).
Status CheckSchema(SqliteDb& db, const std::string& path) {
  if (db.Has("META_DATA_EXPORT")) {
    const std::string major =
        db.QueryText("SELECT value FROM META_DATA_EXPORT WHERE name='EXPORT_SCHEMA_VERSION_MAJOR'")
            .value_or("3");
    if (major != "3") {
      return Unimplemented(fmt::format("{}: Nsight Systems export schema major version {} is not "
                                       "supported (3 is)", path, major));
    }
  }
  return Status::Ok();
}

// What every table reader below works on: the export, the trace and this file's source.
struct NsysRead {
  SqliteDb& db;
  const std::string& path;
  Trace& trace;
  SourceFile& src;
  uint16_t source;
  NsysStrings& strings;

  // Returns true (and counts the row) when end < start; the rowid is read only then.
  bool Negative(std::string_view table, const SqliteStmt& q, int64_t start, int64_t end) const {
    if (end >= start) return false;
    src.issues.Add("negative duration", fmt::format("{} rowid={}", table, q.Int(0)),
                   fmt::format("end {} < start {}", end, start));
    return true;
  }
};

// The capture's times are ns after its start, whose wall clock the export records
// (TARGET_INFO_SESSION_START_TIME.utcEpochNs, "UTC Epoch timestamp at start of the capture").
void ReadSessionStart(SqliteDb& db, SourceFile& src) {
  if (db.Has("TARGET_INFO_SESSION_START_TIME")) {
    const std::optional<int64_t> utc =
        db.QueryInt("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
    if (utc && *utc > 0) src.wall_clock_base_ns = *utc;
    else src.issues.Add("bad TARGET_INFO_SESSION_START_TIME", "utcEpochNs", "not a positive integer");
  }
}

Status ReadDevices(const NsysRead& r) {
  if (!r.db.Has("TARGET_INFO_GPU")) return Status::Ok();
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      r.db.Prepare("SELECT id, name, computeMajor, computeMinor FROM TARGET_INFO_GPU"));
  while (q.Step(&st)) {
    DeviceInfo d;
    d.source = r.source;
    d.device = static_cast<int32_t>(q.Int(0));
    d.name = std::string(q.Text(1));
    d.arch = ArchFromComputeCapability(false, q.OptInt(2).value_or(-1), q.OptInt(3).value_or(-1));
    r.trace.devices.push_back(std::move(d));
  }
  return st.WithContext(r.path);
}

// Every reader below reads each column once, in column order (SQLite decodes a record left to
// right and caches the offsets).
// The columns every activity query starts with (rowid, start, end, deviceId, streamId,
// correlationId, the process id) into `op` of `kind`. False for a negative duration (counted by
// Negative): the row is skipped.
bool ReadActivity(const NsysRead& r, const char* table, SqliteStmt& q, GpuOpKind kind, GpuOp& op) {
  const int64_t start = q.Int(1), end = q.Int(2);
  if (r.Negative(table, q, start, end)) return false;
  op.kind = kind;
  op.start_ns = start;
  op.dur_ns = end - start;
  op.device = static_cast<int32_t>(q.Int(3));
  op.stream = static_cast<int32_t>(q.Int(4));
  op.correlation = ProcessCorrelation(q.OptInt(6), q.OptInt(5));
  op.source = r.source;
  return true;
}

Status ReadKernels(const NsysRead& r) {
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      r.db.Prepare(fmt::format(
          "SELECT rowid, start, end, deviceId, streamId, correlationId, {}, demangledName, "
          "shortName FROM CUPTI_ACTIVITY_KIND_KERNEL",
          PidColumn(r.db, "CUPTI_ACTIVITY_KIND_KERNEL"))));
  LazyName unknown{"unknown kernel"};
  while (q.Step(&st)) {
    GpuOp op;
    if (!ReadActivity(r, "CUPTI_ACTIVITY_KIND_KERNEL", q, GpuOpKind::kKernel, op)) continue;
    // demangledName, else shortName, else "unknown kernel" (an empty demangled name counts
    // as missing).
    NsysStrings::Entry* e = r.strings.Find(q.OptInt(7));
    if (e == nullptr || e->value.empty()) e = r.strings.Find(q.OptInt(8));
    op.name = e != nullptr ? r.strings.Name(*e, r.trace) : unknown.Get(r.trace);
    op.source = r.source;
    r.trace.gpu_ops.push_back(op);
    ++r.src.events_read;
  }
  return st.WithContext(r.path);
}

Status ReadMemcpys(const NsysRead& r) {
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      r.db.Prepare(fmt::format(
          "SELECT rowid, start, end, deviceId, streamId, correlationId, {}, bytes, copyKind, "
          "srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY",
          PidColumn(r.db, "CUPTI_ACTIVITY_KIND_MEMCPY"))));
  // Names per (direction, src kind, dst kind), made on first use.
  constexpr size_t kDirs = 6, kKinds = 6;
  std::vector<NameId> copy_names(kDirs * kKinds * kKinds, kUnset);
  while (q.Step(&st)) {
    GpuOp op;
    if (!ReadActivity(r, "CUPTI_ACTIVITY_KIND_MEMCPY", q, GpuOpKind::kMemcpy, op)) continue;
    op.bytes = q.OptInt(7).value_or(-1);
    op.direction = CopyKind(q.Int(8));
    op.src_kind = NsysMemKind(q.OptInt(9));
    op.dst_kind = NsysMemKind(q.OptInt(10));
    NameId& name =
        copy_names[(static_cast<size_t>(op.direction) * kKinds + static_cast<size_t>(op.src_kind)) *
                       kKinds +
                   static_cast<size_t>(op.dst_kind)];
    if (name == kUnset) {
      // Named as Kineto names copies, so both formats group alike.
      name =
          r.trace.names.Intern(fmt::format("Memcpy {} ({} -> {})", CopyDirectionName(op.direction),
                                           MemKindLabel(op.src_kind), MemKindLabel(op.dst_kind)));
    }
    op.name = name;
    op.source = r.source;
    r.trace.gpu_ops.push_back(op);
    ++r.src.events_read;
  }
  return st.WithContext(r.path);
}

Status ReadMemsets(const NsysRead& r) {
  Status st;
  ASSIGN_OR_RETURN(
      SqliteStmt q,
      r.db.Prepare(
          fmt::format("SELECT rowid, start, end, deviceId, streamId, correlationId, {}, bytes FROM "
                      "CUPTI_ACTIVITY_KIND_MEMSET",
                      PidColumn(r.db, "CUPTI_ACTIVITY_KIND_MEMSET"))));
  const NameId memset_name = r.trace.names.Intern("Memset (Device)");
  while (q.Step(&st)) {
    GpuOp op;
    if (!ReadActivity(r, "CUPTI_ACTIVITY_KIND_MEMSET", q, GpuOpKind::kMemset, op)) continue;
    op.bytes = q.OptInt(7).value_or(-1);
    op.name = memset_name;
    op.source = r.source;
    r.trace.gpu_ops.push_back(op);
    ++r.src.events_read;
  }
  return st.WithContext(r.path);
}

// The runtime calls the second thread read: their negative rows counted, their names made,
// then moved into the trace.
void AddRuntimeCalls(const NsysRead& r, SpillTable<ApiCall>& runtime_calls,
                     const std::vector<NegativeRow>& runtime_negatives) {
  // The rows read before an error are kept, as a one-thread read keeps them.
  for (const NegativeRow& n : runtime_negatives) {
    r.src.issues.Add("negative duration",
                     fmt::format("CUPTI_ACTIVITY_KIND_RUNTIME rowid={}", n.rowid),
                     fmt::format("end {} < start {}", n.end, n.start));
  }
  r.src.events_read += static_cast<int64_t>(runtime_calls.size());
  runtime_calls.ForEach([&](ApiCall a) {
    NameRuntimeCall(r.strings, r.trace, a);
    r.trace.api_calls.push_back(a);
  });
  runtime_calls.clear();
}

Status ReadNvtx(const NsysRead& r) {
  Status st;
  ASSIGN_OR_RETURN(SqliteStmt q, r.db.Prepare("SELECT rowid, start, end, text, textId, globalTid "
                                              "FROM NVTX_EVENTS WHERE end IS NOT NULL"));
  LazyName nvtx{"nvtx"};
  while (q.Step(&st)) {
    const int64_t start = q.Int(1), end = q.Int(2);
    if (r.Negative("NVTX_EVENTS", q, start, end)) continue;
    CpuOp c;
    c.start_ns = start;
    c.dur_ns = end - start;
    if (const std::optional<std::string_view> text = q.OptText(3)) {
      c.name = r.trace.names.Intern(*text);
    } else {
      NsysStrings::Entry* e = r.strings.Find(q.OptInt(4));
      c.name = e != nullptr ? r.strings.Name(*e, r.trace) : nvtx.Get(r.trace);
    }
    const int64_t g = q.Int(5);
    c.pid = static_cast<int32_t>((g >> 24) & 0xFFFFFF);
    c.tid = static_cast<int32_t>(g & 0xFFFFFF);
    c.kind = CpuOpKind::kMarker;
    c.source = r.source;
    r.trace.cpu_ops.push_back(c);
    ++r.src.events_read;
  }
  return st.WithContext(r.path);
}

}  // namespace

Status NsysImporter::Import(const std::string& path, const ImportOptions& options, Trace& trace,
                            std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  RETURN_IF_ERROR(CheckSchema(*db, path));
  const uint16_t source = trace.AddSource(path, "nsys");
  SourceFile& src = trace.sources[source];
  ReadSessionStart(*db, src);
  NsysStrings strings;
  RETURN_IF_ERROR(strings.Load(*db).WithContext(path));
  const bool has_kernel = db->Has("CUPTI_ACTIVITY_KIND_KERNEL");
  const bool has_memcpy = db->Has("CUPTI_ACTIVITY_KIND_MEMCPY");
  const bool has_memset = db->Has("CUPTI_ACTIVITY_KIND_MEMSET");
  const bool has_runtime = db->Has("CUPTI_ACTIVITY_KIND_RUNTIME");
  // The runtime table (as many rows as the GPU tables together, or more) is read on a second
  // thread into a table of its own while this one reads the GPU tables. Until they are named,
  // its calls hold StringIds positions, not NameIds; a return on an error drops them.
  SpillTable<ApiCall> runtime_calls;
  std::vector<NegativeRow> runtime_negatives;
  Status runtime_status;
  SqliteWorker runtime([&] {
    if (!has_runtime) return;
    StatusOr<std::unique_ptr<SqliteDb>> own = SqliteDb::Open(path);
    runtime_status = own.ok() ? ReadRuntime(**own, strings, source, runtime_calls, runtime_negatives)
                              : own.status();
  });

  const NsysRead r{*db, path, trace, src, source, strings};
  RETURN_IF_ERROR(ReadDevices(r));
  if (has_kernel) RETURN_IF_ERROR(ReadKernels(r));
  if (has_memcpy) RETURN_IF_ERROR(ReadMemcpys(r));
  if (has_memset) RETURN_IF_ERROR(ReadMemsets(r));
  if (has_runtime) {
    runtime.Join();
    AddRuntimeCalls(r, runtime_calls, runtime_negatives);
    RETURN_IF_ERROR(runtime_status.WithContext(path));
  }
  if (db->Has("NVTX_EVENTS")) RETURN_IF_ERROR(ReadNvtx(r));
  return Status::Ok();
}

}  // namespace latdoc::trace
