// vLLM's --config FILE.yaml: the flags a server was started with that its command line does not
// show. vLLM (vllm/utils/argparse_utils.py, FlexibleArgumentParser) loads the file with
// yaml.safe_load and turns each top-level key into flags:
//
//   key: true        -> --key            key: false -> --no-key (when the parser has it: only
//   key: [a, b]      -> --key a b                      dashed keys; key_x: false gives nothing)
//   key: {x: 1} (or a nested block) -> --key '{"x": 1}'
//   key: value       -> --key value      (str(value) in Python)
//
// and inserts them after the subcommand and model, before the rest of the command line, so the
// command line wins over the file. Secrets never come out: a key that names one (IsSecretName:
// api_key, hf-token, ...) gives "--key <redacted>", and so does one nested in a mapping.
#ifndef LATDOC_HOST_VLLM_CONFIG_H_
#define LATDOC_HOST_VLLM_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace latdoc::host {

// The file named by "--config FILE" in a vLLM command line (vLLM reads only that form).
std::optional<std::string> VllmConfigPath(const std::vector<std::string>& argv);

// The flags vLLM takes from a config file's text, read with libyaml as yaml.safe_load reads it:
// plain scalars resolved by YAML 1.1's rules (yes/no/on/off are booleans, 0x1F an int, 1e3 a
// string), anchors and aliases, the standard tags; tags safe_load refuses (!!python/...), a
// second document and syntax errors are an error that names the line.
StatusOr<std::vector<std::string>> VllmConfigFileArgs(std::string_view yaml);

// argv with the config file's flags put where vLLM puts them (after "serve" and the model, or
// first for an entry point without a subcommand) and "--config FILE" taken out.
std::vector<std::string> WithConfigFileArgs(const std::vector<std::string>& argv,
                                            const std::vector<std::string>& file_args);

}  // namespace latdoc::host

#endif  // LATDOC_HOST_VLLM_CONFIG_H_
