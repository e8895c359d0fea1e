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
      {"api_key:\n  \"sk-nl\"", "api_key:\n  <redacted>"},       // white space is any space
      {"\"api_key\"\n: \"sk\"", "\"api_key\"\n: <redacted>"},
      {"api_key:\tBearer\tsk-tab x", "api_key:\t<redacted> x"},
      {"curl -H 'Authorization: Basic dXNlcg=='", "curl -H 'Authorization: <redacted>'"},
      {"--api-key --port 8000", "--api-key --port 8000"},  // no value where an option follows
      {"bearer", "bearer"},
      {"Bearer ", "Bearer "},
      {"max_num_batched_tokens: 8192 tokenizer=x", "max_num_batched_tokens: 8192 tokenizer=x"},
      {"no secrets here: 1, 2", "no secrets here: 1, 2"},
      {"token:", "token:"},
      {"", ""},
      // A URL's password, and keys whose format names them, with no name in front.
      {"Failed to download from https://user:s3cretpw@proxy.corp:3128/x with token "
       "hf_AbCdEfGhIjKlMnOpQrSt",
       "Failed to download from https://user:<redacted>@proxy.corp:3128/x with token <redacted>"},
      {"key sk-proj-abcdefghijklmnop1234 rejected", "key <redacted> rejected"},
      {"ghp_0123456789abcdefABCDEF0123456789abcd", "<redacted>"},
      {"http://host:8000/v1 and user@host", "http://host:8000/v1 and user@host"},
      {"hf_hub download sk-1 task-sk-abcdefghijklmnopqrst", "hf_hub download sk-1 task-sk-abcdefghijklmnopqrst"},
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
  const std::string once = j.dump();
  RedactSecretValues(j);
  EXPECT_EQ(j.dump(), once);  // a second pass changes nothing

  nlohmann::ordered_json plain = {{"model", "m"}, {"n", {1, 2}}};
  EXPECT_FALSE(RedactSecretValues(plain));

  // The depth limit (64) replaces whole only what lies past it.
  auto nested = [](int depth) {
    std::string t;
    for (int k = 0; k < depth; ++k) t += "{\"a\":";
    t += "{\"api_key\":\"sk\"}";
    for (int k = 0; k < depth; ++k) t += "}";
    return nlohmann::ordered_json::parse(t);
  };
  nlohmann::ordered_json shallow = nested(60);
  EXPECT_TRUE(RedactSecretValues(shallow));
  EXPECT_NE(shallow.dump().find(R"({"api_key":"<redacted>"})"), std::string::npos);
  nlohmann::ordered_json past = nested(70);
  EXPECT_TRUE(RedactSecretValues(past));
  EXPECT_EQ(past.dump().find("api_key"), std::string::npos);
  EXPECT_NE(past.dump().find(R"({"a":"<redacted>"})"), std::string::npos);

  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  nlohmann::ordered_json s = deep;  // a string holding JSON nested 100,000 deep
  EXPECT_TRUE(RedactSecretValues(s));
  EXPECT_LT(s.get<std::string>().size(), 200u);
  EXPECT_NE(s.get<std::string>().find("<redacted>"), std::string::npos);
}

// Forms that a parse alone would miss: a duplicate key (the parse keeps the last value; the text
// keeps both), invalid UTF-8 beside the secret, text that the redaction turns into JSON.
TEST(SecretsTest, DuplicatesInvalidUtf8AndTextThatBecomesJson) {
  nlohmann::ordered_json dup = R"({"api_key": "sk-first", "api_key": "<redacted>"})";
  EXPECT_TRUE(RedactSecretValues(dup));
  EXPECT_EQ(dup.get<std::string>(), R"({"api_key":"<redacted>"})");

  nlohmann::ordered_json bad = std::string(R"({"api\u005fkey": "sk-u", "b": ")") + "\xff" + "\"}";
  EXPECT_TRUE(RedactSecretValues(bad));
  EXPECT_EQ(bad.get<std::string>().find("sk-u"), std::string::npos);

  nlohmann::ordered_json text = R"(["token=a"b ", {"api_key":)" "\n" R"("s"}])";
  EXPECT_TRUE(RedactSecretValues(text));
  EXPECT_EQ(text.get<std::string>().find("\"s\""), std::string::npos) << text.get<std::string>();
}

}  // namespace
}  // namespace latdoc
