// lossy_forwarder: a user-space middlebox between two TUN devices, for tests that need a path
// that loses packets or has a small MTU, where the kernel offers no qdisc (netem) to plant it.
//
//   lossy_forwarder --a NS:DEV --b NS:DEV [--drop-every-a2b N] [--drop-every-b2a N]
//                   [--mtu BYTES [--icmp]]
//
// DEV in network namespace NS (/run/netns/NS, as `ip netns add` makes it) is a persistent TUN
// device (`ip -n NS tuntap add dev DEV mode tun`); the forwarder attaches to both and copies
// each IP packet read from one to the other, so two namespaces whose TUN devices hold
// addresses of one subnet talk through it as through a wire.
//   --drop-every-a2b N   drops every Nth packet from a to b (deterministic: the same run loses
//                        the same packets); likewise --drop-every-b2a.
//   --mtu BYTES          a packet longer than BYTES does not pass. With --icmp the sender gets
//                        ICMP "fragmentation needed" with that MTU (RFC 1191), as a router
//                        answers; without, it is dropped silently (a PMTU black hole).
// Prints "ready" on standard output once attached; runs until SIGTERM or SIGINT, then prints
// "forwarded A2B B2A dropped D" on standard error.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "lossy_forwarder: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(3);
}

// Opens TUN device `dev` of namespace `ns`: enters the namespace, attaches, comes back. The
// descriptor keeps working from any namespace.
int OpenTun(const std::string& spec) {
  size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "lossy_forwarder: '%s': expected NS:DEV\n", spec.c_str());
    std::exit(2);
  }
  std::string ns = spec.substr(0, colon), dev = spec.substr(colon + 1);
  int self = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) Die("/proc/self/ns/net");
  int target = ::open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) Die("/run/netns/" + ns);
  if (::setns(target, CLONE_NEWNET) != 0) Die("setns " + ns);
  int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) Die("/dev/net/tun");
  struct ifreq ifr;
  std::memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", dev.c_str());
  if (::ioctl(fd, TUNSETIFF, &ifr) != 0) Die("TUNSETIFF " + spec);
  if (::setns(self, CLONE_NEWNET) != 0) Die("setns back");
  ::close(self);
  ::close(target);
  return fd;
}

uint16_t Checksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (n & 1) sum += p[n - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// RFC 792 / RFC 1191: type 3 code 4, the next-hop MTU in the low half of the second word, the
// original IP header and its first 8 payload bytes; from the original destination (Linux takes
// the report from any source, matching the quoted header to a socket).
void SendFragNeeded(int fd, const uint8_t* pkt, size_t len, int mtu) {
  const size_t ihl = (pkt[0] & 0x0f) * 4u;
  const size_t quoted = std::min(len, ihl + 8);
  uint8_t out[20 + 8 + 60 + 8];
  std::memset(out, 0, sizeof out);
  const size_t total = 20 + 8 + quoted;
  out[0] = 0x45;
  out[2] = static_cast<uint8_t>(total >> 8);
  out[3] = static_cast<uint8_t>(total);
  out[8] = 64;               // TTL
  out[9] = IPPROTO_ICMP;
  std::memcpy(out + 12, pkt + 16, 4);  // source: the original destination
  std::memcpy(out + 16, pkt + 12, 4);  // destination: the original source
  const uint16_t ipsum = Checksum(out, 20);
  out[10] = static_cast<uint8_t>(ipsum >> 8);
  out[11] = static_cast<uint8_t>(ipsum);
  uint8_t* icmp = out + 20;
  icmp[0] = 3;
  icmp[1] = 4;
  icmp[6] = static_cast<uint8_t>(mtu >> 8);
  icmp[7] = static_cast<uint8_t>(mtu);
  std::memcpy(icmp + 8, pkt, quoted);
  const uint16_t sum = Checksum(icmp, 8 + quoted);
  icmp[2] = static_cast<uint8_t>(sum >> 8);
  icmp[3] = static_cast<uint8_t>(sum);
  (void)!::write(fd, out, total);
}

}  // namespace

int main(int argc, char** argv) {
  std::string a_spec, b_spec;
  long drop_a2b = 0, drop_b2a = 0, mtu = 0;
  bool icmp = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "lossy_forwarder: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--a") a_spec = value();
    else if (arg == "--b") b_spec = value();
    else if (arg == "--drop-every-a2b") drop_a2b = std::atol(value().c_str());
    else if (arg == "--drop-every-b2a") drop_b2a = std::atol(value().c_str());
    else if (arg == "--mtu") mtu = std::atol(value().c_str());
    else if (arg == "--icmp") icmp = true;
    else {
      std::fprintf(stderr, "lossy_forwarder: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (a_spec.empty() || b_spec.empty()) {
    std::fprintf(stderr, "usage: lossy_forwarder --a NS:DEV --b NS:DEV [--drop-every-a2b N] "
                         "[--drop-every-b2a N] [--mtu BYTES [--icmp]]\n");
    return 2;
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnSignal;  // no SA_RESTART: poll() returns EINTR
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const int fds[2] = {OpenTun(a_spec), OpenTun(b_spec)};
  const long drop_every[2] = {drop_a2b, drop_b2a};
  uint64_t seen[2] = {0, 0}, forwarded[2] = {0, 0}, dropped = 0;
  std::printf("ready\n");
  std::fflush(stdout);
  uint8_t buf[65536];
  while (!g_stop) {
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(p, 2, 200) < 0) {
      if (errno == EINTR) continue;
      Die("poll");
    }
    for (int dir = 0; dir < 2; ++dir) {
      if (!(p[dir].revents & POLLIN)) continue;
      ssize_t n = ::read(fds[dir], buf, sizeof buf);
      if (n <= 0) continue;
      const bool ipv4 = n >= 20 && (buf[0] >> 4) == 4;
      if (!ipv4) continue;  // IPv6 router solicitations and the like: not on this wire
      ++seen[dir];
      if (drop_every[dir] > 0 && seen[dir] % static_cast<uint64_t>(drop_every[dir]) == 0) {
        ++dropped;
        continue;
      }
      if (mtu > 0 && n > mtu) {
        ++dropped;
        const bool df = (buf[6] & 0x40) != 0;
        if (icmp && df) SendFragNeeded(fds[dir], buf, static_cast<size_t>(n), static_cast<int>(mtu));
        continue;
      }
      if (::write(fds[1 - dir], buf, static_cast<size_t>(n)) == n) ++forwarded[dir];
    }
  }
  std::fprintf(stderr, "forwarded %llu %llu dropped %llu\n",
               static_cast<unsigned long long>(forwarded[0]),
               static_cast<unsigned long long>(forwarded[1]),
               static_cast<unsigned long long>(dropped));
  return 0;
}
