#include <array>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <simdjson.h>

#include "base/file_util.h"
#include "base/read_ahead.h"
#include "trace/model/gpu_names.h"
#include "trace/importers/common/json_walker.h"
#include "trace/importers/rocprofv3/rocprofv3_importer.h"

namespace latdoc::trace {
namespace {

namespace od = simdjson::ondemand;

// Shape (rocprofiler-sdk source/docs/rocprofv3-schema.json, ROCm 7.0):
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
//
// The walker descends to the records and hands each over whole; the small sections that name
// them (metadata, agents, strings, each kernel symbol) are kept whole too. A record whose
// names are known when it is read is named at once; one read before them waits for them until
// its tool element (one process) ends.

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


// One record's fields, as the three domains name them.
struct Record {
  int64_t start = -1, end = -1, corr = kNoCorrelation, tid = 0, kind = -1, op = -1;
  int64_t agent = -1, dst = -1, src = -1, stream = 0, kernel_id = -1, bytes = -1;
};

simdjson::error_code ReadRecord(od::object& rec, Record& r) {
  for (auto f : rec) {
    std::string_view k;
    od::value fv;
    if (auto e = f.unescaped_key().get(k)) return e;
    if (auto e = f.value().get(fv)) return e;
    if (k == "start_timestamp") ReadInt(fv, r.start);
    else if (k == "end_timestamp") ReadInt(fv, r.end);
    else if (k == "thread_id") ReadInt(fv, r.tid);
    else if (k == "kind") ReadInt(fv, r.kind);
    else if (k == "operation") ReadInt(fv, r.op);
    else if (k == "bytes") ReadInt(fv, r.bytes);
    else if (k == "stream_id") r.stream = Handle(fv);
    else if (k == "dst_agent_id") r.dst = Handle(fv);
    else if (k == "src_agent_id") r.src = Handle(fv);
    else if (k == "correlation_id") {
      od::object co;
      if (!fv.get_object().get(co)) r.corr = GetInt(co, "internal", kNoCorrelation);
    } else if (k == "dispatch_info") {
      od::object di;
      if (fv.get_object().get(di)) continue;
      for (auto df : di) {
        std::string_view dk;
        od::value dv;
        if (df.unescaped_key().get(dk) || df.value().get(dv)) break;
        if (dk == "agent_id") r.agent = Handle(dv);
        else if (dk == "kernel_id") ReadInt(dv, r.kernel_id);
      }
    }
  }
  return simdjson::SUCCESS;
}

enum class Domain : uint8_t { kNone, kKernel, kCopy, kApi };

Domain DomainOf(std::string_view key) {
  if (key == "kernel_dispatch") return Domain::kKernel;
  if (key == "memory_copy") return Domain::kCopy;
  if (key == "hip_api" || key == "hsa_api" || key == "rccl_api") return Domain::kApi;
  return Domain::kNone;
}

// One element of "rocprofiler-sdk-tool".
struct ToolState {
  uint16_t source = 0;
  std::optional<int64_t> pid;
  size_t first_api = 0;                              // its first call in trace.api_calls
  bool agents_read = false, strings_read = false;
  std::unordered_map<int64_t, int32_t> gpu_of_handle;
  std::unordered_map<int64_t, std::string> kernel_names;
  std::vector<std::vector<std::string>> op_names;    // [kind][operation]
  // Names interned once per (kind, operation) and per kernel id.
  std::map<std::pair<int64_t, int64_t>, std::pair<NameId, ApiKind>> api_names;
  std::unordered_map<int64_t, std::pair<NameId, GpuOpKind>> kernel_ids;
  // Records read before what names them: (index in the trace's table, kind/op or kernel id
  // or agent handle), in index order; in spill tables, as a file may put its names last.
  struct Waiting {
    uint32_t index;
    int64_t a, b;
  };
  explicit ToolState(size_t block_rows)
      : apis(block_rows), kernels(block_rows), kernel_devices(block_rows), copy_devices(block_rows) {}
  SpillTable<Waiting> apis, kernels, kernel_devices, copy_devices;
};

// Reads one rocprofv3 JSON document into a Trace, fed by a JsonWalker: one source per element
// of "rocprofiler-sdk-tool".
class Reader {
 public:
  Reader(const std::string& path, Trace& trace) : path_(path), trace_(trace) {}

