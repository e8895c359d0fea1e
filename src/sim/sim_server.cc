#include "sim/sim_server.h"

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "http/server.h"
#include "sim/metrics.h"
#include "sim/prefix_cache.h"
#include "sim/profiler_trace.h"
#include "sim/stall_record.h"

namespace latdoc::sim {

using nlohmann::json;

int CountPromptTokens(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n < 1 ? 1 : n;
}

Status ValidateSimConfig(const SimConfig& c) {
  const EngineConfig& e = c.engine;
  if (e.max_num_seqs < 1) return InvalidArgument("--max-num-seqs must be at least 1");
  if (e.max_num_batched_tokens < 1)
    return InvalidArgument("--max-num-batched-tokens must be at least 1");
  if (e.block_size < 1) return InvalidArgument("--block-size must be at least 1");
  if (e.max_model_len < 2) return InvalidArgument("--max-model-len must be at least 2");
  if (e.max_num_batched_tokens < e.max_num_seqs) {  // vLLM's SchedulerConfig refuses it too
    return InvalidArgument(fmt::format(
        "max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs ({}).",
        e.max_num_batched_tokens, e.max_num_seqs));
  }
  if (e.gpu_memory_utilization <= 0 || e.gpu_memory_utilization > 1)
    return InvalidArgument("--gpu-memory-utilization must be in (0, 1]");
  if (c.time_scale <= 0) return InvalidArgument("--time-scale must be positive");
  if (!e.enable_chunked_prefill && e.max_num_batched_tokens < e.max_model_len) {
    return InvalidArgument(fmt::format(
        "max_num_batched_tokens ({}) is smaller than max_model_len ({}). This effectively limits "
        "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer "
        "sequences. Please increase max_num_batched_tokens or decrease max_model_len.",
        e.max_num_batched_tokens, e.max_model_len));
  }
  int64_t kv_tokens = Engine::TotalBlocks(e) * e.block_size;
  if (kv_tokens < e.max_model_len) {
    return InvalidArgument(fmt::format(
        "The model's max seq len ({}) is larger than the maximum number of tokens that can be "
        "stored in KV cache ({}). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
        e.max_model_len, kv_tokens));
  }
  for (double r : {c.faults.http_429, c.faults.http_500, c.faults.http_503,
                   c.faults.reset_before_first_token, c.faults.reset_after_first_token,
                   c.faults.cut_stream, c.faults.slow_first_byte}) {
    if (r < 0 || r > 1) return InvalidArgument("fault rates must be in [0, 1]");
  }
  return Status::Ok();
}

namespace {

// The simulator's vocabulary: each generated token is one of these words, with a space before.
constexpr std::array<std::string_view, 64> kWords = {
    "the",    "of",     "and",   "to",     "in",      "a",      "is",     "that",
    "for",    "it",     "as",    "was",    "with",    "be",     "by",     "on",
    "not",    "he",     "this",  "are",    "or",      "his",    "from",   "at",
    "which",  "but",    "have",  "an",     "had",     "they",   "you",    "were",
    "their",  "one",    "all",   "we",     "can",     "her",    "has",    "there",
    "been",   "if",     "more",  "when",   "will",    "would",  "who",    "so",
    "model",  "token",  "cache", "batch",  "latency", "kernel", "queue",  "memory",
    "stream", "server", "graph", "tensor", "layer",   "prompt", "decode", "prefill"};

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t Fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

std::string Escape(std::string_view s) { return JsonText(json(std::string(s))); }  // with quotes

// vLLM's ErrorResponse, fields in its order: {"error":{"message","type","param","code"}}.
std::string ErrorBody(int code, std::string_view type, std::string_view message) {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = nullptr;
  e["code"] = code;
  nlohmann::ordered_json j;
  j["error"] = std::move(e);
  return JsonText(j);
}

// Python's repr of a string, as vLLM's startup line prints it.
std::string PyRepr(std::string_view s) {
  const char quote = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  out += quote;
  return out;
}

// vLLM's startup line (vllm/entrypoints/utils.py log_non_default_args): the flags whose values
// differ from vLLM's defaults, as Python prints the dict. The API key is left out.
std::string NonDefaultArgsMessage(const SimConfig& c) {
  const EngineConfig& e = c.engine;
  std::string d = "{'model_tag': " + PyRepr(c.served_model_name);
  if (c.host != "127.0.0.1") d += ", 'host': " + PyRepr(c.host);
  if (c.port != 8000) d += fmt::format(", 'port': {}", c.port);
  if (c.disable_uvicorn_access_log) d += ", 'disable_uvicorn_access_log': True";
  if (c.enable_log_requests) d += ", 'enable_log_requests': True";
  if (c.disable_log_stats) d += ", 'disable_log_stats': True";
  d += fmt::format(", 'max_model_len': {}", e.max_model_len);
  if (e.block_size != 16) d += fmt::format(", 'block_size': {}", e.block_size);
  if (e.gpu_memory_utilization != 0.9) d += fmt::format(", 'gpu_memory_utilization': {}", e.gpu_memory_utilization);
  if (e.num_gpu_blocks_override > 0) d += fmt::format(", 'num_gpu_blocks_override': {}", e.num_gpu_blocks_override);
  if (e.max_num_seqs != 1024) d += fmt::format(", 'max_num_seqs': {}", e.max_num_seqs);
  if (e.max_num_batched_tokens != 8192) d += fmt::format(", 'max_num_batched_tokens': {}", e.max_num_batched_tokens);
  if (!e.enable_chunked_prefill) d += ", 'enable_chunked_prefill': False";
  return "non-default args: " + d + "}";
}

// vLLM's log line prefix: "(APIServer pid=N) INFO MM-DD HH:MM:SS [file.py:line] message".
class VllmLog {
 public:
  Status Open(const std::string& path) {
    if (path.empty()) {
      f_ = stderr;
      return Status::Ok();
    }
    f_ = std::fopen(path.c_str(), "a");
    if (!f_) return ErrnoStatus(errno, "--log-file " + path);
    owned_ = true;
    return Status::Ok();
  }
  ~VllmLog() {
    if (owned_ && f_) std::fclose(f_);
  }
  void Line(std::string_view level, std::string_view where, std::string_view msg) {
    if (!f_) return;
    char ts[32];
    time_t now = ::time(nullptr);
    tm lt;
    localtime_r(&now, &lt);
    strftime(ts, sizeof ts, "%m-%d %H:%M:%S", &lt);
    std::string line = fmt::format("(APIServer pid={}) {} {} [{}] {}\n", pid_, level, ts, where, msg);
    std::fwrite(line.data(), 1, line.size(), f_);
    std::fflush(f_);
  }
  // uvicorn's access line: INFO:     127.0.0.1:PORT - "POST /v1/completions HTTP/1.1" 200 OK
  void Access(std::string_view remote, std::string_view method, std::string_view target,
              int status) {
    if (!f_) return;
    std::string line = fmt::format("(APIServer pid={}) INFO:     {} - \"{} {} HTTP/1.1\" {}\n", pid_,
                                   remote, method, target, http::StatusText(status));
    std::fwrite(line.data(), 1, line.size(), f_);
    std::fflush(f_);
  }

