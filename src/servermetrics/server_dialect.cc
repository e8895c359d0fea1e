// Sources of the flags (each server's CLI):
//  llama.cpp: common/arg.cpp (the release node-llama-cpp 3.22.1 bundles): -np/--parallel,
//        -c/--ctx-size (shared by the slots), -b/--batch-size (logical batch, default 2048),
//        -ub/--ubatch-size (physical batch, default 512), -cb/--cont-batching (default on),
//        --cache-prompt, --cache-reuse, --cache-type-k/-v, --threads-http, -t/--threads.
//        tools/server/server-http.cpp sets the `Server: llama.cpp` header;
//        tools/server/server-context.cpp answers /v1/models with owned_by "llamacpp".
//  SGLang: python/sglang/srt/server_args.py: --max-running-requests, --mem-fraction-static,
//        --chunked-prefill-size, --schedule-policy (lpm, fcfs, ...), --context-length,
//        --kv-cache-dtype, --tp-size, --disable-radix-cache, --disable-cuda-graph,
//        --disable-overlap-schedule, --log-requests.
//  TGI: text-generation-launcher --help: --max-concurrent-requests (the router refuses past
//        it), --max-batch-total-tokens (what caps the running batch), --max-batch-prefill-tokens,
//        --max-total-tokens, --cuda-memory-fraction, --num-shard.
#include "servermetrics/server_dialect.h"

#include "servermetrics/metric_names.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <utility>

