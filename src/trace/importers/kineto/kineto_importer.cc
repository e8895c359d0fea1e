#include "trace/importers/kineto/kineto_importer.h"

#include <cmath>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "base/read_ahead.h"
#include "trace/importers/kineto/json_event_scanner.h"
#include "trace/importers/kineto/kineto_event.h"
#include "trace/importers/common/gpu_names.h"

namespace latdoc::trace {
namespace od = simdjson::ondemand;

std::optional<int64_t> ParseMicrosToNs(std::string_view t) {
  if (t.empty()) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (t[0] == '-') {
    neg = true;
    i = 1;
  }
  int64_t whole = 0;
  size_t digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    if (whole > (INT64_MAX / 10 - 10) / 1000) return std::nullopt;
    whole = whole * 10 + (t[i] - '0');
    ++i;
    ++digits;
  }
  int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    int n = 0;
    bool round_up = false;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 3) {
        frac_ns = frac_ns * 10 + (t[i] - '0');
      } else if (n == 3) {
        round_up = t[i] >= '5';
      }
      ++n;
      ++i;
      ++digits;
    }
    for (int k = n; k < 3; ++k) frac_ns *= 10;
    if (round_up) ++frac_ns;
  }
  if (digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    // Rare (exponent form): fall back to double arithmetic.
    char* end = nullptr;
    const std::string s(t);
    const double us = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || !std::isfinite(us)) return std::nullopt;
    return static_cast<int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  const int64_t ns = whole * 1000 + frac_ns;
  return neg ? -ns : ns;
}

namespace {

// Sample events (Kineto, CUDA; ROCm differs as noted):
//   {"ph": "X", "cat": "kernel", "name": "void at::native::...(...)", "pid": 0, "tid": 7,
//    "ts": 5139252745624.543, "dur": 2.272, "args": {"External id": 17, "device": 0,
//    "stream": 7, "correlation": 38, "grid": [1, 1, 1], "block": [128, 1, 1], ...}}
//   {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
//    "tid": 7, "ts": ..., "dur": 0.736, "args": {"device": 0, "stream": 7,
//    "correlation": 15, "bytes": 1024, "memory bandwidth (GB/s)": 1.39}}
//      ROCm 6: "Memcpy HtoD (Host -> Device)", args {"kind": "HtoD"} and no bytes.
//   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 488, "tid": 488,
//    "ts": ..., "dur": 11.4, "args": {"External id": 7, "cbid": 317, "correlation": 13}}
//      ROCm: the HIP runtime also uses cat "cuda_runtime" ("hipLaunchKernel").
//   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 488, "tid": 488, ...}
// Fields: ts/dur are microseconds with 3 decimals (ns resolution); pid/tid of GPU events are
// the device and stream; "correlation" links a runtime call to the GPU work it launched.
// Flow ("s"/"f"), metadata ("M"), instant ("i") and counter ("C") events are not needed: the
// correlation is in args.
// "Memcpy HtoD (Pageable -> Device)" -> direction and memory kinds.
void ParseMemcpyName(std::string_view name, CopyDirection& dir, MemKind& src, MemKind& dst) {
  auto kind_of = [](std::string_view s) {
    if (s == "Pageable") return MemKind::kPageable;
    if (s == "Pinned") return MemKind::kPinned;
    if (s == "Device") return MemKind::kDevice;
    if (s == "Array") return MemKind::kArray;
    if (s == "Managed") return MemKind::kManaged;
    return MemKind::kUnknown;
  };
  dir = ParseCopyDirection(name);
  const size_t open = name.find('(');
  const size_t arrow = name.find(" -> ");
  const size_t close = name.rfind(')');
  if (open != std::string_view::npos && arrow != std::string_view::npos &&
      close != std::string_view::npos && open < arrow && arrow < close) {
    src = kind_of(name.substr(open + 1, arrow - open - 1));
    dst = kind_of(name.substr(arrow + 4, close - arrow - 4));
  }
}

class KinetoReader {
 public:
  KinetoReader(Trace& trace, uint16_t source) : trace_(trace), source_(source) {}

  void OnEvent(std::string_view text, uint64_t offset) {
    // Fast path: Kineto writes "ph" first; flows, instants, counters and metadata are not
    // needed, so skip them without parsing (about a third of a typical trace).
    if (text.size() > 12 && text.substr(0, 8) == "{\"ph\": \"" && text[9] == '"' && text[8] != 'X') {
      return;
    }
    KinetoEventFields f;
    if (const char* why = general_.Parse(text, f)) {
      Bad(why, offset);
      return;
    }
    Store(f, offset);
  }

