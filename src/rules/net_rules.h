// Rules over the client-side network facts of `latdoc net` (net/net_facts.h): handshake cost
// without keep-alive, a gateway's added delay, jitter, loss, the server's idle close and the
// link's headroom for the token stream.
//
// Pure functions: facts in, findings out; no I/O, no clocks. Ids are stable:
//   net.no_keepalive  net.gateway_delay  net.jitter  net.loss  net.idle_close
//   net.bandwidth_headroom  net.path  net.round_trip  net.probe_retransmits
//   net.path_mtu  net.route  net.tls_inspection  net.tls_overhead  net.stream_stall
// A check that ran and found nothing returns an `ok` finding; a check with nothing to judge
// (no compare URL, no link rate) returns a `skip` finding that says why, or nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "net/net_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

// Thresholds, in one place so tests and docs can name them.
inline constexpr double kNoKeepaliveWarnMs = 2.0;       // handshake cost per request
inline constexpr double kNoKeepaliveWarnShare = 0.05;   // of TTFT on a new connection
inline constexpr double kNoKeepaliveFailShare = 0.20;
inline constexpr double kGatewayWarnMs = 2.0;           // added in the worst phase (p50)
inline constexpr double kGatewayFailMs = 20.0;
inline constexpr double kGatewayTieMs = 1.0;            // within this of the worst: same delay
inline constexpr double kJitterWarnMs = 10.0;           // p99 - p50 of a phase
inline constexpr double kJitterFailMs = 50.0;
inline constexpr double kLossFailShare = 0.05;          // of samples
inline constexpr double kIdleCloseWarnS = 60.0;         // closes sooner than typical client pools
inline constexpr double kHeadroomWarnShare = 0.5;       // required / link
inline constexpr double kHeadroomFailShare = 0.9;
inline constexpr double kRoundTripWarnMs = 5.0;         // per request, kept-alive (see below)
inline constexpr double kRoundTripWarnShare = 0.10;     // of TTFT on a kept-alive connection
inline constexpr double kRoundTripFailShare = 0.25;
// Retransmitted segments of latdoc's own connections (TCP_INFO). Judged from kRetransMinSegs
// segments sent up: a short probe sends a few hundred, and on a sound path none is
// retransmitted, so kRetransWarnCount of them are a finding whatever their share; a single one
// is one only above kRetransWarnShare.
inline constexpr uint64_t kRetransMinSegs = 5;
inline constexpr uint64_t kRetransWarnCount = 2;
inline constexpr double kRetransWarnShare = 0.01;
inline constexpr double kRetransFailShare = 0.05;
// HTTPS against plain HTTP to the same server (--plain-url): time added at first byte (p50),
// and the long stream's token rate over HTTPS as a share of the plain one.
inline constexpr double kTlsOverheadWarnMs = 2.0;
inline constexpr double kTlsOverheadFailMs = 20.0;
inline constexpr double kTlsStreamWarnRatio = 0.8;
inline constexpr double kTlsStreamFailRatio = 0.5;

// The network time one request pays on a kept-alive connection, in ms: the cheap request's time
// to first byte (request written -> response headers: a round trip, whatever sits on the path,
// and the server's handling of a trivial request), less what only a new connection pays beyond
// the name lookup, TCP connect and TLS (the probe's cheap request goes on a new connection; a
// gateway that opens a backend connection per client connection charges that to its first
// request), and never less than one TCP round trip (connect). nullopt when the cheap request
// never answered.
std::optional<double> PerRequestNetworkMs(const net::ProbeFacts& p);

std::vector<Finding> EvaluateNetRules(const net::NetFacts& facts);

// The load a diagnosis measured on the same path, for ScaleNetFindings.
struct NetLoadContext {
  std::optional<double> mean_e2el_ms;  // the target load's mean end-to-end latency
  bool kept_alive = true;              // the load client kept its connections alive
};

// Puts the network findings on the load findings' scale (share of the mean end-to-end latency
// of the load test) and says which of them this workload pays. EvaluateNetRules judges against
// a one-token TTFT on an idle server; what the user feels is the share of their requests' time.
// A missing connection reuse that the load did not pay (it kept connections alive) becomes
// `info`.
void ScaleNetFindings(std::vector<Finding>& findings, const NetLoadContext& load);

}  // namespace latdoc::rules
