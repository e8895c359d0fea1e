#include "http/stamped_read.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <cstring>

#include "base/clock.h"

namespace latdoc::http {

bool EnableReceiveTimestamps(int fd) {
  int on = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

int64_t RealMinusMonoNs() {
  timespec r, m;
  clock_gettime(CLOCK_REALTIME, &r);
  clock_gettime(CLOCK_MONOTONIC, &m);
  return (int64_t(r.tv_sec) - int64_t(m.tv_sec)) * 1'000'000'000 + (r.tv_nsec - m.tv_nsec);
}

ssize_t StampedRead(int fd, char* buf, size_t len, int64_t real_minus_mono_ns, int64_t* at_ns) {
  iovec iov{buf, len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n <= 0) return n;
  int64_t now = MonoNowNs();
  int64_t at = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      at = int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec - real_minus_mono_ns;
    }
  }
  *at_ns = (at < 0 || at > now) ? now : at;
  return n;
}

}  // namespace latdoc::http
