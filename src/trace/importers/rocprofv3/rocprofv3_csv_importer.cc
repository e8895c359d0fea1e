#include <filesystem>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "base/strings.h"
#include "trace/importers/common/csv_reader.h"
#include "trace/model/gpu_names.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

namespace latdoc::trace {
namespace {

// The files of a set that latdoc reads, in the order it reads them.
constexpr std::string_view kStems[] = {"kernel_trace.csv", "memory_copy_trace.csv", "hip_api_trace.csv",
                                       "hsa_api_trace.csv", "marker_api_trace.csv", "rccl_api_trace.csv"};
// Files rocprofv3 writes beside them (allocations and scratch memory without a launch to link,
// counters, the agents): taken with the set, so that naming the whole folder (`run1_*.csv`)
// reads each set once. Of these, counter_collection.csv is read when the kernel trace is there
// (CounterBytes). The summary files (`*_stats.csv`) are the stats importer's.
constexpr std::string_view kCompanions[] = {"memory_allocation_trace.csv", "scratch_memory_trace.csv",
                                            "counter_collection.csv", "agent_info.csv"};

bool EndsWith(const std::string& path, std::string_view stem) {
  return path.size() >= stem.size() && path.compare(path.size() - stem.size(), stem.size(), stem) == 0;
}

// "<dir>/host/123_kernel_trace.csv" -> "<dir>/host/123_" ("" for "kernel_trace.csv"); nullopt
// when the name is not one of a set's.
std::optional<std::string> SetPrefix(const std::string& path) {
  for (std::string_view stem : kStems) {
    if (EndsWith(path, stem)) return path.substr(0, path.size() - stem.size());
  }
  for (std::string_view stem : kCompanions) {
    if (EndsWith(path, stem)) return path.substr(0, path.size() - stem.size());
  }
  return std::nullopt;
}

bool IsFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Whether the set of `prefix` has a file latdoc reads besides `path`.
bool SetHasTrace(const std::string& prefix) {
  for (std::string_view stem : kStems) {
    if (IsFile(prefix + std::string(stem))) return true;
  }
  return false;
}

// "Agent 4", "GPU-0", "4" -> 4.
int32_t AgentNumber(std::string_view s) {
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  return static_cast<int32_t>(ParseInt64(s.substr(i)).value_or(0));
}

struct Cols {
  int corr, start, end;
};

// Adds to `kb` the kilobytes each kernel dispatch moved to and from memory, by Dispatch_Id, from
// counter_collection.csv: one row per dispatch and counter (rocprofv3 --pmc FETCH_SIZE
// WRITE_SIZE). FETCH_SIZE and WRITE_SIZE are kilobytes (rocprofiler-sdk's derived counters, as
// rocprof v1's), summed per dispatch; other counters are left. Rows without a dispatch or a value
// are counted in the set's issues.
Status ReadCounterKilobytes(const std::string& path, SourceFile& src,
                            std::unordered_map<int64_t, double>& kb) {
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  const std::string file = std::filesystem::path(path).filename().string();
  const int c_dispatch = csv->Column({"Dispatch_Id"});
  const int c_name = csv->Column({"Counter_Name"});
  const int c_value = csv->Column({"Counter_Value"});
  if (c_dispatch < 0 || c_name < 0 || c_value < 0)
    return InvalidArgument(path + ": line 1: missing column Dispatch_Id, Counter_Name or Counter_Value");
  while (true) {
    ASSIGN_OR_RETURN(bool row, csv->Next());
    if (!row) break;
    const std::string_view name = csv->Field(c_name);
    if (name != "FETCH_SIZE" && name != "WRITE_SIZE") continue;
    const std::string where = fmt::format("{} line {}", file, csv->line());
    const std::optional<int64_t> dispatch = ParseInt64(csv->Field(c_dispatch));
    const std::optional<double> value = ParseDouble(csv->Field(c_value));
    if (!dispatch || !value || !(*value >= 0) || *value * 1024 >= 9.0e18) {
      src.issues.Add("bad FETCH_SIZE/WRITE_SIZE", where, std::string(csv->Field(c_value)));
      continue;
    }
    kb[*dispatch] += *value;
  }
  return Status::Ok();
}

// A host-side row: a marker (marker_api_trace.csv) as a CPU op, else an API call.
void AddHostRow(const CsvReader& csv, bool marker, std::string_view name, int64_t start,
                int64_t end, int64_t corr, int c_pid, int c_tid, uint16_t source, Trace& trace) {
  if (marker) {
    CpuOp m;
    m.start_ns = start;
    m.dur_ns = end - start;
    m.name = trace.names.Intern(name);
    m.pid = static_cast<int32_t>(ParseInt64(csv.Field(c_pid)).value_or(0));
    m.tid = static_cast<int32_t>(ParseInt64(csv.Field(c_tid)).value_or(0));
    m.kind = CpuOpKind::kMarker;
    m.source = source;
    trace.cpu_ops.push_back(m);
  } else {
    ApiCall a;
    a.start_ns = start;
    a.dur_ns = end - start;
    a.correlation = corr;
    a.name = trace.names.Intern(name);
    a.kind = ClassifyApi(name);
    a.pid = static_cast<int32_t>(ParseInt64(csv.Field(c_pid)).value_or(0));
    a.tid = static_cast<int32_t>(ParseInt64(csv.Field(c_tid)).value_or(0));
    a.source = source;
    trace.api_calls.push_back(a);
  }
}

Status ReadOne(const std::string& path, std::string_view stem, Trace& trace, uint16_t source,
               const std::unordered_map<int64_t, double>& counter_kb) {
  ASSIGN_OR_RETURN(std::unique_ptr<CsvReader> csv, CsvReader::Open(path));
  SourceFile& src = trace.sources[source];
  const std::string file = std::filesystem::path(path).filename().string();
  csv->OnBadRow([&src, &file](int64_t line, std::string_view why) {
    src.issues.Add("unbalanced quote", fmt::format("{} line {}", file, line), std::string(why));
  });
  const Cols c{csv->Column({"Correlation_Id"}), csv->Column({"Start_Timestamp"}), csv->Column({"End_Timestamp"})};
  if (c.start < 0 || c.end < 0) {
    return InvalidArgument(path + ": line 1: missing column Start_Timestamp or End_Timestamp");
  }
  const bool kernel = stem == "kernel_trace.csv";
  const bool copy = stem == "memory_copy_trace.csv";
  const bool marker = stem == "marker_api_trace.csv";
  const int c_name = kernel ? csv->Column({"Kernel_Name"}) : copy ? csv->Column({"Direction"}) : csv->Column({"Function"});
  if (c_name < 0) return InvalidArgument(path + ": line 1: missing the name column (Kernel_Name/Direction/Function)");
  const int c_agent = csv->Column({"Agent_Id"});
  const int c_stream = csv->Column({"Stream_Id", "Queue_Id"});
  const int c_src_agent = csv->Column({"Source_Agent_Id"});
  const int c_dst_agent = csv->Column({"Destination_Agent_Id"});
  const int c_pid = csv->Column({"Process_Id"});
  const int c_tid = csv->Column({"Thread_Id"});
  const int c_dispatch = csv->Column({"Dispatch_Id"});
  while (true) {
    ASSIGN_OR_RETURN(bool row, csv->Next());
    if (!row) break;
    const std::string where = fmt::format("{} line {}", file, csv->line());
    const auto start = ParseInt64(csv->Field(c.start));
    const auto end = ParseInt64(csv->Field(c.end));
    if (!start || !end) {
      src.issues.Add("missing or non-numeric timestamp", where);
      continue;
    }
    if (*end < *start) {
      src.issues.Add("negative duration", where, fmt::format("end {} < start {}", *end, *start));
      continue;
    }
    const int64_t corr = ParseInt64(csv->Field(c.corr)).value_or(kNoCorrelation);
    const std::string_view name = csv->Field(c_name);
    ++src.events_read;
    if (kernel || copy) {
      GpuOp op;
      op.start_ns = *start;
      op.dur_ns = *end - *start;
      op.correlation = corr;
      op.source = source;
      op.stream = static_cast<int32_t>(ParseInt64(csv->Field(c_stream)).value_or(0));
      if (kernel) {
        op.name = trace.names.Intern(name);
        op.kind = ClassifyRocmInternalKernel(name).value_or(GpuOpKind::kKernel);
        op.device = AgentNumber(csv->Field(c_agent));
        if (!counter_kb.empty() && c_dispatch >= 0) {
          const auto it = counter_kb.find(ParseInt64(csv->Field(c_dispatch)).value_or(-1));
          if (it != counter_kb.end()) op.bytes = static_cast<int64_t>(it->second * 1024);
        }
      } else {
        op.kind = GpuOpKind::kMemcpy;
        op.direction = ParseCopyDirection(name);
        op.name = trace.names.Intern(name.rfind("MEMORY_COPY_", 0) == 0 ? std::string(name) : "MEMORY_COPY_" + std::string(name));
        op.device = AgentNumber(csv->Field(op.direction == CopyDirection::kDtoH ? c_src_agent : c_dst_agent));
      }
      trace.gpu_ops.push_back(op);
    } else {
      AddHostRow(*csv, marker, name, *start, *end, corr, c_pid, c_tid, source, trace);
    }
  }
  return Status::Ok();
}

}  // namespace

// Headers (ROCm 7.0, generateCSV.cpp):
//   kernel_trace.csv: "Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id",
//     "Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp",...
//   memory_copy_trace.csv: "Kind","Direction","Stream_Id","Source_Agent_Id",
//     "Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp"  (no bytes)
//   hip_api_trace.csv: "Domain","Function","Process_Id","Thread_Id","Correlation_Id",
//     "Start_Timestamp","End_Timestamp"
int Rocprofv3CsvImporter::Detect(const std::string& path, std::string_view head) const {
  const std::string h = ToLower(head.substr(0, head.find('\n')));
  const bool trace_header =
      h.find("correlation_id") != std::string::npos && h.find("start_timestamp") != std::string::npos;
  const std::optional<std::string> prefix = SetPrefix(path);
  if (prefix && trace_header) return 95;
  for (std::string_view stem : kCompanions) {
    if (prefix && EndsWith(path, stem) && SetHasTrace(*prefix)) return 95;
  }
  return trace_header ? 60 : 0;
}

Status Rocprofv3CsvImporter::Import(const std::string& path, const ImportOptions& options,
                                    Trace& trace, std::vector<std::string>& consumed) const {
  (void)options;
  const std::optional<std::string> prefix = SetPrefix(path);
  if (!prefix) {
    return InvalidArgument(path + ": a rocprofv3 CSV must keep its name ending (kernel_trace.csv, "
                                  "memory_copy_trace.csv, hip_api_trace.csv, ...)");
  }
  if (!SetHasTrace(*prefix)) {
    return InvalidArgument(fmt::format(
        "{}: holds nothing latdoc reads alone (counters need the kernel trace of the same run: "
        "rocprofv3 --kernel-trace --pmc FETCH_SIZE WRITE_SIZE), and no kernel_trace.csv, "
        "memory_copy_trace.csv or *_api_trace.csv of its set ({}...) is beside it", path, *prefix));
  }
  const uint16_t source = trace.AddSource(path, "rocprofv3_csv");
  std::unordered_map<int64_t, double> counter_kb;
  if (const std::string counters = *prefix + "counter_collection.csv"; IsFile(counters)) {
    Status st = ReadCounterKilobytes(counters, trace.sources[source], counter_kb);
    if (!st.ok()) {
      trace.sources[source].fatal_error = st.message();
      return st;
    }
  }
  for (std::string_view stem : kStems) {
    const std::string file = *prefix + std::string(stem);
    if (file != path && !IsFile(file)) continue;
    Status st = ReadOne(file, stem, trace, source, counter_kb);
    if (!st.ok()) {
      trace.sources[source].fatal_error = st.message();
      return st;
    }
    if (file != path) consumed.push_back(file);
  }
  for (std::string_view stem : kCompanions) {
    const std::string file = *prefix + std::string(stem);
    if (file != path && IsFile(file)) consumed.push_back(file);
  }
  return Status::Ok();
}

}  // namespace latdoc::trace
