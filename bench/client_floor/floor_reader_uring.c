// floor_reader.c with io_uring instead of epoll: the same streams, requests and counting, but
// each socket has one multishot receive (IORING_OP_RECV with IORING_RECV_MULTISHOT) drawing on
// a ring of provided buffers, and a wake-up reaps every completion ready. What the kernel
// costs per event when reads need no system call each.
//
// Usage: floor_reader_uring --port P --streams N --duration S --body-file FILE
// Built by bench/CMakeLists.txt when liburing is found (Debian: liburing-dev); run by
// bench/client_floor.py.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define kTail 5
#define kBufs 4096       // provided buffers (a power of two)
#define kBufBytes 8192

struct conn {
  int fd;
  char tail[kTail];
  int tail_len;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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

// Occurrences of `pat` that begin in `c`'s tail and end in `data`.
static uint64_t straddling(const struct conn* c, const char* data, size_t n, const char* pat,
                           size_t m) {
  char joint[2 * kTail + 8];
  size_t head = n < m - 1 ? n : m - 1;
  memcpy(joint, c->tail, (size_t)c->tail_len);
  memcpy(joint + c->tail_len, data, head);
  size_t len = (size_t)c->tail_len + head;
  uint64_t hits = 0;
  for (size_t at = 0; at < (size_t)c->tail_len; ++at)
    if (at + m <= len && at + m > (size_t)c->tail_len && !memcmp(joint + at, pat, m)) ++hits;
  return hits;
}

static struct io_uring ring;

static void arm(int i, int fd) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (!sqe) {
    io_uring_submit(&ring);
    sqe = io_uring_get_sqe(&ring);
  }
  io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = 0;
  io_uring_sqe_set_data64(sqe, (uint64_t)i);
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
    fprintf(stderr, "usage: floor_reader_uring --port P --streams N --duration S --body-file FILE\n");
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

  struct io_uring_params params;
  memset(&params, 0, sizeof params);
  params.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  params.cq_entries = 65536;
  int rc = io_uring_queue_init_params(4096, &ring, &params);
  if (rc < 0) {
    fprintf(stderr, "floor_reader_uring: io_uring_queue_init: %s\n", strerror(-rc));
    return 3;
  }
  struct io_uring_buf_ring* br = NULL;
  if (posix_memalign((void**)&br, 4096, kBufs * sizeof(struct io_uring_buf)) != 0) return 3;
  struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = kBufs, .bgid = 0};
  rc = io_uring_register_buf_ring(&ring, &reg, 0);
  if (rc < 0) {
    fprintf(stderr, "floor_reader_uring: register_buf_ring: %s\n", strerror(-rc));
    return 3;
  }
  io_uring_buf_ring_init(br);
  char* bufs = malloc((size_t)kBufs * kBufBytes);
  const int mask = io_uring_buf_ring_mask(kBufs);
  for (int b = 0; b < kBufs; ++b)
    io_uring_buf_ring_add(br, bufs + (size_t)b * kBufBytes, kBufBytes, (unsigned short)b, mask, b);
  io_uring_buf_ring_advance(br, kBufs);

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
    arm(i, fd);
    if (send_all(fd, req, (size_t)req_len) != 0) {
      perror("send");
      return 3;
    }
  }
  io_uring_submit(&ring);

  uint64_t events = 0, reads = 0, requests = (uint64_t)streams;
  const double wall0 = now_s(), cpu0 = cpu_s();
  while (now_s() - wall0 < duration) {
    struct __kernel_timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
    struct io_uring_cqe* cqe;
    rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
    if (rc < 0 && rc != -ETIME && rc != -EINTR) {
      fprintf(stderr, "floor_reader_uring: wait: %s\n", strerror(-rc));
      return 3;
    }
    unsigned head, seen = 0, recycled = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const int i = (int)io_uring_cqe_get_data64(cqe);
      struct conn* c = &conns[i];
      if (cqe->res == -ENOBUFS) {
        if (!(cqe->flags & IORING_CQE_F_MORE)) arm(i, c->fd);
        continue;
      }
      if (cqe->res <= 0) {
        fprintf(stderr, "floor_reader_uring: connection closed by the server (%d)\n", cqe->res);
        return 3;
      }
      ++reads;
      const int b = (int)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
      const char* data = bufs + (size_t)b * kBufBytes;
      const size_t n = (size_t)cqe->res;
      // Counted in place (the buffer is the kernel's, nothing is copied); a pattern that began
      // in the last read's tail is counted from the joint.
      events += count(data, n, "data:", 5) + straddling(c, data, n, "data:", 5);
      uint64_t done = count(data, n, "[DONE]", 6) + straddling(c, data, n, "[DONE]", 6);
      // The new tail: the last bytes of (old tail + data), without a whole "data:".
      size_t total = (size_t)c->tail_len + n;
      size_t keep = total < kTail ? total : kTail;
      char joint[2 * kTail];
      size_t from_tail = keep > n ? keep - n : 0;
      memcpy(joint, c->tail + c->tail_len - from_tail, from_tail);
      memcpy(joint + from_tail, data + n - (keep - from_tail), keep - from_tail);
      if (keep == 5 && !memcmp(joint, "data:", 5)) keep = 0;
      memcpy(c->tail, joint, keep);
      c->tail_len = (int)keep;
      io_uring_buf_ring_add(br, (void*)data, kBufBytes, (unsigned short)b, mask, (int)recycled++);
      for (uint64_t d = 0; d < done; ++d) {
        if (send_all(c->fd, req, (size_t)req_len) != 0) return 3;
        ++requests;
      }
      if (!(cqe->flags & IORING_CQE_F_MORE)) arm(i, c->fd);
    }
    io_uring_buf_ring_advance(br, (int)recycled);
    io_uring_cq_advance(&ring, seen);
  }
  const double cpu = cpu_s() - cpu0, wall = now_s() - wall0;
  printf("{\"events\": %llu, \"reads\": %llu, \"requests\": %llu, \"cpu_s\": %.6f, \"wall_s\": %.6f}\n",
         (unsigned long long)events, (unsigned long long)reads, (unsigned long long)requests, cpu,
         wall);
  return 0;
}