  JsonWalker::Action Decide(const JsonWalker::Path& p, char first, JsonWalker& walker);
  void Keep(const JsonWalker::Path& p, std::string_view text);
  // Names what waits for names, for the tool element being read.
  void FinishTool();

  bool saw_tools() const { return saw_tools_; }
  int64_t records() const { return records_; }
  SourceFile* source() { return tool_ ? &trace_.sources[tool_->source] : nullptr; }

 private:

  Status Bad(std::string_view what) const { return InvalidArgument(fmt::format("{}: {}", path_, what)); }
  void ReadAgents(od::value v);
  void ReadStrings(od::value v);
  void ReadSymbol(od::object& so, int64_t position);
  void AddRecord(Domain domain, const Record& r, const std::string& where_domain, int64_t row);
  std::pair<NameId, ApiKind> ApiName(int64_t kind, int64_t op);
  std::pair<NameId, GpuOpKind> KernelName(int64_t kernel_id);
  // A parsed value of `text` (copied with simdjson's padding), or the error.
  simdjson::error_code Parse(std::string_view text, od::value& out);

  const std::string& path_;
  Trace& trace_;
  std::optional<ToolState> tool_;
  bool saw_tools_ = false;
  int64_t records_ = 0;
  std::array<NameId, 6> copy_names_{};
  std::array<bool, 6> copy_named_{};
  od::parser parser_;
  od::document doc_;
  std::string scratch_;
};

simdjson::error_code Reader::Parse(std::string_view text, od::value& out) {
  scratch_.assign(text);
  scratch_.append(simdjson::SIMDJSON_PADDING, ' ');
  if (auto e = parser_.iterate(simdjson::padded_string_view(scratch_.data(), text.size(), scratch_.size())).get(doc_)) {
    return e;
  }
  return doc_.get_value().get(out);
}

JsonWalker::Action Reader::Decide(const JsonWalker::Path& p, char first, JsonWalker& walker) {
  using A = JsonWalker::Action;
  switch (p.size()) {
    case 0:
      if (first != '{') walker.Stop(Bad("not a rocprofv3 JSON document: the root is not an object"));
      return A::kDescend;
    case 1:
      if (p[0].key != "rocprofiler-sdk-tool") return A::kSkip;
      if (first != '[') walker.Stop(Bad("\"rocprofiler-sdk-tool\" is not an array"));
      saw_tools_ = true;
      return A::kDescend;
    case 2:
      if (first != '{') {
        walker.Stop(Bad(fmt::format("rocprofiler-sdk-tool[{}] is not an object", p[1].index)));
        return A::kSkip;
      }
      FinishTool();
      tool_.emplace(trace_.BlockRowsFor<ToolState::Waiting>());
      tool_->source = trace_.AddSource(path_, "rocprofv3_json");
      tool_->first_api = trace_.api_calls.size();
      return A::kDescend;
    case 3: {
      const std::string& k = p[2].key;
      if (k == "metadata" || k == "agents" || k == "strings") return A::kKeep;
      if (k == "kernel_symbols") return first == '[' ? A::kDescend : A::kSkip;
      if (k == "buffer_records") return first == '{' ? A::kDescend : A::kSkip;
      return A::kSkip;
    }
    case 4:
      if (p[2].key == "kernel_symbols") return A::kKeep;
      if (p[2].key == "buffer_records" && DomainOf(p[3].key) != Domain::kNone && first == '[') return A::kDescend;
      return A::kSkip;
    case 5:
      return p[2].key == "buffer_records" ? A::kKeep : A::kSkip;
    default:
      return A::kSkip;
  }
}

void Reader::Keep(const JsonWalker::Path& p, std::string_view text) {
  const std::string& section = p[2].key;
  // simdjson reads a scalar document only as a scalar: what is not a container is no record
  // (and no section latdoc reads).
  const bool container = !text.empty() && (text[0] == '{' || text[0] == '[');
  if (p.size() == 5) {
    const std::string where = fmt::format("buffer_records.{}[{}]", p[3].key, p[4].index);
    od::value v;
    od::object rec;
    if (!container || text[0] != '{') {
      source()->issues.Add("record is not an object", where);
      return;
    }
    Record r;
    simdjson::error_code e = Parse(text, v);
    if (!e) e = v.get_object().get(rec);
    if (!e) e = ReadRecord(rec, r);
    if (e) {
      source()->issues.Add("bad record", where, simdjson::error_message(e));
      return;
    }
    AddRecord(DomainOf(p[3].key), r, p[3].key, p[4].index);
    return;
  }
  if (!container) return;
  od::value v;
  const simdjson::error_code e = Parse(text, v);
  if (e) {
    source()->issues.Add("bad section", JsonWalker::PathString(p), simdjson::error_message(e));
    return;
  }
  if (section == "metadata") {
    od::object m;
    if (!v.get_object().get(m)) tool_->pid = GetInt(m, "pid", 0);
  } else if (section == "agents") {
    ReadAgents(v);
  } else if (section == "strings") {
    ReadStrings(v);
  } else if (section == "kernel_symbols") {
    od::object so;
    if (!v.get_object().get(so)) ReadSymbol(so, p[3].index);
  }
}

void Reader::ReadAgents(od::value v) {
  tool_->agents_read = true;
  od::array agents;
  if (v.get_array().get(agents)) return;
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
    tool_->gpu_of_handle[handle] = gpu_index;
    trace_.devices.push_back({tool_->source, gpu_index, product, name});
    ++gpu_index;
  }
}

void Reader::ReadStrings(od::value v) {
  tool_->strings_read = true;
  od::object so;
  if (v.get_object().get(so)) return;
  od::array br;
  if (so.find_field_unordered("buffer_records").get_array().get(br)) return;
  for (auto kind_v : br) {
    tool_->op_names.emplace_back();
    od::object ko;
    if (kind_v.get_object().get(ko)) continue;
    od::array ops;
    if (ko.find_field_unordered("operations").get_array().get(ops)) continue;
    for (auto o : ops) {
      std::string_view s;
      tool_->op_names.back().emplace_back(o.get_string().get(s) ? "" : std::string(s));
    }
  }
}

void Reader::ReadSymbol(od::object& so, int64_t position) {
  int64_t id = position;
  std::string name, demangled;
  for (auto sf : so) {
    std::string_view k, str;
    od::value sv;
    if (sf.unescaped_key().get(k) || sf.value().get(sv)) break;
    if (k == "kernel_id") ReadInt(sv, id);
    else if (k == "kernel_name" && !sv.get_string().get(str)) name = std::string(str);
    else if (k == "demangled_kernel_name" && !sv.get_string().get(str)) demangled = std::string(str);
  }
  tool_->kernel_names[id] = demangled.empty() ? name : demangled;
}

std::pair<NameId, ApiKind> Reader::ApiName(int64_t kind, int64_t op) {
  auto [it, inserted] = tool_->api_names.try_emplace({kind, op});
  if (inserted) {
    const std::vector<std::vector<std::string>>& names = tool_->op_names;
    std::string name = fmt::format("api kind {} op {}", kind, op);
    if (kind >= 0 && static_cast<size_t>(kind) < names.size() && op >= 0 &&
        static_cast<size_t>(op) < names[kind].size() && !names[kind][op].empty()) {
      name = names[kind][op];
    }
    it->second = {trace_.names.Intern(name), ClassifyApi(name)};
  }
  return it->second;
}

std::pair<NameId, GpuOpKind> Reader::KernelName(int64_t kernel_id) {
  auto [it, inserted] = tool_->kernel_ids.try_emplace(kernel_id);
  if (inserted) {
    auto n = tool_->kernel_names.find(kernel_id);
    const std::string name = n != tool_->kernel_names.end() ? n->second : fmt::format("kernel_id {}", kernel_id);
    it->second = {trace_.names.Intern(name), ClassifyRocmInternalKernel(name).value_or(GpuOpKind::kKernel)};
  }
  return it->second;
}

void Reader::AddRecord(Domain domain, const Record& r, const std::string& where_domain, int64_t row) {
  SourceFile& src = trace_.sources[tool_->source];
  if (r.start < 0 || r.end < 0) {
    src.issues.Add("missing start/end timestamp", fmt::format("buffer_records.{}[{}]", where_domain, row));
    return;
  }
  if (r.end < r.start) {
    src.issues.Add("negative duration", fmt::format("buffer_records.{}[{}]", where_domain, row),
                   fmt::format("end {} < start {}", r.end, r.start));
    return;
  }
  ++src.events_read;
  ++records_;
  if (domain == Domain::kApi) {
    ApiCall a;
    a.start_ns = r.start;
    a.dur_ns = r.end - r.start;
    a.correlation = r.corr;
    a.pid = static_cast<int32_t>(tool_->pid.value_or(0));
    a.tid = static_cast<int32_t>(r.tid);
    a.source = tool_->source;
    // Names are final once the strings are read: until then a call waits for its name.
    if (tool_->strings_read) {
      std::tie(a.name, a.kind) = ApiName(r.kind, r.op);
    } else {
      tool_->apis.push_back({static_cast<uint32_t>(trace_.api_calls.size()), r.kind, r.op});
    }
    trace_.api_calls.push_back(a);
    return;
  }
  GpuOp g;
  g.start_ns = r.start;
  g.dur_ns = r.end - r.start;
  g.correlation = r.corr;
  g.stream = static_cast<int32_t>(r.stream);
  g.source = tool_->source;
  const auto index = static_cast<uint32_t>(trace_.gpu_ops.size());
  if (domain == Domain::kKernel) {
    // A kernel symbol may still follow; its name is final only when its id was seen.
    if (tool_->kernel_names.count(r.kernel_id) != 0) {
      std::tie(g.name, g.kind) = KernelName(r.kernel_id);
    } else {
      tool_->kernels.push_back({index, r.kernel_id, 0});
    }
    if (tool_->agents_read) {
      auto it = tool_->gpu_of_handle.find(r.agent);
      g.device = it != tool_->gpu_of_handle.end() ? it->second : static_cast<int32_t>(r.agent);
    } else {
      tool_->kernel_devices.push_back({index, r.agent, 0});
    }
  } else {
    g.kind = GpuOpKind::kMemcpy;
    g.bytes = r.bytes;
    static constexpr CopyDirection kOps[] = {CopyDirection::kUnknown, CopyDirection::kHtoH, CopyDirection::kHtoD,
                                             CopyDirection::kDtoH, CopyDirection::kDtoD};
    g.direction = r.op >= 0 && r.op <= 4 ? kOps[r.op] : CopyDirection::kUnknown;
    const auto d = static_cast<size_t>(g.direction);
    if (!copy_named_[d]) {
      copy_names_[d] = trace_.names.Intern(fmt::format("MEMORY_COPY_{}", CopyDirectionName(g.direction)));
      copy_named_[d] = true;
    }
    g.name = copy_names_[d];
    const int64_t gpu_agent = g.direction == CopyDirection::kDtoH ? r.src : r.dst;
    if (tool_->agents_read) {
      auto it = tool_->gpu_of_handle.find(gpu_agent);
      g.device = it != tool_->gpu_of_handle.end() ? it->second : 0;
    } else {
      tool_->copy_devices.push_back({index, gpu_agent, 0});
    }
  }
  trace_.gpu_ops.push_back(g);
}

// Calls fn(row, w) for each row of `table` that a Waiting of `list` (in index order, as they
// were added) names: one pass over the rows from the first named to the last.
template <typename T, typename Fn>
void ResolveWaiting(SpillTable<T>& table, const SpillTable<ToolState::Waiting>& list, Fn fn) {
  if (list.empty()) return;
  spill::RunReader<ToolState::Waiting> w(list, 0, list.size(), 4096);
  size_t at = w.head().index;
  table.Modify(at, size_t{list.back().index} + 1, [&](T& row) {
    if (!w.done() && w.head().index == at) {
      fn(row, w.head());
      w.Next();
    }
    ++at;
  });
}

void Reader::FinishTool() {
  if (!tool_) return;
  ToolState& t = *tool_;
  ResolveWaiting(trace_.api_calls, t.apis, [&](ApiCall& a, const ToolState::Waiting& w) {
    std::tie(a.name, a.kind) = ApiName(w.a, w.b);
  });
  ResolveWaiting(trace_.gpu_ops, t.kernels, [&](GpuOp& op, const ToolState::Waiting& w) {
    std::tie(op.name, op.kind) = KernelName(w.a);
  });
  ResolveWaiting(trace_.gpu_ops, t.kernel_devices, [&](GpuOp& op, const ToolState::Waiting& w) {
    auto it = t.gpu_of_handle.find(w.a);
    op.device = it != t.gpu_of_handle.end() ? it->second : static_cast<int32_t>(w.a);
  });
  ResolveWaiting(trace_.gpu_ops, t.copy_devices, [&](GpuOp& op, const ToolState::Waiting& w) {
    auto it = t.gpu_of_handle.find(w.a);
    op.device = it != t.gpu_of_handle.end() ? it->second : 0;
  });
  // Calls read before the metadata take its pid.
  if (t.pid) {
    trace_.api_calls.Modify(t.first_api, trace_.api_calls.size(),
                            [&](ApiCall& a) { a.pid = static_cast<int32_t>(*t.pid); });
  }
  tool_.reset();
}

}  // namespace

