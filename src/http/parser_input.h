// ParserInput: bytes read from a socket and not yet taken by a Beast parser. Both ends of
// latdoc's HTTP read with their own (stamped) recvmsg and feed Beast's parser by hand; this is
// the buffer and the feeding loop they share. Include from http/ .cc files only (Beast).
#pragma once

#include <cstring>
#include <vector>

#include "http/asio.h"

namespace latdoc::http {

class ParserInput {
 public:
  explicit ParserInput(size_t capacity) : buf_(capacity) {}

  // Where the next read goes, and how much fits; a full buffer doubles first (a header still
  // incomplete: the parser's header limit is what bounds it).
  char* space() {
    if (used_ == buf_.size()) buf_.resize(buf_.size() * 2);
    return buf_.data() + used_;
  }
  size_t space_size() const { return buf_.size() - used_; }
  void Commit(size_t n) { used_ += n; }
  size_t size() const { return used_; }
  void Clear() { used_ = 0; }

  // Hands the buffered bytes to `parser` until it is done, needs more, or fails; keeps what it
  // did not take. Returns the parser's error (need_more is not one).
  template <typename Parser>
  boost::system::error_code FeedTo(Parser& parser) {
    size_t consumed = 0;
    boost::system::error_code ec;
    while (consumed < used_ && !parser.is_done()) {
      size_t n = parser.put(asio::buffer(buf_.data() + consumed, used_ - consumed), ec);
      consumed += n;
      if (ec == bhttp::error::need_more) {
        ec = {};
        break;
      }
      if (ec || n == 0) break;
    }
    if (consumed > 0) {
      std::memmove(buf_.data(), buf_.data() + consumed, used_ - consumed);
      used_ -= consumed;
    }
    return ec;
  }

 private:
  std::vector<char> buf_;
  size_t used_ = 0;
};

}  // namespace latdoc::http
