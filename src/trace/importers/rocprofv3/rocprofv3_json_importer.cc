#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "trace/importers/common/gpu_names.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

namespace latdoc::trace {
namespace {

namespace od = simdjson::ondemand;

// Shape (rocprofv3-schema.json; trace-formats.md 3.3):
//   {"rocprofiler-sdk-tool": [ {
//      "metadata": {"pid": 123, ...},
//      "agents": [{"id": {"handle": 1}, "type": 2, "name": "gfx942", "product_name": "..."}],
//      "kernel_symbols": [{"kernel_id": 1, "kernel_name": "...", "demangled_kernel_name": "..."}],
//      "strings": {"buffer_records": [{"kind": "HIP_RUNTIME_API", "operations": ["...", ...]}]},
//      "buffer_records": {
//        "kernel_dispatch": [{"correlation_id": {"internal": 7}, "start_timestamp": 10,
//            "end_timestamp": 20, "thread_id": 5, "dispatch_info": {"agent_id": {"handle": 1},
//            "queue_id": {"handle": 2}, "kernel_id": 1}, "stream_id": {"handle": 0}}],
//        "memory_copy": [{"operation": 2, "correlation_id": {"internal": 8}, "start_timestamp": ..,
//            "end_timestamp": .., "dst_agent_id": {"handle": 1}, "src_agent_id": {"handle": 0},
//            "bytes": 4096}],
//        "hip_api": [{"kind": 5, "operation": 42, "correlation_id": {"internal": 7},
//            "start_timestamp": .., "end_timestamp": .., "thread_id": 5}], ... } } ] }
// API names are strings.buffer_records[kind].operations[operation].

int64_t GetInt(od::object& o, std::string_view key, int64_t dflt) {
  int64_t v;
  if (o.find_field_unordered(key).get_int64().get(v)) return dflt;
  return v;
}

// Sets `out` when `v` is an integer; leaves it alone otherwise.
void ReadInt(od::value v, int64_t& out) {
  int64_t x;
  if (!v.get_int64().get(x)) out = x;
}

int64_t Handle(od::value v) {
  od::object o;
  if (v.get_object().get(o)) return -1;
  return GetInt(o, "handle", -1);
}

struct PendingApi {
  uint32_t index;
  int64_t kind, op;
};

struct PendingKernel {
  uint32_t index;
  int64_t kernel_id;
};

}  // namespace

int Rocprofv3JsonImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  return head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos ? 100 : 0;
}

