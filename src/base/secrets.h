// Names that hold secrets. latdoc reads command lines, config files and logs that carry API keys
// and tokens, and must never print or write them.
#pragma once

#include <string>
#include <string_view>

namespace latdoc {

// Whether an option or setting of this name holds a secret: "--api-key", "api_key", "hf_token",
// "--hf-token=...", "ADMIN-API-KEY", "token", "ssl_password", "client_secret". Leading dashes and
// anything from '=' on are ignored; '_' and '-' are the same; case does not matter. Names that
// merely mention a key or tokens ("ssl_keyfile", "max_num_batched_tokens") are not secrets.
bool IsSecretName(std::string_view name);

// The word that stands in for a secret value in every output.
inline constexpr std::string_view kRedacted = "<redacted>";

// Replaces, at any depth of a nlohmann JSON value, every value under a key that names a secret
// with "<redacted>". A string that is itself a JSON object or array (a flag's value as text) is
// read and written back redacted when it holds one.
template <typename Json>
void RedactSecretValues(Json& v) {
  if (v.is_object()) {
    for (auto& [k, x] : v.items()) {
      if (IsSecretName(k)) {
        x = std::string(kRedacted);
      } else {
        RedactSecretValues(x);
      }
    }
  } else if (v.is_array()) {
    for (Json& x : v) RedactSecretValues(x);
  } else if (v.is_string()) {
    const std::string& s = v.template get_ref<const std::string&>();
    if (s.empty() || (s.front() != '{' && s.front() != '[')) return;
    Json inner = Json::parse(s, nullptr, false);
    if (inner.is_discarded()) return;
    const Json before = inner;
    RedactSecretValues(inner);
    if (inner != before) v = inner.dump();
  }
}

}  // namespace latdoc
