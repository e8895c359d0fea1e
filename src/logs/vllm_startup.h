// vLLM's startup lines: the server's version and the flags it was started with, for a server
// latdoc can only see through its log.
//
//   vLLM API server version 0.11.0
//   non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B', 'max_num_seqs': 512,
//                      'enforce_eager': True, 'compilation_config': {'cudagraph_mode': 'NONE'}}
//
// The second is Python's repr of the argparse namespace's entries that differ from their
// defaults (vllm/entrypoints/utils.py log_non_default_args, vLLM >= 0.9). It prints every value
// verbatim, API keys included: VllmArgvFromLoggedArgs leaves secrets out.
#ifndef LATDOC_LOGS_VLLM_STARTUP_H_
#define LATDOC_LOGS_VLLM_STARTUP_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc::logs {

// "0.11.0" from a message "vLLM API server version 0.11.0" (or a newer vLLM's "vLLM server
// version 0.11.1, serving model m"); nullopt for other messages.
std::optional<std::string> VllmVersionFromMessage(std::string_view msg);

// The command line that gives the logged flags, from a message "non-default args: {...}":
// {"vllm", "serve", flags...}. Each key becomes its long flag (underscores to dashes): True gives
// the bare flag, False its "--no-" form, None nothing, a number or string one value, a list one
// value per element, a dict (or an object repr such as CompilationConfig(level=3, ...)) one JSON
// object. An enum repr <CUDAGraphMode.NONE: 0> reads as its member name, "NONE". The model
// ('model_tag' or 'model') comes out as --model. Keys that hold secrets (IsSecretName: api_key,
// hf-token, any *_key, *_token, *secret*, *password*) are left out, and a secret nested in a
// dict's value reads "<redacted>". nullopt when the message is not such a line or its dict does
// not parse (cut short, for one).
std::optional<std::vector<std::string>> VllmArgvFromLoggedArgs(std::string_view msg);

// The same flags one by one, each with its values (none for a boolean flag).
struct LoggedFlag {
  std::string flag;
  std::vector<std::string> values;
};
std::optional<std::vector<LoggedFlag>> VllmFlagsFromLoggedArgs(std::string_view msg);

}  // namespace latdoc::logs

#endif  // LATDOC_LOGS_VLLM_STARTUP_H_