  void OnValue(std::string_view key, std::string_view value) {
    if (key == "deviceProperties") {
      device_props_.assign(value);
    } else if (key == "hip_runtime_version" || key == "roctracer_version") {
      rocm_ = true;
    }
  }

  void FinishDevices() {
    if (device_props_.empty()) return;
    simdjson::padded_string json(device_props_);
    od::parser parser;
    od::document doc;
    if (parser.iterate(json).get(doc)) return;
    od::array arr;
    if (doc.get_array().get(arr)) return;
    for (auto elem : arr) {
      od::object o;
      if (elem.get_object().get(o)) continue;
      DeviceInfo d;
      d.source = source_;
      int64_t major = -1, minor = -1;
      for (auto field : o) {
        std::string_view k;
        if (field.unescaped_key().get(k)) break;
        od::value v;
        if (field.value().get(v)) break;
        if (k == "id") {
          if (auto i = JsonIntValue(v)) d.device = static_cast<int32_t>(*i);
        } else if (k == "name") {
          std::string_view s;
          if (!v.get_string().get(s)) d.name = std::string(s);
        } else if (k == "computeMajor") {
          major = JsonIntValue(v).value_or(-1);
        } else if (k == "computeMinor") {
          minor = JsonIntValue(v).value_or(-1);
        }
      }
      const bool amd = rocm_ || d.name.find("AMD") != std::string::npos;
      d.arch = ArchFromComputeCapability(amd, major, minor);
      trace_.devices.push_back(std::move(d));
    }
  }

  SourceFile& source() { return trace_.sources[source_]; }

  // An event the one-pass reader (kineto_event.h) has read.
  void OnFastEvent(const KinetoEventFields& f, uint64_t offset) { Store(f, offset); }

 private:
  void Bad(std::string_view reason, uint64_t offset) {
    source().issues.Add(reason, fmt::format("byte {}", offset));
  }

  void Store(const KinetoEventFields& f, uint64_t offset) {
    if (f.ph != "X") return;  // flows, metadata, instants, counters: not needed
    enum class Target { kNone, kGpu, kApi, kCpu } target = Target::kNone;
    GpuOpKind gpu_kind = GpuOpKind::kKernel;
    CpuOpKind cpu_kind = CpuOpKind::kOp;
    if (f.cat == "kernel" || f.cat == "Kernel") {
      target = Target::kGpu;
    } else if (f.cat == "gpu_memcpy" || f.cat == "Memcpy") {
      target = Target::kGpu;
      gpu_kind = GpuOpKind::kMemcpy;
    } else if (f.cat == "gpu_memset" || f.cat == "Memset") {
      target = Target::kGpu;
      gpu_kind = GpuOpKind::kMemset;
    } else if (f.cat == "cuda_runtime" || f.cat == "cuda_driver" || f.cat == "Runtime" ||
               f.cat == "Driver") {
      target = Target::kApi;
    } else if (f.cat == "cpu_op" || f.cat == "Operator") {
      target = Target::kCpu;
    } else if (f.cat == "user_annotation") {
      target = Target::kCpu;
      cpu_kind = CpuOpKind::kAnnotation;
    } else if (f.cat == "python_function") {
      target = Target::kCpu;
      cpu_kind = CpuOpKind::kPython;
    }
    if (target == Target::kNone) return;
    if (!f.ts_ns) {
      Bad("missing or non-numeric ts", offset);
      return;
    }
    const int64_t dur = f.dur_ns.value_or(0);
    if (dur < 0) {
      source().issues.Add("negative duration", fmt::format("byte {}", offset),
                          fmt::format("dur {} ns", dur));
      return;
    }
    const NameId name = trace_.names.Intern(f.name);
    ++source().events_read;
    switch (target) {
      case Target::kGpu: {
        GpuOp op;
        op.start_ns = *f.ts_ns;
        op.dur_ns = dur;
        op.name = name;
        op.source = source_;
        op.correlation = f.correlation.value_or(kNoCorrelation);
        op.device = static_cast<int32_t>(f.device ? *f.device : f.pid.value_or(0));
        op.stream = static_cast<int32_t>(f.stream ? *f.stream : f.tid.value_or(0));
        op.bytes = f.bytes.value_or(-1);
        op.kind = gpu_kind;
        if (gpu_kind == GpuOpKind::kKernel) {
          // ROCm 7.1: runtime copies and fills appear as kernels (trace-formats.md 5.4).
          op.kind = ClassifyRocmInternalKernel(f.name).value_or(GpuOpKind::kKernel);
          if (op.kind == GpuOpKind::kMemcpy) op.direction = ParseCopyDirection(f.name);
        } else if (gpu_kind == GpuOpKind::kMemcpy) {
          ParseMemcpyName(f.name, op.direction, op.src_kind, op.dst_kind);
          if (op.direction == CopyDirection::kUnknown && !f.kind_arg.empty()) {
            op.direction = ParseCopyDirection(f.kind_arg);
          }
        }
        trace_.gpu_ops.push_back(op);
        break;
      }
      case Target::kApi: {
        ApiCall a;
        a.start_ns = *f.ts_ns;
        a.dur_ns = dur;
        a.name = name;
        a.source = source_;
        a.correlation = f.correlation.value_or(kNoCorrelation);
        a.pid = static_cast<int32_t>(f.pid.value_or(0));
        a.tid = static_cast<int32_t>(f.tid.value_or(0));
        a.kind = ClassifyApi(f.name);
        trace_.api_calls.push_back(a);
        break;
      }
      case Target::kCpu: {
        CpuOp c;
        c.start_ns = *f.ts_ns;
        c.dur_ns = dur;
        c.name = name;
        c.source = source_;
        c.pid = static_cast<int32_t>(f.pid.value_or(0));
        c.tid = static_cast<int32_t>(f.tid.value_or(0));
        c.kind = cpu_kind;
        trace_.cpu_ops.push_back(c);
        break;
      }
      case Target::kNone:
        break;
    }
  }

