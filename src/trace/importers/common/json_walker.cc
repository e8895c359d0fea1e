#include "trace/importers/common/json_walker.h"

#include <algorithm>

#include <fmt/format.h>

namespace latdoc::trace {
namespace {

// Keys longer than this are cut (none that a caller asks for is); messages show less.
constexpr size_t kMaxKey = 256;
constexpr size_t kShownKey = 64;

}  // namespace

JsonWalker::JsonWalker(DecideFn decide, KeepFn keep) : decide_(std::move(decide)), keep_(std::move(keep)) {}

std::string JsonWalker::PathString(const Path& path) {
  std::string s;
  for (const Step& step : path) {
    if (step.index >= 0) {
      s += fmt::format("[{}]", step.index);
    } else {
      if (!s.empty()) s += '.';
      s.append(step.key, 0, kShownKey);
      if (step.key.size() > kShownKey) s += "...";
    }
  }
  return s.empty() ? "the root" : s;
}

Status JsonWalker::Error(std::string_view what) {
  error_offset_ = buf_offset_ + pos_;
  error_ = InvalidArgument(fmt::format("byte {}: {}", error_offset_, what));
  return error_;
}

void JsonWalker::Stop(Status status) {
  if (!error_.ok()) return;
  error_offset_ = buf_offset_ + pos_;
  error_ = std::move(status);
}

Status JsonWalker::Feed(std::string_view bytes) {
  if (!error_.ok()) return error_;
  buf_.append(bytes);
  const Status st = Scan();
  // Drop what the scan consumed: all of it, or all before the kept value it ended in.
  const size_t keep_from = state_ == State::kScan && keep_value_ ? value_start_ : pos_;
  buf_.erase(0, keep_from);
  buf_offset_ += keep_from;
  pos_ -= keep_from;
  value_start_ -= std::min(value_start_, keep_from);
  return st;
}

void JsonWalker::Pop() {
  path_.pop_back();
  is_object_.pop_back();
  AfterValue();
}

void JsonWalker::AfterValue() {
  if (is_object_.empty()) {
    state_ = State::kDone;
  } else {
    state_ = is_object_.back() ? State::kObjectNext : State::kArrayNext;
  }
}

bool JsonWalker::ScanValue() { return value_.Scan(buf_.data(), buf_.size(), &pos_, &end_); }

// Long on purpose: the per-byte scanning loop, one state machine (a switch on state_) over every
// byte of the buffer; split, the states would lose inlining on the hot path.
Status JsonWalker::Scan() {
  while (pos_ < buf_.size()) {
    const char c = buf_[pos_];
    switch (state_) {
      case State::kValue: {
        if (IsJsonSpace(c)) {
          ++pos_;
          break;
        }
        if (c == ',' || c == ']' || c == '}' || c == ':') return Error(fmt::format("expected a value, not '{}'", c));
        const Action action = decide_(path_, c);
        if (!error_.ok()) return error_;
        if (action == Action::kDescend && (c == '{' || c == '[')) {
          const bool object = c == '{';
          path_.push_back(Step{"", object ? -1 : 0});
          is_object_.push_back(object);
          state_ = object ? State::kKeyOrEnd : State::kElementOrEnd;
          ++pos_;
          break;
        }
        keep_value_ = action == Action::kKeep;
        value_start_ = pos_;
        value_offset_ = buf_offset_ + pos_;
        pos_ += value_.Begin(c);
        state_ = State::kScan;
        break;
      }
      case State::kScan:
        if (!ScanValue()) break;
        if (keep_value_) {
          keep_(path_, std::string_view(buf_).substr(value_start_, end_ - value_start_), buf_offset_ + value_start_);
          if (!error_.ok()) return error_;
        }
        AfterValue();
        break;
      case State::kKeyOrEnd:
      case State::kKey:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == '"') {
          key_.clear();
          key_escape_ = false;
          state_ = State::kKeyText;
          ++pos_;
        } else if (c == '}' && state_ == State::kKeyOrEnd) {
          ++pos_;
          Pop();
        } else {
          return Error("expected a key string");
        }
        break;
      case State::kKeyText: {
        // Up to the closing quote in one go; an escape keeps its backslash (keys as written).
        const size_t from = pos_;
        while (pos_ < buf_.size()) {
          const char k = buf_[pos_];
          if (key_escape_) {
            key_escape_ = false;
          } else if (k == '\\') {
            key_escape_ = true;
          } else if (k == '"') {
            break;
          }
          ++pos_;
        }
        // No caller matches a long key: past the cap it is only stepped over.
        key_.append(buf_, from, std::min(pos_ - from, kMaxKey - std::min(kMaxKey, key_.size())));
        if (pos_ < buf_.size()) {
          ++pos_;
          state_ = State::kColon;
        }
        break;
      }
      case State::kColon:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ':') {
          path_.back().key = std::move(key_);
          key_.clear();
          state_ = State::kValue;
          ++pos_;
        } else {
          return Error("expected ':' after a key");
        }
        break;
      case State::kObjectNext:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ',') {
          state_ = State::kKey;
          ++pos_;
        } else if (c == '}') {
          ++pos_;
          Pop();
        } else {
          return Error(fmt::format("expected ',' or '}}' in {}", PathString(Path(path_.begin(), path_.end() - 1))));
        }
        break;
      case State::kElementOrEnd:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ']') {
          ++pos_;
          Pop();
        } else {
          state_ = State::kValue;
        }
        break;
      case State::kArrayNext:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ',') {
          ++path_.back().index;
          state_ = State::kValue;
          ++pos_;
        } else if (c == ']') {
          ++pos_;
          Pop();
        } else {
          return Error(fmt::format("expected ',' or ']' in {}", PathString(Path(path_.begin(), path_.end() - 1))));
        }
        break;
      case State::kDone:
        if (!IsJsonSpace(c)) return Error("unexpected data after the end of the document");
        ++pos_;
        break;
    }
  }
  return Status::Ok();
}

Status JsonWalker::Finish() {
  if (!error_.ok()) return error_;
  // A scalar root ends with the input (inside a container, input that ends in a number is cut).
  if (state_ == State::kScan && value_.scalar() && path_.empty()) {
    end_ = pos_;
    if (keep_value_) {
      keep_(path_, std::string_view(buf_).substr(value_start_, end_ - value_start_), buf_offset_ + value_start_);
      if (!error_.ok()) return error_;
    }
    AfterValue();
  }
  if (state_ == State::kDone) return Status::Ok();
  error_offset_ = fed();
  if (path_.empty() && state_ == State::kValue) {
    error_ = DataLoss(fmt::format("byte {}: empty document", fed()));
  } else if (state_ == State::kScan) {
    error_ = DataLoss(fmt::format("byte {}: the document is cut short inside {}, which starts at byte {}",
                                  fed(), PathString(path_), value_offset_));
  } else {
    Path open(path_.begin(), path_.end() - 1);
    error_ = DataLoss(fmt::format("byte {}: the document is cut short inside {}", fed(), PathString(open)));
  }
  return error_;
}

}  // namespace latdoc::trace
