// Reads from a socket with the kernel's receive timestamp (SO_TIMESTAMPNS), mapped onto
// latdoc's monotonic clock. Both ends of latdoc's HTTP use it: the load client, so a stream's
// timings are when its bytes reached this host and not when a busy thread got round to them;
// and the simulator's server, so its ground truth of when a request arrived is exact too.
//
// For TCP the kernel reports the arrival of the last segment the read returned. The timestamp
// is CLOCK_REALTIME; it is mapped with the current REALTIME - MONOTONIC offset, which moves
// only with clock steps and slewing (parts per million over a read's age).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace latdoc::http {

// Asks the kernel to timestamp `fd`'s reads. Returns false if it cannot (reads then fall back
// to the time of the read).
bool EnableReceiveTimestamps(int fd);

// REALTIME - MONOTONIC now; read once per batch of reads and pass to StampedRead.
int64_t RealMinusMonoNs();

// One non-blocking recvmsg() of up to `len` bytes. Returns what recvmsg returns (errno is
// set on -1). On success `*at_ns` is the bytes' arrival time (MonoNowNs clock): the kernel's
// timestamp when present and plausible, else now.
ssize_t StampedRead(int fd, char* buf, size_t len, int64_t real_minus_mono_ns, int64_t* at_ns);

}  // namespace latdoc::http