 private:
  FILE* f_ = nullptr;
  bool owned_ = false;
  int pid_ = static_cast<int>(::getpid());
};

enum class Fault { kNone, kResetAfterFirst, kCut };

// One request's line of the --trace-requests file, written once the response's last byte has
// reached the kernel: the write receipts (ResponseStream::OnChunkWritten) fill `written_ns`,
// and the line goes out when the last owner (the request, or the connection's receipt
// function) lets go of it.
struct PendingTrace {
  std::shared_ptr<std::FILE> file;
  nlohmann::json fields;   // null until the request is over
  std::vector<int64_t> written_ns;  // per WriteChunk(): when its bytes reached the kernel
  size_t token_chunks = 0;          // the first token_chunks chunks carry tokens

  ~PendingTrace() {
    if (fields.is_null()) return;
    written_ns.resize(token_chunks, -1);
    fields["written_ns"] = std::move(written_ns);
    std::string line = JsonText(fields) + "\n";
    std::fwrite(line.data(), 1, line.size(), file.get());
    std::fflush(file.get());
  }
};

struct Active {
  uint64_t id = 0;
  std::string public_id;      // cmpl-... / chatcmpl-...
  std::string x_request_id;
  bool chat = false, stream = false, include_usage = false, continuous_usage = false;
  int prompt_tokens = 0, max_tokens = 0, generated = 0, preemptions = 0;
  int cached_tokens = 0;            // found in the prefix cache on admission
  std::string tool_name;            // a chat request with tools: the answer is a call of this
  std::vector<uint64_t> blocks;     // the prompt's block hashes (prefix caching on)
  uint64_t text_seed = 0;
  int64_t created_s = 0;
  int64_t received_ns = 0, arrival_ns = 0, scheduled_ns = -1, first_token_ns = -1,
          last_token_ns = -1;
  Fault fault = Fault::kNone;
  int cut_after = 0;
  std::string text;           // non-streamed output
  std::vector<int64_t> token_ns;   // when each step's tokens went out...
  std::vector<int> token_counts;   // ...and how many there were
  std::shared_ptr<PendingTrace> trace;  // set when --trace-requests is on
  std::shared_ptr<http::ResponseStream> out;
};

}  // namespace

struct SimServer::Impl {
  Impl(http::EventLoop& l, SimConfig c)
      : loop(l),
        cfg(std::move(c)),
        engine([&] {
          EngineConfig e = cfg.engine;
          e.spec_seed ^= cfg.seed;  // the acceptance draws follow --seed
          return e;
        }()),
        metrics(cfg.engine.max_model_len),
        rng(cfg.seed),
        jitter_rng(Mix(cfg.seed)),
        step_timer(l),
        stats_timer(l),
        model_json(Escape(cfg.served_model_name)) {}

  // --- HTTP -------------------------------------------------------------------------------

  void Handle(const http::Request& req, std::shared_ptr<http::ResponseStream> out) {
    int status = Route(req, out);
    if (!cfg.disable_uvicorn_access_log && status > 0)
      log.Access(req.remote, req.method, req.target, status);
  }

  // Returns the status sent (or that will be sent), 0 when the connection was reset.
  int Route(const http::Request& req, const std::shared_ptr<http::ResponseStream>& out) {
    const std::string& p = req.path;
    bool get = req.method == "GET";
    bool head = req.method == "HEAD";
    bool post = req.method == "POST";
    // uvicorn answers HEAD with the headers alone; a body would be read by a kept-alive client
    // as the start of its next response.
    auto send = [&](int status, std::string_view content_type, std::string_view body) {
      out->Send(status, content_type, head ? std::string_view() : body);
      return status;
    };
    auto not_allowed = [&] {
      return send(405, "application/json", R"({"detail":"Method Not Allowed"})");
    };
    // vLLM's /health and /v1/models are FastAPI @get routes, which (unlike Starlette's) do not
    // add HEAD: it gets 405 (fastapi/fastapi#1773). /metrics is prometheus_client's ASGI app
    // mounted as is, which answers HEAD like GET.
    // vLLM's authentication middleware: every /v1 path needs the key; /health and /metrics
    // do not. Its answer, as vLLM's: 401 {"error": "Unauthorized"}.
    if (!cfg.api_key.empty() && p.rfind("/v1", 0) == 0 &&
        req.Header("authorization") != "Bearer " + cfg.api_key) {
      return send(401, "application/json", R"({"error":"Unauthorized"})");
    }
    if (p == "/health") {
      if (!get) return not_allowed();
      return send(200, "", "");
    }
    if (p == "/metrics") {
      if (!get && !head) return not_allowed();
      return send(200, "text/plain; version=0.0.4; charset=utf-8",
                  metrics.Render(cfg.served_model_name));
    }
    if (profiler.enabled() && (p == "/start_profile" || p == "/stop_profile")) {
      if (!post) return not_allowed();
      return Profile(p == "/start_profile", send);
    }
    if (p == "/v1/models") {
      if (!get) return not_allowed();
      return send(200, "application/json", ModelsJson());
    }
    if (p == "/v1/completions" || p == "/v1/chat/completions") {
      if (!post) return not_allowed();
      return Generate(req, out, p == "/v1/chat/completions");
    }
    return send(404, "application/json", R"({"detail":"Not Found"})");
  }

