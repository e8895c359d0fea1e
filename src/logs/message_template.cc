#include "logs/message_template.h"

namespace latdoc::logs {
namespace {

// Characters that end a word. '-', '_', '.', ':' and '/' stay inside words so that
// "cmpl-3f2a-0", "10.0.0.1:8000" and "/v1/completions" are one word each.
bool IsBreak(char c) {
  switch (c) {
    case ' ': case '\t': case ',': case ';': case '(': case ')': case '[': case ']':
    case '{': case '}': case '=': case '<': case '>': case '!': case '?': case '|':
      return true;
    default:
      return false;
  }
}

}  // namespace

void MessageTemplate(std::string_view msg, std::string* out) {
  out->clear();
  size_t i = 0;
  while (i < msg.size() && out->size() < kMaxTemplateBytes) {
    char c = msg[i];
    if (IsBreak(c)) {
      out->push_back(c);
      ++i;
      continue;
    }
    if ((c == '\'' || c == '"') && (i == 0 || IsBreak(msg[i - 1]) || msg[i - 1] == ':')) {
      size_t close = msg.find(c, i + 1);
      out->append("<str>");
      i = close == std::string_view::npos ? msg.size() : close + 1;
      continue;
    }
    size_t j = i;
    bool digit = false;
    while (j < msg.size() && !IsBreak(msg[j])) {
      if (msg[j] >= '0' && msg[j] <= '9') digit = true;
      ++j;
    }
    std::string_view word = msg.substr(i, j - i);
    // Keep a trailing ':' or '.' out of the placeholder: "id=12:" -> "<*>:".
    char tail = 0;
    if (digit && word.size() > 1 && (word.back() == ':' || word.back() == '.')) {
      tail = word.back();
    }
    if (digit) {
      out->append("<*>");
      if (tail) out->push_back(tail);
    } else {
      out->append(word);
    }
    i = j;
  }
  if (out->size() > kMaxTemplateBytes) out->resize(kMaxTemplateBytes);
}

}  // namespace latdoc::logs