Status Rocprofv3JsonImporter::Import(const std::string& path, const ImportOptions& options,
                                     Trace& trace, std::vector<std::string>& consumed) const {
  (void)options;
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  ASSIGN_OR_RETURN(std::string text, ReadAll(*in));
  simdjson::padded_string json(text);
  text.clear();
  text.shrink_to_fit();
  od::parser parser;
  od::document doc;
  auto bad = [&](std::string_view what) {
    return InvalidArgument(fmt::format("{}: {}", path, what));
  };
  auto why = [](simdjson::error_code e) {  // simdjson's message, without its full stop
    std::string_view m = simdjson::error_message(e);
    if (!m.empty() && m.back() == '.') m.remove_suffix(1);
    return m;
  };
  // simdjson refuses a document whose root is not closed before it reads anything, so a file
  // cut short loses all its records: said as such, with the size it was cut at.
  auto refused = [&](simdjson::error_code e, std::string_view what) {
    if (e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || e == simdjson::UNCLOSED_STRING) {
      return bad(fmt::format("byte {}: the document is cut short ({}); nothing was read",
                             json.size(), why(e)));
    }
    const char* at = nullptr;
    if (!doc.current_location().get(at) && at >= json.data() && at <= json.data() + json.size()) {
      return bad(fmt::format("byte {}: {} ({})", at - json.data(), what, why(e)));
    }
    return bad(fmt::format("{} ({})", what, why(e)));
  };
  if (const simdjson::error_code e = parser.iterate(json).get(doc)) {
    return e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || e == simdjson::UNCLOSED_STRING
               ? refused(e, "")
               : bad(fmt::format("not JSON ({})", why(e)));
  }
  od::array tools;
  if (const simdjson::error_code e = doc.find_field("rocprofiler-sdk-tool").get_array().get(tools)) {
    return refused(e, "no \"rocprofiler-sdk-tool\" array");
  }
  for (auto tool_v : tools) {
    od::object tool;
    if (tool_v.get_object().get(tool)) return bad("rocprofiler-sdk-tool element is not an object");
    const uint16_t source = trace.AddSource(path, "rocprofv3_json");
    SourceFile& src = trace.sources[source];
    std::unordered_map<int64_t, int32_t> gpu_of_handle;
    std::unordered_map<int64_t, std::string> kernel_names;
    std::vector<std::vector<std::string>> op_names;
    std::vector<PendingApi> apis;
    std::vector<PendingKernel> kernels;
    int64_t pid = 0;
    // The records are read first and named last; a damaged document still gets its names
    // resolved for what was read before the damage (an op must never keep an unset name).
    const Status read = [&]() -> Status {
      for (auto field : tool) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return bad("bad key");
        od::value v;
        if (field.value().get(v)) return bad("bad value");
        if (key == "metadata") {
          od::object m;
          if (!v.get_object().get(m)) pid = GetInt(m, "pid", 0);
        } else if (key == "agents") {
          od::array agents;
          if (v.get_array().get(agents)) continue;
          int32_t gpu_index = 0;
          for (auto a : agents) {
            od::object ao;
            if (a.get_object().get(ao)) continue;
            int64_t handle = -1, type = 0;
            std::string name, product;
            for (auto af : ao) {
              std::string_view k;
              od::value av;
              if (af.unescaped_key().get(k) || af.value().get(av)) break;
              std::string_view s;
              if (k == "id") handle = Handle(av);
              else if (k == "type") ReadInt(av, type);
              else if (k == "name" && !av.get_string().get(s)) name = std::string(s);
              else if (k == "product_name" && !av.get_string().get(s)) product = std::string(s);
            }
            if (type != 2) continue;
            gpu_of_handle[handle] = gpu_index;
            trace.devices.push_back({source, gpu_index, product, name});
            ++gpu_index;
          }
        } else if (key == "kernel_symbols") {
          od::array syms;
          if (v.get_array().get(syms)) continue;
          int64_t position = 0;
          for (auto s : syms) {
            od::object so;
            if (s.get_object().get(so)) {
              ++position;
              continue;
            }
            int64_t id = position++;
            std::string name, demangled;
            for (auto sf : so) {
              std::string_view k, str;
              od::value sv;
              if (sf.unescaped_key().get(k) || sf.value().get(sv)) break;
              if (k == "kernel_id") ReadInt(sv, id);
              else if (k == "kernel_name" && !sv.get_string().get(str)) name = std::string(str);
              else if (k == "demangled_kernel_name" && !sv.get_string().get(str)) demangled = std::string(str);
            }
            kernel_names[id] = demangled.empty() ? name : demangled;
          }
        } else if (key == "strings") {
          od::object so;
          if (v.get_object().get(so)) continue;
          od::array br;
          if (so.find_field_unordered("buffer_records").get_array().get(br)) continue;
          for (auto kind_v : br) {
            op_names.emplace_back();
            od::object ko;
            if (kind_v.get_object().get(ko)) continue;
            od::array ops;
            if (ko.find_field_unordered("operations").get_array().get(ops)) continue;
            for (auto o : ops) {
              std::string_view s;
              op_names.back().emplace_back(o.get_string().get(s) ? "" : std::string(s));
            }
          }
        } else if (key == "buffer_records") {
          od::object recs;
          if (v.get_object().get(recs)) continue;
          for (auto rf : recs) {
            std::string_view domain;
            od::value rv;
            if (rf.unescaped_key().get(domain) || rf.value().get(rv)) break;
            const bool is_kernel = domain == "kernel_dispatch";
            const bool is_copy = domain == "memory_copy";
            const bool is_api = domain == "hip_api" || domain == "hsa_api" || domain == "rccl_api";
            if (!is_kernel && !is_copy && !is_api) continue;
            od::array arr;
            if (rv.get_array().get(arr)) continue;
            int64_t row = 0;
            for (auto rec_v : arr) {
              ++row;
              od::object rec;
              if (rec_v.get_object().get(rec)) continue;
              int64_t start = -1, end = -1, corr = kNoCorrelation, tid = 0, kind = -1, op = -1;
              int64_t agent = -1, dst = -1, srca = -1, stream = 0, kernel_id = -1, bytes = -1;
              for (auto f : rec) {
                std::string_view k;
                od::value fv;
                if (f.unescaped_key().get(k) || f.value().get(fv)) break;
                if (k == "start_timestamp") ReadInt(fv, start);
                else if (k == "end_timestamp") ReadInt(fv, end);
                else if (k == "thread_id") ReadInt(fv, tid);
                else if (k == "kind") ReadInt(fv, kind);
                else if (k == "operation") ReadInt(fv, op);
                else if (k == "bytes") ReadInt(fv, bytes);
                else if (k == "stream_id") stream = Handle(fv);
                else if (k == "dst_agent_id") dst = Handle(fv);
                else if (k == "src_agent_id") srca = Handle(fv);
                else if (k == "correlation_id") {
                  od::object co;
                  if (!fv.get_object().get(co)) corr = GetInt(co, "internal", kNoCorrelation);
                } else if (k == "dispatch_info") {
                  od::object di;
                  if (fv.get_object().get(di)) continue;
                  for (auto df : di) {
                    std::string_view dk;
                    od::value dv;
                    if (df.unescaped_key().get(dk) || df.value().get(dv)) break;
                    if (dk == "agent_id") agent = Handle(dv);
                    else if (dk == "kernel_id") ReadInt(dv, kernel_id);
                  }
                }
              }
              const std::string where = fmt::format("buffer_records.{}[{}]", domain, row - 1);
              if (start < 0 || end < 0) {
                src.issues.Add("missing start/end timestamp", where);
                continue;
              }
              if (end < start) {
                src.issues.Add("negative duration", where, fmt::format("end {} < start {}", end, start));
                continue;
              }
              ++src.events_read;
              if (is_api) {
                ApiCall a;
                a.start_ns = start;
                a.dur_ns = end - start;
                a.correlation = corr;
                a.pid = static_cast<int32_t>(pid);
                a.tid = static_cast<int32_t>(tid);
                a.source = source;
                apis.push_back({static_cast<uint32_t>(trace.api_calls.size()), kind, op});
                trace.api_calls.push_back(a);
                continue;
              }
              GpuOp g;
              g.start_ns = start;
              g.dur_ns = end - start;
              g.correlation = corr;
              g.stream = static_cast<int32_t>(stream);
              g.source = source;
              if (is_kernel) {
                auto it = gpu_of_handle.find(agent);
                g.device = it != gpu_of_handle.end() ? it->second : static_cast<int32_t>(agent);
                kernels.push_back({static_cast<uint32_t>(trace.gpu_ops.size()), kernel_id});
              } else {
                g.kind = GpuOpKind::kMemcpy;
                g.bytes = bytes;
                static constexpr CopyDirection kOps[] = {CopyDirection::kUnknown, CopyDirection::kHtoH,
                                                         CopyDirection::kHtoD, CopyDirection::kDtoH,
                                                         CopyDirection::kDtoD};
                g.direction = op >= 0 && op <= 4 ? kOps[op] : CopyDirection::kUnknown;
                const int64_t gpu_agent = g.direction == CopyDirection::kDtoH ? srca : dst;
                auto it = gpu_of_handle.find(gpu_agent);
                g.device = it != gpu_of_handle.end() ? it->second : 0;
                g.name = trace.names.Intern(fmt::format("MEMORY_COPY_{}", CopyDirectionName(g.direction)));
              }
              trace.gpu_ops.push_back(g);
            }
          }
        }
      }
      return Status::Ok();
    }();
    // Names are resolved last: "strings" and "kernel_symbols" may follow the records.
    for (const PendingApi& p : apis) {
      std::string name = fmt::format("api kind {} op {}", p.kind, p.op);
      if (p.kind >= 0 && static_cast<size_t>(p.kind) < op_names.size() && p.op >= 0 &&
          static_cast<size_t>(p.op) < op_names[p.kind].size() && !op_names[p.kind][p.op].empty()) {
        name = op_names[p.kind][p.op];
      }
      trace.api_calls[p.index].name = trace.names.Intern(name);
      trace.api_calls[p.index].kind = ClassifyApi(name);
    }
    for (const PendingKernel& k : kernels) {
      auto it = kernel_names.find(k.kernel_id);
      const std::string name = it != kernel_names.end() ? it->second : fmt::format("kernel_id {}", k.kernel_id);
      GpuOp& op = trace.gpu_ops[k.index];
      op.name = trace.names.Intern(name);
      op.kind = ClassifyRocmInternalKernel(name).value_or(GpuOpKind::kKernel);
    }
    RETURN_IF_ERROR(read);
  }
  return Status::Ok();
}

}  // namespace latdoc::trace
