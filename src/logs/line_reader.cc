#include "logs/line_reader.h"

#include <algorithm>
#include <cstring>

namespace latdoc::logs {

LineReader::LineReader(InputStream* in, size_t max_line_bytes, size_t read_bytes)
    : in_(in),
      max_line_(std::max<size_t>(max_line_bytes, 16)),
      read_bytes_(std::max<size_t>(read_bytes, 16)),
      buf_(max_line_ + read_bytes_) {}

void LineReader::MakeLine(size_t begin, size_t len, uint64_t raw_bytes, Line* line) {
  if (len > 0 && buf_[begin + len - 1] == '\r') --len;
  line->text = std::string_view(buf_.data() + begin, len);
  line->number = ++line_number_;
  line->offset = begin_offset_;
  line->raw_bytes = raw_bytes;
  line->truncated = false;
  line->no_newline = false;
  begin_offset_ += raw_bytes;
}

StatusOr<size_t> LineReader::Fill() {
  // Plan: keep the unfinished line, move it to the front when the room behind it is short,
  // then read as much as fits. The buffer holds max_line_ + read_bytes_, and the unfinished
  // line is never longer than max_line_ here, so at least read_bytes_ always fit.
  if (buf_.size() - end_ < read_bytes_ && begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    scan_ -= begin_;
    end_ -= begin_;
    begin_ = 0;
  }
  ASSIGN_OR_RETURN(size_t n, in_->Read(buf_.data() + end_, buf_.size() - end_));
  end_ += n;
  bytes_read_ += n;
  return n;
}

StatusOr<bool> LineReader::Next(Line* line) {
  for (;;) {
    if (!skipping_) {
      const void* p = std::memchr(buf_.data() + scan_, '\n', end_ - scan_);
      if (p != nullptr) {
        size_t nl = static_cast<size_t>(static_cast<const char*>(p) - buf_.data());
        size_t len = nl - begin_;
        MakeLine(begin_, std::min(len, max_line_), len + 1, line);
        line->truncated = len > max_line_;
        begin_ = scan_ = nl + 1;
        return true;
      }
      scan_ = end_;
      if (end_ - begin_ > max_line_) {
        // Too long: keep the first max_line_ bytes in place, drop the rest until the '\n'. (A
        // line of exactly max_line_ bytes whose '\n' is in the next read is not too long.)
        skipping_ = true;
        skip_bytes_ = end_ - begin_ - max_line_;
        end_ = scan_ = begin_ + max_line_;
      }
    } else {
      size_t from = begin_ + max_line_;
      const void* p = std::memchr(buf_.data() + from, '\n', end_ - from);
      if (p != nullptr) {
        size_t nl = static_cast<size_t>(static_cast<const char*>(p) - buf_.data());
        MakeLine(begin_, max_line_, max_line_ + skip_bytes_ + (nl - from) + 1, line);
        line->truncated = true;
        skipping_ = false;
        skip_bytes_ = 0;
        begin_ = scan_ = nl + 1;
        return true;
      }
      skip_bytes_ += end_ - from;
      end_ = scan_ = from;
    }
    ASSIGN_OR_RETURN(size_t n, Fill());
    if (n == 0) return false;
  }
}

bool LineReader::TakePartial(Line* line) {
  if (skipping_) {
    MakeLine(begin_, max_line_, max_line_ + skip_bytes_, line);
    line->truncated = true;
    skipping_ = false;
    skip_bytes_ = 0;
  } else if (end_ > begin_) {
    MakeLine(begin_, end_ - begin_, end_ - begin_, line);
  } else {
    return false;
  }
  line->no_newline = true;
  begin_ = scan_ = end_;
  return true;
}

}  // namespace latdoc::logs