  // vLLM's /start_profile and /stop_profile (sim/profiler_trace.h): 200 once done; the trace is
  // written when the profiler stops.
  template <typename Send>
  int Profile(bool start, Send& send) {
    if (start) {
      log.Line("INFO", "api_server.py:1033", "Starting profiler...");
      profiler.Start(MonoNowNs(), WallNowNs());
      log.Line("INFO", "api_server.py:1035", "Profiler started.");
      return send(200, "", "");
    }
    log.Line("INFO", "api_server.py:1041", "Stopping profiler...");
    auto path = profiler.Stop();
    if (!path.ok()) {
      log.Line("ERROR", "api_server.py:1043", "Profiler trace not written: " + path.status().message());
      return send(500, "application/json", R"({"detail":"profiler trace not written"})");
    }
    log.Line("INFO", "api_server.py:1043", "Profiler stopped.");
    return send(200, "", "");
  }

  std::string ModelsJson() const {
    nlohmann::ordered_json m;
    m["id"] = cfg.served_model_name;
    m["object"] = "model";
    m["created"] = start_wall_s;
    m["owned_by"] = "vllm";
    m["root"] = cfg.served_model_name;
    m["parent"] = nullptr;
    m["max_model_len"] = cfg.engine.max_model_len;
    nlohmann::ordered_json list;
    list["object"] = "list";
    list["data"] = nlohmann::ordered_json::array({m});
    return JsonText(list);
  }

  int SendError(const std::shared_ptr<http::ResponseStream>& out, int code,
                std::string_view type, std::string_view message) {
    out->Send(code, "application/json", ErrorBody(code, type, message));
    return code;
  }

