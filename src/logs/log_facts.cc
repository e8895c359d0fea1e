#include "logs/log_facts.h"

#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace latdoc::logs {
namespace {

using nlohmann::json;

constexpr double kNsPerSecD = 1e9;

// Text taken from the log (paths, messages, endpoints) as valid UTF-8, which JSON requires:
// a log can hold any bytes, and an example cut at a byte limit can split a character.
std::string U(std::string_view s) { return ToValidUtf8(s); }
std::vector<std::string> UAll(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(ToValidUtf8(s));
  return out;
}

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json OptI(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
// Seconds with millisecond precision, so golden files stay stable.
double Sec(int64_t ns) { return std::round(static_cast<double>(ns) / 1e6) / 1e3; }
double Round2(double v) { return std::round(v * 100) / 100; }

json StretchJson(const std::optional<Stretch>& s) {
  if (!s) return nullptr;
  return {{"start", s->start_label}, {"end", s->end_label}, {"dur_s", Sec(s->dur_ns)},
          {"peak", Round2(s->peak)},  {"points", s->points}};
}

json SeriesJson(const EngineSeries& s, int64_t t0_ns) {
  json t = json::array(), pt = json::array(), gt = json::array(), run = json::array(),
       wait = json::array(), kv = json::array(), hit = json::array(), pre = json::array();
  for (size_t i = 0; i < s.size(); ++i) {
    t.push_back(Sec(s.t_ns[i] - t0_ns));
    pt.push_back(Round2(s.prompt_tps[i]));
    gt.push_back(Round2(s.gen_tps[i]));
    run.push_back(s.running[i]);
    wait.push_back(s.waiting[i]);
    kv.push_back(Round2(s.kv_pct[i]));
    hit.push_back(s.prefix_hit_pct[i] ? json(Round2(*s.prefix_hit_pct[i])) : json(nullptr));
    pre.push_back(s.preemptions[i]);
  }
  return {{"decimation", s.decimation}, {"t_s", std::move(t)},         {"prompt_tps", std::move(pt)},
          {"gen_tps", std::move(gt)},   {"running", std::move(run)},   {"waiting", std::move(wait)},
          {"kv_pct", std::move(kv)},    {"prefix_hit_pct", std::move(hit)},
          {"preemptions", std::move(pre)}};
}

// "volume": lines and bytes of each kind, and their rates over the log's span.
json VolumeJson(const LogFacts& f) {
  double dur_s = f.duration_ns ? static_cast<double>(*f.duration_ns) / kNsPerSecD : 0;
  json volume = json::object();
  for (size_t k = 0; k < kLineKinds; ++k) {
    const KindVolume& v = f.volume[k];
    json e = {{"lines", v.lines}, {"bytes", v.bytes}, {"peak_lines_per_s", v.peak_lines_per_s}};
    if (dur_s > 0) {
      e["lines_per_s"] = Round2(static_cast<double>(v.lines) / dur_s);
      e["bytes_per_s"] = Round2(static_cast<double>(v.bytes) / dur_s);
    } else {
      e["lines_per_s"] = nullptr;
      e["bytes_per_s"] = nullptr;
    }
    volume[std::string(LineKindName(static_cast<LineKind>(k)))] = std::move(e);
  }
  return volume;
}

// "volume_series": each kind's lines per bucket.
json VolumeSeriesJson(const LogFacts& f) {
  json vs = {{"bucket_s", Sec(f.volume_bucket_ns)}};
  for (size_t k = 0; k < kLineKinds; ++k) {
    json col = json::array();
    for (const auto& b : f.volume_series) col.push_back(b[k]);
    vs[std::string(LineKindName(static_cast<LineKind>(k)))] = std::move(col);
  }
  return vs;
}

// "requests": request-log and access-log counts, by status class and endpoint.
json RequestsJson(const LogFacts& f) {
  json endpoints = json::array();
  for (const auto& e : f.endpoints) {
    endpoints.push_back({{"endpoint", U(e.endpoint)}, {"count", e.count}, {"errors_5xx", e.errors}});
  }
  return {{"received_request_lines", f.received_request_lines},
          {"added_request_lines", f.added_request_lines},
          {"finished_request_lines", f.finished_request_lines},
          {"aborted_request_lines", f.aborted_request_lines},
          {"generated_response_lines", f.generated_response_lines},
          {"request_detail_lines", f.request_detail_lines},
          {"access_lines", f.access_lines},
          {"uvicorn_access_lines", f.uvicorn_access_lines},
          {"access_status",
           {{"1xx", f.access_status_classes[1]},
            {"2xx", f.access_status_classes[2]},
            {"3xx", f.access_status_classes[3]},
            {"4xx", f.access_status_classes[4]},
            {"5xx", f.access_status_classes[5]}}},
          {"endpoints", std::move(endpoints)}};
}

// One element of "engines": an engine's stats lines, stretches, gaps and series.
json EngineJson(const EngineFacts& e, int64_t t0) {
  json gaps = json::array();
  for (const auto& g : e.gaps) {
    gaps.push_back({{"start", g.start_label},
                    {"end", g.end_label},
                    {"gap_s", Sec(g.gap_ns)},
                    {"missing_s", Sec(g.missing_ns)},
                    {"running_before", g.running_before},
                    {"waiting_before", g.waiting_before},
                    {"lines_between", g.lines_between},
                    {"open_ended", g.open_ended}});
  }
  json out = {
      {"engine", e.engine},
      {"format", e.v0 ? "v0" : "v1"},
      {"stats_lines", e.stats_lines},
      {"interval_s", Opt(e.interval_s)},
      {"interval_assumed", e.interval_assumed},
      {"busy_s", Sec(e.busy_ns)},
      {"queued_s", Sec(e.queued_ns)},
      {"queued_points", e.queued_points},
      {"queue_stretches", e.queue_stretches},
      {"longest_queue", StretchJson(e.longest_queue)},
      {"kv_high_s", Sec(e.kv_high_ns)},
      {"kv_high_points", e.kv_high_points},
      {"kv_high_stretches", e.kv_high_stretches},
      {"longest_kv_high", StretchJson(e.longest_kv_high)},
      {"saturation_points", e.saturation_points},
      {"first_saturation", e.saturation_points ? json(e.first_saturation_label) : json(nullptr)},
      {"preemptions", e.preemptions},
      {"preemption_points", e.preemption_points},
      {"first_preemption", e.preemption_points ? json(e.first_preemption_label) : json(nullptr)},
      {"max_running", e.max_running},
      {"max_waiting", e.max_waiting},
      {"peak_kv_pct", Round2(e.peak_kv_pct)},
      {"peak_gen_tps", Round2(e.peak_gen_tps)},
      {"peak_prompt_tps", Round2(e.peak_prompt_tps)},
      {"mean_gen_tps_busy",
       e.mean_gen_tps_busy ? json(Round2(*e.mean_gen_tps_busy)) : json(nullptr)},
      {"last_prefix_hit_pct", Opt(e.last_prefix_hit_pct)},
      {"max_swapped", OptI(e.max_swapped)},
      {"gaps_total", e.gaps_total},
      {"gaps_missing_s", Sec(e.gaps_missing_ns)},
      {"gaps", std::move(gaps)},
      {"series", SeriesJson(e.series, t0)},
  };
  if (e.longest_no_progress) {  // only when there was one: older outputs stay as they were
    const Stretch& st = *e.longest_no_progress;
    out["no_progress"] = {
        {"start", st.start_label},      {"end", st.end_label},
        {"duration_s", Sec(st.dur_ns)}, {"points", st.points},
        {"max_running", st.peak},       {"lines_before", UAll(e.lines_before_no_progress)}};
  }
  return out;
}

// "messages": warning and error lines grouped by template.
json MessagesJson(const LogFacts& f) {
  json msgs = json::array();
  for (const auto& m : f.messages) {
    msgs.push_back({{"level", m.level},
                    {"template", U(m.tmpl)},
                    {"count", m.count},
                    {"first", m.first_ns ? json(m.first_label) : json(nullptr)},
                    {"last", m.last_ns ? json(m.last_label) : json(nullptr)},
                    {"where", m.where.empty() ? json(nullptr) : json(U(m.where))},
                    {"example", U(m.example)}});
  }
  return {{"warning_lines", f.warning_lines},
          {"error_lines", f.error_lines},
          {"tracebacks", f.tracebacks},
          {"groups_dropped", f.message_groups_dropped},
          {"groups", std::move(msgs)}};
}

// "llama_cpp": llama.cpp's prompt and eval timings.
json LlamaJson(const LlamaFacts& l) {
  return {
      {"prompt_timings", l.prompt_timings},
      {"eval_timings", l.eval_timings},
      {"prompt_tokens", l.prompt_tokens},
      {"gen_tokens", l.gen_tokens},
      {"prompt_tps", l.prompt_ms > 0
                         ? json(Round2(1000.0 * static_cast<double>(l.prompt_tokens) / l.prompt_ms))
                         : json(nullptr)},
      {"gen_tps", l.gen_ms > 0 ? json(Round2(1000.0 * static_cast<double>(l.gen_tokens) / l.gen_ms))
                               : json(nullptr)},
      {"min_request_gen_tps", l.min_gen_tps ? json(Round2(*l.min_gen_tps)) : json(nullptr)},
      {"max_request_gen_tps", l.max_gen_tps ? json(Round2(*l.max_gen_tps)) : json(nullptr)}};
}

// "sglang", "tgi" and "fatal", each only when the log has them.
void AddOtherServers(const LogFacts& f, json& j) {
  if (f.sglang.decode_batches + f.sglang.prefill_batches > 0) {
    const SglangFacts& g = f.sglang;
    j["sglang"] = {{"decode_batches", g.decode_batches},
                   {"prefill_batches", g.prefill_batches},
                   {"queued_batches", g.queued_batches},
                   {"max_running", g.max_running},
                   {"max_queued", g.max_queued},
                   {"peak_token_usage_pct", Round2(g.peak_token_usage_pct)},
                   {"mean_gen_tps", g.mean_gen_tps ? json(Round2(*g.mean_gen_tps)) : json(nullptr)},
                   {"peak_input_tps", Opt(g.peak_input_tps)}};
  }
  if (f.tgi.requests > 0) {
    j["tgi"] = {{"requests", f.tgi.requests},
                {"mean_queue_ms", f.tgi.mean_queue_ms ? json(Round2(*f.tgi.mean_queue_ms)) : json(nullptr)},
                {"max_queue_ms", Opt(f.tgi.max_queue_ms)}};
  }
  if (!f.fatal.empty()) {
    json fatal = json::array();
    for (const FatalLine& x : f.fatal) {
      fatal.push_back({{"kind", x.kind}, {"cause", x.cause}, {"text", U(x.text)},
                       {"where", U(x.where)}, {"time", x.t_ns ? json(x.label) : json(nullptr)}});
    }
    j["fatal"] = std::move(fatal);
  }
}

}  // namespace

std::string_view LineKindName(LineKind k) {
  switch (k) {
    case LineKind::kStats:
      return "stats";
    case LineKind::kRequestLog:
      return "request_log";
    case LineKind::kAccess:
      return "access";
    case LineKind::kDebug:
      return "debug";
    case LineKind::kWarning:
      return "warning";
    case LineKind::kError:
      return "error";
    case LineKind::kOther:
      return "other";
    case LineKind::kUnknown:
      return "unknown";
    case LineKind::kCount:
      break;
  }
  return "unknown";
}

json ToJson(const LogFacts& f) {
  json j;
  j["schema"] = kLogFactsSchema;
  json inputs = json::array();
  for (const auto& in : f.inputs) {
    inputs.push_back({{"path", U(in.path)},
                      {"compression", in.compression},
                      {"raw_bytes", in.raw_bytes},
                      {"bytes", in.bytes},
                      {"lines", in.lines}});
  }
  j["inputs"] = std::move(inputs);
  j["lines"] = f.lines;
  j["bytes"] = f.bytes;
  json sources = json::object();
  for (const auto& [name, n] : f.sources) sources[name] = n;
  j["sources"] = std::move(sources);
  j["time"] = {{"domain", f.relative_time ? "since_start" : "wall"},
               {"first", f.first_ns ? json(f.first_label) : json(nullptr)},
               {"last", f.last_ns ? json(f.last_label) : json(nullptr)},
               {"duration_s", f.duration_ns ? json(Sec(*f.duration_ns)) : json(nullptr)}};

  j["volume"] = VolumeJson(f);
  j["volume_series"] = VolumeSeriesJson(f);
  j["requests"] = RequestsJson(f);
  j["logging"] = {{"debug_lines", f.debug_lines},
                  {"debug_bytes", f.debug_bytes},
                  {"debug_file_paths", f.debug_file_paths},
                  {"stats_disabled_warnings", f.stats_disabled_warnings}};

  int64_t t0 = f.first_ns.value_or(0);
  json engines = json::array();
  for (const auto& e : f.engines) engines.push_back(EngineJson(e, t0));
  j["engines"] = std::move(engines);
  j["v0_preemptions"] = {{"warnings", f.v0_preemption_warnings},
                         {"cumulative", OptI(f.v0_cumulative_preemptions)}};

  j["messages"] = MessagesJson(f);
  j["llama_cpp"] = LlamaJson(f.llama);
  // Keys for SGLang, TGI and fatal lines appear only when the log has them.
  AddOtherServers(f, j);

  j["vllm_server"] = {
      {"version", f.vllm_version ? json(U(*f.vllm_version)) : json(nullptr)},
      {"args", f.vllm_args ? json(UAll(f.vllm_args->argv)) : json(nullptr)},
      {"args_at", f.vllm_args ? json(U(f.vllm_args->where)) : json(nullptr)}};

  j["bad_input"] = {{"unknown_lines", f.unknown_lines},
                    {"binary_lines", f.binary_lines},
                    {"overlong_lines", f.overlong_lines},
                    {"unterminated_last_lines", f.unterminated_last_lines},
                    {"unknown_examples", UAll(f.unknown_examples)}};
  return j;
}

std::string NothingRecognised(const LogFacts& f) {
  for (const auto& [source, lines] : f.sources) {
    if (lines > 0 && source != "unknown" && source != "binary" && source != "empty") return "";
  }
  std::string empty, other;
  for (const InputInfo& in : f.inputs) {
    std::string& list = in.lines == 0 ? empty : other;
    if (!list.empty()) list += ", ";
    list += in.path == "-" ? "standard input" : in.path;
    if (in.lines > 0) list += fmt::format(" ({} line{})", in.lines, in.lines == 1 ? "" : "s");
  }
  if (f.inputs.empty()) return "no input";
  std::string out;
  if (!other.empty()) {
    out = other + ": no line of a known format (vLLM, SGLang, TGI, llama.cpp, uvicorn access, Python logging)";
    if (!f.unknown_examples.empty()) out += "; first: " + ToTerminalText(f.unknown_examples.front().substr(0, 200));
    else if (f.binary_lines > 0) out += "; binary data";
    else out += "; blank lines only";
  }
  if (!empty.empty()) out += (out.empty() ? "" : "; ") + empty + ": empty (no lines)";
  return out;
}

}  // namespace latdoc::logs
