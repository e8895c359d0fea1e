// Finding the inference server process by its command line, and making its argv and
// environment safe to print (no API keys or tokens ever leave this module).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/sysroot.h"

namespace latdoc::host {

// "vllm" for `vllm serve ...` / `python -m vllm.entrypoints.openai.api_server ...`,
// "llama.cpp" for llama-server, "sglang" for `python -m sglang.launch_server` / `sglang serve`,
// "tgi" for text-generation-launcher. nullopt for anything else (vLLM's own child processes,
// titled VLLM::EngineCore / VLLM::Worker_TP0, are not the server).
std::optional<std::string> ServerKindFromArgv(const std::vector<std::string>& argv);

// Replaces the values of every option that names a secret (IsSecretName: --api-key, --hf-token,
// --admin-api-key, --token, --ssl-password, ...) with "<redacted>": "--flag=value", and
// "--flag value" with every further value up to the next option ("--api-key k1 k2"). Other
// words are redacted inside (RedactSecretValues): a JSON value's secret keys, "token=..." text.
std::vector<std::string> RedactArgv(std::vector<std::string> argv);

// Keeps the variables the lint reads (VLLM_*, HIP_*, ROCM_*, HSA_*, NCCL_*, CUDA_*, PYTORCH_*,
// TORCH_*, OMP_*, SGLANG_*, LLAMA_*); values of names holding KEY, TOKEN, SECRET, PASSW, AUTH or
// CREDENTIAL, or that IsSecretName, become "<redacted>".
std::map<std::string, std::string> FilterEnv(const std::vector<std::string>& environ_words);

struct FoundServer {
  int64_t pid = 0;
  std::string kind;
  std::vector<std::string> argv;  // redacted
};

// A process the server started (vLLM V1: VLLM::EngineCore, VLLM::Worker_TP0, ...).
struct ChildProcess {
  int64_t pid = 0;
  std::string name;  // its process title when it set one ("VLLM::EngineCore"), else its comm
};

// The descendants of `pid` (children, theirs, ...), at most 64, in pid order; by "PPid:" in
// /proc/<pid>/status.
std::vector<ChildProcess> FindDescendants(const SysRoot& fs, int64_t pid);

// The server among /proc/<pid>/cmdline: the innermost match, not a wrapper that started it
// (`uv run vllm serve`, `sudo -u svc vllm serve`) nor a forked copy of it (ancestry from "PPid:"
// in /proc/<pid>/status); the lowest pid among several servers. Or the process `pid` when
// given (then any command line is accepted, kind "unknown" if it is none of the above).
// Error: no server process (the message lists what was looked for), or `pid` not readable.
StatusOr<FoundServer> FindServerProcess(const SysRoot& fs, std::optional<int64_t> pid);

}  // namespace latdoc::host
