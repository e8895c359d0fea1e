// Server dialects: which inference server answers (vLLM, llama.cpp, SGLang, TGI), from what it
// says of itself, and how to speak its language: advice in its own flags, and the parts of TTFT
// its metrics can measure. latdoc's rules and the sweep write their advice in vLLM's flags;
// InServerFlags() turns that text into the server's. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "servermetrics/server_snapshot.h"

namespace latdoc::servermetrics {

// "vllm", "llamacpp", "sglang", "tgi"; "" for kUnknown. The ids of metric_names.h's tables.
std::string_view ServerKindId(ServerKind kind);
ServerKind ServerKindFromId(std::string_view id);
// As people write it: "vLLM", "llama.cpp", "SGLang", "TGI"; "unknown" for kUnknown.
std::string_view ServerKindLabel(ServerKind kind);

// From the `owned_by` of /v1/models: vLLM "vllm", llama.cpp "llamacpp", SGLang "sglang"
// (matched without case). TGI puts the model's id there: kUnknown.
ServerKind ServerKindFromOwnedBy(std::string_view owned_by);
// From the `Server` response header: llama.cpp sends "llama.cpp"; vLLM and SGLang send
// uvicorn's "uvicorn", which says nothing of the engine: kUnknown.
ServerKind ServerKindFromServerHeader(std::string_view value);
// From a process command line (arguments separated by spaces or NULs): `vllm serve`,
// `vllm.entrypoints`, `llama-server`, `sglang.launch_server`, `text-generation-launcher`
// or `text-generation-router`.
ServerKind ServerKindFromCommandLine(std::string_view command_line);

// The server, from the strongest evidence there is: its /metrics names (a snapshot's kind),
// then /v1/models' owned_by, then the Server header, then a command line. `evidence` says which
// ("/metrics names (llamacpp:)", "/v1/models owned_by \"llamacpp\"", ...); "" when unknown.
struct ServerIdentity {
  ServerKind kind = ServerKind::kUnknown;
  std::string evidence;
};
ServerIdentity IdentifyServer(ServerKind from_metrics, std::string_view owned_by = {},
                              std::string_view server_header = {},
                              std::string_view command_line = {});

// `text` (advice written in vLLM's flags) with every vLLM flag that has a counterpart on `kind`
// replaced by it: --max-num-seqs by llama.cpp's --parallel (-np), SGLang's
// --max-running-requests, TGI's --max-batch-total-tokens; --max-num-batched-tokens by
// --batch-size (-b) / --chunked-prefill-size / --max-batch-prefill-tokens; the KV-room,
// prefix-cache, front-end and logging advice by the server's own. vLLM and kUnknown: unchanged.
std::string InServerFlags(ServerKind kind, std::string text);

// The means per request of the parts of server-side TTFT that `kind`'s metrics measure over a
// delta. vLLM: TTFT, queue and prefill histograms. SGLang: TTFT and queue histograms. TGI:
// the queue histogram. llama.cpp: prefill = prompt_seconds_total's increase / `requests`
// (llama.cpp sums each request's prompt-processing time; it has no request counter, so the
// caller gives the number of requests the delta covers); no queue time (requests_deferred is
// a gauge) and no server TTFT. A part not measured is nullopt, and `not_measurable` says which
// and why ("" when none is missing).
struct TtftParts {
  std::optional<double> server_ttft_s;
  std::optional<double> queue_s;
  std::optional<double> prefill_s;
  std::string not_measurable;
};
TtftParts MeanTtftParts(ServerKind kind, const SnapshotDelta& delta,
                        std::optional<double> requests = std::nullopt);

}  // namespace latdoc::servermetrics
