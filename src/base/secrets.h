// Names that hold secrets, and the redaction of their values. latdoc reads command lines, config
// files and logs that carry API keys and tokens, and must never print or write them.
#pragma once

#include <string>
#include <string_view>

#include "base/strings.h"

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
// --name value, and the token after "Bearer " or "Basic "; also a URL's password
// ("https://user:pass@host") and keys whose format names them wherever they stand ("sk-...",
// "hf_...", "ghp_...", 16 characters or more after the prefix). A quoted value, or a [...] or
// {...} one, is replaced whole.
std::string RedactSecretsInText(std::string_view text);

// Replaces, at any depth of a nlohmann JSON value, every value under a key that names a secret
// with "<redacted>". A string that is itself JSON (a flag's value as text) is read and, when it
// holds a secret key at all, written back from what was read, so a duplicate key's first value
// does not survive in the text; any other string goes through RedactSecretsInText, and is read
// as JSON again if that made it JSON. Strings are read as JSON with invalid UTF-8 replaced.
// Past `max_depth` levels a value is replaced whole. Returns whether it met a secret key, a
// secret in text, or the depth limit (whether the value may have changed).
template <typename Json>
bool RedactSecretValues(Json& v, int max_depth = 64) {
  if (max_depth <= 0) {
    v = std::string(kRedacted);
    return true;
  }
  bool touched = false;
  if (v.is_object()) {
    for (auto& [k, x] : v.items()) {
      if (IsSecretName(k)) {
        x = std::string(kRedacted);
        touched = true;
      } else {
        touched = RedactSecretValues(x, max_depth - 1) || touched;
      }
    }
    return touched;
  }
  if (v.is_array()) {
    for (Json& x : v) touched = RedactSecretValues(x, max_depth - 1) || touched;
    return touched;
  }
  if (!v.is_string()) return false;
  // JSON text is redacted from the parsed value (0: not JSON; 1: JSON with no secret key; 2:
  // rewritten). Other text is redacted as text, then as JSON if that made it JSON.
  auto as_json = [&](const std::string& text) -> int {
    Json inner = Json::parse(ToValidUtf8(text), nullptr, false);
    if (inner.is_discarded() || !(inner.is_object() || inner.is_array())) return 0;
    if (!RedactSecretValues(inner, max_depth - 1)) return 1;
    v = inner.dump(-1, ' ', false, Json::error_handler_t::replace);
    return 2;
  };
  const std::string s = v.template get<std::string>();
  if (const int json = as_json(s); json != 0) return json == 2;
  std::string redacted = RedactSecretsInText(s);
  if (redacted == s) return false;
  v = redacted;
  as_json(redacted);
  return true;
}

}  // namespace latdoc
