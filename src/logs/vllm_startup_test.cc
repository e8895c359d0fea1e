#include "logs/vllm_startup.h"

#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

using Argv = std::vector<std::string>;

// The argv from a startup line whose dict is `dict`, or {"<does not parse>"}.
Argv Logged(const std::string& dict) {
  return VllmArgvFromLoggedArgs("non-default args: " + dict).value_or(Argv{"<does not parse>"});
}

TEST(VllmStartupTest, VersionLine) {
  EXPECT_EQ(VllmVersionFromMessage("vLLM API server version 0.10.1.1"), "0.10.1.1");
  EXPECT_EQ(VllmVersionFromMessage("vLLM server version 0.11.1, serving model Qwen/Qwen3-8B"),
            "0.11.1");
  EXPECT_FALSE(VllmVersionFromMessage("vLLM API server version ").has_value());
  EXPECT_FALSE(VllmVersionFromMessage("vLLM server version , serving model m").has_value());
  EXPECT_FALSE(VllmVersionFromMessage("Starting vLLM API server 0 on http://0.0.0.0:8000").has_value());
}

// The shape vLLM 0.10 logs (vllm/entrypoints/utils.py log_non_default_args): the namespace's
// dest names, Python literals, in the order argparse keeps them.
TEST(VllmStartupTest, FlagsFromTheNonDefaultArgsLine) {
  EXPECT_EQ(Logged(
      "{'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'port': 8001, "
      "'enable_log_requests': True, 'enable_prefix_caching': False, 'max_num_seqs': 512, "
      "'gpu_memory_utilization': 0.85, 'served_model_name': None, "
      "'cudagraph_capture_sizes': [1, 2, 4, 8], "
      "'compilation_config': {'level': 3, 'cudagraph_mode': 'NONE'}}"),
            (Argv{"vllm", "serve", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--port",
                   "8001", "--enable-log-requests", "--no-enable-prefix-caching",
                   "--max-num-seqs", "512", "--gpu-memory-utilization", "0.85",
                   "--cudagraph-capture-sizes", "1", "2", "4", "8", "--compilation-config",
                   R"({"level":3,"cudagraph_mode":"NONE"})"}));
}

// Older and newer namespaces hold objects: a dataclass repr reads as its keyword fields, an
// enum repr as its member's name; strings keep Python's escapes and either quote.
TEST(VllmStartupTest, ObjectReprsEnumsAndStrings) {
  EXPECT_EQ(Logged(
      "{'compilation_config': CompilationConfig(level=0, "
      "cudagraph_mode=<CUDAGraphMode.NONE: 0>, compile_sizes=[], inductor_passes={}), "
      "'chat_template': \"it's {{ x }}\\n\", 'revision': 'caf\\xe9', 'kv_transfer_config': ()}"),
            (Argv{"vllm", "serve", "--compilation-config",
                   R"({"level":0,"cudagraph_mode":"NONE","compile_sizes":[],"inductor_passes":{}})",
                   "--chat-template", "it's {{ x }}\n", "--revision", "caf\xc3\xa9"}));
}

// vLLM prints API keys and tokens verbatim in this line; they never reach the argv.
TEST(VllmStartupTest, SecretsAreLeftOut) {
  EXPECT_EQ(Logged(
      "{'api_key': ['sk-live-123', 'sk-live-456'], 'hf_token': 'hf_abc', "
      "'ssl_keyfile': '/etc/tls/key.pem', 'max_num_batched_tokens': 8192, "
      "'openai_secret': 'x', 'db_password': 'y', 'some_api_key': 'z'}"),
            (Argv{"vllm", "serve", "--ssl-keyfile", "/etc/tls/key.pem",
                   "--max-num-batched-tokens", "8192"}));
}

// Every spelling of a secret's key, and secrets nested in a config's dict or in a string that
// holds JSON: the flag stays where it is not itself the secret, its secret does not.
TEST(VllmStartupTest, SecretsInEveryFormAreLeftOut) {
  EXPECT_EQ(Logged(
      "{'api-key': 'sk-dash', 'API_KEY': 'sk-upper', 'Token': 't', "
      "'kv_transfer_config': {'kv_connector': 'X', 'kv_connector_extra_config': "
      "{'auth': {'api_key': 'sk-nested'}, 'keys': [{'hf_token': 'hf-deep'}]}}, "
      "'speculative_config': '{\"model\": \"m\", \"api_key\": \"sk-in-text\"}', "
      "'kv_events_config': ' {\"api_key\": \"sk-after-a-blank\"}', 'tag': \"token=sk-t\"}"),
            (Argv{"vllm", "serve", "--kv-transfer-config",
                   R"({"kv_connector":"X","kv_connector_extra_config":{"auth":{"api_key":"<redacted>"},"keys":[{"hf_token":"<redacted>"}]}})",
                   "--speculative-config", R"({"model":"m","api_key":"<redacted>"})",
                   "--kv-events-config", R"({"api_key":"<redacted>"})", "--tag",
                   "token=<redacted>"}));
}

// vLLM logs a CompilationConfig as the JSON its __repr__ dumps (only the fields that were set;
// enums as numbers): JSON's true/false/null read as Python's constants.
TEST(VllmStartupTest, ConfigObjectsLoggedAsJson) {
  EXPECT_EQ(Logged(
      "{'model': 'm', 'compilation_config': {\"level\":0,\"cudagraph_mode\":0,"
      "\"use_inductor\":false,\"debug_dump_path\":null,\"custom_ops\":[\"none\"]}, "
      "'enable_prefix_caching': False}"),
            (Argv{"vllm", "serve", "--model", "m", "--compilation-config",
                   R"({"level":0,"cudagraph_mode":0,"use_inductor":false,"debug_dump_path":null,"custom_ops":["none"]})",
                   "--no-enable-prefix-caching"}));
}

TEST(VllmStartupTest, OtherMessagesAndBrokenDictsGiveNothing) {
  EXPECT_FALSE(VllmArgvFromLoggedArgs("Engine 000: Avg prompt throughput: 0.0 tokens/s").has_value());
  EXPECT_FALSE(VllmArgvFromLoggedArgs("non-default args: {'max_num_seqs': 512, 'model_ta").has_value());
  EXPECT_FALSE(VllmArgvFromLoggedArgs("non-default args: ['a']").has_value());
  EXPECT_FALSE(VllmArgvFromLoggedArgs("non-default args: {'a': 1} trailing").has_value());
  EXPECT_FALSE(VllmArgvFromLoggedArgs("non-default args: {'a': 'unterminated}").has_value());
  EXPECT_EQ(VllmArgvFromLoggedArgs("non-default args: {}"), (Argv{"vllm", "serve"}));
  // Nesting deeper than the parser's limit is refused, not recursed into.
  EXPECT_FALSE(VllmArgvFromLoggedArgs("non-default args: {'a': " + std::string(100, '[') +
                                      std::string(100, ']') + "}")
                   .has_value());
}

}  // namespace
}  // namespace latdoc::logs