  // Reads an optional integer field; a present value of another type is an error.
  static bool OptInt(const json& j, const char* key, std::optional<int64_t>* v, std::string* err) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return true;
    if (!it->is_number_integer()) {
      *err = fmt::format("{}: Input should be a valid integer", key);
      return false;
    }
    *v = it->get<int64_t>();
    return true;
  }
  static bool OptBool(const json& j, const char* key, bool* v, std::string* err) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return true;
    if (!it->is_boolean()) {
      *err = fmt::format("{}: Input should be a valid boolean", key);
      return false;
    }
    *v = it->get<bool>();
    return true;
  }

  // Counts prompt tokens: text by CountPromptTokens, token ids one each.
  static bool PromptTokens(const json& prompt, int* n, std::string* err) {
    if (prompt.is_string()) {
      *n = CountPromptTokens(prompt.get_ref<const std::string&>());
      return true;
    }
    if (prompt.is_array()) {
      if (prompt.empty()) {
        *err = "prompt: the prompt cannot be empty";
        return false;
      }
      if (prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array()))
        return PromptTokens(prompt[0], n, err);
      for (const auto& t : prompt) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0) {
          if (t.is_string() || t.is_array()) {
            *err = "prompt: batched prompts are not supported by latdoc sim; send one per request";
          } else {
            *err = "prompt: token ids must be non-negative integers";
          }
          return false;
        }
      }
      *n = static_cast<int>(prompt.size());
      return true;
    }
    *err = "prompt: Input should be a valid string or a list of token ids";
    return false;
  }

  static bool MessageTokens(const json& messages, int* n, std::string* err) {
    if (!messages.is_array() || messages.empty()) {
      *err = "messages: Input should be a non-empty list of messages";
      return false;
    }
    int words = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
      const json& m = messages[i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
        *err = fmt::format("messages.{}: each message needs a string 'role'", i);
        return false;
      }
      auto c = m.find("content");
      if (c == m.end() || c->is_null()) continue;
      if (c->is_string()) {
        words += CountPromptTokens(c->get_ref<const std::string&>());
      } else if (c->is_array()) {
        for (const auto& part : *c) {
          if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
              part["text"].is_string())
            words += CountPromptTokens(part["text"].get_ref<const std::string&>());
        }
      } else {
        *err = fmt::format("messages.{}.content: Input should be a valid string or list", i);
        return false;
      }
    }
    *n = words < 1 ? 1 : words;
    return true;
  }

  // The block hashes of a request's prompt (sim/prefix_cache.h): its words or token ids, a chat
  // request's message contents in order. Called on a body that PromptTokens or MessageTokens
  // accepted.
  std::vector<uint64_t> PromptBlocks(const json& body, bool chat) const {
    TokenHasher t;
    auto add = [&](const json& v, auto&& self) -> void {
      if (v.is_string()) {
        t.AddText(v.get_ref<const std::string&>());
      } else if (v.is_number_integer()) {
        t.AddId(v.get<int64_t>());
      } else if (v.is_array()) {
        for (const auto& e : v) self(e, self);
      }
    };
    if (chat) {
      for (const auto& m : body["messages"]) {
        auto c = m.find("content");
        if (c == m.end()) continue;
        if (c->is_string()) {
          t.AddText(c->get_ref<const std::string&>());
        } else if (c->is_array()) {
          for (const auto& part : *c)
            if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
                part["text"].is_string())
              t.AddText(part["text"].get_ref<const std::string&>());
        }
      }
    } else {
      add(body["prompt"], add);
    }
    return BlockHashes(t.tokens(), cfg.engine.block_size);
  }

  int Generate(const http::Request& req, const std::shared_ptr<http::ResponseStream>& out,
               bool chat) {
    json body;
    try {
      body = json::parse(req.body);
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
      return SendError(out, 400, "BadRequestError", "JSON decode error: " + what);
    }
    if (!body.is_object())
      return SendError(out, 400, "BadRequestError", "Input should be a valid JSON object");

    std::string err;
    auto a = std::make_unique<Active>();
    a->chat = chat;
    if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
      if (!m->is_string())
        return SendError(out, 400, "BadRequestError", "model: Input should be a valid string");
      if (m->get_ref<const std::string&>() != cfg.served_model_name) {
        return SendError(out, 404, "NotFoundError",
                         fmt::format("The model `{}` does not exist.",
                                     m->get_ref<const std::string&>()));
      }
    }
    if (chat) {
      if (!body.contains("messages"))
        return SendError(out, 400, "BadRequestError", "messages: Field required");
      if (!MessageTokens(body["messages"], &a->prompt_tokens, &err))
        return SendError(out, 400, "BadRequestError", err);
    } else {
      if (!body.contains("prompt") || body["prompt"].is_null())
        return SendError(out, 400, "BadRequestError",
                         "Either prompt or prompt_embeds must be provided and non-empty.");
      if (!PromptTokens(body["prompt"], &a->prompt_tokens, &err))
        return SendError(out, 400, "BadRequestError", err);
    }
    std::optional<int64_t> max_tokens, max_completion_tokens, n;
    bool ignore_eos = false;
    if (!OptInt(body, "max_tokens", &max_tokens, &err) ||
        !OptInt(body, "max_completion_tokens", &max_completion_tokens, &err) ||
        !OptInt(body, "n", &n, &err) || !OptBool(body, "ignore_eos", &ignore_eos, &err) ||
        !OptBool(body, "stream", &a->stream, &err))
      return SendError(out, 400, "BadRequestError", err);
    if (n && *n != 1)
      return SendError(out, 400, "BadRequestError", "n: latdoc sim supports n=1 only");
    if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
      if (!so->is_object())
        return SendError(out, 400, "BadRequestError", "stream_options: Input should be an object");
      a->include_usage = true;  // vLLM: include_usage defaults to true inside stream_options
      if (!OptBool(*so, "include_usage", &a->include_usage, &err) ||
          !OptBool(*so, "continuous_usage_stats", &a->continuous_usage, &err))
        return SendError(out, 400, "BadRequestError", "stream_options." + err);
      // vLLM: include_continuous_usage = include_usage and continuous_usage_stats.
      a->continuous_usage = a->continuous_usage && a->include_usage;
      if (!a->stream)
        return SendError(out, 400, "BadRequestError",
                         "Stream options can only be defined when `stream=True`.");
    }
    const int max_len = cfg.engine.max_model_len;
    std::optional<int64_t> want = chat && max_completion_tokens ? max_completion_tokens : max_tokens;
    if (want && *want < 1)
      return SendError(out, 400, "BadRequestError",
                       fmt::format("max_tokens must be at least 1, got {}.", *want));
    if (a->prompt_tokens >= max_len) {
      return SendError(out, 400, "BadRequestError",
                       fmt::format("This model's maximum context length is {} tokens. However, "
                                   "your request has {} input tokens. Please reduce the length of "
                                   "the input messages.",
                                   max_len, a->prompt_tokens));
    }
    int64_t mt = want ? *want : (chat ? max_len - a->prompt_tokens : 16);
    // prompt + mt would overflow for max_tokens near INT64_MAX: compare against what is left,
    // and sum unsigned for the message (both terms are positive, so it fits).
    if (mt > max_len - a->prompt_tokens) {
      return SendError(out, 400, "BadRequestError",
                       fmt::format("This model's maximum context length is {} tokens. However, you "
                                   "requested {} tokens ({} in the messages, {} in the completion). "
                                   "Please reduce the length of the messages or completion.",
                                   max_len, uint64_t(a->prompt_tokens) + uint64_t(mt),
                                   a->prompt_tokens, mt));
    }
    a->max_tokens = static_cast<int>(mt);

    // Faults are drawn once per accepted request, in arrival order, from the seeded stream.
    const FaultRates& f = cfg.faults;
    double r = std::uniform_real_distribution<double>(0, 1)(rng);
    double acc = 0;
    auto hit = [&](double rate) { acc += rate; return r < acc; };
    if (hit(f.http_429))
      return SendError(out, 429, "TooManyRequestsError", "Too many requests (injected by latdoc sim)");
    if (hit(f.http_500))
      return SendError(out, 500, "InternalServerError", "Internal server error (injected by latdoc sim)");
    if (hit(f.http_503))
      return SendError(out, 503, "ServiceUnavailableError", "Service unavailable (injected by latdoc sim)");
    if (hit(f.reset_before_first_token)) {
      out->Abort(/*reset=*/true);
      return 0;
    }
    if (hit(f.reset_after_first_token)) a->fault = Fault::kResetAfterFirst;
    else if (hit(f.cut_stream)) a->fault = Fault::kCut;
    // A slow front end is independent of the other faults: its own draw.
    bool slow = std::uniform_real_distribution<double>(0, 1)(rng) < f.slow_first_byte;

    a->id = next_id++;
    uint64_t h = Mix(cfg.seed ^ Mix(a->id));
    a->public_id = fmt::format("{}-{:016x}{:016x}", chat ? "chatcmpl" : "cmpl", h, Mix(h));
    a->x_request_id = std::string(req.Header("x-request-id"));
    // The text and the EOS point follow the prompt (or messages) and the seed, not how the
    // request's JSON was written: dump() is canonical (sorted keys, no blanks), so key order,
    // spacing, max_tokens or stream give the same completion.
    a->text_seed = Mix(cfg.seed ^ Fnv1a(body[chat ? "messages" : "prompt"].dump()));
    if (cfg.enable_prefix_caching) a->blocks = PromptBlocks(body, chat);
    if (auto t = body.find("tools"); chat && t != body.end() && t->is_array() && !t->empty()) {
      a->tool_name = "tool";
      const json& first = (*t)[0];
      if (first.is_object() && first.contains("function") && first["function"].is_object() &&
          first["function"].contains("name") && first["function"]["name"].is_string())
        a->tool_name = first["function"]["name"].get<std::string>();
    }
    a->received_ns = req.received_ns;
    a->created_s = ::time(nullptr);
    a->out = out;
    if (trace) {
      a->trace = std::make_shared<PendingTrace>();
      a->trace->file = trace;
    }
    int stop_at = 0;
    if (!ignore_eos && cfg.mean_output_tokens > 0) {
      // Geometric with mean m: the first EOS at ceil(ln U / ln(1 - 1/m)).
      double u = (double(Mix(a->text_seed) >> 11) + 0.5) / double(1ULL << 53);
      double p = 1.0 / std::max(1.0, cfg.mean_output_tokens);
      stop_at = p >= 1 ? 1 : std::max(1, int(std::ceil(std::log(u) / std::log1p(-p))));
      if (stop_at > a->max_tokens) stop_at = 0;
    }
    // Half of the tokens the request will really get, so that an early EOS cannot end it first.
    if (a->fault == Fault::kCut)
      a->cut_after = std::max(1, (stop_at > 0 ? stop_at : a->max_tokens) / 2);
    if (cfg.enable_log_requests) {
      log.Line("INFO", "logger.py:49",
               fmt::format("Received request {}: params: SamplingParams(n=1, presence_penalty=0.0, "
                           "frequency_penalty=0.0, repetition_penalty=1.0, temperature=1.0, "
                           "top_p=1.0, top_k=0, min_p=0.0, seed=None, stop=[], stop_token_ids=[], "
                           "ignore_eos={}, max_tokens={}, min_tokens=0, logprobs=None), "
                           "lora_request: None.",
                           a->public_id, ignore_eos ? "True" : "False", a->max_tokens));
    }
    uint64_t id = a->id;
    out->OnPeerClosed([this, id] { OnClientGone(id); });
    Active* raw = a.get();
    active.emplace(id, std::move(a));
    if (slow) {
      auto timer = std::make_shared<http::EventLoop::Timer>(loop);
      timer->ExpireAfterNs(Scaled(cfg.faults.slow_first_byte_ms * 1e6), [this, id, stop_at, timer] {
        if (auto it = active.find(id); it != active.end()) Admit(*it->second, stop_at);
      });
    } else {
      Admit(*raw, stop_at);
    }
    return 200;
  }

  // The request reaches the engine (vLLM's "arrival"): headers go out, the engine queues it.
  void Admit(Active& a, int stop_at) {
    a.arrival_ns = MonoNowNs();
    if (a.stream) {
      a.out->BeginChunked(200, "text/event-stream; charset=utf-8");
      if (a.trace) {
        a.out->OnChunkWritten([t = a.trace](uint64_t n, int64_t ns) {
          if (n >= t->written_ns.size()) t->written_ns.resize(n + 1, -1);
          t->written_ns[n] = ns;
        });
      }
    }
    if (cfg.enable_prefix_caching) a.cached_tokens = prefix_cache.Lookup(a.blocks, a.prompt_tokens);
    engine.Add({a.id, a.prompt_tokens, a.max_tokens, stop_at, a.cached_tokens});
    if (cfg.enable_log_requests)
      log.Line("INFO", "async_llm.py:301", fmt::format("Added request {}.", a.public_id));
    Kick();
  }

  void OnClientGone(uint64_t id) {
    auto it = active.find(id);
    if (it == active.end()) return;
    engine.Abort(id);
    ++metrics.success_abort;
    Trace(*it->second, "client_gone");
    // vLLM: "Aborted request(s) %s." with the ids, so a reader can pair it with "Added request".
    if (cfg.enable_log_requests) {
      log.Line("INFO", "async_llm.py:390", fmt::format("Aborted request(s) {}.", it->second->public_id));
    }
    active.erase(it);
  }

  // --- engine driver -------------------------------------------------------------------------

  int64_t Scaled(double model_ns) const { return std::llround(model_ns * cfg.time_scale); }
  int64_t ModelNs(int64_t wall_ns) const {
    return std::llround(double(wall_ns - start_ns) / cfg.time_scale);
  }

  void Kick() {
    if (!stepping && engine.has_work()) StartStep(MonoNowNs());
  }

  void StartStep(int64_t start_ns) {
    stepping = true;
    step_start_ns = start_ns;
    StepPlan p = engine.BeginStep(ModelNs(start_ns));
    step_plan = p;
    metrics.running = p.num_running;
    metrics.waiting = p.num_waiting;
    metrics.kv_usage = engine.kv_usage();
    metrics.preemptions += p.new_preemptions;
    interval_preemptions += p.new_preemptions;
    step_due_ns = start_ns + Scaled(double(p.dur_ns));
    stalls.OnStep(p, start_ns, step_due_ns - start_ns);  // ground truth (sim/stall_record.h)
    if (p.log_stall) log.Line("INFO", "logger.py:71", LogStallMessage(engine.steps()));
    step_timer.ExpireAtNs(step_due_ns, [this] { EndStep(); });
  }

  void EndStep() {
    int64_t now = MonoNowNs();
    metrics.step_overrun.Observe(double(std::max<int64_t>(0, now - step_due_ns)) / 1e9);
    engine.FinishStep(&step_out);
    profiler.OnStep(step_start_ns, now, step_plan);
    for (uint64_t id : step_out.scheduled_first)
      if (auto it = active.find(id); it != active.end()) {
        // A step planned on schedule may start before a request that arrived while the loop was
        // late; it cannot have been scheduled before it arrived.
        it->second->scheduled_ns = std::max(step_start_ns, it->second->arrival_ns);
      }
    for (uint64_t id : step_out.preempted)
      if (auto it = active.find(id); it != active.end()) ++it->second->preemptions;
    // vLLM's iteration_tokens_total (IterationStats): the tokens generated in the step, plus a
    // request's whole prompt in the step that gives its first token (not the chunks scheduled).
    int64_t step_tokens = 0;
    for (const TokenEvent& ev : step_out.events) {
      step_tokens += ev.new_tokens;
      auto it = active.find(ev.id);
      if (it == active.end()) continue;
      if (ev.first) step_tokens += it->second->prompt_tokens;
      if (!Emit(*it->second, ev, now)) active.erase(ev.id);
    }
    metrics.iteration_tokens.Observe(static_cast<double>(step_tokens));
    metrics.spec_decode = engine.config().spec_draft_tokens > 0;
    metrics.spec_drafts = engine.spec_drafts();
    metrics.spec_draft_tokens = engine.spec_draft_tokens();
    metrics.spec_accepted_tokens = engine.spec_accepted_tokens();
    metrics.running = engine.num_running();
    metrics.waiting = engine.num_waiting();
    metrics.kv_usage = engine.kv_usage();
    stepping = false;
    if (engine.has_work()) {
      // Keep the schedule: the next step starts when this one was due, unless we fell far
      // behind (then start now rather than bunch steps up).
      StartStep(now - step_due_ns > 50 * kNsPerMs ? now : step_due_ns);
    }
  }

  // Appends the `count` words from token `from` on, as a JSON string (quotes included). The
  // vocabulary needs no escaping.
  void AppendWords(std::string& out, const Active& a, int from, int count) const {
    out += '"';
    for (int i = from; i < from + count; ++i) {
      out += ' ';
      out += kWords[Mix(a.text_seed + uint64_t(i)) % kWords.size()];
    }
    out += '"';
  }

  static void AppendUsage(std::string& out, int prompt_tokens, int completion_tokens) {
    out += R"({"prompt_tokens":)";
    AppendInt(out, prompt_tokens);
    out += R"(,"total_tokens":)";
    AppendInt(out, prompt_tokens + completion_tokens);
    out += R"(,"completion_tokens":)";
    AppendInt(out, completion_tokens);
    out += '}';
  }
  static std::string UsageJson(const Active& a) {
    std::string s;
    AppendUsage(s, a.prompt_tokens, a.generated);
    return s;
  }

  void AppendChunkHead(std::string& out, const Active& a) const {
    out += R"(data: {"id":")";
    out += a.public_id;
    out += R"(","object":")";
    out += a.chat ? "chat.completion.chunk" : "text_completion";
    out += R"(","created":)";
    AppendInt(out, a.created_s);
    out += R"(,"model":)";
    out += model_json;
    out += ',';
  }

  // Closes an event whose usage counts `generated` completion tokens.
  void AppendUsageTail(std::string& out, const Active& a, int generated) const {
    out += R"(,"stop_reason":null}],"usage":)";
    if (a.continuous_usage) {
      AppendUsage(out, a.prompt_tokens, generated);
    } else {
      out += "null";
    }
    out += "}\n\n";
  }

  // Sends the tokens of one step. Returns false when the request is over (finished or cut).
  bool Emit(Active& a, const TokenEvent& ev, int64_t now) {
    int from = a.generated;
    a.generated = ev.total_tokens;
    metrics.generation_tokens += ev.new_tokens;
    interval_generation_tokens += ev.new_tokens;
    if (ev.first || a.first_token_ns < 0) {
      a.first_token_ns = now;
      metrics.ttft.Observe(double(now - a.arrival_ns) / 1e9);
      metrics.prompt_tokens += a.prompt_tokens;
      metrics.prefix_cache_queries += a.prompt_tokens;
      metrics.prefix_cache_hits += uint64_t(a.cached_tokens);
      interval_prefix_queries += uint64_t(a.prompt_tokens);
      interval_prefix_hits += uint64_t(a.cached_tokens);
      if (cfg.enable_prefix_caching) prefix_cache.Insert(a.blocks);  // its prefill is done
      interval_prompt_tokens += a.prompt_tokens;
    } else {
      metrics.itl.Observe(double(now - a.last_token_ns) / 1e9);
    }
    a.last_token_ns = now;
    if (!cfg.trace_requests_file.empty()) {
      a.token_ns.push_back(now);
      a.token_counts.push_back(ev.new_tokens);
    }
    const char* finish = ev.finish == FinishReason::kStop     ? "\"stop\""
                         : ev.finish == FinishReason::kLength ? "\"length\""
                                                              : "null";
    bool cut = a.fault == Fault::kCut && a.generated >= a.cut_after;
    if (cut) finish = "null";
    if (!a.stream) {
      for (int i = from; i < from + ev.new_tokens; ++i) {
        a.text += ' ';
        a.text += kWords[Mix(a.text_seed + uint64_t(i)) % kWords.size()];
      }
    } else {
      // One reused buffer: a step of thousands of streams formats without allocating.
      std::string& chunk = chunk_buf;
      chunk.clear();
      if (a.chat && ev.first) {
        AppendChunkHead(chunk, a);
        chunk += R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":)";
        if (a.continuous_usage) {
          AppendUsage(chunk, a.prompt_tokens, 0);  // as vLLM: the role precedes every token
        } else {
          chunk += "null";
        }
        chunk += "}\n\n";
      }
      // One event for the step, or one per token; either way one write.
      int events = cfg.event_per_token ? ev.new_tokens : 1;
      int count = cfg.event_per_token ? 1 : ev.new_tokens;
      for (int e = 0; e < events; ++e) {
        int first = from + e * count;
        bool last = e + 1 == events;
        if (!a.chat) {
          AppendChunkHead(chunk, a);
          chunk += R"("choices":[{"index":0,"text":)";
          AppendWords(chunk, a, first, count);
          chunk += R"(,"logprobs":null,"finish_reason":)";
          chunk += last ? finish : "null";
          AppendUsageTail(chunk, a, first + count);
          continue;
        }
        // Chat: reasoning tokens, then the answer (content or a tool call); an event that
        // would straddle the two goes out as two.
        const int split = std::clamp(cfg.reasoning_tokens - first, 0, count);
        for (int part = 0; part < 2; ++part) {
          const int p0 = part == 0 ? first : first + split;
          const int n = part == 0 ? split : count - split;
          if (n == 0) continue;
          const bool part_last = last && (part == 1 || split == count);
          AppendChunkHead(chunk, a);
          if (part == 0 && cfg.think_tags) {
            // The span's words between the tags: "<think> w1 w2" ... "w5 w6 </think>".
            chunk += R"("choices":[{"index":0,"delta":{"content":")";
            if (p0 == 0) chunk += "<think>";
            std::string words;
            AppendWords(words, a, p0, n);
            chunk += std::string_view(words).substr(1, words.size() - 2);
            if (p0 + n >= cfg.reasoning_tokens) chunk += " </think>";
            chunk += '"';
          } else if (part == 0) {
            chunk += R"("choices":[{"index":0,"delta":{"reasoning_content":)";
            AppendWords(chunk, a, p0, n);
          } else if (!a.tool_name.empty()) {
            chunk += R"("choices":[{"index":0,"delta":{"tool_calls":[{"index":0,)";
            if (p0 == std::max(0, cfg.reasoning_tokens)) {  // the call's first delta names it
              chunk += R"("id":"call_)";
              chunk += a.public_id.substr(a.public_id.size() - 16);
              chunk += R"(","type":"function","function":{"name":)";
              chunk += Escape(a.tool_name);
              chunk += ',';
            } else {
              chunk += R"("function":{)";
            }
            chunk += R"("arguments":)";
            AppendWords(chunk, a, p0, n);
            chunk += "}}]";
          } else {
            chunk += R"("choices":[{"index":0,"delta":{"content":)";
            AppendWords(chunk, a, p0, n);
          }
          chunk += '}';  // closes "delta"
          chunk += R"(,"logprobs":null,"finish_reason":)";
          const bool tool_finish = part_last && !a.tool_name.empty() && part == 1 &&
                                   std::string_view(finish) != "null";
          chunk += !part_last ? "null" : tool_finish ? "\"tool_calls\"" : finish;
          AppendUsageTail(chunk, a, p0 + n);
        }
      }
      a.out->WriteChunk(chunk);
    }
    if (a.fault == Fault::kResetAfterFirst) {
      a.out->Abort(/*reset=*/true);
      return Drop(a, "reset_after_first_token");
    }
    if (cut) {
      if (a.stream) {
        a.out->EndChunked();  // a clean HTTP end, but no finish_reason and no [DONE]
      } else {
        a.out->Abort(/*reset=*/false);  // no headers went out: the connection closes unanswered
      }
      return Drop(a, "cut_stream");
    }
    if (ev.finish == FinishReason::kNone) return true;
    Finish(a, ev.finish, now);
    return false;
  }

  bool Drop(Active& a, const char* why) {
    engine.Abort(a.id);
    ++metrics.success_abort;
    Trace(a, why);
    return false;
  }

  void Finish(Active& a, FinishReason reason, int64_t now) {
    (reason == FinishReason::kStop ? metrics.success_stop : metrics.success_length)++;
    double e2e = double(now - a.arrival_ns) / 1e9;
    metrics.e2e.Observe(e2e);
    if (a.scheduled_ns >= 0) {
      metrics.queue.Observe(double(a.scheduled_ns - a.arrival_ns) / 1e9);
      metrics.prefill.Observe(double(a.first_token_ns - a.scheduled_ns) / 1e9);
      metrics.inference.Observe(double(a.last_token_ns - a.scheduled_ns) / 1e9);
    }
    double decode_s = double(a.last_token_ns - a.first_token_ns) / 1e9;
    metrics.decode.Observe(decode_s);
    metrics.tpot_request.Observe(a.generated > 1 ? decode_s / (a.generated - 1) : 0.0);
    metrics.request_prompt_tokens.Observe(a.prompt_tokens);
    metrics.request_generation_tokens.Observe(a.generated);
    const char* fin = reason == FinishReason::kStop ? "stop" : "length";
    if (a.stream) {
      std::string& tail = chunk_buf;
      tail.clear();
      if (a.include_usage) {
        AppendChunkHead(tail, a);
        tail += R"("choices":[],"usage":)";
        AppendUsage(tail, a.prompt_tokens, a.generated);
        tail += "}\n\n";
      }
      tail += "data: [DONE]\n\n";
      a.out->WriteChunk(tail);
      a.out->EndChunked();
    } else {
      std::string body;
      if (a.chat) {
        body = fmt::format(
            R"({{"id":"{}","object":"chat.completion","created":{},"model":{},"choices":[{{"index":0,"message":{{"role":"assistant","content":{},"tool_calls":[]}},"logprobs":null,"finish_reason":"{}","stop_reason":null}}],"usage":{},"prompt_logprobs":null}})",
            a.public_id, a.created_s, model_json, Escape(a.text), fin, UsageJson(a));
      } else {
        body = fmt::format(
            R"({{"id":"{}","object":"text_completion","created":{},"model":{},"choices":[{{"index":0,"text":{},"logprobs":null,"finish_reason":"{}","stop_reason":null,"prompt_logprobs":null}}],"usage":{}}})",
            a.public_id, a.created_s, model_json, Escape(a.text), fin, UsageJson(a));
      }
      a.out->Send(200, "application/json", body);
    }
    Trace(a, fin);
  }

  // One JSON line per request with its true timings (monotonic ns), for measurement tests:
  // token_ns are the engine's emit times (what the server's own metrics see), written_ns when
  // each of those chunks reached the kernel (what a client can see, after any network delay).
  void Trace(Active& a, std::string_view status) {
    if (!a.trace) return;
    a.trace->fields = {{"id", a.public_id},         {"x_request_id", a.x_request_id},
                       {"status", status},          {"received_ns", a.received_ns},
                       {"arrival_ns", a.arrival_ns}, {"scheduled_ns", a.scheduled_ns},
                       {"first_token_ns", a.first_token_ns}, {"last_token_ns", a.last_token_ns},
                       {"end_ns", MonoNowNs()},     {"prompt_tokens", a.prompt_tokens},
                       {"cached_tokens", a.cached_tokens},
                       {"completion_tokens", a.generated}, {"preemptions", a.preemptions},
                       {"token_ns", a.token_ns},    {"token_counts", a.token_counts}};
    a.trace->token_chunks = a.token_ns.size();
    a.trace.reset();  // the line goes out once the connection is done with it too
  }

  // --- periodic stats line (vLLM V1 LoggingStatLogger.log) ------------------------------------

  void ArmStats() {
    stats_timer.ExpireAfterNs(SecToNs(cfg.log_stats_interval_s), [this] {
      LogStats();
      ArmStats();
    });
  }

  void LogStats() {
    int64_t now = MonoNowNs();
    double secs = std::max(1e-9, double(now - last_stats_ns) / 1e9);
    double prompt_tput = double(interval_prompt_tokens) / secs;
    double gen_tput = double(interval_generation_tokens) / secs;
    bool idle = prompt_tput == 0 && gen_tput == 0 && prev_prompt_tput == 0 && prev_gen_tput == 0;
    if (!idle) {  // vLLM logs the idle line at DEBUG, which the default INFO level hides
      std::string msg = fmt::format(
          "Engine 000: Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} "
          "tokens/s, Running: {} reqs, Waiting: {} reqs, ",
          prompt_tput, gen_tput, engine.num_running(), engine.num_waiting());
      if (interval_preemptions > 0) msg += fmt::format("Preemptions: {}, ", interval_preemptions);
      // vLLM averages over its recent requests; the simulator over this interval's prefills.
      msg += fmt::format("GPU KV cache usage: {:.1f}%, Prefix cache hit rate: {:.1f}%",
                         engine.kv_usage() * 100,
                         interval_prefix_queries ? 100.0 * double(interval_prefix_hits) /
                                                       double(interval_prefix_queries)
                                                 : 0.0);
      log.Line("INFO", "loggers.py:123", msg);
    }
    prev_prompt_tput = prompt_tput;
    prev_gen_tput = gen_tput;
    interval_prompt_tokens = interval_generation_tokens = interval_preemptions = 0;
    interval_prefix_queries = interval_prefix_hits = 0;
    last_stats_ns = now;
  }

  http::EventLoop& loop;
  SimConfig cfg;
  Engine engine;
  PrefixCache prefix_cache{cfg.engine.block_size, Engine::TotalBlocks(cfg.engine)};
  SimMetrics metrics;
  std::mt19937_64 rng;         // per-request draws (faults), in arrival order
  // Network jitter draws per write, as many as the responses happen to need: from `rng` they
  // would shift which requests fault for a given seed.
  std::mt19937_64 jitter_rng;
  http::EventLoop::Timer step_timer, stats_timer;
  std::string model_json;
  std::unique_ptr<http::Server> server;
  std::unordered_map<uint64_t, std::unique_ptr<Active>> active;
  VllmLog log;
  StallRecorder stalls;
  std::shared_ptr<std::FILE> trace;  // --trace-requests
  std::string chunk_buf;  // scratch for formatting SSE chunks
  uint64_t next_id = 1;
  int64_t start_ns = MonoNowNs();
  int64_t start_wall_s = ::time(nullptr);
  bool stepping = false;
  int64_t step_start_ns = 0, step_due_ns = 0;
  StepOutput step_out;
  StepPlan step_plan;                      // the step in progress, for the profiler
  StepProfiler profiler{cfg.profiler_dir};  // /start_profile, /stop_profile (profiler_trace.h)
  uint64_t interval_prompt_tokens = 0, interval_generation_tokens = 0, interval_preemptions = 0;
  uint64_t interval_prefix_queries = 0, interval_prefix_hits = 0;
  int64_t last_stats_ns = MonoNowNs();
  double prev_prompt_tput = 0, prev_gen_tput = 0;
};

