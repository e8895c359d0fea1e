// MessageTemplate: reduces a log message to its template, so that warnings and errors that
// differ only in ids, numbers and quoted values are counted together.
//
//   "Request cmpl-3f2a-0 failed with an internal error during generation"
//     -> "Request <*> failed with an internal error during generation"
//   "Invalid prompt: 'xyz' is too long (8193 > 8192)" -> "Invalid prompt: <str> is too long (<*> > <*>)"
// A word holding a digit becomes <*>, a quoted string <str>; at most kMaxTemplateBytes long.
#pragma once

#include <string>
#include <string_view>

namespace latdoc::logs {

inline constexpr size_t kMaxTemplateBytes = 160;

// Writes the template of `msg` into *out (cleared first).
void MessageTemplate(std::string_view msg, std::string* out);

}  // namespace latdoc::logs
