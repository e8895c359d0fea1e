// Idle-close detection: does the server close a kept-alive connection that sits idle, and after
// how long? (uvicorn, and so vLLM, close after --timeout-keep-alive / VLLM_HTTP_TIMEOUT_KEEP_ALIVE,
// 5 s by default; a client that idles longer pays a new handshake on its next request.)
//
// Method: one plain TCP connection (to the first resolved address that accepts, as the probe's
// client does), one keep-alive GET, then wait without sending anything until the server closes
// (EOF or reset) or `max_wait_ns` passes. The idle time is measured from the last response byte
// to the close. Blocking (poll with deadlines); plain http only (https is reported as skipped).
#pragma once

#include <cstdint>
#include <string>

#include "http/client.h"
#include "net/net_facts.h"

struct addrinfo;

namespace latdoc::net {

// Never blocks longer than connect_timeout_ns + max_wait_ns (+ the name lookup, which the
// caller runs only for names it already resolved).
IdleCloseFacts CheckIdleClose(const http::Url& url, const std::string& path, int64_t max_wait_ns,
                              int64_t connect_timeout_ns);

// The same over addresses already resolved for `url` (a getaddrinfo list, not owned), tried in
// order. REQUIRES: `url` is plain http.
IdleCloseFacts CheckIdleCloseAt(const addrinfo* addrs, const http::Url& url,
                                const std::string& path, int64_t max_wait_ns,
                                int64_t connect_timeout_ns);

}  // namespace latdoc::net
