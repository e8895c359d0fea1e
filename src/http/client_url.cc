// URLs and failure names (http/client.h).
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "base/strings.h"
#include "http/client.h"

namespace latdoc::http {

// An IPv6 literal is bracketed (RFC 3986 section 3.2.2): "http://[::1]:8000", not
// "http://::1:8000".
std::string Url::Origin() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string Url::Spec(std::string_view target) const {
  return Origin() + base_path + std::string(target);
}

StatusOr<Url> ParseUrl(std::string_view text) {
  Url u;
  std::string_view rest = text;
  if (auto p = rest.find("://"); p != std::string_view::npos) {
    u.scheme = ToLower(rest.substr(0, p));
    rest.remove_prefix(p + 3);
  } else {
    return InvalidArgument(fmt::format("'{}': not a URL (expected http://host:port)", text));
  }
  if (u.scheme != "http" && u.scheme != "https")
    return InvalidArgument(fmt::format("'{}': scheme must be http or https", text));
  rest = rest.substr(0, rest.find('#'));  // a fragment is never sent
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    u.query = std::string(rest.substr(q + 1));  // Azure's ?api-version=...: sent every time
    rest = rest.substr(0, q);
  }
  std::string_view hostport = rest.substr(0, rest.find('/'));
  if (auto at = hostport.rfind('@'); at != std::string_view::npos) {
    // Not echoed: the part before '@' is a user and often a password.
    return InvalidArgument(
        fmt::format("'{}://...@{}': credentials in the URL are not supported (give the key "
                    "with --api-key-env)",
                    u.scheme, rest.substr(at + 1)));
  }
  if (rest.size() > hostport.size()) {
    std::string_view path = rest.substr(hostport.size());
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    u.base_path = std::string(path);
  }
  u.port = u.tls() ? 443 : 80;
  if (!hostport.empty() && hostport.front() == '[') {  // [::1]:8000
    auto close = hostport.find(']');
    if (close == std::string_view::npos)
      return InvalidArgument(fmt::format("'{}': bad IPv6 host", text));
    u.host = std::string(hostport.substr(1, close - 1));
    hostport.remove_prefix(close + 1);
    if (!hostport.empty() && hostport.front() == ':') {
      auto port = ParseUint64(hostport.substr(1));
      if (!port || *port == 0 || *port > 65535)
        return InvalidArgument(fmt::format("'{}': bad port", text));
      u.port = static_cast<uint16_t>(*port);
    }
  } else if (auto c = hostport.rfind(':'); c != std::string_view::npos) {
    auto port = ParseUint64(hostport.substr(c + 1));
    if (!port || *port == 0 || *port > 65535)
      return InvalidArgument(fmt::format("'{}': bad port", text));
    u.port = static_cast<uint16_t>(*port);
    u.host = std::string(hostport.substr(0, c));
  } else {
    u.host = std::string(hostport);
  }
  if (u.host.empty()) return InvalidArgument(fmt::format("'{}': no host", text));
  return u;
}

std::string_view FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kNone:
      return "none";
    case FailureKind::kConnect:
      return "connect";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kReset:
      return "reset";
    case FailureKind::kProtocol:
      return "protocol";
  }
  return "?";
}

}  // namespace latdoc::http