SimServer::SimServer(http::EventLoop& loop, SimConfig config)
    : impl_(std::make_unique<Impl>(loop, std::move(config))) {}

SimServer::~SimServer() {
  Stop();
}

Status SimServer::Start() {
  Impl& s = *impl_;
  RETURN_IF_ERROR(ValidateSimConfig(s.cfg));
  RETURN_IF_ERROR(s.log.Open(s.cfg.log_file));
  RETURN_IF_ERROR(s.stalls.Open(s.cfg.stall_record_file));
  s.log.Line("INFO", "utils.py:328", NonDefaultArgsMessage(s.cfg));
  if (!s.cfg.trace_requests_file.empty()) {
    std::FILE* f = std::fopen(s.cfg.trace_requests_file.c_str(), "w");
    if (!f) return ErrnoStatus(errno, "--trace-requests " + s.cfg.trace_requests_file);
    s.trace = std::shared_ptr<std::FILE>(f, [](std::FILE* p) { std::fclose(p); });
  }
  http::ServerOptions o;
  o.host = s.cfg.host;
  o.port = s.cfg.port;
  o.max_body_bytes = s.cfg.max_body_bytes;
  o.keep_alive_timeout_ns = SecToNs(s.cfg.keep_alive_timeout_s);
  if (s.cfg.network_delay_ms > 0 || s.cfg.network_jitter_ms > 0) {
    o.write_delay_ns = [&s] {
      double j =
          s.cfg.network_jitter_ms > 0
              ? std::uniform_real_distribution<double>(0, s.cfg.network_jitter_ms)(s.jitter_rng)
              : 0;
      return s.Scaled((s.cfg.network_delay_ms + j) * 1e6);
    };
  }
  s.server = std::make_unique<http::Server>(
      s.loop, o, [&s](const http::Request& r, std::shared_ptr<http::ResponseStream> w) {
        s.Handle(r, std::move(w));
      });
  RETURN_IF_ERROR(s.server->Listen());
  const EngineConfig& e = s.cfg.engine;
  s.log.Line("INFO", "api_server.py:1880",
             fmt::format("latdoc sim (vLLM-compatible) serving model {}", s.cfg.served_model_name));
  s.log.Line("INFO", "scheduler.py:220",
             fmt::format("Chunked prefill is {} with max_num_batched_tokens={}.",
                         e.enable_chunked_prefill ? "enabled" : "disabled",
                         e.max_num_batched_tokens));
  s.log.Line("INFO", "kv_cache_utils.py:1100",
             fmt::format("GPU KV cache size: {} tokens", int64_t(s.engine.total_blocks()) * e.block_size));
  s.log.Line("INFO", "api_server.py:1950",
             fmt::format("Starting vLLM API server 0 on http://{}{}{}:{}",
                         s.cfg.host.find(':') != std::string::npos ? "[" : "", s.cfg.host,
                         s.cfg.host.find(':') != std::string::npos ? "]" : "", port()));
  // vLLM reads VLLM_LOG_STATS_INTERVAL <= 0 as its default, 10 s (--disable-log-stats turns it off).
  if (!(s.cfg.log_stats_interval_s > 0)) s.cfg.log_stats_interval_s = 10;
  if (!s.cfg.disable_log_stats) s.ArmStats();
  return Status::Ok();
}

uint16_t SimServer::port() const { return impl_->server ? impl_->server->port() : 0; }

void SimServer::Stop() {
  Impl& s = *impl_;
  if (!s.server) return;
  s.stats_timer.Cancel();
  s.step_timer.Cancel();
  s.server->Stop();
  s.server.reset();
  s.active.clear();
}

}  // namespace latdoc::sim
