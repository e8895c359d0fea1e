// The network rules of TLS (net_rules_internal.h): a certificate re-signed on the way, and what
// HTTPS adds over plain HTTP to the same server.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/core.h>

#include "rules/net_rules.h"
#include "rules/net_rules_internal.h"

namespace latdoc::rules::net_rules_internal {

using net::NetFacts;
using net::ProbeFacts;

// The chain the client was shown against the server's own certificate. A leaf other than the
// server's means something in the path terminates TLS and re-signs it (an inspecting firewall,
// a proxy, a CDN): its issuer names it.
void TlsInspection(const NetFacts& nf, std::vector<Finding>& out) {
  const ProbeFacts& p = nf.probe;
  if (p.tls_chain.empty()) {
    if (!nf.expected_cert_sha256.empty()) {
      out.push_back(Make("net.tls_inspection", Severity::kSkip,
                         "TLS certificate not compared: no TLS handshake completed"));
    }
    return;
  }
  const net::CertFacts& leaf = p.tls_chain.front();
  auto chain_text = [&] {
    std::string t;
    for (const auto& c : p.tls_chain)
      t += (t.empty() ? "" : " <- ") + (c.subject.empty() ? "(no subject)" : c.subject);
    return t;
  };
  Finding f;
  if (nf.expected_cert_sha256.empty()) {
    f = Make("net.tls_inspection", Severity::kInfo,
             fmt::format("TLS certificate shown: {}, issued by {} (compare with "
                         "--expect-cert-sha256)",
                         leaf.subject, leaf.issuer));
  } else if (leaf.sha256_hex == nf.expected_cert_sha256) {
    f = Make("net.tls_inspection", Severity::kOk,
             fmt::format("The server's own certificate reaches the client ({}): nothing re-signs "
                         "TLS on the path",
                         leaf.subject));
  } else {
    f = Make("net.tls_inspection", Severity::kFail,
             fmt::format("TLS is re-signed on the path: the certificate shown is issued by {}, "
                         "not the server's own (SHA-256 {}... expected {}...)",
                         leaf.issuer, leaf.sha256_hex.substr(0, 16),
                         nf.expected_cert_sha256.substr(0, 16)));
    if (!nf.expected_cert_source.empty() && nf.expected_cert_source != "--expect-cert-sha256")
      f.title +=
          fmt::format("; the server's own, from {}, is {} issued by {}", nf.expected_cert_source,
                      nf.expected_cert_subject, nf.expected_cert_issuer);
    f.advice =
        "Something between client and server terminates TLS and signs its own certificate: an "
        "inspecting firewall (DPI), a TLS proxy or a CDN, named by the issuer. Exempt the "
        "server's address from TLS inspection, or connect by a path that does not cross it; "
        "compare the cost with --plain-url.";
  }
  f.evidence = {Text("subject", leaf.subject), Text("issuer", leaf.issuer),
                Text("sha256", leaf.sha256_hex), Text("chain", chain_text())};
  if (!nf.expected_cert_sha256.empty())
    f.evidence.push_back(Text("expected_sha256", nf.expected_cert_sha256));
  if (!nf.expected_cert_source.empty()) {
    f.evidence.push_back(Text("expected_from", nf.expected_cert_source));
    if (!nf.expected_cert_issuer.empty())
      f.evidence.push_back(Text("expected_issuer", nf.expected_cert_issuer));
  }
  out.push_back(std::move(f));
}

// HTTPS against plain HTTP to the same server: what TLS (and whatever inspects it) adds at
// first byte, and to a long stream's rate. The handshake itself is net.no_keepalive's.
void TlsOverhead(const NetFacts& nf, std::vector<Finding>& out) {
  if (!nf.plain_probe) return;
  const ProbeFacts& tls = nf.probe;
  const ProbeFacts& plain = *nf.plain_probe;
  if (!tls.ttfb.p50_ms || !plain.ttfb.p50_ms) {
    out.push_back(Make("net.tls_overhead", Severity::kSkip,
                       "HTTPS and plain HTTP not compared: a probe got no answer"));
    return;
  }
  const double added = *tls.ttfb.p50_ms - *plain.ttfb.p50_ms;
  std::optional<double> ratio;
  if (tls.bandwidth.stream_tokens_per_s && plain.bandwidth.stream_tokens_per_s &&
      *plain.bandwidth.stream_tokens_per_s > 0)
    ratio = *tls.bandwidth.stream_tokens_per_s / *plain.bandwidth.stream_tokens_per_s;
  Severity sev = Severity::kOk;
  if (added >= kTlsOverheadWarnMs || (ratio && *ratio < kTlsStreamWarnRatio)) sev = Severity::kWarn;
  if (added >= kTlsOverheadFailMs || (ratio && *ratio < kTlsStreamFailRatio)) sev = Severity::kFail;
  std::string stream =
      !ratio ? ""
      : *ratio < kTlsStreamWarnRatio
          ? fmt::format("; the stream runs at {:.0f}% of its plain rate", *ratio * 100)
          : "; the stream as fast";
  Finding f = Make("net.tls_overhead", sev,
                   sev == Severity::kOk
                       ? fmt::format("HTTPS adds {:.1f} ms at first byte over plain HTTP{}",
                                     std::max(0.0, added), stream)
                       : fmt::format("HTTPS adds {:.1f} ms at first byte over plain HTTP{}: "
                                     "something on the HTTPS path slows it",
                                     added, stream));
  f.evidence = {Num("ttfb_https_p50", tls.ttfb.p50_ms, "ms"),
                Num("ttfb_plain_p50", plain.ttfb.p50_ms, "ms"),
                Num("ttfb_added", added, "ms"),
                Num("tls_handshake_p50", tls.tls.p50_ms, "ms"),
                Num("ttft_kept_alive_https_p50", tls.ttft_reused.p50_ms, "ms"),
                Num("ttft_kept_alive_plain_p50", plain.ttft_reused.p50_ms, "ms"),
                Num("stream_https", tls.bandwidth.stream_tokens_per_s, "tokens/s"),
                Num("stream_plain", plain.bandwidth.stream_tokens_per_s, "tokens/s"),
                Text("plain_url", plain.url)};
  if (sev != Severity::kOk) {
    f.advice =
        "Find what handles HTTPS differently: a TLS-inspecting firewall or proxy on the "
        "HTTPS path (see net.tls_inspection), or a TLS terminator short of CPU; exempt the "
        "server from inspection or terminate TLS closer to it.";
    if (tls.ttft_reused.p50_ms && *tls.ttft_reused.p50_ms > 0)
      f.latency_share = std::clamp(added / *tls.ttft_reused.p50_ms, 0.0, 1.0);
  }
  out.push_back(std::move(f));
}

}  // namespace latdoc::rules::net_rules_internal
