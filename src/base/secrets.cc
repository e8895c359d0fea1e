#include "base/secrets.h"

#include <cctype>
#include <string>

namespace latdoc {

bool IsSecretName(std::string_view name) {
  while (!name.empty() && name.front() == '-') name.remove_prefix(1);
  name = name.substr(0, name.find('='));
  std::string n;
  n.reserve(name.size());
  for (char c : name) n += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto ends = [&](std::string_view tail) {
    return n.size() >= tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0;
  };
  auto has = [&](std::string_view part) { return n.find(part) != std::string::npos; };
  return n == "key" || n == "token" || n == "apikey" || ends("-key") || ends("-token") ||
         ends("-apikey") || has("secret") || has("password") || has("passwd");
}

}  // namespace latdoc
