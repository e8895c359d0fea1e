// ParserInput: bytes read from a socket and not yet taken by a Beast parser. Both ends of
// latdoc's HTTP read with their own (stamped) recvmsg and feed Beast's parser by hand; this is
// the buffer and the feeding loop they share. Include from http/ .cc files only (Beast).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <boost/optional.hpp>

#include "http/asio.h"

namespace latdoc::http {

// The client's response body: like Beast's string_body, but it never reserves the announced
// Content-Length (a response announcing 50 GB must not make the client allocate it: fuzz crash
// 93a4a92f). The client hands the bytes on after every read and clears them.
struct StreamBody {
  using value_type = std::string;
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& body) : body_(body) {}
    void init(const boost::optional<std::uint64_t>&, boost::system::error_code& ec) { ec = {}; }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
      std::size_t n = 0;
      for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
           ++it) {
        asio::const_buffer b = *it;
        body_.append(static_cast<const char*>(b.data()), b.size());
        n += b.size();
      }
      ec = {};
      return n;
    }
    void finish(boost::system::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

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
