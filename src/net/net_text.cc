#include "net/net_text.h"

#include <cmath>

#include <fmt/core.h>

#include "base/units.h"

namespace latdoc::net {
namespace {

// `prec` decimals; never "-0.00"; a positive time too small for them keeps 2 significant
// digits ("0.0042") rather than read as 0.
std::string F(const std::optional<double>& v, int prec = 2) {
  if (!v) return "n/a";
  if (*v > 0 && *v < 0.5 * std::pow(10.0, -prec)) return FormatSignificant(*v, 2);
  return FormatFixed(*v, prec);
}

std::string U(const std::optional<uint32_t>& v) { return v ? std::to_string(*v) : "n/a"; }

// The failed samples, by reason, then each with its error.
void Loss(const ProbeFacts& p, std::string& out) {
  const LossCounts& l = p.loss;
  out += fmt::format("  loss: {} of {} samples failed", l.failed, l.samples);
  if (l.failed > 0) {
    std::string parts;
    auto add = [&](const char* name, int n) {
      if (n > 0) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", n, name);
    };
    add("dns", l.dns);
    add("refused", l.refused);
    add("connect", l.connect);
    add("tls", l.tls);
    add("timeout", l.timeout);
    add("reset", l.reset);
    add("http status", l.http_status);
    add("protocol", l.protocol);
    out += " (" + parts + ")";
  }
  out += "\n";
  for (const auto& s : p.samples) {
    if (s.failure == FailureReason::kNone) continue;
    out += fmt::format("    sample {}: {} ({}): {}\n", s.index, FailureReasonName(s.failure),
                       s.failed_phase, s.error);
  }
}

// Bytes per token, the stream's rate, the link it needs and has, and a stall if the stream stopped.
void Bandwidth(const BandwidthFacts& b, std::string& out) {
  out += fmt::format("  bandwidth: {} bytes per token ({} bytes, {} tokens); stream {} tokens/s",
                     F(b.bytes_per_token, 1), F(b.stream_bytes, 0), F(b.stream_tokens, 0),
                     F(b.stream_tokens_per_s, 1));
  if (b.peak_tokens_per_s)
    out += fmt::format(", peak {} tokens/s given", F(b.peak_tokens_per_s, 0));
  out += fmt::format("; needs {} Mbit/s; link {} Mbit/s{}{}\n", F(b.required_mbps, 3),
                     F(b.link_mbps, 0), b.link_source.empty() ? "" : " (" + b.link_source + ")",
                     b.headroom ? fmt::format("; headroom x{:.1f}", *b.headroom)
                                : (b.link_note.empty() ? "" : " (" + b.link_note + ")"));
  if (b.stalled)
    out +=
        fmt::format("  stream stalled: {} bytes ({} tokens of {}), then nothing for {} ms ({})\n",
                    F(b.stall_bytes, 0), F(b.stall_tokens, 0), b.stream_tokens_requested,
                    F(b.stall_quiet_ms, 0), b.stall_error);
}

void Probe(const ProbeFacts& p, std::string& out) {
  out += fmt::format("{}  ({} samples, {:.1f} s)\n", p.url, p.loss.samples, p.wall_s);
  out += fmt::format("  {:<12} {:>9} {:>9} {:>10} {:>10} {:>4}\n", "phase", "p50 ms", "p99 ms",
                     "jitter ms", "stddev ms", "n");
  struct Row {
    const char* name;
    const PhaseStats* s;
  };
  const Row rows[] = {{"dns", &p.dns},           {"connect", &p.connect},
                      {"tls", &p.tls},           {"ttfb", &p.ttfb},
                      {"ttft_new", &p.ttft_new}, {"ttft_reused", &p.ttft_reused}};
  for (const auto& r : rows) {
    out += fmt::format("  {:<12} {:>9} {:>9} {:>10} {:>10} {:>4}\n", r.name, F(r.s->p50_ms),
                       F(r.s->p99_ms), F(r.s->jitter_ms), F(r.s->stddev_ms), r.s->count);
  }
  out += fmt::format(
      "  ttfb timed from the request's last byte written to the response's kernel "
      "receive stamp, on CLOCK_MONOTONIC (resolution {}){}\n",
      p.clock_resolution_ns > 0 ? fmt::format("{} ns", p.clock_resolution_ns) : "n/a",
      p.ttfb_unordered > 0
          ? fmt::format(
                "; {} left out (response stamped before the request: a "
                "clock step)",
                p.ttfb_unordered == 1 ? "1 sample" : fmt::format("{} samples", p.ttfb_unordered))
          : "");
  Loss(p, out);
  const KeepAliveFacts& k = p.keepalive;
  out += fmt::format("  keep-alive: TTFT p50 {} ms on a new connection, {} ms kept alive: "
                     "handshake cost {} ms ({} of TTFT)\n",
                     F(k.ttft_new_p50_ms), F(k.ttft_reused_p50_ms), F(k.handshake_cost_ms),
                     k.share_of_ttft ? fmt::format("{:.1f}%", *k.share_of_ttft * 100) : "n/a");
  const IdleCloseFacts& i = p.idle;
  if (!i.checked) {
    out += "  idle close: not checked (" + i.skipped_reason + ")\n";
  } else if (i.closed) {
    out += fmt::format("  idle close: the server closed an idle connection after {:.2f} s\n",
                       *i.closed_after_s);
  } else {
    out += fmt::format("  idle close: still open after {:.1f} s idle\n", i.waited_s);
  }
  out += "  " + RenderTcpLine(p.tcp) + "\n";
  for (size_t i = 0; i < p.tls_chain.size(); ++i) {
    const CertFacts& c = p.tls_chain[i];
    out += fmt::format("  tls cert {}: {} (issuer {}) sha256 {}\n", i, c.subject, c.issuer,
                       c.sha256_hex);
  }
  for (const auto& s : p.samples) {
    if (s.tcp.retrans_segs == 0) continue;
    out += fmt::format("    sample {}: {} of {} segments retransmitted\n", s.index,
                       s.tcp.retrans_segs, s.tcp.segs_out);
  }
  Bandwidth(p.bandwidth, out);
}

}  // namespace

std::string RenderTcpLine(const TcpFacts& t) {
  if (t.connections == 0) return "tcp: no connection's TCP_INFO was read";
  return fmt::format(
      "tcp: {} connections, {} segments sent, {} retransmitted ({}), {} received out of order; "
      "srtt {}..{} ms, rttvar up to {} ms; path MTU {}, IP_MTU {}, MSS {} (advertised {}); "
      "reordering {}; worst congestion state {}",
      t.connections, t.segs_out, t.retrans_segs,
      t.retrans_share ? fmt::format("{:.2f}%", *t.retrans_share * 100) : "n/a", t.rcv_ooo_packets,
      F(t.srtt_min_ms, 3), F(t.srtt_max_ms, 3), F(t.rttvar_max_ms, 3), U(t.pmtu_min_bytes),
      U(t.ip_mtu_min_bytes), U(t.snd_mss_min_bytes), U(t.advmss_bytes), U(t.reordering_max),
      t.worst_ca_state);
}

std::string RenderNetText(const NetFacts& f) {
  std::string out = "latdoc net\n\n";
  Probe(f.probe, out);
  if (f.compare_probe) {
    out += "\n";
    Probe(*f.compare_probe, out);
  }
  if (f.plain_probe) {
    out += "\nplain HTTP (--plain-url)\n";
    Probe(*f.plain_probe, out);
  }
  if (f.compare) {
    out += fmt::format("\ncompare: {} minus {}\n", f.compare->url_b, f.compare->url_a);
    out += fmt::format("  {:<12} {:>9} {:>9} {:>10} {:>12}\n", "phase", "a p50 ms", "b p50 ms",
                       "added ms", "jitter +ms");
    for (const auto& d : f.compare->phases) {
      out += fmt::format("  {:<12} {:>9} {:>9} {:>10} {:>12}\n", d.phase, F(d.p50_a_ms),
                         F(d.p50_b_ms), F(d.p50_diff_ms), F(d.jitter_diff_ms));
    }
  }
  const RouteFacts& r = f.route;
  out += "\nroute: ";
  if (!r.checked) {
    out += "not checked (" + r.skipped_reason + ")\n";
  } else {
    out += r.local           ? fmt::format("{} is this host (dev {})", r.address, r.dev)
           : r.gateway.empty() ? fmt::format("{} directly on the subnet of dev {}", r.address, r.dev)
                               : fmt::format("{} via gateway {} (dev {})", r.address, r.gateway, r.dev);
    out += fmt::format(", source {}; interface MTU {}", r.src.empty() ? "n/a" : r.src,
                       U(r.iface_mtu_bytes));
    if (r.cached_mtu_bytes) out += fmt::format(", kernel's cached path MTU {}", *r.cached_mtu_bytes);
    out += fmt::format("; path MTU {}", U(r.path_mtu_bytes));
    if (r.pmtu_black_hole) out += " (black hole above it)";
    else if (r.pmtu_frag_needed_seen) out += " (a router sent 'fragmentation needed')";
    if (!r.pmtu_note.empty()) out += " (" + r.pmtu_note + ")";
    out += "\n";
  }
  const PathFacts& p = f.path;
  out += "\npath: ";
  if (!p.ran) {
    out += "skipped (" + p.skipped_reason + ")\n";
  } else {
    out += fmt::format("{}, {} hops", p.tool, p.hops.size());
    if (p.jump_hop) out += fmt::format(", largest rise at hop {} (+{:.2f} ms)", *p.jump_hop, *p.jump_ms);
    out += "\n";
    for (const auto& h : p.hops) {
      out += fmt::format("  {:>2}  {:<40} {}\n", h.hop, h.address.empty() ? "(no reply)" : h.address,
                         h.rtt_ms ? fmt::format("{:.3f} ms", *h.rtt_ms) : "n/a");
    }
  }
  return out;
}

}  // namespace latdoc::net
