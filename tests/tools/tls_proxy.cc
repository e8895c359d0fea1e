// tls_proxy: a TLS-terminating proxy for tests, standing for what inspects HTTPS on a path (a
// DPI firewall, a TLS proxy): it answers TLS with its own certificate and relays the decrypted
// bytes to a plain-TCP upstream (`latdoc sim`), optionally holding each upstream chunk.
//
//   tls_proxy --cert CERT.pem --key KEY.pem --upstream HOST:PORT [--chain CA.pem]
//             [--delay-ms N]
//
// --chain sends CA.pem after the leaf (as a server sends its intermediates). Listens on
// 127.0.0.1, a free port, printed as "listening PORT" on standard output. A thread per
// connection; runs until killed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

int ConnectUpstream(const std::string& host, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void Serve(SSL_CTX* ctx, int client, std::string host, int port, int delay_ms) {
  int one = 1;
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, client);
  int up = -1;
  if (SSL_accept(ssl) == 1 && (up = ConnectUpstream(host, port)) >= 0) {
    char buf[16384];
    for (;;) {
      if (SSL_pending(ssl) == 0) {
        pollfd p[2] = {{client, POLLIN, 0}, {up, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) break;
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t n = ::read(up, buf, sizeof buf);
          if (n <= 0) break;
          if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
          if (SSL_write(ssl, buf, static_cast<int>(n)) <= 0) break;
          continue;
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      }
      int n = SSL_read(ssl, buf, sizeof buf);
      if (n <= 0) {
        int err = SSL_get_error(ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) continue;
        break;
      }
      if (::write(up, buf, static_cast<size_t>(n)) != n) break;
    }
  }
  SSL_shutdown(ssl);
  SSL_free(ssl);
  if (up >= 0) ::close(up);
  ::close(client);
}

}  // namespace

int main(int argc, char** argv) {
  std::string cert, key, chain, upstream;
  int delay_ms = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--cert") cert = v;
    else if (a == "--key") key = v;
    else if (a == "--chain") chain = v;
    else if (a == "--upstream") upstream = v;
    else if (a == "--delay-ms") delay_ms = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "tls_proxy: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  size_t colon = upstream.rfind(':');
  if (cert.empty() || key.empty() || colon == std::string::npos) {
    std::fprintf(stderr, "usage: tls_proxy --cert C --key K --upstream HOST:PORT [--chain CA] "
                         "[--delay-ms N]\n");
    return 2;
  }
  const std::string host = upstream.substr(0, colon);
  const int port = std::atoi(upstream.c_str() + colon + 1);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (SSL_CTX_use_certificate_file(ctx, cert.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      (!chain.empty() && SSL_CTX_add_extra_chain_cert(ctx, [&] {
         FILE* f = std::fopen(chain.c_str(), "r");
         X509* x = f ? PEM_read_X509(f, nullptr, nullptr, nullptr) : nullptr;
         if (f) std::fclose(f);
         return x;
       }()) != 1)) {
    ERR_print_errors_fp(stderr);
    return 3;
  }
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(ls, 64) != 0 ||
      ::getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    std::perror("tls_proxy: listen");
    return 3;
  }
  std::printf("listening %d\n", ntohs(sa.sin_port));
  std::fflush(stdout);
  for (;;) {
    int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::thread(Serve, ctx, c, host, port, delay_ms).detach();
  }
}