namespace latdoc::servermetrics {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool Contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// vLLM phrase -> the server's. Longer phrases first: a phrase that holds a flag is replaced
// whole before the flag alone would be.
using Phrases = std::pair<std::string_view, std::string_view>;

constexpr Phrases kLlamaCpp[] = {
    {"(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`)",
     "(a larger `--ctx-size` (`-c`), which the `--parallel` slots share, or a quantised cache: "
     "`--cache-type-k q8_0 --cache-type-v q8_0`)"},
    {"`--gpu-memory-utilization 0.95`, a shorter `--max-model-len`, `--kv-cache-dtype fp8`, or more "
     "GPUs (`--tensor-parallel-size`)",
     "a larger `--ctx-size` (`-c`; the `--parallel` slots share it), `--cache-type-k q8_0 "
     "--cache-type-v q8_0`, or more GPUs (`--split-mode`, `--tensor-split`)"},
    {"keep prefix caching on (`--enable-prefix-caching`)",
     "keep the slots' prompt cache on (`--cache-prompt`, the default; `--cache-reuse 256`)"},
    {"try `--api-server-count 2` and keep `--disable-log-requests`",
     "give its HTTP side more threads (`--threads-http`) and keep `--verbose` off"},
    {"(drop `--enable-log-requests`, `--disable-uvicorn-access-log`, `VLLM_LOGGING_LEVEL=INFO`)",
     "(no `--verbose`, no `--log-verbosity` above the default)"},
    {"the scheduler is host-bound (Python/GIL): try `--async-scheduling` and keep CUDA/HIP graphs "
     "on (no `--enforce-eager`)",
     "the decode loop is host-bound: give it its own cores (`--threads`, `--threads-batch`, "
     "`--cpu-range`)"},
    {"try `--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`)",
     "give the decode loop its own cores (`--threads`, `--threads-batch`, `--cpu-range`)"},
    {"--gpu-memory-utilization, a smaller --max-model-len",
     "a larger --ctx-size (-c), which the --parallel slots share"},
    {"`--max-num-seqs`", "`--parallel` (`-np`)"},
    {"`--max-num-batched-tokens`", "`--batch-size` (`-b`) and `--ubatch-size` (`-ub`)"},
    {"--max-num-seqs", "--parallel"},
    {"--max-num-batched-tokens", "--batch-size"},
};

constexpr Phrases kSglang[] = {
    {"(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`)",
     "(`--mem-fraction-static 0.9`, `--kv-cache-dtype fp8_e5m2`, a shorter `--context-length`)"},
    {"`--gpu-memory-utilization 0.95`, a shorter `--max-model-len`, `--kv-cache-dtype fp8`, or more "
     "GPUs (`--tensor-parallel-size`)",
     "`--mem-fraction-static 0.9`, a shorter `--context-length`, `--kv-cache-dtype fp8_e5m2`, or more "
     "GPUs (`--tp-size`)"},
    {"keep prefix caching on (`--enable-prefix-caching`)",
     "keep the radix prefix cache on (no `--disable-radix-cache`; `--schedule-policy lpm` serves "
     "shared prefixes first)"},
    {"try `--api-server-count 2` and keep `--disable-log-requests`",
     "keep request logging off (no `--log-requests`)"},
    {"(drop `--enable-log-requests`, `--disable-uvicorn-access-log`, `VLLM_LOGGING_LEVEL=INFO`)",
     "(no `--log-requests`, `--log-level warning`)"},
    {"try `--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`)",
     "keep the overlap scheduler and CUDA graphs on (no `--disable-overlap-schedule`, no "
     "`--disable-cuda-graph`)"},
    {"--gpu-memory-utilization, a smaller --max-model-len",
     "--mem-fraction-static, a smaller --context-length"},
    {"`--max-num-seqs`", "`--max-running-requests`"},
    {"`--max-num-batched-tokens`", "`--chunked-prefill-size`"},
    {"--max-num-seqs", "--max-running-requests"},
    {"--max-num-batched-tokens", "--chunked-prefill-size"},
};

constexpr Phrases kTgi[] = {
    {"(`--gpu-memory-utilization 0.95`, `--kv-cache-dtype fp8`, a shorter `--max-model-len`)",
     "(`--cuda-memory-fraction`, `--kv-cache-dtype fp8_e5m2`, a smaller `--max-total-tokens`)"},
    {"`--gpu-memory-utilization 0.95`, a shorter `--max-model-len`, `--kv-cache-dtype fp8`, or more "
     "GPUs (`--tensor-parallel-size`)",
     "`--cuda-memory-fraction`, a smaller `--max-total-tokens`, `--kv-cache-dtype fp8_e5m2`, or "
     "more GPUs (`--num-shard`)"},
    {"keep prefix caching on (`--enable-prefix-caching`)",
     "keep prefix caching on (TGI 3's default; `PREFIX_CACHING=1`)"},
    {"try `--api-server-count 2` and keep `--disable-log-requests`",
     "check the router's `--max-concurrent-requests` and `--max-waiting-tokens`"},
    {"(drop `--enable-log-requests`, `--disable-uvicorn-access-log`, `VLLM_LOGGING_LEVEL=INFO`)",
     "(`RUST_LOG=info`, no `--json-output` to a slow sink)"},
    {"(Python/GIL): try `--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`)",
     "(the Python shard): keep CUDA graphs on (`--cuda-graphs`)"},
    {"try `--async-scheduling` and keep CUDA/HIP graphs on (no `--enforce-eager`)",
     "keep CUDA graphs on (`--cuda-graphs`)"},
    {"--gpu-memory-utilization, a smaller --max-model-len",
     "--cuda-memory-fraction, a smaller --max-total-tokens"},
    {"`--max-num-seqs`", "`--max-batch-total-tokens`"},
    {"`--max-num-batched-tokens`", "`--max-batch-prefill-tokens`"},
    {"--max-num-seqs", "--max-batch-total-tokens"},
    {"--max-num-batched-tokens", "--max-batch-prefill-tokens"},
};

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
}

std::optional<double> Mean(const std::optional<HistogramDelta>& h) {
  return h ? h->mean() : std::nullopt;
}

}  // namespace

std::string_view ServerKindId(ServerKind kind) {
  switch (kind) {
    case ServerKind::kVllm: return "vllm";
    case ServerKind::kLlamaCpp: return "llamacpp";
    case ServerKind::kSglang: return "sglang";
    case ServerKind::kTgi: return "tgi";
    case ServerKind::kUnknown: break;
  }
  return "";
}

ServerKind ServerKindFromId(std::string_view id) {
  for (ServerKind k : {ServerKind::kVllm, ServerKind::kLlamaCpp, ServerKind::kSglang, ServerKind::kTgi})
    if (id == ServerKindId(k)) return k;
  return ServerKind::kUnknown;
}

std::string_view ServerKindLabel(ServerKind kind) {
  return kind == ServerKind::kUnknown ? "unknown" : ServerKindName(ServerKindId(kind));
}

