// SseDecoder: an incremental decoder of Server-Sent Events (text/event-stream), as sent by
// OpenAI-compatible servers for `"stream": true`.
//
// It follows the WHATWG HTML "event stream interpretation" rules: lines end with "\r\n", "\n"
// or "\r" (and a terminator may be split across Feed() calls); a blank line dispatches the
// event; `data:` lines are joined with "\n"; one space after the colon is dropped ("data:x"
// and "data: x" are the same); lines starting with ':' are comments; `event:` and `id:` are
// kept; unknown fields and `retry:` are ignored. An event with no `data:` line is not
// dispatched (spec). Bytes after the last blank line stay buffered until more arrive.
//
// It is not an HTTP parser: feed it the body bytes after transfer decoding. It does no I/O.
//
// Memory: events larger than `max_event_bytes` are not buffered: Feed() reports an error for
// each and skips that event up to its blank line, then decodes the next one normally. After
// warm-up (buffers grown to the largest event seen) Feed() allocates nothing.
//
// Thread safety: none; one decoder per connection.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace latdoc::http {

// One dispatched event. The views point into the decoder's reused buffers and are valid only
// during the callback.
struct SseEvent {
  std::string_view data;   // the `data:` lines joined with "\n" (no trailing "\n")
  std::string_view event;  // the `event:` field of this event, "" when absent
  std::string_view id;     // the last `id:` seen on this stream so far (spec: it persists)
};

struct SseDecoderOptions {
  // Largest event accepted: its joined data, in bytes (an "event:" value alike). A line whose
  // end has not arrived is buffered up to max_event_bytes + 8 bytes (room for "event: ").
  size_t max_event_bytes = 1 << 20;
};

class SseDecoder {
 public:
  SseDecoder() : SseDecoder(SseDecoderOptions{}) {}
  explicit SseDecoder(SseDecoderOptions options);

  // Decodes `bytes` and calls `on_event(const SseEvent&)` for every event completed by them,
  // in order. Returns OK, or an InvalidArgument error when an event in `bytes` went over
  // max_event_bytes (the first such error of this call; its message gives the stream byte
  // offset); decoding still goes on with the next event either way.
  template <typename F>
  Status Feed(std::string_view bytes, F&& on_event);

  // Forgets any partial line or event (e.g. when the connection is reused for a new
  // response). Keeps the buffers' capacity, and the counters.
  void Reset();

  // Counters over the decoder's life.
  uint64_t events() const { return events_; }
  uint64_t comments() const { return comments_; }
  uint64_t oversized_events() const { return oversized_events_; }
  uint64_t bytes_fed() const { return bytes_fed_; }
  // True when bytes of an unfinished line or event are buffered (a stream cut here would
  // lose them: the caller reports "stream cut short").
  bool has_partial_event() const { return !line_.empty() || has_data_ || skipping_; }

 private:
  // Handles one complete line (without its terminator).
  template <typename F>
  void Line(std::string_view line, F& on_event);
  void Field(std::string_view line);
  void Oversized(uint64_t at_offset);
  // A line longer than max_event_bytes + kFieldNameSlack whose end has not arrived: `head`
  // holds at least its first kFieldNameSlack bytes.
  void OverlongLine(std::string_view head, uint64_t at_offset);

  // Longest field prefix that counts against no limit ("event: " is 7 bytes).
  static constexpr size_t kFieldNameSlack = 8;

  SseDecoderOptions options_;
  std::string line_;   // a line split across Feed() calls
  std::string data_;   // the current event's joined data
  std::string event_;  // the current event's type
  std::string id_;     // last event id
  bool has_data_ = false;
  bool pending_cr_ = false;  // the previous Feed ended with '\r': skip a leading '\n'
  bool at_start_ = true;     // no byte of the stream seen yet past a leading BOM
  size_t bom_seen_ = 0;      // bytes of a UTF-8 BOM matched at the start (possibly split)
  bool skipping_ = false;    // inside an oversized event: drop lines until a blank one
  bool dropping_line_ = false;  // the rest of an oversized line is still to come
  uint64_t line_offset_ = 0;    // stream offset of the current line's terminator
  Status error_;             // first error of the current Feed() call

  uint64_t events_ = 0;
  uint64_t comments_ = 0;
  uint64_t oversized_events_ = 0;
  uint64_t bytes_fed_ = 0;
};

// ---- implementation of the templates ------------------------------------------------------

template <typename F>
void SseDecoder::Line(std::string_view line, F& on_event) {
  if (line.empty()) {
    if (skipping_) {
      skipping_ = false;
    } else if (has_data_) {
      ++events_;
      const SseEvent ev{std::string_view(data_), std::string_view(event_), std::string_view(id_)};
      on_event(ev);
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    return;
  }
  if (skipping_) return;
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  // The common case, "data: ..." / "data:...", inline; the rest out of line.
  if (line.size() >= 5 && line.compare(0, 5, "data:") == 0) {
    std::string_view value = line.substr(5);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    const size_t new_size = data_.size() + (has_data_ ? 1 : 0) + value.size();
    if (new_size > options_.max_event_bytes) {
      Oversized(line_offset_);
      return;
    }
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
    return;
  }
  Field(line);
}

template <typename F>
Status SseDecoder::Feed(std::string_view bytes, F&& on_event) {
  error_ = Status::Ok();
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  // The stream may begin with a UTF-8 byte order mark, which is not part of the first line
  // (WHATWG "Interpreting an event stream"); it may be split across calls.
  static constexpr char kBom[] = "\xEF\xBB\xBF";
  while (at_start_ && p != end) {
    if (*p == kBom[bom_seen_]) {
      ++p;
      if (++bom_seen_ == 3) at_start_ = false;
    } else {
      line_.append(kBom, bom_seen_);  // a partial match was the first line's start
      at_start_ = false;
    }
  }
  if (pending_cr_ && p != end) {
    pending_cr_ = false;
    if (*p == '\n') ++p;
  }
  while (p != end) {
    // Find the next terminator: '\n', or a '\r' (alone or before '\n').
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const char* scan_end = nl ? nl : end;
    const char* cr = static_cast<const char*>(std::memchr(p, '\r', scan_end - p));
    const char* term = cr ? cr : nl;
    if (term == nullptr) {
      // No terminator in this chunk: keep the partial line, unless it is already too big.
      if (skipping_ || dropping_line_) {
        dropping_line_ = true;  // a non-blank line inside a skipped event: ignore its rest
      } else if (line_.size() + (end - p) > options_.max_event_bytes + kFieldNameSlack) {
        // Too long to keep buffering. Its start already decides what the complete line would
        // do (its value cannot fit), so act now and drop the rest: the outcome must not depend
        // on where the stream was split.
        line_.append(p, std::min<size_t>(end - p, kFieldNameSlack));
        OverlongLine(line_, bytes_fed_ + (end - bytes.data()));
        line_.clear();
        dropping_line_ = true;
      } else {
        line_.append(p, end - p);
      }
      break;
    }
    line_offset_ = bytes_fed_ + (term - bytes.data());
    if (dropping_line_) {
      dropping_line_ = false;  // the end of an oversized line: nothing to interpret
    } else if (line_.empty()) {
      Line(std::string_view(p, term - p), on_event);
    } else {
      line_.append(p, term - p);
      Line(std::string_view(line_), on_event);
      line_.clear();
    }
    p = term + 1;
    if (*term == '\r') {
      if (p == end) {
        pending_cr_ = true;
      } else if (*p == '\n') {
        ++p;
      }
    }
  }
  bytes_fed_ += bytes.size();
  return std::move(error_);
}

}  // namespace latdoc::http
