#include "base/secrets.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

namespace latdoc {

namespace {

bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool Space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

size_t SkipSpace(std::string_view t, size_t p) {
  while (p < t.size() && Space(t[p])) ++p;
  return p;
}

// Case-insensitive: does `text` have `word` at `at`?
bool WordAt(std::string_view text, size_t at, std::string_view word) {
  if (at > text.size() || text.size() - at < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[at + i])) != word[i]) return false;
  }
  return true;
}

// Where the credential after an HTTP auth scheme at `at` starts ("Bearer sk-1": at 's'), or
// npos when no scheme followed by white space is there.
size_t AfterAuthScheme(std::string_view t, size_t at) {
  for (std::string_view scheme : {"bearer", "basic"}) {
    if (WordAt(t, at, scheme) && at + scheme.size() < t.size() && Space(t[at + scheme.size()])) {
      return SkipSpace(t, at + scheme.size());
    }
  }
  return std::string_view::npos;
}

// The end of the value that starts at `p`: a quoted string, a bracketed [...] or {...} (nesting
// and quotes inside followed), or a bare word up to white space, ',', ';', '&', ')', ']' or
// '}' or a quote. "Bearer X" and "Basic X" count as one value.
size_t ValueEnd(std::string_view t, size_t p) {
  if (p >= t.size()) return p;
  const char c = t[p];
  if (c == '\'' || c == '"') {
    for (size_t i = p + 1; i < t.size(); ++i) {
      if (t[i] == '\\') {
        ++i;
      } else if (t[i] == c) {
        return i + 1;
      }
    }
    return t.size();
  }
  if (c == '[' || c == '{') {
    int depth = 0;
    char quote = 0;
    for (size_t i = p; i < t.size(); ++i) {
      const char x = t[i];
      if (quote != 0) {
        if (x == '\\') ++i;
        else if (x == quote) quote = 0;
      } else if (x == '\'' || x == '"') {
        quote = x;
      } else if (x == '[' || x == '{') {
        ++depth;
      } else if ((x == ']' || x == '}') && --depth == 0) {
        return i + 1;
      }
    }
    return t.size();
  }
  size_t i = p;
  if (size_t credential = AfterAuthScheme(t, p); credential != std::string_view::npos) i = credential;
  while (i < t.size() && !Space(t[i]) && t[i] != ',' && t[i] != ';' && t[i] != '&' &&
         t[i] != ')' && t[i] != ']' && t[i] != '}' && t[i] != '\'' && t[i] != '"') {
    ++i;
  }
  return i;
}

// The end of a token that a service's key format marks as one wherever it appears: an OpenAI
// key ("sk-", "sk-proj-"), a Hugging Face token ("hf_"), a GitHub token ("ghp_", "gho_",
// "github_pat_"); at least 16 key characters after the prefix, so "sk-1" or "hf_hub" are words.
// npos when none starts at t[i].
size_t KnownTokenEnd(std::string_view t, size_t i) {
  static constexpr std::string_view kPrefixes[] = {"sk-", "hf_", "ghp_", "gho_", "github_pat_"};
  for (std::string_view prefix : kPrefixes) {
    if (t.compare(i, prefix.size(), prefix) != 0) continue;
    size_t e = i + prefix.size();
    while (e < t.size() && (std::isalnum(static_cast<unsigned char>(t[e])) || t[e] == '_' ||
                            t[e] == '-')) {
      ++e;
    }
    if (e - i - prefix.size() >= 16) return e;
  }
  return std::string_view::npos;
}

// The password of a URL's user info ("https://user:pass@host"): [begin, end) of "pass", or
// {npos, npos}. `i` is at "://".
std::pair<size_t, size_t> UrlPassword(std::string_view t, size_t i) {
  const size_t start = i + 3;
  size_t e = start;
  while (e < t.size() && !Space(t[e]) && t[e] != '/' && t[e] != '@' && t[e] != '\'' &&
         t[e] != '"') {
    ++e;
  }
  if (e >= t.size() || t[e] != '@') return {std::string_view::npos, std::string_view::npos};
  const size_t colon = t.find(':', start);
  if (colon == std::string_view::npos || colon >= e) {
    return {std::string_view::npos, std::string_view::npos};
  }
  return {colon + 1, e};
}

}  // namespace

bool IsSecretName(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  name = name.substr(0, name.find('='));
  if (!name.empty() && name.back() == '+') name.remove_suffix(1);
  if (const size_t dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  std::string n;
  n.reserve(name.size());
  for (char c : name) n += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto ends = [&](std::string_view tail) {
    return n.size() >= tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
  };
  auto has = [&](std::string_view part) { return n.find(part) != std::string::npos; };
  return n == "key" || n == "token" || ends("-key") || ends("-token") || ends("apikey") ||
         ends("api-keys") || ends("apikeys") || ends("access-tokens") || has("secret") ||
         has("password") || has("passwd") || has("authorization") || has("credential");
}

std::string RedactSecretsInText(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  size_t copied = 0;  // t[0, copied) is in `out`
  auto redact = [&](size_t from, size_t to) {
    out.append(t.substr(copied, from - copied));
    out.append(kRedacted);
    copied = to;
  };
  size_t i = 0;
  while (i < t.size()) {
    if (t.compare(i, 3, "://") == 0) {
      // A password in a URL: "https://user:pass@proxy:3128".
      if (auto [from, to] = UrlPassword(t, i); from != std::string_view::npos && to > from) {
        redact(from, to);
        i = to;
        continue;
      }
    }
    if (i == 0 || !NameChar(t[i - 1])) {
      // A credential after an auth scheme, anywhere: "Bearer sk-...".
      if (size_t v = AfterAuthScheme(t, i); v != std::string_view::npos) {
        const size_t end = ValueEnd(t, v);
        if (end > v) {
          redact(v, end);
          i = end;
          continue;
        }
      }
      // A key whose own format says what it is, even with no name before it.
      if (size_t end = KnownTokenEnd(t, i); end != std::string_view::npos) {
        redact(i, end);
        i = end;
        continue;
      }
    }
    if (!NameChar(t[i]) || (i > 0 && NameChar(t[i - 1]))) {
      ++i;
      continue;
    }
    // A name: then its closing quote, white space, and ':' or '=' (or, for a --flag, white
    // space alone).
    size_t e = i;
    while (e < t.size() && (NameChar(t[e]) || t[e] == '+')) ++e;
    const std::string_view name = t.substr(i, e - i);
    size_t p = e;
    if (p < t.size() && (t[p] == '\'' || t[p] == '"')) ++p;
    p = SkipSpace(t, p);
    bool separated = false;
    if (p < t.size() && (t[p] == ':' || t[p] == '=')) {
      ++p;
      separated = true;
    } else if (name.size() > 2 && name[0] == '-' && name[1] == '-' && p > e && p < t.size() &&
               t[p] != '-') {
      separated = true;  // "--api-key sk", but not "--api-key --port"
    }
    if (!separated || !IsSecretName(name)) {
      i = e;
      continue;
    }
    p = SkipSpace(t, p);
    const size_t end = ValueEnd(t, p);
    if (end > p) redact(p, end);
    i = std::max(end, e);
  }
  out.append(t.substr(copied));
  return out;
}

}  // namespace latdoc
