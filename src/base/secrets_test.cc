#include "base/secrets.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace latdoc {
namespace {

TEST(SecretsTest, NamesThatHoldSecrets) {
  for (const char* name : {"--api-key", "api_key", "API-KEY", "--api-key=sk-1", "--admin-api-key",
                           "hf_token", "--hf-token", "token", "--token", "HF_TOKEN", "apikey",
                           "openai_apikey", "client_secret", "secret", "ssl_password",
                           "db_passwd", "kv_connector_key", "-api_key", "api_keys",
                           "Authorization", "aws_credentials",
                           "--kv-transfer-config.kv_connector_extra_config.api_key+",
                           "-cc.extra.hf_token=x"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
}

TEST(SecretsTest, NamesThatOnlyMentionKeysOrTokens) {
  for (const char* name : {"--ssl-keyfile", "max_num_batched_tokens", "--max-model-len",
                           "keyboard", "tokenizer", "--tokenizer-mode", "num_speculative_tokens",
                           "--model", "", "--", "key_cache_dtype", "--max-num-batched-tokens+",
                           "--compilation-config.max_cudagraph_capture_size"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

// Secrets in free text (a log line, a flag's value) in each form they come in; the text around
// them is kept as it was.
TEST(SecretsTest, TextKeepsEverythingButTheSecretValues) {
  const std::pair<const char*, const char*> cases[] = {
      {"non-default args: {'model_tag': 'm', 'api_key': ['sk-1', 'sk-2'], 'port': 8000}",
       "non-default args: {'model_tag': 'm', 'api_key': <redacted>, 'port': 8000}"},
      {R"({"kv_connector_extra_config": {"api_key": "sk-x"}, "n": 1})",
       R"({"kv_connector_extra_config": {"api_key": <redacted>}, "n": 1})"},
      {"HF_TOKEN=hf_abc VLLM_PORT=1", "HF_TOKEN=<redacted> VLLM_PORT=1"},
      {"GET /v1/models?api_key=sk-q&x=1 HTTP/1.1", "GET /v1/models?api_key=<redacted>&x=1 HTTP/1.1"},
      {"vllm serve m --api-key sk-a --port 8000", "vllm serve m --api-key <redacted> --port 8000"},
      {"Authorization: Bearer sk-b, next", "Authorization: <redacted>, next"},
      {"sent header Bearer sk-c to the gateway", "sent header Bearer <redacted> to the gateway"},
      {"password = 'it''s'", "password = <redacted>'s'"},  // Python quoting, not YAML's
      {"max_num_batched_tokens: 8192 tokenizer=x", "max_num_batched_tokens: 8192 tokenizer=x"},
      {"no secrets here: 1, 2", "no secrets here: 1, 2"},
      {"token:", "token:"},
      {"", ""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(RedactSecretsInText(in), want) << in;
}

// JSON values: secret keys at any depth; strings that are JSON (leading blanks too, as JSON
// parsers skip them) or plain text with a secret in it; nesting past the limit replaced whole.
TEST(SecretsTest, JsonValuesAtAnyDepth) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      R"({"a": {"api_key": "sk-1", "b": [{"hf_token": "t"}]}, "s": "  {\"password\": \"p\"}",
          "t": "token=abc", "n": 3, "done": {"api_key": "<redacted>"}})");
  EXPECT_TRUE(RedactSecretValues(j));
  EXPECT_EQ(j.dump(),
            R"({"a":{"api_key":"<redacted>","b":[{"hf_token":"<redacted>"}]},"s":"{\"password\":\"<redacted>\"}","t":"token=<redacted>","n":3,"done":{"api_key":"<redacted>"}})");
  EXPECT_FALSE(RedactSecretValues(j));  // nothing left to change

  nlohmann::ordered_json plain = {{"model", "m"}, {"n", {1, 2}}};
  EXPECT_FALSE(RedactSecretValues(plain));

  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  nlohmann::ordered_json s = deep;  // a string holding JSON nested 100,000 deep
  EXPECT_TRUE(RedactSecretValues(s));
  EXPECT_LT(s.get<std::string>().size(), 200u);
  EXPECT_NE(s.get<std::string>().find("<redacted>"), std::string::npos);
}

}  // namespace
}  // namespace latdoc
