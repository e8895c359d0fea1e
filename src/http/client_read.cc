// Reading the HTTP client's response (http/client.h): the reads (kernel-stamped on a plain
// connection), Beast's parser fed by hand, the body streamed to the observer, and how the
// exchange ends: done, failed, or retried on a new connection.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include <fmt/core.h>

#include "base/clock.h"
#include "http/client_internal.h"
#include "http/stamped_read.h"
#include "http/tcp_info.h"

namespace latdoc::http::client_internal {

template <bool kTls>
void Conn<kTls>::OnReady(uint32_t events) {
  if (closed_ || !ex_) return;  // idle in the pool: its next exchange reads first
  const bool readable = (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  if (writing_) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) SendRest();
    // A server may answer before it has read the whole request (413 for a body too large):
    // read the answer now, as its edge will not come again.
    if (closed_ || !ex_ || !readable) return;
  }
  Drain((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
}

template <bool kTls>
void Conn<kTls>::NewParser() {
  parser_.emplace();
  parser_->eager(true);
  parser_->body_limit(uint64_t{1} << 50);  // streams are consumed as they arrive
  parser_->header_limit(64 * 1024);
  headers_seen_ = false;
  body_seen_ = false;
}

template <bool kTls>
void Conn<kTls>::ReadSome() {
  if constexpr (kTls) {
    stream_.async_read_some(asio::buffer(in_.space(), in_.space_size()),
                            [self = Self()](boost::system::error_code ec, size_t n) {
                              if (self->closed_ || !self->ex_) return;
                              if (ec) return self->OnReadError(ec);
                              if (self->Feed(n, MonoNowNs())) self->ReadSome();
                            });
  }
  // Plain: the response's bytes raise edges in the client's set (OnReady).
}

template <bool kTls>
// Kept alive: true if the socket holds nothing and is still open. Its edges came while no
// exchange listened, so ask the socket itself (peek, without taking a byte). Over TLS the
// bytes would be a record (an answer or an alert); TLS 1.3 session tickets come before the
// first answer, so a quiet pooled socket stays quiet. Records that came in the same read as
// the end of the last answer sit in Asio's SSL engine, where this cannot see them; a server's
// unasked answer comes after its idle timeout, long after that read.
bool Conn<kTls>::QuietInPool() {
  int fd = fd_;
  if constexpr (kTls) {
    if (SSL_pending(stream_.native_handle()) > 0) return false;
    fd = Sock().native_handle();
  }
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

template <bool kTls>
// Plain: reads what the socket holds, a bounded number of reads (fairness between streams).
// The set is edge-triggered, so a read that stops early must not leave bytes unread unseen:
// a read shorter than its buffer emptied the socket (bytes arriving later raise a new
// edge), and after eight full reads the rest is read on a posted turn. `to_end`: the peer
// has closed or failed, which raises no later edge: read until EOF or EAGAIN.
void Conn<kTls>::Drain(bool to_end) {
  const int64_t offset = client_->real_minus_mono_ns;
  for (int i = 0; i < 8; ++i) {
    int64_t at;
    char* space = in_.space();
    const size_t room = in_.space_size();
    ssize_t n = StampedRead(fd_, space, room, offset, &at);
    if (n > 0) {
      ++client_->reads;
      if (client_->batch_now_ns - at > client_->late_read_ns) ++client_->late_reads;
      if (!Feed(size_t(n), at)) return;
      if (size_t(n) < room && !to_end) return;
      continue;
    }
    if (n == 0) return OnReadError(asio::error::eof);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return OnReadError(boost::system::error_code(errno, boost::system::system_category()));
  }
  asio::post(client_->io, [self = Self(), to_end] {
    self->client_->real_minus_mono_ns = RealMinusMonoNs();
    self->client_->batch_now_ns = MonoNowNs();
    if (!self->closed_ && self->ex_ && !self->writing_) self->Drain(to_end);
  });
}

template <bool kTls>
// Hands `n` bytes just read into in_ to the parser. `at`: when they arrived.
// Returns true when more should be read.
bool Conn<kTls>::Feed(size_t n, int64_t at) {
  in_.Commit(n);
  boost::system::error_code ec = in_.FeedTo(*parser_);
  // 100 Continue, 103 Early Hints: interim responses, each a complete header-only message to
  // the parser. The final response follows on the same connection.
  while (!ec && !headers_seen_ && parser_->is_done() && parser_->get().result_int() / 100 == 1 &&
         parser_->get().result_int() != 101) {
    NewParser();
    ec = in_.FeedTo(*parser_);
  }
  if (!headers_seen_ && parser_->is_header_done()) {
    headers_seen_ = true;
    ex_->res.times.headers_ns = at;
    ex_->res.status = static_cast<int>(parser_->get().result_int());
    auto ct = parser_->get()[bhttp::field::content_type];
    ex_->obs->OnHeaders(ex_->res.status, std::string_view(ct.data(), ct.size()), at);
    if (closed_ || !ex_) return false;
  }
  std::string& body = parser_->get().body();
  if (!body.empty()) {
    body_seen_ = true;
    ex_->obs->OnBody(body, at);
    if (closed_ || !ex_) return false;
    body.clear();
  }
  if (parser_->is_done()) {
    Done(at);
    return false;
  }
  if (ec) {
    OnReadError(ec);
    return false;
  }
  // A streaming server sends its headers at once and its first body bytes after queueing and
  // prefill: the first-byte timeout runs until the body starts, the idle timeout after.
  SetDeadline(body_seen_ ? client_->opts.idle_timeout_ns : client_->opts.first_byte_timeout_ns,
              at);  // idle since these bytes arrived
  return true;
}

template <bool kTls>
void Conn<kTls>::OnReadError(boost::system::error_code ec) {
  bool got_some = parser_ && parser_->got_some();
  if ((ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) && parser_ &&
      parser_->got_some() && !parser_->is_done()) {
    // A body delimited by the end of the connection ends here (over TLS, many servers close
    // without a close_notify: the end is the same).
    boost::system::error_code eof_ec;
    parser_->put_eof(eof_ec);
    if (!eof_ec && parser_->is_done()) {
      std::string& body = parser_->get().body();
      int64_t now = MonoNowNs();
      if (!body.empty()) {
        ex_->obs->OnBody(body, now);
        if (closed_ || !ex_) return;
        body.clear();
      }
      return Done(now);
    }
  }
  bool closed_by_peer = ec == asio::error::eof || ec == bhttp::error::end_of_stream ||
                        ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
                        ec == asio::ssl::error::stream_truncated;
  if (closed_by_peer && !got_some && ex_->res.times.reused && !ex_->retried) {
    // A stale kept-alive connection: the server closed it while it sat in the pool.
    auto ex = std::move(ex_);
    ex->retried = true;
    ex->res.times = ExchangeTimes{ex->res.times.start_ns};
    CloseQuietly();
    client_->StartNew(std::move(ex));
    return;
  }
  if (closed_by_peer || ec == bhttp::error::partial_message) {
    return Fail(FailureKind::kReset,
                headers_seen_
                    ? fmt::format("connection {} before the body was complete",
                                  ec == asio::error::connection_reset ? "reset" : "closed")
                    : fmt::format("connection {} before any response",
                                  ec == asio::error::connection_reset ? "reset" : "closed"));
  }
  if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category())
    return Fail(FailureKind::kProtocol, "invalid HTTP response: " + ec.message());
  Fail(FailureKind::kReset, ec.message());
}

template <bool kTls>
void Conn<kTls>::Done(int64_t now) {
  auto ex = std::move(ex_);
  ex->res.times.end_ns = now;
  CaptureTcpInfo(ex->res);
  ex->res.body_complete = true;
  ClearDeadline();
  SetPolled(false);
  // An answer that came before the request was all sent leaves the connection mid-request.
  bool keep = client_->opts.keep_alive && parser_->keep_alive() && in_.size() == 0 && !writing_ &&
              (kTls || out_sent_ == out_.size());
  if (keep) {
    client_->Release(shared_from_this());
  } else {
    CloseQuietly();
  }
  ex->obs->OnComplete(ex->res);
}

template <bool kTls>
void Conn<kTls>::Fail(FailureKind kind, std::string msg) {
  auto ex = std::move(ex_);
  ex->res.failure = kind;
  ex->res.error = std::move(msg);
  ex->res.times.end_ns = MonoNowNs();
  CaptureTcpInfo(ex->res);
  CloseQuietly();
  ex->obs->OnComplete(ex->res);
}

template <bool kTls>
// Before the socket closes: its counters go with it.
void Conn<kTls>::CaptureTcpInfo(ExchangeResult& res) {
  if (!client_->opts.capture_tcp_info) return;
  int fd = fd_;
  if (fd < 0 && Sock().is_open()) fd = Sock().native_handle();
  res.tcp = ReadTcpConnInfo(fd);
  res.connection_id = id_;
}

// Both kinds of connection (client_internal.h): the members defined in this file.
template void Conn<false>::OnReady(uint32_t);
template void Conn<false>::NewParser();
template void Conn<false>::ReadSome();
template bool Conn<false>::QuietInPool();
template void Conn<false>::Drain(bool);
template bool Conn<false>::Feed(size_t, int64_t);
template void Conn<false>::OnReadError(boost::system::error_code);
template void Conn<false>::Done(int64_t);
template void Conn<false>::Fail(FailureKind, std::string);
template void Conn<false>::CaptureTcpInfo(ExchangeResult&);
template void Conn<true>::OnReady(uint32_t);
template void Conn<true>::NewParser();
template void Conn<true>::ReadSome();
template bool Conn<true>::QuietInPool();
template void Conn<true>::Drain(bool);
template bool Conn<true>::Feed(size_t, int64_t);
template void Conn<true>::OnReadError(boost::system::error_code);
template void Conn<true>::Done(int64_t);
template void Conn<true>::Fail(FailureKind, std::string);
template void Conn<true>::CaptureTcpInfo(ExchangeResult&);

}  // namespace latdoc::http::client_internal
