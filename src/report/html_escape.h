// Escaping of text from outside for HTML (and XML) output. Pure: string in, string out.
#pragma once

#include <string>
#include <string_view>

namespace latdoc::report {

// Escapes & < > " ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

}  // namespace latdoc::report
