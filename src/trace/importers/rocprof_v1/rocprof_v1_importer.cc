#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "base/strings.h"
#include "trace/importers/common/csv_reader.h"
#include "trace/importers/common/gpu_names.h"
#include "trace/importers/kineto/json_event_scanner.h"

namespace latdoc::trace {
namespace {

std::string HeadLine(std::string_view head) {
  return ToLower(head.substr(0, head.find('\n')));
}

bool Has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

}  // namespace

// results.csv (trace-formats.md 2.3), header by name, quoted or not:
//   Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,
//   sgpr,wave_size,sig,obj,[FETCH_SIZE,WRITE_SIZE,...,]DispatchNs,BeginNs,EndNs,CompleteNs[,DurationNs]
//   0,"vector_add(float*, float*, float*, int) [clone .kd]",4,0,0,29564,29564,...
// Also: plugin v2 / rocprofiler-compute shapes with Dispatch_ID, Kernel_Name, GPU_ID,
// Start_Timestamp, End_Timestamp. DispatchNs becomes a zero-length launch record, so the
// launch analysis measures DispatchNs -> BeginNs (and rejects the 12 s clock-domain offsets
// seen in real files). FETCH_SIZE/WRITE_SIZE are kilobytes.
int RocprofV1CsvImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  const std::string h = HeadLine(head);
  if (Has(h, "correlation_id") && Has(h, "start_timestamp") && !Has(h, "dispatchns")) return 0;
  if ((Has(h, "kernelname") || Has(h, "kernel_name")) &&
      (Has(h, "beginns") || Has(h, "start_timestamp") || Has(h, "gpu-id"))) {
    return 95;
  }
  return 0;
}

Status RocprofV1CsvImporter::Import(const std::string& path, const ImportOptions& options,
                                    Trace& trace, std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  const int c_index = csv->Column({"Index", "Dispatch_ID"});
  const int c_name = csv->Column({"KernelName", "Kernel_Name"});
  const int c_gpu = csv->Column({"gpu-id", "GPU_ID"});
  const int c_queue = csv->Column({"queue-id", "Queue_ID"});
  const int c_pid = csv->Column({"pid", "PID"});
  const int c_tid = csv->Column({"tid", "TID"});
  const int c_dispatch = csv->Column({"DispatchNs"});
  const int c_begin = csv->Column({"BeginNs", "Start_Timestamp"});
  const int c_end = csv->Column({"EndNs", "End_Timestamp"});
  const int c_fetch = csv->Column({"FETCH_SIZE"});
  const int c_write = csv->Column({"WRITE_SIZE"});
  if (c_name < 0) return InvalidArgument(path + ": line 1: no KernelName column");
  if (c_begin < 0 && c_end < 0) {
    return InvalidArgument(path + ": line 1: no BeginNs/EndNs columns (a counters-only file; "
                                  "profile with `rocprof --timestamp on` to get kernel times)");
  }
  // One of the two alone is a damaged header, not a counters-only file.
  if (c_begin < 0 || c_end < 0) {
    return InvalidArgument(fmt::format("{}: line 1: missing column {} (the header has {} but not {})", path,
                                       c_begin < 0 ? "BeginNs" : "EndNs", c_begin < 0 ? "EndNs" : "BeginNs",
                                       c_begin < 0 ? "BeginNs" : "EndNs"));
  }
  const uint16_t source = trace.AddSource(path, "rocprof_v1_csv");
  SourceFile& src = trace.sources[source];
  const NameId dispatch_name = trace.names.Intern("dispatch (rocprof DispatchNs)");
  while (true) {
    ASSIGN_OR_RETURN(bool row, csv->Next());
    if (!row) break;
    const std::string where = fmt::format("line {}", csv->line());
    const auto begin = ParseInt64(csv->Field(c_begin));
    const auto end = ParseInt64(csv->Field(c_end));
    if (!begin || !end) {
      src.issues.Add("missing or non-numeric BeginNs/EndNs", where);
      continue;
    }
    if (*end < *begin) {
      src.issues.Add("negative duration", where, fmt::format("EndNs {} < BeginNs {}", *end, *begin));
      continue;
    }
    GpuOp op;
    op.start_ns = *begin;
    op.dur_ns = *end - *begin;
    const std::string_view name = csv->Field(c_name);
    op.name = trace.names.Intern(name);
    op.kind = ClassifyRocmInternalKernel(name).value_or(GpuOpKind::kKernel);
    op.device = static_cast<int32_t>(ParseInt64(csv->Field(c_gpu)).value_or(0));
    op.stream = static_cast<int32_t>(ParseInt64(csv->Field(c_queue)).value_or(0));
    op.source = source;
    if (c_fetch >= 0 || c_write >= 0) {
      const double kb = ParseDouble(csv->Field(c_fetch)).value_or(0) + ParseDouble(csv->Field(c_write)).value_or(0);
      // FETCH_SIZE/WRITE_SIZE are KB. A value no GPU could move (negative, not finite, or past
      // int64 bytes) is a bad field, not a byte count (fuzz crash ab0f2f66).
      if (kb >= 0 && kb * 1024 < 9.0e18) {
        op.bytes = static_cast<int64_t>(kb * 1024);
      } else {
        src.issues.Add("bad FETCH_SIZE/WRITE_SIZE", where, fmt::format("{} KB", kb));
      }
    }
    const auto index = ParseInt64(csv->Field(c_index));
    const auto dispatch = c_dispatch >= 0 ? ParseInt64(csv->Field(c_dispatch)) : std::nullopt;
    if (index && dispatch) {
      op.correlation = *index;
      ApiCall a;
      a.start_ns = *dispatch;
      a.correlation = *index;
      a.name = dispatch_name;
      a.kind = ApiKind::kKernelLaunch;
      a.pid = static_cast<int32_t>(ParseInt64(csv->Field(c_pid)).value_or(0));
      a.tid = static_cast<int32_t>(ParseInt64(csv->Field(c_tid)).value_or(0));
      a.source = source;
      trace.api_calls.push_back(a);
    }
    trace.gpu_ops.push_back(op);
    ++src.events_read;
  }
  return Status::Ok();
}

