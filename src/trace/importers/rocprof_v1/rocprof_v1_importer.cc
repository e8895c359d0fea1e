#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "base/strings.h"
#include "trace/importers/common/csv_reader.h"
#include "trace/model/gpu_names.h"
#include "trace/importers/kineto/json_event_scanner.h"

namespace latdoc::trace {
namespace {

std::string HeadLine(std::string_view head) {
  return ToLower(head.substr(0, head.find('\n')));
}

bool Has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// The header names the kernel and both its times (BeginNs and EndNs, or rocprofv3's names).
Status CheckHeader(const std::string& path, int c_name, int c_begin, int c_end) {
  if (c_name < 0) return InvalidArgument(path + ": line 1: no KernelName column");
  if (c_begin < 0 && c_end < 0) {
    return InvalidArgument(path +
                           ": line 1: no BeginNs/EndNs columns (a counters-only file; "
                           "profile with `rocprof --timestamp on` to get kernel times)");
  }
  // One of the two alone is a damaged header, not a counters-only file.
  if (c_begin < 0 || c_end < 0) {
    return InvalidArgument(
        fmt::format("{}: line 1: missing column {} (the header has {} but not {})", path,
                    c_begin < 0 ? "BeginNs" : "EndNs", c_begin < 0 ? "EndNs" : "BeginNs",
                    c_begin < 0 ? "BeginNs" : "EndNs"));
  }
  return Status::Ok();
}

}  // namespace

// results.csv (ROCm/rocprofiler@7fa8139 bin/tblextr.py dump_csv), header by name, quoted or not:
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
  RETURN_IF_ERROR(CheckHeader(path, c_name, c_begin, c_end));
  const uint16_t source = trace.AddSource(path, "rocprof_v1_csv");
  SourceFile& src = trace.sources[source];
  csv->OnBadRow([&src](int64_t line, std::string_view why) {
    src.issues.Add("unbalanced quote", fmt::format("line {}", line), std::string(why));
  });
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

// The flows of rocprof v1's HIP trace link a call to the GPU op it started: a start point ("s")
// inside the call's event on its (pid lane, tid) row and an end point ("t" or "f") inside the
// op's. A point belongs to the last event on its row, ordered by (start, end, position), that
// starts at or before it, if the point is not past that event's end (µs, rounded up). The last
// point of each kind given for a flow id counts. The flows are resolved with sorts and merges
// over spill tables, so memory stays flat however long the trace.
struct Span {       // an event on its row, in the trace's µs
  int64_t lane = 0, tid = 0, start_us = 0, end_us = 0;
  uint32_t index = 0;  // the event's position among the file's calls, or its ops
};
struct FlowPoint {
  int64_t id = 0, lane = 0, tid = 0, ts = 0;
  uint64_t seq = 0;    // position among the file's points
};
struct PointHit {   // the event a point fell in (kNoEvent: none)
  int64_t id = 0;
  uint64_t seq = 0;
  uint32_t index = 0;
};
struct Flow {       // a flow with both ends in events
  int64_t id = 0;
  uint32_t call = 0, op = 0;
};
struct Assign {     // correlation `value` for event `index`, from flow `id`
  uint32_t index = 0;
  int64_t id = 0, value = 0;
};
constexpr uint32_t kNoEvent = UINT32_MAX;

// For each point (in any order), the event it falls in, by one merge of both sorted by row.
SpillTable<PointHit> HitPoints(SpillTable<Span>&& spans, SpillTable<FlowPoint>&& points,
                               size_t block_rows) {
  spans = SortTable(std::move(spans), [](const Span& a, const Span& b) {
    return std::tie(a.lane, a.tid, a.start_us, a.end_us, a.index) <
           std::tie(b.lane, b.tid, b.start_us, b.end_us, b.index);
  });
  points = SortTable(std::move(points), [](const FlowPoint& a, const FlowPoint& b) {
    return std::tie(a.lane, a.tid, a.ts, a.seq) < std::tie(b.lane, b.tid, b.ts, b.seq);
  });
  SpillTable<PointHit> hits(block_rows);
  spill::RunReader<Span> span(spans, 0, spans.size(), 4096);
  std::optional<Span> last;  // the last span at or before the point, on its row or an earlier one
  points.ForEach([&](const FlowPoint& p) {
    for (; !span.done(); span.Next()) {
      const Span& s = span.head();
      if (std::tie(s.lane, s.tid, s.start_us) > std::tie(p.lane, p.tid, p.ts)) break;
      last = s;
    }
    const bool hit = last && last->lane == p.lane && last->tid == p.tid && p.ts <= last->end_us;
    hits.push_back(PointHit{p.id, p.seq, hit ? last->index : kNoEvent});
  });
  return hits;
}

// The last hit of each flow id (the last point given counts), by id.
SpillTable<PointHit> LastHitPerId(SpillTable<PointHit>&& hits, size_t block_rows) {
  hits = SortTable(std::move(hits), [](const PointHit& a, const PointHit& b) {
    return std::tie(a.id, a.seq) < std::tie(b.id, b.seq);
  });
  SpillTable<PointHit> out(block_rows);
  std::optional<PointHit> pending;
  hits.ForEach([&](const PointHit& h) {
    if (pending && pending->id != h.id) out.push_back(*pending);
    pending = h;
  });
  if (pending) out.push_back(*pending);
  return out;
}

// Gives linked calls and ops their correlation ids: a call takes the smallest id of its flows
// (the HIP trace links two copies to one hipMemcpy), and an op the id its call took, from its
// flow of the largest id when it ends several. Calls are trace.api_calls[first_call...], ops
// trace.gpu_ops[first_op...].
void LinkFlows(SpillTable<Span>&& call_spans, SpillTable<FlowPoint>&& starts,
               SpillTable<Span>&& op_spans, SpillTable<FlowPoint>&& ends, size_t first_call,
               size_t first_op, Trace& trace) {
  const size_t block = trace.BlockRowsFor<PointHit>();
  SpillTable<PointHit> from = LastHitPerId(HitPoints(std::move(call_spans), std::move(starts), block), block);
  SpillTable<PointHit> to = LastHitPerId(HitPoints(std::move(op_spans), std::move(ends), block), block);
  // Flows by id with both ends in an event: a merge of the two lists by id.
  SpillTable<Flow> flows(trace.BlockRowsFor<Flow>());
  spill::RunReader<PointHit> end(to, 0, to.size(), 4096);
  from.ForEach([&](const PointHit& s) {
    while (!end.done() && end.head().id < s.id) end.Next();
    if (end.done() || end.head().id != s.id) return;
    if (s.index != kNoEvent && end.head().index != kNoEvent) {
      flows.push_back(Flow{s.id, s.index, end.head().index});
    }
  });
  from.clear();
  to.clear();
  flows = SortTable(std::move(flows), [](const Flow& a, const Flow& b) {
    return std::tie(a.call, a.id) < std::tie(b.call, b.id);
  });
  SpillTable<Assign> calls(trace.BlockRowsFor<Assign>()), ops(trace.BlockRowsFor<Assign>());
  std::optional<Assign> call;  // the current call's first flow
  flows.ForEach([&](const Flow& f) {
    if (!call || call->index != f.call) {
      call = Assign{f.call, f.id, f.id};
      calls.push_back(*call);
    }
    ops.push_back(Assign{f.op, f.id, call->value});
  });
  flows.clear();
  ops = SortTable(std::move(ops), [](const Assign& a, const Assign& b) {
    return std::tie(a.index, a.id) < std::tie(b.index, b.id);
  });
  // Applies `assign` (by index; of several for one index, the last) to rows first + index.
  auto apply = [](const SpillTable<Assign>& assign, size_t first, auto& table) {
    if (assign.empty()) return;
    spill::RunReader<Assign> a(assign, 0, assign.size(), 4096);
    uint32_t index = assign.front().index;  // of the row Modify hands over next
    table.Modify(first + index, first + assign.back().index + 1, [&](auto& row) {
      for (; !a.done() && a.head().index == index; a.Next()) row.correlation = a.head().value;
      ++index;
    });
  };
  apply(calls, first_call, trace.api_calls);
  apply(ops, first_op, trace.gpu_ops);
}

// One event's fields (the args' BeginNs, EndNs, dev-id and stream-id among them); a field
// that cannot be read ends the reading.
V1Event ReadV1Event(od::object& obj) {
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
        if (ak == "BeginNs")
          e.begin_ns = AsInt(av);
        else if (ak == "EndNs")
          e.end_ns = AsInt(av);
        else if (ak == "dev-id")
          e.dev = AsInt(av);
        else if (ak == "stream-id")
          e.stream = AsInt(av);
      }
    }
  }
  return e;
}

