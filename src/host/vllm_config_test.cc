#include "host/vllm_config.h"

#include <fmt/format.h>

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
                         "<redacted>", "--compilation-config",
                         R"({"level": 3, "pass_config": {"fuse_allreduce_rms": true}, "cudagraph_capture_sizes": [16, 32]})",
                         "--speculative-config",
                         R"({"model": "x/eagle", "num_speculative_tokens": 3})"}));
}

// No secret in the file reaches the flags, whatever its spelling or form: underscore and quoted
// keys, a list of keys, a nested key; the flag stays, so the evidence shows one was given.
TEST(VllmConfigTest, SecretsNeverLeaveTheFile) {
  auto args = VllmConfigFileArgs(
      "api_key:\n"
      "  - sk-one\n"
      "  - sk-two\n"
      "\"hf_token\": hf-secret\n"
      "'admin-api-key': adm\n"
      "kv-transfer-config: {kv_connector: X, kv_connector_extra_config: {api_key: nested, "
      "url: http://h}}\n"
      "max-num-seqs: 8\n");
  ASSERT_TRUE(args.ok()) << args.status().message();
  EXPECT_EQ(*args, (Argv{"--api_key", "<redacted>", "--hf_token", "<redacted>", "--admin-api-key",
                         "<redacted>", "--kv-transfer-config",
                         R"({"kv_connector": "X", "kv_connector_extra_config": {"api_key": "<redacted>", "url": "http://h"}})",
                         "--max-num-seqs", "8"}));
  for (const auto& w : *args) {
    EXPECT_EQ(w.find("sk-"), std::string::npos) << w;
    EXPECT_EQ(w.find("secret"), std::string::npos) << w;
    EXPECT_EQ(w.find("nested"), std::string::npos) << w;
  }
}

// A file that is one flow mapping (on one line or several, after "---" too), quoted keys with
// escapes read as PyYAML reads them, and a second document refused as yaml.safe_load does.
TEST(VllmConfigTest, FlowDocumentsEscapedKeysAndOneDocument) {
  EXPECT_EQ(*VllmConfigFileArgs("{model: m, api_key: sk-flow,\n max-num-seqs: 4}\n"),
            (Argv{"--model", "m", "--api_key", "<redacted>", "--max-num-seqs", "4"}));
  EXPECT_EQ(*VllmConfigFileArgs("--- {port: 1}\n"), (Argv{"--port", "1"}));
  EXPECT_EQ(*VllmConfigFileArgs("\"api\\x5fkey\": sk-escaped\n\"caf\\u00e9\": 1\n"),
            (Argv{"--api_key", "<redacted>", "--caf\xc3\xa9", "1"}));
  auto two = VllmConfigFileArgs("port: 1\n---\nport: 2\n");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().message(), "line 2: a second document (vLLM reads one)");
  EXPECT_FALSE(VllmConfigFileArgs("{model: m\n").ok());  // unterminated
  EXPECT_FALSE(VllmConfigFileArgs("\"bad\\xZZ\": 1\n").ok());
}

// False gives "--no-KEY" only for a dashed key (vLLM looks the option up by that spelling, and
// its options have dashes); an underscore key set to false gives nothing, as in vLLM.
TEST(VllmConfigTest, FalseOnlyWhereVllmHasTheNoOption) {
  EXPECT_EQ(*VllmConfigFileArgs("enable-prefix-caching: false\nenforce_eager: false\n"),
            (Argv{"--no-enable-prefix-caching"}));
}

// Plain scalars as PyYAML's YAML 1.1 resolver reads them, so a flag gets the value vLLM sees.
TEST(VllmConfigTest, PlainScalarsAsPyYamlReadsThem) {
  auto one = [](std::string_view value) {
    auto args = VllmConfigFileArgs("k: " + std::string(value) + "\n");
    EXPECT_TRUE(args.ok()) << value;
    return args.ok() && args->size() == 2 ? (*args)[1] : std::string("?");
  };
  EXPECT_EQ(one("1_000"), "1000");
  EXPECT_EQ(one("010"), "8");          // octal
  EXPECT_EQ(one("0x10"), "16");
  EXPECT_EQ(one("0b101"), "5");
  EXPECT_EQ(one("1:30"), "90");        // base 60
  EXPECT_EQ(one("-7"), "-7");
  EXPECT_EQ(one("+7"), "7");
  EXPECT_EQ(one("0"), "0");
  EXPECT_EQ(one("_1"), "_1");          // a string: '_' only after the first digit
  EXPECT_EQ(one("0o10"), "0o10");      // YAML 1.2 octal: a string to PyYAML
  EXPECT_EQ(one("1e3"), "1e3");        // no dot: a string
  EXPECT_EQ(one("1.0e+3"), "1000.0");
  EXPECT_EQ(one("0.92"), "0.92");
  EXPECT_EQ(one(".5"), "0.5");
  EXPECT_EQ(one("-.5"), "-.5");        // a string: a sign needs a digit before the dot
  EXPECT_EQ(one("0_"), "0");
  EXPECT_EQ(one("09"), "09");          // not octal, not decimal: a string
  EXPECT_EQ(one("99999999999999999999"), "99999999999999999999");  // past int64: kept as text
}

