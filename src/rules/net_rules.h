// Rules over the client-side network facts of `latdoc net` (net/net_facts.h): handshake cost
// without keep-alive, a gateway's added delay, jitter, loss, the server's idle close and the
// link's headroom for the token stream.
//
// Pure functions: facts in, findings out; no I/O, no clocks. Ids are stable:
//   net.no_keepalive  net.gateway_delay  net.jitter  net.loss  net.idle_close
//   net.bandwidth_headroom  net.path
// A check that ran and found nothing returns an `ok` finding; a check with nothing to judge
// (no compare URL, no link rate) returns a `skip` finding that says why, or nothing.
#pragma once

#include <vector>

#include "net/net_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

// Thresholds, in one place so tests and docs can name them.
inline constexpr double kNoKeepaliveWarnMs = 2.0;       // handshake cost per request
inline constexpr double kNoKeepaliveWarnShare = 0.05;   // of TTFT on a new connection
inline constexpr double kNoKeepaliveFailShare = 0.20;
inline constexpr double kGatewayWarnMs = 2.0;           // added at first byte (p50)
inline constexpr double kGatewayFailMs = 20.0;
inline constexpr double kJitterWarnMs = 10.0;           // p99 - p50 of a phase
inline constexpr double kJitterFailMs = 50.0;
inline constexpr double kLossFailShare = 0.05;          // of samples
inline constexpr double kIdleCloseWarnS = 60.0;         // closes sooner than typical client pools
inline constexpr double kHeadroomWarnShare = 0.5;       // required / link
inline constexpr double kHeadroomFailShare = 0.9;

std::vector<Finding> EvaluateNetRules(const net::NetFacts& facts);

}  // namespace latdoc::rules