// results.json (tblextr.py): a Chrome trace whose lanes are processes: pid "1" COPY, "2" CPU HIP
// API, "3" CPU HSA API, "6+gpu" GPU<n>. Exact times are in args:
//   {"ph": "X", "name": "CopyHostToDevice", "pid": "1", "tid": "0", "ts": "622109046136",
//    "dur": "92212", "args": {"BeginNs": "622109046136251", "EndNs": "622109138348698",
//    "dev-id": "4", "stream-id": "0", ...}}
//   {"ph": "X", "name": "hipMalloc", "pid": "2", "tid": "19147", ..., "args": {"BeginNs": ...}}
// Flows link a HIP call to its GPU op: {"ph": "s", "id": 0, "pid": 2, "tid": 19147, "ts": T}
// at the call's ts, and {"ph": "t", "id": 0, "pid": 1, "tid": 0, "ts": T2} at the op's ts.
int RocprofV1JsonImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  if (Has(head, "\"traceEvents\"") && Has(head, "\"BeginNs\"")) return 95;
  return 0;
}

namespace {

namespace od = simdjson::ondemand;

std::optional<int64_t> AsInt(od::value v) {
  od::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) return i;
    return std::nullopt;
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    return ParseInt64(s);
  }
  return std::nullopt;
}

struct V1Event {
  std::string ph, name;
  std::optional<int64_t> pid, tid, ts, id, begin_ns, end_ns, dev, stream;
  uint64_t offset = 0;
};

}  // namespace

