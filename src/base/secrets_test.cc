#include "base/secrets.h"

#include <gtest/gtest.h>

namespace latdoc {
namespace {

TEST(SecretsTest, NamesThatHoldSecrets) {
  for (const char* name : {"--api-key", "api_key", "API-KEY", "--api-key=sk-1", "--admin-api-key",
                           "hf_token", "--hf-token", "token", "--token", "HF_TOKEN", "apikey",
                           "openai_apikey", "client_secret", "secret", "ssl_password",
                           "db_passwd", "kv_connector_key", "-api_key"}) {
    EXPECT_TRUE(IsSecretName(name)) << name;
  }
}

TEST(SecretsTest, NamesThatOnlyMentionKeysOrTokens) {
  for (const char* name : {"--ssl-keyfile", "max_num_batched_tokens", "--max-model-len",
                           "keyboard", "tokenizer", "--tokenizer-mode", "num_speculative_tokens",
                           "--model", "", "--", "key_cache_dtype"}) {
    EXPECT_FALSE(IsSecretName(name)) << name;
  }
}

}  // namespace
}  // namespace latdoc
