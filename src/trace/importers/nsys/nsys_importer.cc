#include "trace/importers/nsys/nsys_importer.h"

#include <unordered_map>

#include <fmt/format.h>

#include "trace/importers/common/gpu_names.h"
#include "trace/importers/common/sqlite_db.h"

namespace latdoc::trace {

// Sample rows (nsys 2025.5.2, EXPORT_SCHEMA_VERSION 3.24.0; trace-formats.md 4):
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

}  // namespace

Status NsysImporter::Import(const std::string& path, const ImportOptions& options, Trace& trace,
                            std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  if (db->Has("META_DATA_EXPORT")) {
    const std::string major =
        db->QueryText("SELECT value FROM META_DATA_EXPORT WHERE name='EXPORT_SCHEMA_VERSION_MAJOR'")
            .value_or("3");
    if (major != "3") {
      return Unimplemented(fmt::format("{}: Nsight Systems export schema major version {} is not "
                                       "supported (3 is)", path, major));
    }
  }
  const uint16_t source = trace.AddSource(path, "nsys");
  SourceFile& src = trace.sources[source];
  Status st;
  // StringIds -> interned names, resolved lazily.
  std::unordered_map<int64_t, std::string> strings;
  {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare("SELECT id, value FROM StringIds"));
    while (q.Step(&st)) strings.emplace(q.Int(0), std::string(q.Text(1)));
    RETURN_IF_ERROR(st.WithContext(path));
  }
  auto name_of = [&](std::optional<int64_t> id, std::string_view fallback) -> std::string_view {
    if (!id) return fallback;
    auto it = strings.find(*id);
    return it == strings.end() ? fallback : std::string_view(it->second);
  };
  auto negative = [&](std::string_view table, int64_t rowid, int64_t start, int64_t end) {
    if (end >= start) return false;
    src.issues.Add("negative duration", fmt::format("{} rowid={}", table, rowid),
                   fmt::format("end {} < start {}", end, start));
    return true;
  };

  if (db->Has("TARGET_INFO_GPU")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare("SELECT id, name, computeMajor, computeMinor FROM TARGET_INFO_GPU"));
    while (q.Step(&st)) {
      DeviceInfo d;
      d.source = source;
      d.device = static_cast<int32_t>(q.Int(0));
      d.name = std::string(q.Text(1));
      d.arch = ArchFromComputeCapability(false, q.OptInt(2).value_or(-1), q.OptInt(3).value_or(-1));
      trace.devices.push_back(std::move(d));
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  if (db->Has("CUPTI_ACTIVITY_KIND_KERNEL")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT rowid, start, end, deviceId, streamId, correlationId, demangledName, shortName "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL"));
    while (q.Step(&st)) {
      if (negative("CUPTI_ACTIVITY_KIND_KERNEL", q.Int(0), q.Int(1), q.Int(2))) continue;
      GpuOp op;
      op.start_ns = q.Int(1);
      op.dur_ns = q.Int(2) - q.Int(1);
      op.device = static_cast<int32_t>(q.Int(3));
      op.stream = static_cast<int32_t>(q.Int(4));
      op.correlation = q.OptInt(5).value_or(kNoCorrelation);
      std::string_view name = name_of(q.OptInt(6), "");
      if (name.empty()) name = name_of(q.OptInt(7), "unknown kernel");
      op.name = trace.names.Intern(name);
      op.source = source;
      trace.gpu_ops.push_back(op);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  if (db->Has("CUPTI_ACTIVITY_KIND_MEMCPY")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT rowid, start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, dstKind "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY"));
    while (q.Step(&st)) {
      if (negative("CUPTI_ACTIVITY_KIND_MEMCPY", q.Int(0), q.Int(1), q.Int(2))) continue;
      GpuOp op;
      op.kind = GpuOpKind::kMemcpy;
      op.start_ns = q.Int(1);
      op.dur_ns = q.Int(2) - q.Int(1);
      op.device = static_cast<int32_t>(q.Int(3));
      op.stream = static_cast<int32_t>(q.Int(4));
      op.correlation = q.OptInt(5).value_or(kNoCorrelation);
      op.bytes = q.OptInt(6).value_or(-1);
      op.direction = CopyKind(q.Int(7));
      op.src_kind = NsysMemKind(q.OptInt(8));
      op.dst_kind = NsysMemKind(q.OptInt(9));
      // Named as Kineto names copies, so both formats group alike.
      op.name = trace.names.Intern(fmt::format("Memcpy {} ({} -> {})", CopyDirectionName(op.direction),
                                               MemKindLabel(op.src_kind), MemKindLabel(op.dst_kind)));
      op.source = source;
      trace.gpu_ops.push_back(op);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  if (db->Has("CUPTI_ACTIVITY_KIND_MEMSET")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT rowid, start, end, deviceId, streamId, correlationId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"));
    const NameId memset_name = trace.names.Intern("Memset (Device)");
    while (q.Step(&st)) {
      if (negative("CUPTI_ACTIVITY_KIND_MEMSET", q.Int(0), q.Int(1), q.Int(2))) continue;
      GpuOp op;
      op.kind = GpuOpKind::kMemset;
      op.start_ns = q.Int(1);
      op.dur_ns = q.Int(2) - q.Int(1);
      op.device = static_cast<int32_t>(q.Int(3));
      op.stream = static_cast<int32_t>(q.Int(4));
      op.correlation = q.OptInt(5).value_or(kNoCorrelation);
      op.bytes = q.OptInt(6).value_or(-1);
      op.name = memset_name;
      op.source = source;
      trace.gpu_ops.push_back(op);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  if (db->Has("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT rowid, start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
    while (q.Step(&st)) {
      if (negative("CUPTI_ACTIVITY_KIND_RUNTIME", q.Int(0), q.Int(1), q.Int(2))) continue;
      ApiCall a;
      a.start_ns = q.Int(1);
      a.dur_ns = q.Int(2) - q.Int(1);
      const int64_t g = q.Int(3);
      a.pid = static_cast<int32_t>((g >> 24) & 0xFFFFFF);
      a.tid = static_cast<int32_t>(g & 0xFFFFFF);
      a.correlation = q.OptInt(4).value_or(kNoCorrelation);
      const std::string_view name = StripVersion(name_of(q.OptInt(5), "unknown API"));
      a.name = trace.names.Intern(name);
      a.kind = ClassifyApi(name);
      a.source = source;
      trace.api_calls.push_back(a);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  if (db->Has("NVTX_EVENTS")) {
    ASSIGN_OR_RETURN(SqliteStmt q, db->Prepare(
        "SELECT rowid, start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL"));
    while (q.Step(&st)) {
      if (negative("NVTX_EVENTS", q.Int(0), q.Int(1), q.Int(2))) continue;
      CpuOp c;
      c.start_ns = q.Int(1);
      c.dur_ns = q.Int(2) - q.Int(1);
      const std::string_view text = q.IsNull(3) ? name_of(q.OptInt(4), "nvtx") : q.Text(3);
      c.name = trace.names.Intern(text);
      const int64_t g = q.Int(5);
      c.pid = static_cast<int32_t>((g >> 24) & 0xFFFFFF);
      c.tid = static_cast<int32_t>(g & 0xFFFFFF);
      c.kind = CpuOpKind::kMarker;
      c.source = source;
      trace.cpu_ops.push_back(c);
      ++src.events_read;
    }
    RETURN_IF_ERROR(st.WithContext(path));
  }
  return Status::Ok();
}

}  // namespace latdoc::trace
