// The simulated server's HTTP API (sim/sim_server.h): the routes, vLLM's request validation
// and error bodies, the fault draws, and a request's way to the engine. The responses
// themselves are formatted in sim_server_stream.cc.
#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/json_text.h"
#include "sim/sim_server_internal.h"

namespace latdoc::sim {

using nlohmann::json;
using sim_server_internal::Active;
using sim_server_internal::Fault;
using sim_server_internal::Mix;
using sim_server_internal::PendingTrace;

namespace {

uint64_t Fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

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

}  // namespace

void SimServer::Impl::Handle(const http::Request& req, std::shared_ptr<http::ResponseStream> out) {
  int status = Route(req, out);
  if (!cfg.disable_uvicorn_access_log && status > 0)
    log.Access(req.remote, req.method, req.target, status);
}

// Returns the status sent (or that will be sent), 0 when the connection was reset.
int SimServer::Impl::Route(const http::Request& req,
                           const std::shared_ptr<http::ResponseStream>& out) {
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

std::string SimServer::Impl::ModelsJson() const {
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

int SimServer::Impl::SendError(const std::shared_ptr<http::ResponseStream>& out, int code,
                               std::string_view type, std::string_view message) {
  out->Send(code, "application/json", ErrorBody(code, type, message));
  return code;
}

// Reads an optional integer field; a present value of another type is an error.
bool SimServer::Impl::OptInt(const json& j, const char* key, std::optional<int64_t>* v,
                             std::string* err) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_number_integer()) {
    *err = fmt::format("{}: Input should be a valid integer", key);
    return false;
  }
  *v = it->get<int64_t>();
  return true;
}

bool SimServer::Impl::OptBool(const json& j, const char* key, bool* v, std::string* err) {
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
bool SimServer::Impl::PromptTokens(const json& prompt, int* n, std::string* err) {
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

bool SimServer::Impl::MessageTokens(const json& messages, int* n, std::string* err) {
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
std::vector<uint64_t> SimServer::Impl::PromptBlocks(const json& body, bool chat) const {
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

int SimServer::Impl::Generate(const http::Request& req,
                              const std::shared_ptr<http::ResponseStream>& out, bool chat) {
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

  auto a = std::make_unique<Active>();
  a->chat = chat;
  bool ignore_eos = false;
  if (int status = ReadParams(body, chat, out, a.get(), &ignore_eos); status != 0) return status;
  bool slow = false;
  if (std::optional<int> status = DrawFaults(out, a.get(), &slow)) return *status;
  Identify(req, body, chat, out, a.get());
  int stop_at = StopAt(a.get(), ignore_eos);
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

// Generate's first step: checks the body and fills `a` (its prompt, max_tokens and stream
// options). 0 when the request is accepted, else the error status sent.
int SimServer::Impl::ReadParams(const json& body, bool chat,
                                const std::shared_ptr<http::ResponseStream>& out, Active* a,
                                bool* ignore_eos) {
  std::string err;
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string())
      return SendError(out, 400, "BadRequestError", "model: Input should be a valid string");
    if (m->get_ref<const std::string&>() != cfg.served_model_name) {
      return SendError(
          out, 404, "NotFoundError",
          fmt::format("The model `{}` does not exist.", m->get_ref<const std::string&>()));
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
  if (!OptInt(body, "max_tokens", &max_tokens, &err) ||
      !OptInt(body, "max_completion_tokens", &max_completion_tokens, &err) ||
      !OptInt(body, "n", &n, &err) || !OptBool(body, "ignore_eos", ignore_eos, &err) ||
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
    return SendError(
        out, 400, "BadRequestError",
        fmt::format("This model's maximum context length is {} tokens. However, you "
                    "requested {} tokens ({} in the messages, {} in the completion). "
                    "Please reduce the length of the messages or completion.",
                    max_len, uint64_t(a->prompt_tokens) + uint64_t(mt), a->prompt_tokens, mt));
  }
  a->max_tokens = static_cast<int>(mt);
  return 0;
}

// The request's faults: the status sent (0 for a reset) when the request ends here.
std::optional<int> SimServer::Impl::DrawFaults(const std::shared_ptr<http::ResponseStream>& out,
                                               Active* a, bool* slow) {
  // Faults are drawn once per accepted request, in arrival order, from the seeded stream.
  const FaultRates& f = cfg.faults;
  double r = std::uniform_real_distribution<double>(0, 1)(rng);
  double acc = 0;
  auto hit = [&](double rate) {
    acc += rate;
    return r < acc;
  };
  if (hit(f.http_429))
    return SendError(out, 429, "TooManyRequestsError",
                     "Too many requests (injected by latdoc sim)");
  if (hit(f.http_500))
    return SendError(out, 500, "InternalServerError",
                     "Internal server error (injected by latdoc sim)");
  if (hit(f.http_503))
    return SendError(out, 503, "ServiceUnavailableError",
                     "Service unavailable (injected by latdoc sim)");
  if (hit(f.reset_before_first_token)) {
    out->Abort(/*reset=*/true);
    return 0;
  }
  if (hit(f.reset_after_first_token))
    a->fault = Fault::kResetAfterFirst;
  else if (hit(f.cut_stream))
    a->fault = Fault::kCut;
  // A slow front end is independent of the other faults: its own draw.
  *slow = std::uniform_real_distribution<double>(0, 1)(rng) < f.slow_first_byte;
  return std::nullopt;
}

// The request's identity, text seed, prompt blocks, tool and truth record.
void SimServer::Impl::Identify(const http::Request& req, const json& body, bool chat,
                               const std::shared_ptr<http::ResponseStream>& out, Active* a) {
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
}

// The generated token at which an EOS ends the request, 0 for none.
int SimServer::Impl::StopAt(const Active* a, bool ignore_eos) const {
  int stop_at = 0;
  if (!ignore_eos && cfg.mean_output_tokens > 0) {
    // Geometric with mean m: the first EOS at ceil(ln U / ln(1 - 1/m)).
    double u = (double(Mix(a->text_seed) >> 11) + 0.5) / double(1ULL << 53);
    double p = 1.0 / std::max(1.0, cfg.mean_output_tokens);
    stop_at = p >= 1 ? 1 : std::max(1, int(std::ceil(std::log(u) / std::log1p(-p))));
    if (stop_at > a->max_tokens) stop_at = 0;
  }
  return stop_at;
}

// The request reaches the engine (vLLM's "arrival"): headers go out, the engine queues it.
void SimServer::Impl::Admit(Active& a, int stop_at) {
  a.arrival_ns = MonoNowNs();
  if (a.stream) {
    a.out->BeginChunked(200, "text/event-stream; charset=utf-8");
    if (a.trace) RecordWrites(a);  // the truth record (sim_server_truth.cc)
  }
  if (cfg.enable_prefix_caching) a.cached_tokens = prefix_cache.Lookup(a.blocks, a.prompt_tokens);
  engine.Add({a.id, a.prompt_tokens, a.max_tokens, stop_at, a.cached_tokens});
  if (cfg.enable_log_requests)
    log.Line("INFO", "async_llm.py:301", fmt::format("Added request {}.", a.public_id));
  Kick();
}

void SimServer::Impl::OnClientGone(uint64_t id) {
  auto it = active.find(id);
  if (it == active.end()) return;
  engine.Abort(id);
  ++metrics.success_abort;
  Trace(*it->second, "client_gone");
  // vLLM: "Aborted request(s) %s." with the ids, so a reader can pair it with "Added request".
  if (cfg.enable_log_requests) {
    log.Line("INFO", "async_llm.py:390",
             fmt::format("Aborted request(s) {}.", it->second->public_id));
  }
  active.erase(it);
}

}  // namespace latdoc::sim
