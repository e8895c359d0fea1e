#include "trace/importers/kineto/json_event_scanner.h"

#include <algorithm>

#include <fmt/format.h>

namespace latdoc::trace {
namespace {

// An element the fast reader still needs more bytes for, past this size, is scanned
// incrementally instead (re-reading it from its start on every slice would be quadratic).
constexpr size_t kFastMaxElement = size_t{1} << 18;

// How much of a slice is copied at a time to complete an element the last slice cut (most
// events are under a kilobyte).
constexpr size_t kBridgeBytes = 4096;

}  // namespace

JsonEventScanner::JsonEventScanner(EventFn on_event, ValueFn on_value)
    : on_event_(std::move(on_event)), on_value_(std::move(on_value)) {}

Status JsonEventScanner::Error(uint64_t offset, std::string_view what) {
  error_ = InvalidArgument(fmt::format("byte {}: {}", offset, what));
  return error_;
}

size_t JsonEventScanner::KeepFrom() const {
  if (state_ == State::kArrayElem || (state_ == State::kTopValueBody && keep_value_)) return value_start_;
  return pos_;
}

void JsonEventScanner::Rebase(size_t from) {
  buf_offset_ += from;
  pos_ -= from;
  value_start_ = value_start_ >= from ? value_start_ - from : 0;
}

void JsonEventScanner::Compact() {
  const size_t keep_from = KeepFrom();
  if (keep_from == 0) return;
  buf_.erase(0, keep_from);
  Rebase(keep_from);
  data_ = buf_.data();
  size_ = buf_.size();
}

void JsonEventScanner::Retain() {
  const size_t keep_from = KeepFrom();
  buf_.assign(data_ + keep_from, size_ - keep_from);
  Rebase(keep_from);
  data_ = buf_.data();
  size_ = buf_.size();
}

bool JsonEventScanner::ScanValue() { return value_.Scan(data_, size_, &pos_, &end_); }

Status JsonEventScanner::Feed(std::string_view bytes) {
  if (!error_.ok()) return error_;
  Compact();
  // What is left of the last slice (an element cut at its end) is completed from a copy of
  // the first bytes of this one, a piece at a time, until all that is still needed lies in
  // `bytes`.
  while (!buf_.empty() && !bytes.empty()) {
    const size_t old = buf_.size();
    const size_t take = std::min(bytes.size(), std::max(kBridgeBytes, old));
    buf_.append(bytes.data(), take);
    data_ = buf_.data();
    size_ = buf_.size();
    if (Status st = Scan(); !st.ok()) return st;
    if (KeepFrom() == pos_ && pos_ >= old) {
      bytes.remove_prefix(pos_ - old);
      buf_.clear();
      Rebase(pos_);
      data_ = buf_.data();
      size_ = 0;
      break;
    }
    bytes.remove_prefix(take);
    Compact();
  }
  if (!buf_.empty() || bytes.empty()) return Status::Ok();
  // The rest is scanned where the caller holds it: only what must outlive the call is copied.
  data_ = bytes.data();
  size_ = bytes.size();
  const Status st = Scan();
  Retain();
  return st;
}

// Long on purpose: the Kineto reader's hot byte loop, one state machine (a switch on state_)
// over every byte of the trace; left whole.
Status JsonEventScanner::Scan() {
  auto begin_value = [&] {
    value_start_ = pos_;
    pos_ += value_.Begin(data_[pos_]);
  };
  while (pos_ < size_) {
    const char c = data_[pos_];
    const uint64_t at = buf_offset_ + pos_;
    switch (state_) {
      case State::kStart:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == '{') {
          state_ = State::kTopKeyOrEnd;
          ++pos_;
        } else if (c == '[') {
          bare_array_ = true;
          saw_trace_events_ = true;
          state_ = State::kArrayElemOrEnd;
          ++pos_;
        } else {
          return Error(at, "not a JSON trace: expected '{' or '['");
        }
        break;
      case State::kTopKeyOrEnd:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == '"') {
          key_.clear();
          key_escape_ = false;
          state_ = State::kTopKey;
          ++pos_;
        } else if (c == '}') {
          state_ = State::kDone;
          ++pos_;
        } else {
          return Error(at, "expected a key or '}' in the top-level object");
        }
        break;
      case State::kTopKey:
        if (key_escape_) {
          key_ += c;
          key_escape_ = false;
        } else if (c == '\\') {
          key_escape_ = true;
        } else if (c == '"') {
          state_ = State::kTopColon;
        } else {
          key_ += c;
        }
        ++pos_;
        break;
      case State::kTopColon:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ':') {
          state_ = State::kTopValue;
          ++pos_;
        } else {
          return Error(at, "expected ':' after a top-level key");
        }
        break;
      case State::kTopValue:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (key_ == "traceEvents" && c == '[') {
          saw_trace_events_ = true;
          state_ = State::kArrayElemOrEnd;
          ++pos_;
        } else if (key_ == "traceEvents") {
          return Error(at, "\"traceEvents\" is not an array");
        } else {
          keep_value_ = std::find(keep_keys_.begin(), keep_keys_.end(), key_) != keep_keys_.end();
          begin_value();
          state_ = State::kTopValueBody;
        }
        break;
      case State::kTopValueBody:
        if (!ScanValue()) break;
        if (keep_value_) {
          on_value_(key_, std::string_view(data_ + value_start_, end_ - value_start_));
        }
        state_ = State::kTopCommaOrEnd;
        break;
      case State::kTopCommaOrEnd:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ',') {
          state_ = State::kTopKeyOrEnd;
          ++pos_;
        } else if (c == '}') {
          state_ = State::kDone;
          ++pos_;
        } else {
          return Error(at, "expected ',' or '}' in the top-level object");
        }
        break;
      case State::kArrayElemOrEnd:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ']') {  // also tolerates a trailing comma
          state_ = bare_array_ ? State::kDone : State::kTopCommaOrEnd;
          ++pos_;
        } else if (c == ',') {
          return Error(at, "empty element in traceEvents");
        } else {
          if (fast_ && c == '{') {
            size_t length = 0;
            const FastResult r = fast_(data_ + pos_, size_ - pos_, at, &length);
            if (r == FastResult::kDone) {
              fast_waiting_ = false;
              ++events_;
              pos_ += length;
              state_ = State::kArrayCommaOrEnd;
              break;
            }
            // Wait for the rest of the element, unless it is already large: then scan it
            // incrementally rather than re-reading it on every slice.
            if (r == FastResult::kNeedMore && size_ - pos_ < kFastMaxElement) {
              fast_waiting_ = true;
              return Status::Ok();
            }
          }
          fast_waiting_ = false;
          begin_value();
          state_ = State::kArrayElem;
        }
        break;
      case State::kArrayElem:
        if (!ScanValue()) break;
        ++events_;
        on_event_(std::string_view(data_ + value_start_, end_ - value_start_), buf_offset_ + value_start_);
        state_ = State::kArrayCommaOrEnd;
        break;
      case State::kArrayCommaOrEnd:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else if (c == ',') {
          state_ = State::kArrayElemOrEnd;
          ++pos_;
        } else if (c == ']') {
          state_ = bare_array_ ? State::kDone : State::kTopCommaOrEnd;
          ++pos_;
        } else {
          return Error(at, "expected ',' or ']' in traceEvents");
        }
        break;
      case State::kDone:
        if (IsJsonSpace(c)) {
          ++pos_;
        } else {
          return Error(at, "unexpected data after the end of the document");
        }
        break;
    }
  }
  return Status::Ok();
}

