// JsonWalker: walks a JSON document fed in slices and hands the caller the values it asks
// for, each whole, chosen by where it sits (its path from the root). The document is never
// held: memory is bounded by the largest value kept, and values skipped are not buffered.
//
// For nested formats whose records lie deeper than a Chrome trace's top-level array
// (rocprofv3's JSON: {"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch":
// [record, ...]}}]}): the caller descends into the containers on the way and keeps each
// record, which it parses on its own.
//
// Like JsonEventScanner, the walker checks structure only (brackets, strings, commas, colons);
// scalars and kept values are checked by whoever parses them. Keys are compared as written
// (escapes are not decoded) and cut at 256 bytes. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/importers/common/json_value_scan.h"

namespace latdoc::trace {

class JsonWalker {
 public:
  // One step of a path: an object member (`key`) or an array element (`index` >= 0).
  struct Step {
    std::string key;
    int64_t index = -1;
  };
  using Path = std::vector<Step>;
  enum class Action {
    kSkip,     // scanned past, not buffered
    kKeep,     // handed to KeepFn whole
    kDescend,  // an object or array: the walker asks again for each of its members; for a
               // scalar, the same as kSkip
  };
  // Asked at the first byte (`first`) of the root and of every member of a container
  // descended into. May stop the walk by returning an error through Stop().
  using DecideFn = std::function<Action(const Path& path, char first)>;
  // A kept value's text, valid only during the call, and its first byte's document offset.
  using KeepFn = std::function<void(const Path& path, std::string_view text, uint64_t offset)>;

  JsonWalker(DecideFn decide, KeepFn keep);

  // Feeds the next slice. A structural error is returned with its byte offset; feeding after
  // an error (or a Stop) keeps returning it.
  Status Feed(std::string_view bytes);
  // Declares the end of input. A document cut short is kDataLoss naming the offset where the
  // input ended and the path of the value it ended in.
  Status Finish();
  // Called from DecideFn or KeepFn: ends the walk with `status` (Feed returns it).
  void Stop(Status status);

  // Bytes fed so far.
  uint64_t fed() const { return buf_offset_ + buf_.size(); }
  // Bytes held between slices: the unfinished part of a kept value, or of a token.
  size_t held() const { return buf_.size(); }
  // Where the walk stopped: the byte of a structural error or Stop(), the end of the input for
  // a document cut short.
  uint64_t error_offset() const { return error_offset_; }

  // "a.b[3].c": a path as the caller's messages show it.
  static std::string PathString(const Path& path);

 private:
  enum class State {
    kValue,          // expect a value
    kScan,           // inside a skipped or kept value
    kKeyOrEnd,       // after '{': a key or '}'
    kKey,            // after ',' in an object: a key
    kKeyText,        // inside a key string
    kColon,
    kObjectNext,     // after a member: ',' or '}'
    kElementOrEnd,   // after '[': a value or ']'
    kArrayNext,      // after an element: ',' or ']'
    kDone,
  };

  Status Error(std::string_view what);
  Status Scan();
  bool ScanValue();   // true when the value at value_start_ ended (end_ one past it)
  void AfterValue();  // the state after a value of the container on top (or the root)
  void Pop();

  DecideFn decide_;
  KeepFn keep_;
  Status error_;
  uint64_t error_offset_ = 0;

  // The bytes not yet consumed (from a kept value's start while it is read).
  std::string buf_;
  uint64_t buf_offset_ = 0;   // document offset of buf_[0]
  size_t pos_ = 0;            // next byte of buf_ to look at
  State state_ = State::kValue;

  Path path_;                 // one step per open container: its current member
  std::vector<bool> is_object_;
  std::string key_;
  bool key_escape_ = false;

  // The value being scanned.
  size_t value_start_ = 0;     // in buf_ (kept values only: a skipped one's bytes are dropped)
  uint64_t value_offset_ = 0;  // in the document
  size_t end_ = 0;
  bool keep_value_ = false;
  JsonValueScan value_;
};

}  // namespace latdoc::trace
