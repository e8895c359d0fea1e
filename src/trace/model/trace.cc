#include "trace/model/trace.h"

#include <algorithm>
#include <unordered_map>

namespace latdoc::trace {

std::string_view GpuOpKindName(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::kKernel: return "kernel";
    case GpuOpKind::kMemcpy: return "memcpy";
    case GpuOpKind::kMemset: return "memset";
  }
  return "?";
}

std::string_view CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kUnknown: return "unknown";
    case CopyDirection::kHtoD: return "HtoD";
    case CopyDirection::kDtoH: return "DtoH";
    case CopyDirection::kDtoD: return "DtoD";
    case CopyDirection::kHtoH: return "HtoH";
    case CopyDirection::kPtoP: return "PtoP";
  }
  return "?";
}

std::string_view MemKindName(MemKind k) {
  switch (k) {
    case MemKind::kUnknown: return "unknown";
    case MemKind::kPageable: return "pageable";
    case MemKind::kPinned: return "pinned";
    case MemKind::kDevice: return "device";
    case MemKind::kArray: return "array";
    case MemKind::kManaged: return "managed";
  }
  return "?";
}

std::string_view ApiKindName(ApiKind k) {
  switch (k) {
    case ApiKind::kOther: return "other";
    case ApiKind::kKernelLaunch: return "kernel_launch";
    case ApiKind::kGraphLaunch: return "graph_launch";
    case ApiKind::kMemcpy: return "memcpy";
    case ApiKind::kMemcpyAsync: return "memcpy_async";
    case ApiKind::kMemset: return "memset";
    case ApiKind::kSync: return "sync";
    case ApiKind::kMalloc: return "malloc";
    case ApiKind::kFree: return "free";
  }
  return "?";
}

int64_t ImportIssues::total() const {
  int64_t n = 0;
  for (const auto& [reason, count] : count_by_reason) n += count;
  return n;
}

void ImportIssues::Add(std::string_view reason, std::string where, std::string what) {
  ++count_by_reason[std::string(reason)];
  if (examples.size() < kMaxExamples) {
    std::string text(reason);
    if (!what.empty()) text += ": " + what;
    examples.push_back({std::move(where), std::move(text)});
  }
}

uint16_t Trace::AddSource(std::string path, std::string format) {
  SourceFile s;
  s.path = std::move(path);
  s.format = std::move(format);
  sources.push_back(std::move(s));
  return static_cast<uint16_t>(sources.size() - 1);
}

const DeviceInfo* Trace::FindDevice(uint16_t source, int32_t device) const {
  for (const auto& d : devices) {
    if (d.source == source && d.device == device) return &d;
  }
  return nullptr;
}

void Trace::Finalize() {
  auto by_start = [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns < b.dur_ns;
  };
  std::stable_sort(gpu_ops.begin(), gpu_ops.end(), by_start);
  std::stable_sort(api_calls.begin(), api_calls.end(), by_start);
  std::stable_sort(cpu_ops.begin(), cpu_ops.end(), [](const CpuOp& a, const CpuOp& b) {
    if (a.source != b.source) return a.source < b.source;
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    return a.start_ns < b.start_ns;
  });
  // (source, correlation) -> first API call with it. Correlation ids are < 2^48 in every
  // format seen; the source takes the top 16 bits.
  std::unordered_map<uint64_t, uint32_t> by_corr;
  by_corr.reserve(api_calls.size());
  for (uint32_t i = 0; i < api_calls.size(); ++i) {
    const ApiCall& a = api_calls[i];
    if (a.correlation == kNoCorrelation) continue;
    const uint64_t key = (uint64_t{a.source} << 48) ^ static_cast<uint64_t>(a.correlation);
    by_corr.emplace(key, i);
  }
  for (GpuOp& op : gpu_ops) {
    op.api = kNoLink;
    if (op.correlation == kNoCorrelation) continue;
    const uint64_t key = (uint64_t{op.source} << 48) ^ static_cast<uint64_t>(op.correlation);
    auto it = by_corr.find(key);
    if (it != by_corr.end()) op.api = it->second;
  }
}

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string_view StripVersionSuffix(std::string_view name) {
  const size_t u = name.rfind("_v");
  if (u == std::string_view::npos || u + 2 >= name.size()) return name;
  for (size_t i = u + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, u);
}

}  // namespace

ApiKind ClassifyApi(std::string_view raw) {
  const std::string_view name = StripVersionSuffix(raw);
  const bool cuda = StartsWith(name, "cuda") || StartsWith(name, "cu");
  const bool hip = StartsWith(name, "hip");
  if (!cuda && !hip) return ApiKind::kOther;
  if (Contains(name, "GraphLaunch")) return ApiKind::kGraphLaunch;
  if (Contains(name, "LaunchKernel") || Contains(name, "LaunchCooperativeKernel") ||
      name == "cuLaunchKernelEx" || name == "hipModuleLaunchKernel") {
    return ApiKind::kKernelLaunch;
  }
  if (Contains(name, "Synchronize") || Contains(name, "StreamWaitEvent")) return ApiKind::kSync;
  if (Contains(name, "Memcpy") || Contains(name, "MemcpyHtoD") || Contains(name, "MemcpyDtoH")) {
    return Contains(name, "Async") ? ApiKind::kMemcpyAsync : ApiKind::kMemcpy;
  }
  if (Contains(name, "Memset")) return ApiKind::kMemset;
  if (Contains(name, "Malloc") || Contains(name, "MemAlloc") || Contains(name, "HostRegister") ||
      Contains(name, "HostAlloc")) {
    return ApiKind::kMalloc;
  }
  if (Contains(name, "Free") || Contains(name, "HostUnregister")) return ApiKind::kFree;
  return ApiKind::kOther;
}

}  // namespace latdoc::trace
