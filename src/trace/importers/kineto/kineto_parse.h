// The Kineto importer's parse of one document or of a part of it (internal to
// importers/kineto/: kineto_importer.cc reads a whole document with it, kineto_split.cc the
// parts of a split one). KinetoReader stores each event into a Trace; KinetoParse joins it to
// the JsonEventScanner that feeds it.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/status.h"
#include "trace/model/gpu_names.h"
#include "trace/importers/common/op_work.h"
#include "trace/importers/kineto/json_event_scanner.h"
#include "trace/importers/kineto/kineto_event.h"
#include "trace/importers/kineto/kineto_importer.h"
#include "trace/model/trace.h"

namespace latdoc::trace::kineto {
namespace od = simdjson::ondemand;

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
inline void ParseMemcpyName(std::string_view name, CopyDirection& dir, MemKind& src, MemKind& dst) {
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
    } else if (key == "distributedInfo") {
      distributed_info_.assign(value);
    } else if (key == "baseTimeNanoseconds") {
      int64_t ns = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ns);
      if (ec == std::errc() && end == value.data() + value.size() && ns > 0) {
        source().wall_clock_base_ns = ns;
      } else {
        source().issues.Add("bad baseTimeNanoseconds", "top level", "not a positive integer");
      }
    }
  }

  // Sample (PyTorch's profiler, torch/profiler/profiler.py _get_distributed_info):
  //   "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_count": 1,
  //                       "pg_config": [...], "nccl_version": "2.21.5"}
  void FinishDistributedInfo() {
    if (distributed_info_.empty()) return;
    simdjson::padded_string json(distributed_info_);
    od::parser parser;
    od::document doc;
    od::object o;
    if (parser.iterate(json).get(doc) || doc.get_object().get(o)) {
      source().issues.Add("bad distributedInfo", "top level", "not an object");
      return;
    }
    for (auto field : o) {
      std::string_view k;
      od::value v;
      if (field.unescaped_key().get(k) || field.value().get(v)) break;
      if (k == "rank" || k == "world_size") {
        const std::optional<int64_t> i = JsonIntValue(v);
        if (!i || *i < 0 || *i > INT32_MAX) {
          source().issues.Add("bad distributedInfo", "top level", fmt::format("{} is not a rank number", k));
          continue;
        }
        (k == "rank" ? source().rank : source().world_size) = static_cast<int32_t>(*i);
      }
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

  // Takes over what a reader of a later part of the same document saw at the top level.
  void MergeTopLevelFrom(const KinetoReader& later) {
    if (!later.device_props_.empty()) device_props_ = later.device_props_;
    if (!later.distributed_info_.empty()) distributed_info_ = later.distributed_info_;
    rocm_ = rocm_ || later.rocm_;
  }

 private:
  void Bad(std::string_view reason, uint64_t offset) {
    source().issues.Add(reason, fmt::format("byte {}", offset));
  }

  // Long on purpose: one switch over the event's category, one case per table it fills.
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
        op.external_id = f.external_id.value_or(-1);
        op.kind = gpu_kind;
        if (gpu_kind == GpuOpKind::kKernel) {
          // ROCm 7.1: runtime copies and fills appear as kernels (TraceLens/util.py,
          // _ROCM_LEGACY_MEMCPY_NAMES).
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
        if (!f.input_dims.empty() && f.external_id) {
          if (std::optional<OpWork> w = EstimateOpWork(f.name, f.input_dims, f.input_types)) {
            w->external_id = *f.external_id;
            w->op = name;
            w->source = source_;
            trace_.op_work.push_back(*w);
          }
        }
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
  std::string distributed_info_;
  bool rocm_ = false;
};

// One parse of a Kineto document, or of a part of it: the reader that stores events into a
// Trace and the scanner that feeds it, with the one-pass reader tried first for each event.
class KinetoParse {
 public:
  KinetoParse(Trace& trace, uint16_t source)
      : reader_(trace, source),
        scanner_([this](std::string_view text, uint64_t offset) { reader_.OnEvent(text, offset); },
                 [this](std::string_view key, std::string_view value) { reader_.OnValue(key, value); }) {
    scanner_.SetFastElement([this](const char* b, size_t n, uint64_t offset, size_t* length) {
      KinetoEventFields f;
      switch (ReadKinetoEventFast(b, n, f, length)) {
        case FastRead::kDone:
          reader_.OnFastEvent(f, offset);
          return JsonEventScanner::FastResult::kDone;
        case FastRead::kNeedMore:
          return JsonEventScanner::FastResult::kNeedMore;
        case FastRead::kBail:
          break;
      }
      return JsonEventScanner::FastResult::kDecline;
    });
    scanner_.KeepValue("deviceProperties");
    scanner_.KeepValue("hip_runtime_version");
    scanner_.KeepValue("roctracer_version");
    scanner_.KeepValue("distributedInfo");
    scanner_.KeepValue("baseTimeNanoseconds");
  }
  KinetoParse(const KinetoParse&) = delete;
  KinetoParse& operator=(const KinetoParse&) = delete;

  Status Feed(std::string_view bytes) {
    fed_ += bytes.size();
    return scanner_.Feed(bytes);
  }
  KinetoReader& reader() { return reader_; }
  JsonEventScanner& scanner() { return scanner_; }
  uint64_t fed() const { return fed_; }

 private:
  KinetoReader reader_;
  JsonEventScanner scanner_;
  uint64_t fed_ = 0;
};

}  // namespace latdoc::trace::kineto
