// vLLM's command line as vLLM itself reads it. `vllm serve` parses argv with its own
// FlexibleArgumentParser (vllm/utils/argparse_utils.py), which accepts more than plain argparse:
//
//   --max_num_seqs 512               underscores in a long flag's name are dashes
//   -O3, -O=3                         the optimisation level glued to -O
//   --compilation-config.cudagraph_mode NONE
//   -cc.max_cudagraph_capture_size=128
//                                     dotted keys, merged into one JSON object for the flag
//   -cc.cudagraph_capture_sizes+ 1,2  "+" appends to a list
//
// and, as argparse does, the last of a repeated flag wins. NormalizeVllmArgv rewrites argv into
// one canonical form so that the rules can ask for a flag by its long name and find it however
// it was written. A --config YAML file's flags are read by host/vllm_config.h.
#ifndef LATDOC_RULES_VLLM_ARGS_H_
#define LATDOC_RULES_VLLM_ARGS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latdoc::rules {

// The canonical argv:
//   * a long flag's name (before '=' and before the first '.') has dashes for underscores;
//   * short aliases become their long names: -tp, -pp, -dp, -cc (--compilation-config),
//     -q (--quantization); -O keeps its name (it changed meaning across vLLM versions) and
//     --optimization-level, its newer long form, becomes -O;
//   * "-O3" and "-O=3" become "-O" "3";
//   * dotted keys of a flag are taken out and appended as that flag with one JSON object, after
//     any JSON the flag was given whole: values parse as JSON, else as vLLM's human-readable
//     integers (1k, 2K), else stay strings. Pairs without a value are dropped. As in vLLM, keys
//     are grouped by the flag as written: "-cc.a 1 --compilation-config.b 2" gives two objects,
//     and the later one wins.
// Words that are not flags (the model, values) are kept as they are.
std::vector<std::string> NormalizeVllmArgv(const std::vector<std::string>& argv);

// The value of a command-line flag: "--max-num-seqs 256" or "--max-num-seqs=256"; the last one
// when the flag is repeated (argparse's rule). A flag present without a value (a boolean, or one
// followed by another flag) gives "". nullopt when absent.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv, std::string_view flag);

// Every value the flag was given, in order ("" for one given without a value).
std::vector<std::string> FlagValues(const std::vector<std::string>& argv, std::string_view flag);

// FlagValue read as a number, or as vLLM's human-readable integer ("32k" = 32000, "2K" = 2048);
// nullopt when absent or neither.
std::optional<double> FlagDouble(const std::vector<std::string>& argv, std::string_view flag);

// Whether a boolean flag is on: present, and not turned off by a later "--no-" form
// ("--enforce-eager ... --no-enforce-eager" is off), as argparse's BooleanOptionalAction reads it.
bool HasFlag(const std::vector<std::string>& argv, std::string_view flag);

}  // namespace latdoc::rules

#endif  // LATDOC_RULES_VLLM_ARGS_H_
