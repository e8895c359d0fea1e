// The objects of a JSONL file's text, one a line, for the readers of session and replay files:
// blank lines are skipped, a line that is not a JSON object is handed to `bad` with its place
// ("FILE:LINE") and skipped.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace latdoc::loadgen {

class JsonlObjects {
 public:
  using Bad = std::function<void(const std::string& where, const std::string& why)>;
  JsonlObjects(std::string_view text, std::string path, Bad bad)
      : text_(text), path_(std::move(path)), bad_(std::move(bad)) {}

  // The next object and its place; false at the end of the text.
  bool Next(nlohmann::json* j, std::string* where) {
    while (pos_ < text_.size()) {
      size_t end = text_.find('\n', pos_);
      if (end == std::string_view::npos) end = text_.size();
      const std::string_view line = Trim(text_.substr(pos_, end - pos_));
      pos_ = end + 1;
      ++line_no_;
      if (line.empty()) continue;
      *where = fmt::format("{}:{}", path_, line_no_);
      *j = nlohmann::json::parse(line, nullptr, false);
      if (j->is_discarded() || !j->is_object()) {
        bad_(*where, "not a JSON object");
        continue;
      }
      return true;
    }
    return false;
  }
  // The line number (from 1) of the object Next gave last.
  size_t line_no() const { return line_no_; }

 private:
  std::string_view text_;
  std::string path_;
  Bad bad_;
  size_t pos_ = 0, line_no_ = 0;
};

}  // namespace latdoc::loadgen
