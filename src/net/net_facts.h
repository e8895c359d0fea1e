// Facts that `latdoc net` measures from the client side: per-sample phase times of a probe,
// their distributions, loss, keep-alive vs new connections, the server's idle close,
// bandwidth headroom of the token stream, a direct-vs-gateway comparison and the path's hops.
//
// Plain structs with ToJson(); no I/O. Every quantity not measured is std::nullopt and is
// written as JSON null (rendered "n/a"), never 0. Times are milliseconds (double) here: these
// are the edge of the program where nanoseconds become report units.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "http/tcp_info.h"

namespace latdoc::net {

// Why one sample failed. kNone: it succeeded.
enum class FailureReason { kNone, kDns, kRefused, kConnect, kTls, kTimeout, kReset, kHttpStatus,
                           kProtocol };
std::string_view FailureReasonName(FailureReason r);

// What an HTTP error answer points at, by its status: the key (401, 403), the request's model
// or path (404 and other 4xx), load shedding (429), the server or a gateway failing (5xx).
enum class HttpErrorCause { kRequest, kCredentials, kOverload, kServer };
HttpErrorCause ClassifyHttpError(int status);

// TCP facts of a set of latdoc's own connections: http/tcp_info.h's totals.
using TcpFacts = http::TcpTotals;
using http::AddConnection;

// One probe sample. A sample whose cheap request fails stops there (the rest would fail the
// same way); `failed_phase` says which step ("cheap", "ttft_new", "ttft_reused").
struct ProbeSample {
  int index = 0;
  FailureReason failure = FailureReason::kNone;
  std::string failed_phase;
  std::string error;                   // the client's message, for humans
  int http_status = 0;                 // the status of an HTTP error answer (0: none)
  std::optional<double> dns_ms;        // Send() -> name resolved
  std::optional<double> connect_ms;    // resolved -> TCP connected (one RTT)
  std::optional<double> tls_ms;        // connected -> TLS handshake done (https only)
  std::optional<double> ttfb_ms;       // request written -> response's first bytes (cheap
                                       // request; kTtfbDefinition); nullopt, never 0, when the
                                       // two stamps were out of order
  std::optional<double> ttft_new_ms;   // Send() -> first token, on a new connection
  std::optional<double> ttft_reused_ms;  // Send() -> first token, on a kept-alive connection
  TcpFacts tcp;                        // the sample's new connections (cheap and ttft_new)
};

// Distribution of one phase over the successful samples. Empty: count 0 and all nullopt.
struct PhaseStats {
  size_t count = 0;
  std::optional<double> p50_ms, p99_ms, mean_ms, stddev_ms, min_ms, max_ms;
  std::optional<double> jitter_ms;  // p99 - p50
};
PhaseStats SummarizePhase(const std::vector<double>& values_ms);

struct LossCounts {
  int samples = 0;
  int failed = 0;
  int dns = 0, refused = 0, connect = 0, tls = 0, timeout = 0, reset = 0, http_status = 0,
      protocol = 0;
};

struct KeepAliveFacts {
  std::optional<double> ttft_new_p50_ms;     // a new connection per request
  std::optional<double> ttft_reused_p50_ms;  // one kept-alive connection
  std::optional<double> handshake_cost_ms;   // new - reused
  std::optional<double> share_of_ttft;       // handshake_cost / ttft_new, 0..1
  int reused_count = 0;                      // reused samples that really went on the same connection
};

// The server's idle close of a kept-alive connection, measured by holding one connection open
// after a response and timing how long until the server closes it.
struct IdleCloseFacts {
  bool checked = false;
  std::string skipped_reason;              // when !checked
  bool closed = false;                     // the server closed it within `waited_s`
  std::optional<double> closed_after_s;    // from the response's last byte to the close
  double waited_s = 0;                     // the longest idle time watched
};

// Bytes per streamed token from one SSE stream, and what the link must carry at a token rate.
struct BandwidthFacts {
  std::optional<double> stream_bytes;        // decoded body bytes of the stream
  std::optional<double> stream_tokens;       // completion tokens (usage, else content chunks)
  std::optional<double> bytes_per_token;
  std::optional<double> stream_tokens_per_s; // one stream's rate, first to last token
  std::optional<double> peak_tokens_per_s;   // given (--peak-tokens-per-s), all streams together
  std::optional<double> required_mbps;       // bytes_per_token * 8 * rate / 1e6
  std::string rate_source;                   // "given" or "one stream observed"
  std::optional<double> link_mbps;
  std::string link_source;                   // "--link-mbps", "iperf3 HOST", or ""
  std::string link_note;                     // why the link rate is unknown, when it is
  std::optional<double> headroom;            // link / required
  int stream_tokens_requested = 0;           // 0: no stream was asked for
  int stream_prompt_bytes = 0;               // its prompt's size (a request in full-size segments)
  // The stream stopped before its end: stall_bytes of body (stall_tokens tokens) had come, then
  // nothing for stall_quiet_ms until the timeout or a reset ended it (stall_error). The probe's
  // small requests had passed: large packets are lost on the path.
  bool stalled = false;
  std::optional<double> stall_bytes, stall_tokens, stall_quiet_ms;
  std::string stall_error;
};

struct PathHop {
  int hop = 0;
  std::string address;                  // "" when no reply
  std::optional<double> rtt_ms;         // lowest RTT seen for the hop
};

struct PathFacts {
  bool ran = false;
  std::string tool;                     // "tracepath" or "traceroute"
  std::string skipped_reason;           // when !ran
  std::vector<PathHop> hops;
  std::optional<int> jump_hop;          // the hop where the RTT rises most over the previous one
  std::optional<double> jump_ms;
};

// How the client reaches the server (`ip route get ADDRESS`) and the largest packet that gets
// there (a UDP probe with Don't Fragment set, as tracepath does).
struct RouteFacts {
  bool checked = false;
  std::string skipped_reason;             // when !checked
  std::string address;                    // the server's address the route was asked for
  std::string dev;                        // the interface the route leaves by
  std::string gateway;                    // "" when the server is on the interface's subnet
  std::string src;                        // the client's source address
  bool local = false;                     // the server is this host
  std::optional<uint32_t> iface_mtu_bytes;    // of `dev`
  std::optional<uint32_t> cached_mtu_bytes;   // a path MTU the kernel has learnt (route cache)
  // The path MTU: the largest IPv4 packet with Don't Fragment that reached the server (an ICMP
  // "port unreachable" or a reply came back). nullopt: unknown (pmtu_note says why).
  std::optional<uint32_t> path_mtu_bytes;
  // The path answered ICMP "fragmentation needed" (a router said its MTU), or only silence
  // above path_mtu_bytes (a black hole: packets vanish without a word).
  bool pmtu_frag_needed_seen = false;
  bool pmtu_black_hole = false;
  std::string pmtu_note;
};

// One certificate of the chain the server showed (leaf first).
struct CertFacts {
  std::string subject, issuer;   // RFC 2253
  std::string sha256_hex;        // lowercase, no separators
};

struct ProbeFacts {
  std::string url;
  std::string cheap_path;               // "/health" or "/v1/models"
  std::vector<ProbeSample> samples;
  PhaseStats dns, connect, tls, ttfb, ttft_new, ttft_reused;
  LossCounts loss;
  KeepAliveFacts keepalive;
  IdleCloseFacts idle;
  BandwidthFacts bandwidth;
  TcpFacts tcp;                         // every connection of the probe (the kept-alive one once)
  std::vector<CertFacts> tls_chain;     // https: the chain of the first handshake
  double wall_s = 0;
  // How ttfb is timed: both ends on CLOCK_MONOTONIC (the response's stamp is the kernel's
  // receive timestamp, mapped onto it; http/stamped_read.h), and that clock's resolution
  // (clock_getres). 0: not known.
  int64_t clock_resolution_ns = 0;
  // Samples whose response stamp was not after the request's (only a clock step between the
  // two can do that): their ttfb is left out, never clamped to 0.
  int ttfb_unordered = 0;
};

// What ttfb spans, for the JSON and the text.
inline constexpr const char* kTtfbDefinition =
    "from just before the request's last byte was handed to the kernel to the kernel's receive "
    "timestamp of the response's first bytes, both on CLOCK_MONOTONIC";

// B minus A for each phase: p50 and jitter differences, in ms.
struct PhaseDiff {
  std::string phase;                    // "dns", "connect", "tls", "ttfb", "ttft_new", "ttft_reused"
  std::optional<double> p50_a_ms, p50_b_ms, p50_diff_ms, jitter_diff_ms;
};
struct CompareFacts {
  std::string url_a, url_b;
  std::vector<PhaseDiff> phases;
};

struct NetFacts {
  ProbeFacts probe;
  std::optional<ProbeFacts> compare_probe;
  std::optional<CompareFacts> compare;
  PathFacts path;
  RouteFacts route;
  // TLS: the server's own certificate's SHA-256 (--expect-cert-sha256, normalised: lowercase,
  // no separators), and the same server probed over plain HTTP (--plain-url).
  std::string expected_cert_sha256;
  std::optional<ProbeFacts> plain_probe;
  // What `latdoc doctor` read on the server host (diagnose --facts / --local), when known:
  // where expected_cert_sha256 came from ("--expect-cert-sha256", or "the server's
  // --ssl-certfile PATH") and that certificate's subject and issuer; the server's interface
  // MTU (the largest of its interfaces that are up, loopback left out) and its name.
  std::string expected_cert_source;
  std::string expected_cert_subject, expected_cert_issuer;
  std::optional<uint32_t> server_iface_mtu_bytes;
  std::string server_iface;
};

// A SHA-256 fingerprint as given ("AB:CD:..." as `openssl x509 -fingerprint -sha256` prints
// it, or plain hex) to 64 lowercase hex digits; nullopt when it is not one.
std::optional<std::string> NormalizeSha256Hex(std::string_view text);

// Fills the PhaseStats, loss and keep-alive summaries of `p` from its samples.
void SummarizeProbe(ProbeFacts& p);
// B - A per phase.
CompareFacts ComparePhases(const ProbeFacts& a, const ProbeFacts& b);

nlohmann::json ToJson(const TcpFacts& t);
nlohmann::json ToJson(const PhaseStats& s);
nlohmann::json ToJson(const ProbeSample& s);
nlohmann::json ToJson(const ProbeFacts& p);
nlohmann::json ToJson(const CompareFacts& c);
nlohmann::json ToJson(const PathFacts& p);
nlohmann::json ToJson(const RouteFacts& r);
nlohmann::json ToJson(const NetFacts& f);

}  // namespace latdoc::net
