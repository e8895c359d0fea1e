// Event stream interpretation after https://html.spec.whatwg.org/multipage/server-sent-events.html
// ("Interpreting an event stream"). A typical vLLM completion stream:
//
//   data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m",
//          "choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}
//   <blank line>
//   data: [DONE]
//   <blank line>
//
// The hot path (Feed, data lines, dispatch) is in the header so the callback inlines.
#include "http/sse_decoder.h"

#include <string>

namespace latdoc::http {

SseDecoder::SseDecoder(SseDecoderOptions options) : options_(options) {
  // Most events of LLM servers are a few hundred bytes; start there and grow on demand.
  line_.reserve(512);
  data_.reserve(512);
}

void SseDecoder::Reset() {
  line_.clear();
  data_.clear();
  event_.clear();
  id_.clear();
  has_data_ = false;
  pending_cr_ = false;
  at_start_ = true;
  bom_seen_ = 0;
  skipping_ = false;
  dropping_line_ = false;
}

void SseDecoder::Field(std::string_view line) {
  std::string_view name = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    name = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (name == "data") {  // "data" with no colon: an empty data line
    if (data_.size() + 1 > options_.max_event_bytes) {
      Oversized(line_offset_);
      return;
    }
    if (has_data_) data_.push_back('\n');
    has_data_ = true;
  } else if (name == "event") {
    if (value.size() > options_.max_event_bytes) {
      Oversized(line_offset_);
      return;
    }
    event_.assign(value);
  } else if (name == "id") {
    // Spec: an id containing U+0000 NULL is ignored.
    if (value.find('\0') == std::string_view::npos && value.size() <= options_.max_event_bytes) {
      id_.assign(value);
    }
  }
  // "retry" and unknown fields are ignored (spec).
}

void SseDecoder::Oversized(uint64_t at_offset) {
  ++oversized_events_;
  if (error_.ok()) {
    error_ = InvalidArgument("SSE event larger than " + std::to_string(options_.max_event_bytes) +
                             " bytes at stream byte " + std::to_string(at_offset) +
                             "; event skipped");
  }
  data_.clear();
  event_.clear();
  has_data_ = false;
  skipping_ = true;
}

void SseDecoder::OverlongLine(std::string_view head, uint64_t at_offset) {
  // What Line() would do with the complete line: a comment is counted; a data or event value
  // is over max_event_bytes, so the event is skipped; an id that long, and any other field,
  // are ignored.
  if (head.front() == ':') {
    ++comments_;
  } else if (head.starts_with("data:") || head.starts_with("event:")) {
    Oversized(at_offset);
  }
}

}  // namespace latdoc::http