Status RocprofV1JsonImporter::Import(const std::string& path, const ImportOptions& options,
                                     Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  const uint16_t source = trace.AddSource(path, "rocprof_v1_json");
  od::parser parser;
  std::string pad;
  // Per (pid lane, tid): (start µs, end µs, index) of API calls / GPU ops, for the flows, whose
  // points fall inside the event (not always at its start).
  using Spans = std::vector<std::tuple<int64_t, int64_t, uint32_t>>;
  std::map<std::pair<int64_t, int64_t>, Spans> api_at, op_at;
  std::map<int64_t, std::pair<std::optional<uint32_t>, std::optional<uint32_t>>> flows;
  // This file's calls and ops, held until its flows are resolved (which rewrites their ids).
  std::vector<ApiCall> calls;
  std::vector<GpuOp> ops;
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, bool>> flow_points;  // id,pid,tid,ts,start
  auto on_event = [&](std::string_view text, uint64_t offset) {
    SourceFile& src = trace.sources[source];
    pad.assign(text);
    pad.append(simdjson::SIMDJSON_PADDING, ' ');
    od::document doc;
    od::object obj;
    if (parser.iterate(pad.data(), text.size(), pad.size()).get(doc) || doc.get_object().get(obj)) {
      src.issues.Add("malformed event", fmt::format("byte {}", offset));
      return;
    }
    V1Event e;
    for (auto f : obj) {
      std::string_view k;
      od::value v;
      if (f.unescaped_key().get(k) || f.value().get(v)) break;
      std::string_view sv;
      if (k == "ph") {
        if (!v.get_string().get(sv)) e.ph = std::string(sv);
      } else if (k == "name") {
        if (!v.get_string().get(sv)) e.name = std::string(sv);
      } else if (k == "pid") {
        e.pid = AsInt(v);
      } else if (k == "tid") {
        e.tid = AsInt(v);
      } else if (k == "ts") {
        e.ts = AsInt(v);
      } else if (k == "id") {
        e.id = AsInt(v);
      } else if (k == "args") {
        od::object args;
        if (v.get_object().get(args)) continue;
        for (auto a : args) {
          std::string_view ak;
          od::value av;
          if (a.unescaped_key().get(ak) || a.value().get(av)) break;
          if (ak == "BeginNs") e.begin_ns = AsInt(av);
          else if (ak == "EndNs") e.end_ns = AsInt(av);
          else if (ak == "dev-id") e.dev = AsInt(av);
          else if (ak == "stream-id") e.stream = AsInt(av);
        }
      }
    }
    if ((e.ph == "s" || e.ph == "t" || e.ph == "f") && e.id && e.pid && e.tid && e.ts) {
      flow_points.emplace_back(*e.id, *e.pid, *e.tid, *e.ts, e.ph == "s");
      return;
    }
    if (e.ph != "X" || !e.pid) return;
    if (!e.begin_ns || !e.end_ns) {
      src.issues.Add("missing BeginNs/EndNs", fmt::format("byte {}", offset));
      return;
    }
    if (*e.end_ns < *e.begin_ns) {
      src.issues.Add("negative duration", fmt::format("byte {}", offset),
                     fmt::format("EndNs {} < BeginNs {}", *e.end_ns, *e.begin_ns));
      return;
    }
    ++src.events_read;
    const NameId name = trace.names.Intern(e.name);
    const int64_t lane = *e.pid;
    if (lane == 2 || lane == 3) {
      ApiCall a;
      a.start_ns = *e.begin_ns;
      a.dur_ns = *e.end_ns - *e.begin_ns;
      a.name = name;
      a.tid = static_cast<int32_t>(e.tid.value_or(0));
      a.kind = lane == 2 ? ClassifyApi(e.name) : ApiKind::kOther;
      a.source = source;
      api_at[{lane, e.tid.value_or(0)}].emplace_back(e.ts.value_or(0), e.ts.value_or(0) + a.dur_ns / 1000 + 1,
                                                     static_cast<uint32_t>(calls.size()));
      calls.push_back(a);
    } else if (lane == 1 || lane >= 6) {
      GpuOp op;
      op.start_ns = *e.begin_ns;
      op.dur_ns = *e.end_ns - *e.begin_ns;
      op.name = name;
      op.source = source;
      op.device = static_cast<int32_t>(e.dev ? *e.dev : (lane >= 6 ? (lane - 6) % 512 : 0));
      op.stream = static_cast<int32_t>(e.stream.value_or(0));
      if (lane == 1) {
        op.kind = GpuOpKind::kMemcpy;
        op.direction = ParseCopyDirection(e.name);
      } else {
        op.kind = ClassifyRocmInternalKernel(e.name).value_or(GpuOpKind::kKernel);
      }
      op_at[{lane, e.tid.value_or(0)}].emplace_back(e.ts.value_or(0), e.ts.value_or(0) + op.dur_ns / 1000 + 1,
                                                    static_cast<uint32_t>(ops.size()));
      ops.push_back(op);
    }
  };
  JsonEventScanner scanner(on_event, [](std::string_view, std::string_view) {});
  Status st = ForEachSlice(*in, options.chunk_bytes, [&](std::string_view bytes) { return scanner.Feed(bytes); });
  if (st.ok()) st = scanner.Finish();
  // Resolve flows: the start point is a HIP call, the end point a GPU op; give both the flow
  // id as their correlation.
  for (auto* m : {&api_at, &op_at}) {
    for (auto& [key, spans] : *m) std::sort(spans.begin(), spans.end());
  }
  auto containing = [](std::map<std::pair<int64_t, int64_t>, Spans>& m, int64_t pid, int64_t tid,
                       int64_t ts) -> std::optional<uint32_t> {
    auto it = m.find({pid, tid});
    if (it == m.end()) return std::nullopt;
    const Spans& v = it->second;
    auto u = std::upper_bound(v.begin(), v.end(), std::make_tuple(ts, INT64_MAX, UINT32_MAX));
    if (u == v.begin()) return std::nullopt;
    --u;
    if (ts > std::get<1>(*u)) return std::nullopt;
    return std::get<2>(*u);
  };
  for (const auto& [id, pid, tid, ts, start] : flow_points) {
    auto& slot = flows[id];
    if (start) {
      slot.first = containing(api_at, pid, tid, ts);
    } else {
      slot.second = containing(op_at, pid, tid, ts);
    }
  }
  for (const auto& [id, pair] : flows) {
    if (pair.first && pair.second) {
      // One call may start several flows (the HIP trace links two copies to one hipMemcpy):
      // they share the call's first id.
      ApiCall& call = calls[*pair.first];
      if (call.correlation == kNoCorrelation) call.correlation = id;
      ops[*pair.second].correlation = call.correlation;
    }
  }
  trace.api_calls.Append(calls);
  trace.gpu_ops.Append(ops);
  if (!st.ok()) {
    if (st.message().rfind(path, 0) != 0) st = st.WithContext(path);
    trace.sources[source].fatal_error = st.message();
  }
  return st;
}