int Rocprofv3JsonImporter::Detect(const std::string& path, std::string_view head) const {
  (void)path;
  return head.find("\"rocprofiler-sdk-tool\"") != std::string_view::npos ? 100 : 0;
}

Status Rocprofv3JsonImporter::Import(const std::string& path, const ImportOptions& options,
                                     Trace& trace, std::vector<std::string>& consumed) const {
  (void)consumed;
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  in = ReadAhead(std::move(in), options.chunk_bytes);
  Reader reader(path, trace);
  JsonWalker* w = nullptr;
  JsonWalker walker([&](const JsonWalker::Path& p, char first) { return reader.Decide(p, first, *w); },
                    [&](const JsonWalker::Path& p, std::string_view text, uint64_t) { reader.Keep(p, text); });
  w = &walker;
  Status st = ForEachSlice(*in, options.chunk_bytes, [&](std::string_view bytes) { return walker.Feed(bytes); });
  if (st.ok()) st = walker.Finish();
  SourceFile* src = reader.source();
  reader.FinishTool();
  if (st.ok() && !reader.saw_tools()) {
    return InvalidArgument(fmt::format("{}: no \"rocprofiler-sdk-tool\" array", path));
  }
  if (st.ok()) return st;
  // What was read before the break is kept; the caller reports the file as damaged.
  if (st.message().rfind(path, 0) != 0) {
    const int64_t n = reader.records();
    st = Status(st.code(), fmt::format("{}: {}; {} record{} before it {} kept", path, st.message(), n,
                                       n == 1 ? "" : "s", n == 1 ? "was" : "were"));
  }
  if (src != nullptr && reader.records() > 0) {
    src->issues.Add(st.code() == StatusCode::kDataLoss ? "file cut short" : "document damaged",
                    fmt::format("byte {}", walker.error_offset()), st.message());
  }
  return st;
}

}  // namespace latdoc::trace
