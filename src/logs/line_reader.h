// LineReader: splits an InputStream (plain, gzip, zstd or stdin) into lines with bounded memory.
//
// The reader owns one fixed buffer (max_line_bytes plus a read slice), so memory stays flat
// however large the input is. A line longer than max_line_bytes is returned cut at that length
// with `truncated` set, and the rest of it is skipped. "\r\n" endings lose the '\r'.
//
// Next() returns false when the stream has no more bytes *for now*: a partial last line (no
// '\n' yet) is held back, so a caller that follows a growing file can call Next() again later.
// At the real end of the input, TakePartial() hands out that partial line. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"

namespace latdoc::logs {

struct Line {
  std::string_view text;     // without the '\n' (and '\r'); valid until the next call
  uint64_t number = 0;       // 1-based line number in the (decompressed) stream
  uint64_t offset = 0;       // decompressed byte offset of the line's first byte
  uint64_t raw_bytes = 0;    // bytes the line occupied in the stream, '\n' included
  bool truncated = false;    // longer than max_line_bytes; text holds the first part
  bool no_newline = false;   // the last line of the input, without a final '\n'
};

class LineReader {
 public:
  static constexpr size_t kDefaultMaxLineBytes = 1 << 20;

  // `in` must outlive the reader.
  explicit LineReader(InputStream* in, size_t max_line_bytes = kDefaultMaxLineBytes,
                      size_t read_bytes = 256 * 1024);

  // Sets *line to the next complete line and returns true; returns false when no complete
  // line is available (end of input for now). Read errors come back as a Status.
  StatusOr<bool> Next(Line* line);

  // At the real end of input: returns the held-back partial line, if any (once).
  bool TakePartial(Line* line);

  // Decompressed bytes read from the stream so far.
  uint64_t bytes_consumed() const { return bytes_read_; }
  uint64_t lines() const { return line_number_; }

 private:
  // Reads more bytes behind end_; returns bytes read (0 at end).
  StatusOr<size_t> Fill();
  void MakeLine(size_t begin, size_t len, uint64_t raw_bytes, Line* line);

  InputStream* in_;
  size_t max_line_;
  size_t read_bytes_;
  std::vector<char> buf_;
  size_t begin_ = 0;        // first byte of the current (unfinished) line
  size_t scan_ = 0;         // bytes before scan_ hold no '\n'
  size_t end_ = 0;          // end of valid bytes
  bool skipping_ = false;   // inside the tail of an over-long line
  uint64_t skip_bytes_ = 0; // bytes of the over-long line skipped so far
  uint64_t begin_offset_ = 0;   // decompressed stream offset of buf_[begin_]
  uint64_t bytes_read_ = 0;
  uint64_t line_number_ = 0;
};

}  // namespace latdoc::logs