// A comment after a plain scalar with an apostrophe is still a comment; '' and \" inside quotes
// do not end them.
TEST(VllmConfigTest, CommentsAfterApostrophesAndEscapes) {
  EXPECT_EQ(*VllmConfigFileArgs("served-model-name: Bob's model  # the name\n"),
            (Argv{"--served-model-name", "Bob's model"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: 'it''s # not a comment'  # one\n"),
            (Argv{"--a", "it's # not a comment"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: \"say \\\" # x\"  # one\n"), (Argv{"--a", "say \" # x"}));
}

TEST(VllmConfigTest, EmptyFileAndErrorsNameTheLine) {
  EXPECT_EQ(*VllmConfigFileArgs(""), Argv{});
  EXPECT_EQ(*VllmConfigFileArgs("# nothing\n\n"), Argv{});
  auto bad = VllmConfigFileArgs("port: 8000\n   max-num-seqs: 4\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: mapping values are not allowed in this context");
  bad = VllmConfigFileArgs("just words\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "the file is not a mapping of flags to values");
  EXPECT_FALSE(VllmConfigFileArgs("- a\n- b\n").ok());   // a list, not a mapping of flags
  bad = VllmConfigFileArgs("a: [1, 2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: did not find expected ',' or ']'");
  // yaml.safe_load refuses Python's tags and aliases of no anchor; so does latdoc.
  bad = VllmConfigFileArgs("port: 1\na: !!python/object:os.system 1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 2: the tag !!python/object:os.system is not one yaml.safe_load reads");
  bad = VllmConfigFileArgs("a: !!int x\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "line 1: 'x' is not a valid !!int");
  EXPECT_FALSE(VllmConfigFileArgs("a: *nope\n").ok());
  std::string deep = "a:\n";
  for (int i = 1; i < 60; ++i) deep += std::string(size_t(i) * 2, ' ') + "k:\n";
  EXPECT_FALSE(VllmConfigFileArgs(deep).ok());
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'k'; ++c) {
    laughs += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, char(c - 1),
                          char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1), char(c - 1),
                          char(c - 1), char(c - 1), char(c - 1));
  }
  EXPECT_FALSE(VllmConfigFileArgs(laughs).ok());  // 10^10 values: refused, not expanded
  std::string flow_deep(100000, '[');  // no stack overflow on hostile nesting
  EXPECT_FALSE(VllmConfigFileArgs("a: " + flow_deep + "\n").ok());
}

// What the hand-written reader refused and PyYAML reads: multi-line strings, anchors and
// aliases, standard tags, and mappings nested in lists (vLLM's --kv-transfer-config style).
TEST(VllmConfigTest, FullYamlAsSafeLoadReadsIt) {
  EXPECT_EQ(*VllmConfigFileArgs("port: 8000\nchat-template: |\n  {{ x }}\n  {{ y }}\n"),
            (Argv{"--port", "8000", "--chat-template", "{{ x }}\n{{ y }}\n"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: >-\n  one\n  two\n"), (Argv{"--a", "one two"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: &n 8\nmax-num-seqs: *n\n"),
            (Argv{"--a", "8", "--max-num-seqs", "8"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: !!str 5\nb: !!float 2\n"), (Argv{"--a", "5", "--b", "2.0"}));
  EXPECT_EQ(*VllmConfigFileArgs("kv:\n  - name: x\n    port: 1\n  - {name: y}\n"),
            (Argv{"--kv", R"({"name": "x", "port": 1})", R"({"name": "y"})"}));
  EXPECT_EQ(*VllmConfigFileArgs("a: 1\na: 2\n"), (Argv{"--a", "2"}));  // the last one wins
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