// The GPU op of a complete event on lane 1 (a copy) or 6 and up (a kernel; the device from
// dev-id, else from the lane).
GpuOp V1GpuOp(const V1Event& e, int64_t lane, NameId name, uint16_t source) {
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
  return op;
}

}  // namespace

Status RocprofV1JsonImporter::Import(const std::string& path, const ImportOptions& options,
                                     Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  const uint16_t source = trace.AddSource(path, "rocprof_v1_json");
  od::parser parser;
  std::string pad;
  // The file's calls and ops go to the trace as they come; their spans and the flow points wait
  // in spill tables for LinkFlows.
  const size_t first_call = trace.api_calls.size(), first_op = trace.gpu_ops.size();
  uint32_t calls = 0, ops = 0;
  SpillTable<Span> call_spans(trace.BlockRowsFor<Span>()), op_spans(trace.BlockRowsFor<Span>());
  SpillTable<FlowPoint> starts(trace.BlockRowsFor<FlowPoint>()), ends(trace.BlockRowsFor<FlowPoint>());
  uint64_t points = 0;
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
    const V1Event e = ReadV1Event(obj);
    if ((e.ph == "s" || e.ph == "t" || e.ph == "f") && e.id && e.pid && e.tid && e.ts) {
      (e.ph == "s" ? starts : ends).push_back(FlowPoint{*e.id, *e.pid, *e.tid, *e.ts, points++});
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
      call_spans.push_back(Span{lane, e.tid.value_or(0), e.ts.value_or(0),
                                e.ts.value_or(0) + a.dur_ns / 1000 + 1, calls++});
      trace.api_calls.push_back(a);
    } else if (lane == 1 || lane >= 6) {
      const GpuOp op = V1GpuOp(e, lane, name, source);
      op_spans.push_back(Span{lane, e.tid.value_or(0), e.ts.value_or(0),
                              e.ts.value_or(0) + op.dur_ns / 1000 + 1, ops++});
      trace.gpu_ops.push_back(op);
    }
  };
  JsonEventScanner scanner(on_event, [](std::string_view, std::string_view) {});
  Status st = ForEachSlice(*in, options.chunk_bytes, [&](std::string_view bytes) { return scanner.Feed(bytes); });
  if (st.ok()) st = scanner.Finish();
  LinkFlows(std::move(call_spans), std::move(starts), std::move(op_spans), std::move(ends),
            first_call, first_op, trace);
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
  csv->OnBadRow([&src](int64_t line, std::string_view why) {
    src.issues.Add("unbalanced quote", fmt::format("line {}", line), std::string(why));
  });
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
