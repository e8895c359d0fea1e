#include "trace/model/string_table.h"

#include "base/strings.h"

namespace latdoc::trace {

NameId StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const NameId id = static_cast<NameId>(strings_.size());
  if (ValidUtf8Prefix(s) == s.size()) {
    strings_.emplace_back(s);
    ids_.emplace(std::string_view(strings_.back()), id);
  } else {
    // Names go to JSON and HTML, which need UTF-8: the stored name has U+FFFD for each bad
    // byte; the raw bytes stay the lookup key, so the same input maps to the same id.
    strings_.emplace_back(ToValidUtf8(s));
    raw_keys_.emplace_back(s);
    ids_.emplace(std::string_view(raw_keys_.back()), id);
  }
  return id;
}

}  // namespace latdoc::trace