  Trace& trace_;
  uint16_t source_;
  KinetoEventParser general_;
  std::string device_props_;
  bool rocm_ = false;
};

}  // namespace

int KinetoImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  size_t i = 0;
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' ||
                             head[i] == '\t')) {
    ++i;
  }
  if (i >= head.size() || (head[i] != '{' && head[i] != '[')) return 0;
  if (head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos) return 0;
  if (head.find("\"traceEvents\"") != std::string_view::npos) return 90;
  if (head.find("\"ph\"") != std::string_view::npos) return 60;
  return 10;
}

Status KinetoImporter::Import(const std::string& path, const ImportOptions& options,
                              Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  // Read (and inflate) on a second core while this one parses. Even a plain file gains: the
  // kernel's page-cache copy was a sixth of a single-threaded import.
  in = ReadAhead(std::move(in), options.chunk_bytes);
  const uint16_t source = trace.AddSource(path, "kineto");
  KinetoReader reader(trace, source);
  JsonEventScanner scanner(
      [&](std::string_view text, uint64_t offset) { reader.OnEvent(text, offset); },
      [&](std::string_view key, std::string_view value) { reader.OnValue(key, value); });
  scanner.SetFastElement([&](const char* b, size_t n, uint64_t offset, size_t* length) {
    KinetoEventFields f;
    switch (ReadKinetoEventFast(b, n, f, length)) {
      case FastRead::kDone:
        reader.OnFastEvent(f, offset);
        return JsonEventScanner::FastResult::kDone;
      case FastRead::kNeedMore:
        return JsonEventScanner::FastResult::kNeedMore;
      case FastRead::kBail:
        break;
    }
    return JsonEventScanner::FastResult::kDecline;
  });
  scanner.KeepValue("deviceProperties");
  scanner.KeepValue("hip_runtime_version");
  scanner.KeepValue("roctracer_version");
  std::string chunk(options.chunk_bytes, '\0');
  Status st;
  uint64_t decompressed = 0;
  while (true) {
    StatusOr<size_t> n = in->Read(chunk.data(), chunk.size());
    if (!n.ok()) {
      st = n.status();
      break;
    }
    if (*n == 0) {
      st = scanner.Finish();
      break;
    }
    decompressed += *n;
    st = scanner.Feed(std::string_view(chunk.data(), *n));
    if (!st.ok()) break;
  }
  reader.FinishDevices();
  if (st.ok() && !scanner.saw_trace_events()) {
    st = InvalidArgument("no \"traceEvents\" array: not a Chrome/Kineto trace");
  }
  if (!st.ok()) {
    // Keep what was read before the break; the caller reports the file as damaged.
    // Stream errors already name the path; scanner errors do not.
    if (st.message().rfind(path, 0) != 0) st = st.WithContext(path);
    reader.source().fatal_error = st.message();
    if (decompressed > 0 && scanner.events() > 0) {
      reader.source().issues.Add("file cut short", fmt::format("byte {}", decompressed),
                                 st.message());
    }
  }
  return st;
}

}  // namespace latdoc::trace
