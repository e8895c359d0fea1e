#include "host/vllm_config.h"

#include <gtest/gtest.h>

namespace latdoc::host {
namespace {

using Argv = std::vector<std::string>;

// The forms of vLLM's documentation (docs/configuration/serve_args.md) and of its
// load_config_file docstring: flat flags, a nested block, flow lists, YAML 1.1 booleans.
TEST(VllmConfigTest, FlagsAsVllmLoadsThem) {
  auto args = VllmConfigFileArgs(
      "# vLLM serve config\n"
      "---\n"
      "model: meta-llama/Llama-3.1-8B-Instruct\n"
      "host: \"127.0.0.1\"\n"
      "port: 6379\n"
      "uvicorn-log-level: 'info'   # quiet\n"
      "max_num_seqs: 512\n"
      "gpu-memory-utilization: 0.92\n"
      "enforce-eager: yes\n"
      "enable-prefix-caching: false\n"
      "served-model-name: ~\n"
      "cudagraph-capture-sizes: [1, 2, 4, 8]\n"
      "api-key: sk-in-the-file\n"
      "compilation-config:\n"
      "  level: 3\n"
      "  pass_config:\n"
      "    fuse_allreduce_rms: true\n"
      "  cudagraph_capture_sizes:\n"
      "  - 16\n"
      "  - 32\n"
      "speculative-config: {model: \"x/eagle\", num_speculative_tokens: 3}\n");
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(*args, (Argv{"--model", "meta-llama/Llama-3.1-8B-Instruct", "--host", "127.0.0.1",
                         "--port", "6379", "--uvicorn-log-level", "info", "--max_num_seqs", "512",
                         "--gpu-memory-utilization", "0.92", "--enforce-eager",
                         "--no-enable-prefix-caching", "--served-model-name", "None",
                         "--cudagraph-capture-sizes", "1", "2", "4", "8", "--api-key",
                         "sk-in-the-file", "--compilation-config",
                         R"({"level": 3, "pass_config": {"fuse_allreduce_rms": true}, "cudagraph_capture_sizes": [16, 32]})",
                         "--speculative-config",
                         R"({"model": "x/eagle", "num_speculative_tokens": 3})"}));
}

TEST(VllmConfigTest, EmptyFileAndErrorsNameTheLine) {
  EXPECT_EQ(*VllmConfigFileArgs(""), Argv{});
  EXPECT_EQ(*VllmConfigFileArgs("# nothing\n\n"), Argv{});
  auto bad = VllmConfigFileArgs("port: 8000\nchat-template: |\n  {{ x }}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: multi-line strings are not read");
  bad = VllmConfigFileArgs("port: 8000\n   max-num-seqs: 4\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: indentation does not match the lines before");
  bad = VllmConfigFileArgs("just words\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 1: expected 'key: value'");
  EXPECT_FALSE(VllmConfigFileArgs("- a\n- b\n").ok());   // a list, not a mapping of flags
  EXPECT_FALSE(VllmConfigFileArgs("a: [1, 2\n").ok());
  EXPECT_FALSE(VllmConfigFileArgs("a: &anchor 1\n").ok());
  std::string deep = "a:\n";
  for (int i = 1; i < 60; ++i) deep += std::string(size_t(i) * 2, ' ') + "k:\n";
  EXPECT_FALSE(VllmConfigFileArgs(deep).ok());
}

// vLLM puts the file's flags after `serve` and the model, so the command line wins; for the
// api_server module, right after it.
TEST(VllmConfigTest, FileFlagsGoBeforeTheCommandLines) {
  EXPECT_EQ(WithConfigFileArgs({"/usr/bin/vllm", "serve", "m", "--config", "c.yaml", "-tp", "2"},
                               {"--port", "9000", "--tensor-parallel-size", "4"}),
            (Argv{"/usr/bin/vllm", "serve", "m", "--port", "9000", "--tensor-parallel-size", "4",
                  "-tp", "2"}));
  EXPECT_EQ(WithConfigFileArgs({"vllm", "serve", "--config", "c.yaml"}, {"--model", "m"}),
            (Argv{"vllm", "serve", "--model", "m"}));
  EXPECT_EQ(WithConfigFileArgs({"python3", "-m", "vllm.entrypoints.openai.api_server", "--config",
                                "c.yaml", "--port", "1"},
                               {"--port", "2"}),
            (Argv{"python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "2", "--port", "1"}));
  EXPECT_EQ(VllmConfigPath({"vllm", "serve", "m", "--config", "/etc/vllm.yaml"}), "/etc/vllm.yaml");
  EXPECT_FALSE(VllmConfigPath({"vllm", "serve", "m", "--config"}).has_value());
}

}  // namespace
}  // namespace latdoc::host
