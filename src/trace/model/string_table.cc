#include "trace/model/string_table.h"

namespace latdoc::trace {

NameId StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  const NameId id = static_cast<NameId>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(std::string_view(strings_.back()), id);
  return id;
}

}  // namespace latdoc::trace
