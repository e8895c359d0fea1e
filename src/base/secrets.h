// Names that hold secrets, and the redaction of their values. latdoc reads command lines, config
// files and logs that carry API keys and tokens, and must never print or write them.
#pragma once

#include <string>
#include <string_view>

namespace latdoc {

// Whether an option or setting of this name holds a secret: "--api-key", "api_key", "hf_token",
// "--hf-token=...", "ADMIN-API-KEY", "token", "api_keys", "ssl_password", "client_secret",
// "authorization", a dotted "--kv-transfer-config.extra.api_key+". Leading dashes, anything from
// '=' on and a trailing '+' are ignored, as is everything before the last '.'; '_' and '-' are
// the same; case does not matter. Names that merely mention a key or tokens ("ssl_keyfile",
// "max_num_batched_tokens", "tokenizer") are not secrets.
bool IsSecretName(std::string_view name);

// The word that stands in for a secret value in every output.
inline constexpr std::string_view kRedacted = "<redacted>";

// `text` with the value after every secret name replaced by "<redacted>", in the forms that
// logs and command lines use: name=value, name: value, 'name': 'value', "name": [...],
// --name value, and the token after "Bearer " or "Basic ". A quoted value, or a [...] or {...}
// one, is replaced whole.
std::string RedactSecretsInText(std::string_view text);

// Replaces, at any depth of a nlohmann JSON value, every value under a key that names a secret
// with "<redacted>". A string that is itself JSON (a flag's value as text) is read and written
// back redacted when it holds one; any other string goes through RedactSecretsInText. Past
// `max_depth` levels a value is replaced whole. Returns whether anything changed.
template <typename Json>
bool RedactSecretValues(Json& v, int max_depth = 64) {
  if (max_depth <= 0) {
    v = std::string(kRedacted);
    return true;
  }
  bool changed = false;
  if (v.is_object()) {
    for (auto& [k, x] : v.items()) {
      if (IsSecretName(k)) {
        changed = changed || !(x.is_string() && x.template get_ref<const std::string&>() == kRedacted);
        x = std::string(kRedacted);
      } else {
        changed = RedactSecretValues(x, max_depth - 1) || changed;
      }
    }
  } else if (v.is_array()) {
    for (Json& x : v) changed = RedactSecretValues(x, max_depth - 1) || changed;
  } else if (v.is_string()) {
    const std::string& s = v.template get_ref<const std::string&>();
    Json inner = Json::parse(s, nullptr, false);
    if (!inner.is_discarded() && (inner.is_object() || inner.is_array())) {
      if (RedactSecretValues(inner, max_depth - 1)) {
        v = inner.dump();
        return true;
      }
      return false;
    }
    std::string redacted = RedactSecretsInText(s);
    if (redacted != s) {
      v = std::move(redacted);
      return true;
    }
  }
  return changed;
}

}  // namespace latdoc
