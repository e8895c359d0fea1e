// A new connection of the HTTP client (http/client.h): resolve, connect, the TLS handshake and
// the chain the server showed.
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/clock.h"
#include "http/client_internal.h"
#include "http/stamped_read.h"

namespace latdoc::http::client_internal {

namespace {

std::string NameText(X509_NAME* name) {
  if (!name) return "";
  BIO* bio = BIO_new(BIO_s_mem());
  if (!bio) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data && n > 0 ? std::string(data, static_cast<size_t>(n)) : "");
  BIO_free(bio);
  return out;
}

}  // namespace

// The chain as the server sent it (a client's SSL_get_peer_cert_chain holds the leaf first).
std::vector<PeerCert> PeerChain(SSL* ssl) {
  std::vector<PeerCert> out;
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl);
  if (!chain) return out;
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* c = sk_X509_value(chain, i);
    PeerCert pc;
    pc.subject = NameText(X509_get_subject_name(c));
    pc.issuer = NameText(X509_get_issuer_name(c));
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (X509_digest(c, EVP_sha256(), md, &len) == 1) {
      static constexpr char kHex[] = "0123456789abcdef";
      for (unsigned int k = 0; k < len; ++k) {
        pc.sha256_hex += kHex[md[k] >> 4];
        pc.sha256_hex += kHex[md[k] & 15];
      }
    }
    out.push_back(std::move(pc));
  }
  return out;
}

template <bool kTls>
void Conn<kTls>::Resolve() {
  const Url& u = client_->url;
  boost::system::error_code literal_ec;
  auto addr = asio::ip::make_address(u.host, literal_ec);
  if (!literal_ec) {  // an IP literal: no resolver round trip (its first use starts a thread)
    ex_->res.times.dns_ns = MonoNowNs();
    return Connect(tcp::resolver::results_type::create(tcp::endpoint(addr, u.port), u.host,
                                                       std::to_string(u.port)));
  }
  resolver_.async_resolve(
      u.host, std::to_string(u.port),
      [self = Self()](boost::system::error_code ec, tcp::resolver::results_type results) {
        if (self->closed_ || !self->ex_) return;
        if (ec) {
          return self->Fail(FailureKind::kConnect,
                            fmt::format("resolve {}: {}", self->client_->url.host, ec.message()));
        }
        self->ex_->res.times.dns_ns = MonoNowNs();
        self->Connect(results);
      });
}

template <bool kTls>
void Conn<kTls>::Connect(const tcp::resolver::results_type& results) {
  asio::async_connect(
      Sock(), results, [self = Self()](boost::system::error_code ec, const tcp::endpoint&) {
        if (self->closed_ || !self->ex_) return;
        if (ec) {
          return self->Fail(
              FailureKind::kConnect,
              fmt::format("connect {}: {}", self->client_->url.Origin(), ec.message()));
        }
        self->ex_->res.times.connect_ns = MonoNowNs();
        boost::system::error_code ignored;
        self->Sock().set_option(tcp::no_delay(true), ignored);
        if constexpr (kTls) {
          self->Handshake();
        } else {
          EnableReceiveTimestamps(self->Sock().native_handle());
          boost::system::error_code release_ec;
          int fd = self->Sock().release(release_ec);
          if (release_ec || !self->client_->Watch(fd, self.get())) {
            std::string why = release_ec ? release_ec.message() : std::strerror(errno);
            if (fd >= 0) ::close(fd);
            return self->Fail(FailureKind::kConnect,
                              fmt::format("connect {}: cannot poll the socket: {}",
                                          self->client_->url.Origin(), why));
          }
          self->fd_ = fd;
          self->connected_ = true;
          self->Write();
        }
      });
}

template <bool kTls>
void Conn<kTls>::Handshake() {
  if constexpr (kTls) {
    const std::string& host = client_->url.host;
    SSL_set_tlsext_host_name(stream_.native_handle(), host.c_str());
    if (!client_->opts.insecure)
      stream_.set_verify_callback(asio::ssl::host_name_verification(host));
    stream_.async_handshake(
        asio::ssl::stream_base::client, [self = Self()](boost::system::error_code ec) {
          if (self->closed_ || !self->ex_) return;
          if (ec) {
            return self->Fail(FailureKind::kConnect,
                              fmt::format("TLS handshake with {}: {}", self->client_->url.Origin(),
                                          ec.message()));
          }
          self->ex_->res.times.tls_ns = MonoNowNs();
          if (self->client_->opts.capture_peer_certs)
            self->ex_->res.peer_certs = PeerChain(self->stream_.native_handle());
          self->connected_ = true;
          self->Write();
        });
  }
}

// Both kinds of connection (client_internal.h): the members defined in this file.
template void Conn<false>::Resolve();
template void Conn<false>::Connect(const tcp::resolver::results_type&);
template void Conn<false>::Handshake();
template void Conn<true>::Resolve();
template void Conn<true>::Connect(const tcp::resolver::results_type&);
template void Conn<true>::Handshake();

}  // namespace latdoc::http::client_internal
