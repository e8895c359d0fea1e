// The floor of an SSE load client: what the kernel costs, with next to nothing above it.
//
// Opens --streams keep-alive connections to an OpenAI-compatible server on loopback, sends each
// the same streaming request, and reads them with one level-triggered epoll set: one recv() per
// ready socket per wake-up, counting the "data:" lines it returns, nothing else (no HTTP parse,
// no JSON, no clock read per read). A stream that has sent "[DONE]" gets its next request at
// once. After --duration seconds it prints one JSON line: the events counted, the CPU time this
// process used (getrusage), the wall time, all over the measured window that begins once every
// connection has sent its first request.
//
// Usage: floor_reader --port P --streams N --duration S --body-file FILE
//   FILE holds the request's JSON body (bench/client_floor.py writes latdoc's own).
// Built by bench/CMakeLists.txt; run by bench/client_floor.py.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

// The last bytes of the previous read, kept per connection, so that a "data:" or "[DONE]" split
// between two reads is still seen once. Five bytes hold any proper prefix of either pattern and
// never a whole "[DONE]"; a whole "data:" is dropped from them.
#define kTail 5

struct conn {
  int fd;
  char tail[kTail];
  int tail_len;
};

static double now_s(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

// Occurrences of `pat` (length m) in `s` (length n).
static uint64_t count(const char* s, size_t n, const char* pat, size_t m) {
  uint64_t c = 0;
  const char* end = s + n;
  while (s < end) {
    const char* hit = memmem(s, (size_t)(end - s), pat, m);
    if (!hit) break;
    ++c;
    s = hit + m;
  }
  return c;
}

int main(int argc, char** argv) {
  int port = 0, streams = 1024;
  double duration = 10;
  const char* body_file = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--port")) port = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--streams")) streams = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--duration")) duration = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--body-file")) body_file = argv[i + 1];
  }
  if (port <= 0 || streams <= 0 || !body_file) {
    fprintf(stderr, "usage: floor_reader --port P --streams N --duration S --body-file FILE\n");
    return 2;
  }
  char body[8192];
  FILE* f = fopen(body_file, "r");
  if (!f) {
    perror(body_file);
    return 2;
  }
  size_t body_len = fread(body, 1, sizeof body - 1, f);
  fclose(f);
  char req[9000];
  int req_len = snprintf(req, sizeof req,
                         "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%.*s",
                         port, body_len, (int)body_len, body);

  int ep = epoll_create1(0);
  struct conn* conns = calloc((size_t)streams, sizeof *conns);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  for (int i = 0; i < streams; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr*)&addr, sizeof addr) != 0) {
      perror("connect");
      return 3;
    }
    conns[i].fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    if (send_all(fd, req, (size_t)req_len) != 0) {
      perror("send");
      return 3;
    }
  }

  static char buf[65536 + kTail];
  struct epoll_event evs[1024];
  uint64_t events = 0, reads = 0, requests = (uint64_t)streams;
  const double wall0 = now_s(CLOCK_MONOTONIC), cpu0 = cpu_s();
  while (now_s(CLOCK_MONOTONIC) - wall0 < duration) {
    int n = epoll_wait(ep, evs, 1024, 100);
    for (int i = 0; i < n; ++i) {
      struct conn* c = evs[i].data.ptr;
      memcpy(buf, c->tail, (size_t)c->tail_len);
      ssize_t r = recv(c->fd, buf + c->tail_len, 65536, 0);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        fprintf(stderr, "floor_reader: connection closed by the server\n");
        return 3;
      }
      ++reads;
      size_t len = (size_t)c->tail_len + (size_t)r;
      events += count(buf, len, "data:", 5);
      uint64_t done = count(buf, len, "[DONE]", 6);
      size_t keep = len < kTail ? len : kTail;
      if (keep == 5 && !memcmp(buf + len - 5, "data:", 5)) keep = 0;  // counted already
      memcpy(c->tail, buf + len - keep, keep);
      c->tail_len = (int)keep;
      for (uint64_t d = 0; d < done; ++d) {
        if (send_all(c->fd, req, (size_t)req_len) != 0) return 3;
        ++requests;
      }
    }
  }
  const double cpu = cpu_s() - cpu0, wall = now_s(CLOCK_MONOTONIC) - wall0;
  printf("{\"events\": %llu, \"reads\": %llu, \"requests\": %llu, \"cpu_s\": %.6f, \"wall_s\": %.6f}\n",
         (unsigned long long)events, (unsigned long long)reads, (unsigned long long)requests, cpu,
         wall);
  return 0;
}