ServerKind ServerKindFromOwnedBy(std::string_view owned_by) {
  const std::string o = Lower(owned_by);
  if (o == "vllm") return ServerKind::kVllm;
  if (o == "llamacpp" || o == "llama.cpp") return ServerKind::kLlamaCpp;
  if (o == "sglang") return ServerKind::kSglang;
  return ServerKind::kUnknown;
}

ServerKind ServerKindFromServerHeader(std::string_view value) {
  const std::string v = Lower(value);
  if (v.rfind("llama.cpp", 0) == 0) return ServerKind::kLlamaCpp;
  return ServerKind::kUnknown;
}

ServerKind ServerKindFromCommandLine(std::string_view command_line) {
  std::string c = Lower(command_line);
  std::replace(c.begin(), c.end(), '\0', ' ');
  if (Contains(c, "llama-server") || Contains(c, "llama_server")) return ServerKind::kLlamaCpp;
  if (Contains(c, "sglang.launch_server") || Contains(c, "sglang serve")) return ServerKind::kSglang;
  if (Contains(c, "text-generation-launcher") || Contains(c, "text-generation-router"))
    return ServerKind::kTgi;
  if (Contains(c, "vllm serve") || Contains(c, "vllm.entrypoints") || Contains(c, "/vllm serve"))
    return ServerKind::kVllm;
  return ServerKind::kUnknown;
}

ServerIdentity IdentifyServer(ServerKind from_metrics, std::string_view owned_by,
                              std::string_view server_header, std::string_view command_line) {
  ServerIdentity id;
  if (from_metrics != ServerKind::kUnknown) {
    id.kind = from_metrics;
    const std::string_view i = ServerKindId(from_metrics);
    id.evidence = "/metrics names (" + std::string(i == "tgi" ? "tgi_" : std::string(i) + ":") + ")";
  } else if (ServerKind k = ServerKindFromOwnedBy(owned_by); k != ServerKind::kUnknown) {
    id.kind = k;
    id.evidence = "/v1/models owned_by \"" + std::string(owned_by) + "\"";
  } else if (ServerKind k = ServerKindFromServerHeader(server_header); k != ServerKind::kUnknown) {
    id.kind = k;
    id.evidence = "Server header \"" + std::string(server_header) + "\"";
  } else if (ServerKind k = ServerKindFromCommandLine(command_line); k != ServerKind::kUnknown) {
    id.kind = k;
    id.evidence = "command line";
  }
  return id;
}

std::string InServerFlags(ServerKind kind, std::string text) {
  std::span<const Phrases> table;
  switch (kind) {
    case ServerKind::kLlamaCpp: table = kLlamaCpp; break;
    case ServerKind::kSglang: table = kSglang; break;
    case ServerKind::kTgi: table = kTgi; break;
    case ServerKind::kVllm:
    case ServerKind::kUnknown: return text;
  }
  for (const auto& [from, to] : table) ReplaceAll(text, from, to);
  return text;
}

TtftParts MeanTtftParts(ServerKind kind, const SnapshotDelta& d, std::optional<double> requests) {
  TtftParts p;
  switch (kind) {
    case ServerKind::kLlamaCpp:
      if (d.prompt_seconds && requests && *requests > 0) p.prefill_s = *d.prompt_seconds / *requests;
      p.not_measurable =
          "queue time and server TTFT are not measurable on llama.cpp (it exposes no per-request "
          "times, only a gauge of deferred requests and the summed prompt time)";
      if (!p.prefill_s) p.not_measurable += "; prefill needs the count of requests served";
      return p;
    case ServerKind::kTgi:
      p.queue_s = Mean(d.queue_s);
      p.not_measurable =
          "prefill and server TTFT are not measurable on TGI (its router times only the queue and "
          "the whole inference)";
      return p;
    case ServerKind::kSglang:
      p.server_ttft_s = Mean(d.ttft_s);
      p.queue_s = Mean(d.queue_s);
      p.not_measurable = "prefill is not measurable on SGLang (no prefill-time histogram)";
      return p;
    case ServerKind::kVllm:
    case ServerKind::kUnknown:
      break;
  }
  p.server_ttft_s = Mean(d.ttft_s);
  p.queue_s = Mean(d.queue_s);
  p.prefill_s = Mean(d.prefill_s);
  return p;
}

}  // namespace latdoc::servermetrics
