// JsonEventScanner: splits a Chrome-trace JSON document, fed in arbitrary slices, into the
// elements of its top-level "traceEvents" array and its other top-level values, without ever
// holding the whole document. Memory is bounded by the largest single event (or the largest
// top-level value that the caller asked to keep).
//
// Input shape (Kineto, rocprof v1 results.json):
//   {"schemaVersion": 1, "deviceProperties": [...], "traceEvents": [
//     {"ph": "X", "cat": "kernel", "name": "...", "pid": 0, "tid": 7, "ts": 1.5, ...},
//     ...
//   ], "traceName": "..."}
// A bare top-level array of events (`[{...}, ...]`, also valid Chrome-trace) is accepted too.
//
// The scanner checks structure only (brackets, strings, commas); each element's text is handed
// to the caller to parse. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "trace/importers/common/json_value_scan.h"

namespace latdoc::trace {

class JsonEventScanner {
 public:
  // `text` is one array element (an event object, normally), valid only during the call;
  // `offset` is its first byte's offset in the decompressed document.
  using EventFn = std::function<void(std::string_view text, uint64_t offset)>;
  // A top-level key whose value is kept (see KeepValue) and its complete value text.
  using ValueFn = std::function<void(std::string_view key, std::string_view value)>;

  JsonEventScanner(EventFn on_event, ValueFn on_value);

  // An optional reader that takes an element straight from the scanner's buffer in one pass:
  // given the bytes from the element's first byte ('{') to the end of what has arrived, it
  // either reads the whole element (kDone, with its length), asks for more bytes (kNeedMore:
  // tried again from the same place after the next Feed), or declines (kDecline: the element
  // is scanned as usual and handed to EventFn). Elements it reads never reach EventFn.
  enum class FastResult { kDone, kNeedMore, kDecline };
  using FastFn = std::function<FastResult(const char* b, size_t n, uint64_t offset, size_t* length)>;
  void SetFastElement(FastFn fn) { fast_ = std::move(fn); }

  // Top-level keys whose values are delivered to ValueFn; other values are skipped without
  // being buffered. Default: none.
  void KeepValue(std::string key) { keep_keys_.push_back(std::move(key)); }

  // Feeds the next slice. A structural error (not JSON, or not a trace) is returned with the
  // byte offset; feeding after an error keeps returning it.
  Status Feed(std::string_view bytes);
  // Declares the end of input. A document cut short is kDataLoss naming the offset of the
  // unfinished element.
  Status Finish();

  uint64_t events() const { return events_; }
  bool saw_trace_events() const { return saw_trace_events_; }

  // For a parse split across threads (kineto_split.cc). A scanner that starts at byte
  // `offset` of a document, at an element of its traceEvents array (the byte after a ',' and
  // any whitespace); `bare_array` says whether the document is a bare array.
  void StartInsideTraceEvents(uint64_t offset, bool bare_array);
  bool bare_array() const { return bare_array_; }
  // True when everything fed so far has been consumed and the next byte must start an element
  // of traceEvents: a scanner started at that byte would go on exactly as this one will.
  bool AtTraceEventsElement() const;
  // Counts the events of earlier parts of the document in events() (and in Finish()'s message).
  void AddEarlierEvents(uint64_t n) { events_ += n; }

 private:
  enum class State {
    kStart,          // before the first '{' or '['
    kTopKeyOrEnd,    // after '{' or ',' at depth 1: expect a key string or '}'
    kTopKey,         // inside a key string
    kTopColon,
    kTopValue,       // expect a value at depth 1
    kTopValueBody,   // scanning a (skipped or kept) value
    kTopCommaOrEnd,
    kArrayElemOrEnd, // inside traceEvents: expect element or ']'
    kArrayElem,      // scanning one element
    kArrayCommaOrEnd,
    kDone,
  };

  Status Error(uint64_t offset, std::string_view what);
  // Scans data_[pos_, size_), calling back for what ends in it.
  Status Scan();
  // Scans a value from pos_ on; returns true when it ended (end_ is one past its last byte).
  bool ScanValue();
  // Where what must be kept for the next slice starts: the unfinished value kept whole, or pos_.
  size_t KeepFrom() const;
  // Moves the scan's positions `from` bytes on: data_[from] becomes position 0.
  void Rebase(size_t from);
  // Drops what buf_ holds before KeepFrom().
  void Compact();
  // After a scan of the caller's bytes: copies what must be kept into buf_ and scans on there.
  void Retain();

  EventFn on_event_;
  ValueFn on_value_;
  FastFn fast_;
  bool fast_waiting_ = false;   // the element at pos_ is incomplete; the fast reader waits
  std::vector<std::string> keep_keys_;

  // The bytes being scanned: buf_, or during Feed() the caller's slice, scanned where it lies.
  // buf_ holds only what one slice leaves to the next (an element cut at its end).
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string buf_;
  uint64_t buf_offset_ = 0;     // document offset of data_[0]
  size_t pos_ = 0;              // next byte of data_ to look at
  State state_ = State::kStart;
  bool bare_array_ = false;
  Status error_;

  // Current value scan.
  size_t value_start_ = 0;
  JsonValueScan value_;
  bool keep_value_ = false;
  size_t end_ = 0;

  std::string key_;
  bool key_escape_ = false;
  bool saw_trace_events_ = false;
  uint64_t events_ = 0;
};

}  // namespace latdoc::trace
