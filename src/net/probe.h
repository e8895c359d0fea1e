// NetProbe: the network layer of an OpenAI-compatible server, measured from the client side.
//
// Per sample, in order:
//   1. a cheap GET (`/health`, or `/v1/models` when /health answers 404) on a new connection:
//      DNS, TCP connect (one RTT), TLS handshake, and time to first byte (request written ->
//      response headers);
//   2. a one-token streamed completion on a new connection: TTFT including the handshakes;
//   3. the same completion on one kept-alive connection: TTFT without them.
// The difference of (2) and (3) is the handshake cost a client pays when it does not keep
// connections alive. Then, once: a longer stream on the kept-alive connection for bytes per
// token and the stream's token rate, and the idle-close check (net/idle_close.h).
//
// Failures never abort the probe: each sample records its reason and phase, and every exchange
// is bounded by `sample_timeout_ns` (hard: a name lookup or a peer that never answers is
// cancelled), so a probe of N samples ends within about 3 N sample timeouts plus the idle wait.
//
// Runs on its own EventLoop on the calling thread; blocking.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "net/net_facts.h"

namespace latdoc::net {

struct ProbeOptions {
  std::string url;                      // http[s]://host:port[/prefix]
  int samples = 10;
  bool insecure = false;                // skip TLS certificate verification
  std::string cheap_path = "/health";
  std::string model;                    // "" leaves "model" out of the request (server default)
  std::string api_key;                  // sent as a Bearer token when set; never printed
  int64_t sample_timeout_ns = 10'000'000'000;
  int64_t idle_wait_ns = 8'000'000'000; // 0: skip the idle-close check
  int stream_tokens = 64;               // 0: skip the bandwidth stream
  // The stream's prompt is padded to this many bytes, so that its request goes out in
  // full-size segments as a long prompt does (a path that loses large packets stalls it).
  int stream_prompt_bytes = 4096;
};

// The bandwidth stream counts as stalled when nothing came for this long (or half the sample
// timeout, if shorter) before a timeout or a reset ended it.
inline constexpr int64_t kStreamStallMinNs = 1'000'000'000;

// InvalidArgument for a bad URL or option; network failures are facts, not errors.
StatusOr<ProbeFacts> RunProbe(const ProbeOptions& options);

// Fills required_mbps and headroom from bytes per token, the rate (peak if given, else the
// stream's) and link_mbps, where known.
void ComputeHeadroom(BandwidthFacts& b);

}  // namespace latdoc::net