// Stats tables (dform.py gen_table_bins; rocprofv3 generateCSV.cpp):
//   "Name","Calls","TotalDurationNs","AverageNs","Percentage"[,"MinNs","MaxNs","StdDev"]
//   "vector_add(float*, float*, float*, int)",1,3431611,3431611,100.0
// The file name says what was summed: *hip_stats* / *_api_stats* = API calls, *copy_stats* =
// copies, otherwise kernels.
int StatsCsvImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  const std::string h = HeadLine(head);
  return Has(h, "totaldurationns") && Has(h, "calls") ? 95 : 0;
}

Status StatsCsvImporter::Import(const std::string& path, const ImportOptions& options,
                                Trace& trace, std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  const int c_name = csv->Column({"Name"});
  const int c_calls = csv->Column({"Calls"});
  const int c_total = csv->Column({"TotalDurationNs"});
  const int c_min = csv->Column({"MinNs"});
  const int c_max = csv->Column({"MaxNs"});
  if (c_name < 0 || c_calls < 0 || c_total < 0) {
    return InvalidArgument(path + ": line 1: stats file without Name/Calls/TotalDurationNs");
  }
  const std::string lower = ToLower(path);
  AggregateKind kind = AggregateKind::kKernel;
  if (Has(lower, "hip_stats") || Has(lower, "hsa_stats") || Has(lower, "api_stats")) kind = AggregateKind::kApi;
  if (Has(lower, "copy_stats")) kind = AggregateKind::kCopy;
  const uint16_t source = trace.AddSource(path, "rocprof_stats");
  SourceFile& src = trace.sources[source];
  while (true) {
    ASSIGN_OR_RETURN(bool row, csv->Next());
    if (!row) break;
    const auto calls = ParseInt64(csv->Field(c_calls));
    const auto total = ParseInt64(csv->Field(c_total));
    if (!calls || !total || *calls < 0 || *total < 0) {
      src.issues.Add("bad Calls/TotalDurationNs", fmt::format("line {}", csv->line()));
      continue;
    }
    AggregateRow a;
    a.name = trace.names.Intern(csv->Field(c_name));
    a.kind = kind;
    a.calls = *calls;
    a.total_ns = *total;
    if (c_min >= 0) a.min_ns = ParseInt64(csv->Field(c_min));
    if (c_max >= 0) a.max_ns = ParseInt64(csv->Field(c_max));
    a.source = source;
    trace.aggregates.push_back(a);
    ++src.events_read;
  }
  return Status::Ok();
}

}  // namespace latdoc::trace
