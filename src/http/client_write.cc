// Writing the HTTP client's request (http/client.h): the request's bytes, and on a plain
// connection the send() calls that hand them to the kernel.
#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "http/client_internal.h"

namespace latdoc::http::client_internal {

template <bool kTls>
void Conn<kTls>::Write() {
  const ClientRequest& r = ex_->req;
  const Url& u = client_->url;
  out_.clear();
  const char* query_sep = u.query.empty()                           ? ""
                          : r.target.find('?') == std::string::npos ? "?"
                                                                    : "&";
  // Appended piece by piece (no fmt::format_to into the string: with clang, the call into
  // Debian's g++-built libfmt does not link; see CMakePresets.json's asan preset).
  using sv = std::string_view;
  for (sv part : {sv(r.method), sv(" "), sv(u.base_path), sv(r.target), sv(query_sep), sv(u.query),
                  sv(" HTTP/1.1\r\nHost: "), sv(client_->host_header),
                  sv("\r\nUser-Agent: latdoc\r\nAccept: */*\r\n")}) {
    out_ += part;
  }
  if (!client_->opts.keep_alive) out_ += "Connection: close\r\n";
  for (const auto& [k, v] : r.headers) {
    out_ += k;
    out_ += ": ";
    out_ += v;
    out_ += "\r\n";
  }
  if (!r.body.empty() || r.method == "POST") {
    out_ += "Content-Length: ";
    out_ += std::to_string(r.body.size());
    out_ += "\r\n";
  }
  out_ += "\r\n";
  out_ += r.body;
  SetDeadline(client_->opts.first_byte_timeout_ns);
  NewParser();
  in_.Clear();
  if constexpr (kTls) {
    asio::async_write(
        stream_, asio::buffer(out_),
        [self = Self(), before_ns = MonoNowNs()](boost::system::error_code ec, size_t) {
          if (self->closed_ || !self->ex_) return;
          if (ec) return self->OnReadError(ec);
          self->Sent(before_ns);
        });
  } else {
    out_sent_ = 0;
    SetPolled(true);
    SendRest();
  }
}

template <bool kTls>
// Plain: sends what is left of the request; a full socket buffer waits for EPOLLOUT.
void Conn<kTls>::SendRest() {
  int64_t before_ns = -1;  // just before the send() that wrote the request's last bytes
  while (out_sent_ < out_.size()) {
    before_ns = MonoNowNs();
    ssize_t n =
        ::send(fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      out_sent_ += size_t(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      writing_ = true;
      return;
    } else if (errno != EINTR) {
      // The server stopped reading (closed or reset): what it answered before that is still
      // in the socket, and is the better account of what happened.
      const boost::system::error_code send_ec(errno, boost::system::system_category());
      writing_ = false;
      Drain(true);
      if (!closed_ && ex_) OnReadError(send_ec);
      return;
    }
  }
  writing_ = false;
  Sent(before_ns);
}

template <bool kTls>
// `before_ns`: a stamp taken just before the call that handed the request's last byte to the
// kernel. Not one taken after it returned: on loopback the sending thread can be preempted
// inside send() by the woken server, which answers before send() returns, and a stamp after
// the call would then come after the answer's own (kernel) arrival stamp.
void Conn<kTls>::Sent(int64_t before_ns) {
  ex_->res.times.sent_ns = before_ns;
  ReadSome();
}

// Both kinds of connection (client_internal.h): the members defined in this file.
template void Conn<false>::Write();
template void Conn<false>::SendRest();
template void Conn<false>::Sent(int64_t);
template void Conn<true>::Write();
template void Conn<true>::SendRest();
template void Conn<true>::Sent(int64_t);

}  // namespace latdoc::http::client_internal