void JsonEventScanner::StartInsideTraceEvents(uint64_t offset, bool bare_array) {
  buf_.clear();
  data_ = buf_.data();
  size_ = 0;
  buf_offset_ = offset;
  pos_ = 0;
  state_ = State::kArrayElemOrEnd;
  bare_array_ = bare_array;
  saw_trace_events_ = true;
}

bool JsonEventScanner::AtTraceEventsElement() const {
  return error_.ok() && state_ == State::kArrayElemOrEnd && !fast_waiting_ && pos_ == buf_.size();
}

Status JsonEventScanner::Finish() {
  if (!error_.ok()) return error_;
  const uint64_t end = buf_offset_ + buf_.size();
  switch (state_) {
    case State::kDone:
      return Status::Ok();
    case State::kStart:
      error_ = DataLoss(fmt::format("byte {}: empty document", end));
      break;
    case State::kArrayElem:
      error_ = DataLoss(fmt::format("byte {}: document cut inside the event that starts at byte {}",
                                    end, buf_offset_ + value_start_));
      break;
    case State::kArrayElemOrEnd:
      if (fast_waiting_) {
        error_ = DataLoss(fmt::format("byte {}: document cut inside the event that starts at byte {}",
                                      end, buf_offset_ + pos_));
        break;
      }
      [[fallthrough]];
    case State::kArrayCommaOrEnd:
      error_ = DataLoss(fmt::format("byte {}: document cut inside traceEvents after {} events",
                                    end, events_));
      break;
    default:
      error_ = DataLoss(fmt::format("byte {}: document cut before its closing '}}'", end));
      break;
  }
  return error_;
}

}  // namespace latdoc::trace
