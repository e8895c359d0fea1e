// JSON text for output files and messages.
#ifndef LATDOC_BASE_JSON_TEXT_H_
#define LATDOC_BASE_JSON_TEXT_H_

#include <string>

namespace latdoc {

// `j` as text, `indent` spaces deep (-1: one line). Strings come from servers, logs, traces and
// file names, which need not be UTF-8 (a 300-byte cut of an error body can split a character):
// a bad byte becomes U+FFFD instead of throwing, so a report is never lost to one byte.
template <class Json>
std::string JsonText(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace latdoc

#endif  // LATDOC_BASE_JSON_TEXT_H_
