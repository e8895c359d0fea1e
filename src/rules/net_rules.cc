#include "rules/net_rules.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/core.h>

namespace latdoc::rules {
namespace {

using net::NetFacts;
using net::PhaseStats;
using net::ProbeFacts;

Evidence Num(std::string name, std::optional<double> value, std::string unit) {
  return Evidence{std::move(name), value, std::move(unit), ""};
}
Evidence Text(std::string name, std::string text) {
  return Evidence{std::move(name), std::nullopt, "", std::move(text)};
}

Finding Make(std::string id, Severity sev, std::string title) {
  Finding f;
  f.id = std::move(id);
  f.layer = Layer::kNetwork;
  f.severity = sev;
  f.title = std::move(title);
  return f;
}

void NoKeepalive(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::KeepAliveFacts& k = p.keepalive;
  if (!k.handshake_cost_ms || !k.share_of_ttft) return;
  double cost = *k.handshake_cost_ms, share = *k.share_of_ttft;
  Severity sev = Severity::kOk;
  if (cost >= kNoKeepaliveWarnMs && share >= kNoKeepaliveWarnShare)
    sev = share >= kNoKeepaliveFailShare ? Severity::kFail : Severity::kWarn;
  Finding f = Make("net.no_keepalive", sev,
                   sev == Severity::kOk
                       ? (cost <= 0 ? fmt::format("New connections cost no measurable time over "
                                                  "kept-alive ones ({:.1f} ms, within noise)",
                                                  cost)
                                    : fmt::format("New connections cost {:.1f} ms per request "
                                                  "({:.0f}% of TTFT): keep-alive matters little "
                                                  "here",
                                                  cost, share * 100))
                       : fmt::format("No keep-alive: +{:.1f} ms per request ({:.0f}% of TTFT)",
                                     cost, share * 100));
  f.evidence = {Num("ttft_new_connection_p50", k.ttft_new_p50_ms, "ms"),
                Num("ttft_kept_alive_p50", k.ttft_reused_p50_ms, "ms"),
                Num("handshake_cost", cost, "ms"), Num("share_of_ttft", share * 100, "%"),
                Num("connect_p50", p.connect.p50_ms, "ms"), Num("tls_p50", p.tls.p50_ms, "ms")};
  f.advice =
      "Reuse connections: create one HTTP client per process and keep it (openai.OpenAI(), "
      "httpx.Client(), requests.Session()), never one per request; behind nginx add "
      "`keepalive 32;` to the upstream block with `proxy_http_version 1.1;` and "
      "`proxy_set_header Connection \"\";`.";
  if (sev != Severity::kOk) f.latency_share = share;
  out.push_back(std::move(f));
}

// How a title says where a phase's added time is.
std::string_view PhaseWhere(std::string_view phase) {
  if (phase == "dns") return "in the name lookup";
  if (phase == "connect") return "at TCP connect";
  if (phase == "tls") return "in the TLS handshake";
  if (phase == "ttfb") return "at first byte";
  if (phase == "ttft_reused") return "to TTFT on a kept-alive connection";
  return "to TTFT on a new connection";
}

void GatewayDelay(const NetFacts& nf, std::vector<Finding>& out) {
  if (!nf.compare) return;
  const net::CompareFacts& c = *nf.compare;
  auto diff = [&](std::string_view phase) -> const net::PhaseDiff* {
    for (const auto& d : c.phases)
      if (d.phase == phase && d.p50_diff_ms) return &d;
    return nullptr;
  };
  // The first byte needs an answered request on both sides; without one the other phases would
  // compare a failure (a refused connect still has a name lookup).
  if (!diff("ttfb")) {
    Finding f = Make("net.gateway_delay", Severity::kSkip,
                     "Direct vs gateway not compared: one side has no successful sample");
    f.evidence = {Text("url_a", c.url_a), Text("url_b", c.url_b)};
    out.push_back(std::move(f));
    return;
  }
  // The verdict is the phase where B adds the most. Phases nest (TTFT on a new connection holds
  // the handshakes; first byte and kept-alive TTFT both hold a request's trip through the
  // gateway), so one delay shows in several: it is named at the first phase, in this order from
  // the most specific, within kGatewayTieMs of the extreme.
  std::vector<const net::PhaseDiff*> known;
  for (std::string_view phase : {"dns", "connect", "tls", "ttfb", "ttft_reused", "ttft_new"})
    if (const net::PhaseDiff* d = diff(phase)) known.push_back(d);
  // The verdict and the figure are the extreme's own; the tie only picks the phase named.
  auto most = [&](double sign) {
    double m = sign * *known.front()->p50_diff_ms;
    for (const net::PhaseDiff* d : known) m = std::max(m, sign * *d->p50_diff_ms);
    return sign * m;
  };
  auto extreme = [&](double sign) {
    const double m = sign * most(sign);
    for (const net::PhaseDiff* d : known)
      if (sign * *d->p50_diff_ms >= m - kGatewayTieMs) return d;
    return known.front();
  };
  const net::PhaseDiff* worst = extreme(1);
  const net::PhaseDiff* best = extreme(-1);
  const double add = most(1), saved = -most(-1);
  Severity sev = add >= kGatewayFailMs ? Severity::kFail
                 : add >= kGatewayWarnMs ? Severity::kWarn : Severity::kOk;
  // B adds nothing that matters and saves more somewhere (e.g. the URLs given the other way
  // round): say where it is faster.
  const bool faster = sev == Severity::kOk && saved > add;
  const net::PhaseDiff* named = faster ? best : worst;
  // The title names the phase and what it adds there; where another phase has more (phases
  // nest), up to how much, as the verdict is that.
  auto largest = [&](double sign) {
    const net::PhaseDiff* l = known.front();
    for (const net::PhaseDiff* d : known)
      if (sign * *d->p50_diff_ms > sign * *l->p50_diff_ms) l = d;
    return l;
  };
  const net::PhaseDiff* top = faster ? largest(-1) : largest(1);
  const double figure = std::abs(*named->p50_diff_ms), top_figure = std::abs(*top->p50_diff_ms);
  const std::string up_to = top_figure - figure >= 0.05
                                ? fmt::format(" (up to {:.1f} ms {})", top_figure, PhaseWhere(top->phase))
                                : "";
  Finding f = Make("net.gateway_delay", sev,
                   faster ? fmt::format("{} is {:.1f} ms faster {} than {}{}", c.url_b, figure,
                                        PhaseWhere(named->phase), c.url_a, up_to)
                          : fmt::format("{} adds {:.1f} ms {} over {}{}", c.url_b, figure,
                                        PhaseWhere(named->phase), c.url_a, up_to));
  f.evidence.push_back(Text("url_a", c.url_a));
  f.evidence.push_back(Text("url_b", c.url_b));
  f.evidence.push_back(Text("phase", named->phase));
  for (const auto& d : c.phases) {
    if (!d.p50_diff_ms) continue;
    f.evidence.push_back(Num(d.phase + "_p50_added", d.p50_diff_ms, "ms"));
    if (d.jitter_diff_ms) f.evidence.push_back(Num(d.phase + "_jitter_added", d.jitter_diff_ms, "ms"));
  }
  f.advice =
      "Look at what the gateway does per request: TLS inspection or termination, request "
      "buffering (nginx `proxy_buffering off;` and `proxy_request_buffering off;` for streams), "
      "a new upstream connection per request (`keepalive` in the upstream block), auth or "
      "rate-limit calls; put clients that need low TTFT on the direct path where policy allows.";
  if (sev != Severity::kOk && nf.compare_probe && nf.compare_probe->ttft_new.p50_ms &&
      *nf.compare_probe->ttft_new.p50_ms > 0)
    f.latency_share = std::min(1.0, add / *nf.compare_probe->ttft_new.p50_ms);
  out.push_back(std::move(f));
}

void Jitter(const ProbeFacts& p, std::vector<Finding>& out) {
  struct Ph { const char* name; const PhaseStats* s; };
  // Network phases only: TTFT also holds the server's queue and batching, whose spread is the
  // server's, not the network's. The cheap request's first byte holds a trivial handler only.
  const Ph phases[] = {{"dns", &p.dns}, {"connect", &p.connect}, {"tls", &p.tls},
                       {"ttfb", &p.ttfb}};
  const Ph* worst = nullptr;
  for (const auto& ph : phases)
    if (ph.s->jitter_ms && (!worst || *ph.s->jitter_ms > *worst->s->jitter_ms)) worst = &ph;
  if (!worst) return;
  double j = *worst->s->jitter_ms;
  Severity sev = j >= kJitterFailMs ? Severity::kFail : j >= kJitterWarnMs ? Severity::kWarn : Severity::kOk;
  Finding f = Make("net.jitter", sev,
                   fmt::format("p99 jitter {:.1f} ms on {} (p99 - p50 over {} samples)", j,
                               worst->name, worst->s->count));
  for (const auto& ph : phases) {
    if (!ph.s->jitter_ms) continue;
    f.evidence.push_back(Num(std::string(ph.name) + "_jitter", ph.s->jitter_ms, "ms"));
    f.evidence.push_back(Num(std::string(ph.name) + "_stddev", ph.s->stddev_ms, "ms"));
  }
  f.advice = std::string(worst->name) == "dns"
                 ? "Cache name lookups on the client host (systemd-resolved or nscd), or point "
                   "clients at the server by address."
                 : "Find where the variation enters: run `tracepath -n HOST` and `mtr -n -c 100 HOST` "
                   "from the client, check for a congested or Wi-Fi link, an overloaded gateway, "
                   "or CPU contention on the server's API process.";
  if (sev != Severity::kOk && p.ttft_new.p50_ms && *p.ttft_new.p50_ms > 0)
    f.latency_share = std::min(1.0, j / *p.ttft_new.p50_ms);
  out.push_back(std::move(f));
}

void Loss(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::LossCounts& l = p.loss;
  if (l.samples == 0) return;
  double share = static_cast<double>(l.failed) / l.samples;
  Severity sev = l.failed == 0 ? Severity::kOk
                 : share >= kLossFailShare ? Severity::kFail : Severity::kWarn;
  std::string first_error;
  for (const auto& s : p.samples) {
    if (s.failure != net::FailureReason::kNone) {
      first_error = fmt::format("sample {}: {} ({}): {}", s.index, net::FailureReasonName(s.failure),
                                s.failed_phase, s.error);
      break;
    }
  }
  int http_status = 0;  // of the first HTTP error answer (an error in a 200 stream has none)
  for (const auto& s : p.samples) {
    if (s.failure == net::FailureReason::kHttpStatus && s.http_status != 0) {
      http_status = s.http_status;
      break;
    }
  }
  Finding f = Make("net.loss", sev,
                   l.failed == 0 ? fmt::format("No failed samples out of {}", l.samples)
                                 : fmt::format("{} of {} samples failed ({:.0f}%)", l.failed,
                                               l.samples, share * 100));
  f.evidence = {Num("samples", l.samples, ""), Num("failed", l.failed, "")};
  auto add = [&](const char* name, int n) {
    if (n > 0) f.evidence.push_back(Num(name, n, ""));
  };
  add("dns", l.dns);
  add("refused", l.refused);
  add("connect", l.connect);
  add("tls", l.tls);
  add("timeout", l.timeout);
  add("reset", l.reset);
  add("http_status", l.http_status);
  add("protocol", l.protocol);
  if (!first_error.empty()) f.evidence.push_back(Text("first_failure", first_error));
  if (l.dns > 0) {
    f.advice = "Check the name: `getent hosts NAME` on the client; fix the URL or DNS.";
  } else if (l.refused > 0) {
    f.advice = "Nothing listens there: check the server is up and bound to that address "
               "(vLLM `--host 0.0.0.0 --port PORT`) and that the URL's port matches.";
  } else if (l.tls > 0) {
    f.advice = "Fix the certificate (expired, self-signed or wrong name), or pass --insecure to "
               "measure anyway; clients must trust the server's CA.";
  } else if (l.timeout > 0) {
    f.advice = "Something accepts but does not answer: a hung proxy, a full listen backlog or a "
               "firewall dropping packets; compare with --compare against the server directly.";
  } else if (l.http_status > 0) {
    switch (net::ClassifyHttpError(http_status)) {
      case net::HttpErrorCause::kCredentials:
        f.advice = fmt::format(
            "The server refused the request's credentials (HTTP {}): give the API key in "
            "$OPENAI_API_KEY, or name the variable that holds it with --api-key-env (sent as a "
            "Bearer token; vLLM checks it against its --api-key).", http_status);
        break;
      case net::HttpErrorCause::kOverload:
        f.advice = "The server or a gateway shed load (HTTP 429): it is rate-limited or "
                   "overloaded. Measure again at a quieter time or with a higher limit, and look "
                   "at the gateway's rate-limit settings and the server's queue (`latdoc logs`).";
        break;
      case net::HttpErrorCause::kServer:
        f.advice = fmt::format(
            "The server or a gateway failed the request (HTTP {}): look at their logs at the "
            "failure times (`latdoc logs`): an engine error or restart, out of memory, or a "
            "gateway with no healthy upstream (502, 503, 504).", http_status);
        break;
      case net::HttpErrorCause::kRequest:
        f.advice = "The server answered with an HTTP error: check the model name (--model; GET "
                   "/v1/models lists the server's), the cheap request's path (--cheap-path) and the "
                   "URL's path prefix; the body of the error says more (`curl -i URL/v1/models`).";
        break;
    }
  } else {
    f.advice = "Look at the server's and the gateway's logs at the failure times "
               "(`latdoc logs`), and retry with more --samples.";
  }
  if (sev == Severity::kOk) f.advice.clear();
  out.push_back(std::move(f));
}

void IdleClose(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::IdleCloseFacts& i = p.idle;
  if (!i.checked) {
    if (i.skipped_reason.empty() || i.skipped_reason == "not requested") return;
    Finding f = Make("net.idle_close", Severity::kSkip, "Idle close not checked: " + i.skipped_reason);
    out.push_back(std::move(f));
    return;
  }
  if (!i.closed) {
    Finding f = Make("net.idle_close", Severity::kOk,
                     fmt::format("The server kept an idle connection open for {:.0f} s", i.waited_s));
    f.evidence = {Num("watched", i.waited_s, "s")};
    out.push_back(std::move(f));
    return;
  }
  double s = *i.closed_after_s;
  bool per_response = s < 0.05;
  Severity sev = s < kIdleCloseWarnS ? Severity::kWarn : Severity::kInfo;
  Finding f = Make("net.idle_close", sev,
                   per_response
                       ? std::string("The server closes the connection after each response")
                       : fmt::format("The server closes idle connections after {:.1f} s: clients "
                                     "idle longer pay the handshake again",
                                     s));
  f.evidence = {Num("closed_after_idle", s, "s"), Num("watched", i.waited_s, "s")};
  if (p.keepalive.handshake_cost_ms)
    f.evidence.push_back(Num("handshake_cost", p.keepalive.handshake_cost_ms, "ms"));
  f.advice = per_response
                 ? "The server or a proxy answers with `Connection: close`: enable HTTP keep-alive "
                   "there (nginx `keepalive_timeout 75s;`)."
                 : fmt::format(
                       "Keep client pool idle expiry below {0:.0f} s (httpx "
                       "`Limits(keepalive_expiry={1:.0f})`), or raise the server's: vLLM "
                       "`VLLM_HTTP_TIMEOUT_KEEP_ALIVE=75`, uvicorn `--timeout-keep-alive 75`; a "
                       "gateway in front must idle out before the server does.",
                       s, std::max(1.0, s - 1));
  out.push_back(std::move(f));
}

void Headroom(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::BandwidthFacts& b = p.bandwidth;
  if (!b.bytes_per_token) return;
  if (!b.headroom) {
    Finding f = Make("net.bandwidth_headroom", Severity::kSkip,
                     fmt::format("Bandwidth headroom unknown: {:.0f} bytes per streamed token, {}",
                                 *b.bytes_per_token,
                                 b.link_note.empty() ? "no link rate" : b.link_note));
    f.evidence = {Num("bytes_per_token", b.bytes_per_token, "B"),
                  Num("required", b.required_mbps, "Mbit/s")};
    f.advice = "Give the link rate with --link-mbps M, or --iperf3-server HOST (iperf3 -s there).";
    out.push_back(std::move(f));
    return;
  }
  double used = 1.0 / *b.headroom;
  Severity sev = used >= kHeadroomFailShare ? Severity::kFail
                 : used >= kHeadroomWarnShare ? Severity::kWarn : Severity::kOk;
  Finding f = Make("net.bandwidth_headroom", sev,
                   fmt::format("The token stream needs {:.2f} Mbit/s at {:.0f} tokens/s ({}): "
                               "{:.1f}% of the {:.0f} Mbit/s link",
                               *b.required_mbps,
                               b.peak_tokens_per_s ? *b.peak_tokens_per_s : *b.stream_tokens_per_s,
                               b.rate_source, used * 100, *b.link_mbps));
  f.evidence = {Num("bytes_per_token", b.bytes_per_token, "B"),
                Num("tokens_per_s", b.peak_tokens_per_s ? b.peak_tokens_per_s : b.stream_tokens_per_s, "tok/s"),
                Num("required", b.required_mbps, "Mbit/s"), Num("link", b.link_mbps, "Mbit/s"),
                Text("link_source", b.link_source)};
  if (sev != Severity::kOk)
    f.advice = "Send fewer bytes per token: ask for `stream_options: {\"continuous_usage_stats\": "
               "false}`, no logprobs, and batch tokens per chunk (SGLang "
               "`--stream-interval 4`); or move clients onto a faster link.";
  out.push_back(std::move(f));
}

void Path(const NetFacts& nf, std::vector<Finding>& out) {
  const net::PathFacts& p = nf.path;
  if (!p.ran || p.hops.empty()) {
    if (p.skipped_reason.empty()) return;
    out.push_back(Make("net.path", Severity::kSkip, "Path not traced: " + p.skipped_reason));
    return;
  }
  Finding f = Make("net.path", Severity::kInfo,
                   p.jump_hop ? fmt::format("{} hops; the latency rises most at hop {} (+{:.1f} ms)",
                                            p.hops.size(), *p.jump_hop, *p.jump_ms)
                              : fmt::format("{} hops; no hop answered with a time", p.hops.size()));
  f.evidence.push_back(Text("tool", p.tool));
  for (const auto& h : p.hops) {
    f.evidence.push_back(Num(fmt::format("hop_{}{}", h.hop, h.address.empty() ? "" : " " + h.address),
                             h.rtt_ms, "ms"));
  }
  out.push_back(std::move(f));
}

// net.round_trip: the time a request spends on the network even on a kept-alive connection,
// against the TTFT of a one-token completion on that connection.
void RoundTrip(const ProbeFacts& p, std::vector<Finding>& out) {
  std::optional<double> rt = PerRequestNetworkMs(p);
  std::optional<double> ttft = p.ttft_reused.p50_ms ? p.ttft_reused.p50_ms : p.ttft_new.p50_ms;
  if (!rt || !ttft || *ttft <= 0) return;
  double share = std::min(1.0, *rt / *ttft);
  Severity sev = Severity::kOk;
  if (*rt >= kRoundTripWarnMs && share >= kRoundTripWarnShare)
    sev = share >= kRoundTripFailShare ? Severity::kFail : Severity::kWarn;
  Finding f = Make("net.round_trip", sev,
                   sev == Severity::kOk
                       ? fmt::format("A request spends {:.1f} ms on the network ({:.0f}% of a "
                                     "one-token TTFT)", *rt, share * 100)
                       : fmt::format("Network delay: {:.1f} ms per request before the server "
                                     "answers ({:.0f}% of a one-token TTFT)", *rt, share * 100));
  f.evidence = {Num("per_request_network", rt, "ms"), Num("ttfb_p50", p.ttfb.p50_ms, "ms"),
                Num("connect_p50", p.connect.p50_ms, "ms"),
                Num("ttft_one_token_p50", ttft, "ms"), Num("share_of_ttft", share * 100, "%"),
                Text("measured_on", p.url + p.cheap_path)};
  f.advice =
      "Bring clients closer to the server (same zone or rack), or find the hop that adds the "
      "delay: `tracepath -n HOST`, `mtr -n -c 100 HOST`; a proxy or service mesh sidecar on the "
      "path shows as first-byte time with a low TCP connect time (`latdoc net --compare` the "
      "direct URL).";
  if (sev != Severity::kOk) f.latency_share = share;
  out.push_back(std::move(f));
}

}  // namespace

std::optional<double> PerRequestNetworkMs(const ProbeFacts& p) {
  if (!p.ttfb.p50_ms) return std::nullopt;
  double connect = p.connect.p50_ms.value_or(0);
  // The handshake cost is a difference of TTFTs counted from Send(), so it holds the name
  // lookup, connect and TLS; ttfb (from the request written) holds none of them.
  double per_connection_extra = 0;
  if (p.keepalive.handshake_cost_ms)
    per_connection_extra = std::max(0.0, *p.keepalive.handshake_cost_ms - p.dns.p50_ms.value_or(0) -
                                             connect - p.tls.p50_ms.value_or(0));
  return std::max(*p.ttfb.p50_ms - per_connection_extra, connect);
}

// Retransmits are the client's own (its SYNs, requests and FINs resent); the server's lost
// segments show on the client as packets received out of order, reported beside them.
void Retransmits(const ProbeFacts& p, std::vector<Finding>& out) {
  const net::TcpFacts& t = p.tcp;
  if (t.connections == 0) return;
  if (t.segs_out < kRetransMinSegs) {
    Finding f = Make("net.probe_retransmits", Severity::kSkip,
                     fmt::format("Retransmits not judged: {} segments sent (fewer than {})",
                                 t.segs_out, kRetransMinSegs));
    f.evidence = {Num("segments_sent", static_cast<double>(t.segs_out), "")};
    out.push_back(std::move(f));
    return;
  }
  const double share = t.retrans_share.value_or(0);
  Severity sev = Severity::kOk;
  if (t.retrans_segs >= kRetransWarnCount || (t.retrans_segs > 0 && share >= kRetransWarnShare))
    sev = share >= kRetransFailShare ? Severity::kFail : Severity::kWarn;
  std::string ooo = t.rcv_ooo_packets == 0
                        ? ""
                        : fmt::format("; {} of the server's packets arrived out of order",
                                      t.rcv_ooo_packets);
  Finding f = Make(
      "net.probe_retransmits", sev,
      t.retrans_segs == 0
          ? fmt::format("No TCP retransmits: 0 of {} segments on {} connections{}", t.segs_out,
                        t.connections, ooo)
          : fmt::format("{} of {} TCP segments retransmitted ({:.1f}%) on {} connections{}",
                        t.retrans_segs, t.segs_out, share * 100, t.connections, ooo));
  f.evidence = {Num("retransmitted_segments", static_cast<double>(t.retrans_segs), ""),
                Num("segments_sent", static_cast<double>(t.segs_out), ""),
                Num("retransmit_share", share * 100, "%"),
                Num("connections", t.connections, ""),
                Num("received_out_of_order", static_cast<double>(t.rcv_ooo_packets), ""),
                Num("srtt_max", t.srtt_max_ms, "ms"), Num("rttvar_max", t.rttvar_max_ms, "ms"),
                Text("worst_congestion_state", t.worst_ca_state)};
  if (sev != Severity::kOk) {
    f.advice =
        "Packets are lost between client and server: a retransmitted SYN costs 1 s, a lost "
        "request an RTO (>= 200 ms) before the first token. Find the hop with `mtr -n HOST` "
        "or `ping -c 200 HOST`; look at drop and error counters (`ip -s link`, `ethtool -S "
        "DEV`, `nstat -az TcpRetransSegs`) on both ends and on any firewall or VPN between.";
  }
  out.push_back(std::move(f));
}

// Where the route goes, said as an info finding so that the network layer's summary in diagnose
// carries it.
void Route(const NetFacts& nf, std::vector<Finding>& out) {
  const net::RouteFacts& r = nf.route;
  if (!r.checked) {
    if (r.skipped_reason.empty()) return;
    Finding f = Make("net.route", Severity::kSkip, "Route not checked: " + r.skipped_reason);
    out.push_back(std::move(f));
    return;
  }
  std::string how = r.local           ? fmt::format("on this host (dev {})", r.dev)
                    : r.gateway.empty() ? fmt::format("directly on the subnet of dev {}", r.dev)
                                        : fmt::format("via gateway {} (dev {})", r.gateway, r.dev);
  Finding f = Make("net.route", Severity::kInfo, fmt::format("Server {} reached {}", r.address, how));
  f.evidence = {Text("address", r.address), Text("dev", r.dev),
                Text("gateway", !r.gateway.empty() ? r.gateway
                                : r.local          ? "none (this host)"
                                                   : "none (same subnet)"),
                Text("source", r.src)};
  if (r.iface_mtu_bytes) f.evidence.push_back(Num("interface_mtu", *r.iface_mtu_bytes, "bytes"));
  if (nf.path.ran) f.evidence.push_back(Num("hops", static_cast<double>(nf.path.hops.size()), ""));
  out.push_back(std::move(f));
}

// A path MTU below the interface's: something on the way has a smaller MTU (a tunnel, a VPN, a
// VXLAN overlay) and says so (ICMP), or does not (a black hole: large packets vanish, and a
// stream whose segments fill the MSS stalls until TCP gives up on them).
void PathMtu(const NetFacts& nf, std::vector<Finding>& out) {
  const net::RouteFacts& r = nf.route;
  if (!r.checked || r.local) return;
  if (!r.path_mtu_bytes || !r.iface_mtu_bytes) {
    Finding f = Make("net.path_mtu", Severity::kSkip,
                     "Path MTU not measured" + (r.pmtu_note.empty() ? "" : ": " + r.pmtu_note));
    out.push_back(std::move(f));
    return;
  }
  const uint32_t path = *r.path_mtu_bytes, iface = *r.iface_mtu_bytes;
  Severity sev = Severity::kOk;
  std::string title;
  if (r.pmtu_black_hole) {
    sev = Severity::kFail;
    title = fmt::format("PMTU black hole: packets above {} bytes to {} vanish without ICMP "
                        "'fragmentation needed' (interface MTU {})",
                        path, r.address, iface);
  } else if (path < iface && nf.server_iface_mtu_bytes && path >= *nf.server_iface_mtu_bytes) {
    // The server's own interface is the narrow end: nothing on the way lowers it.
    title = fmt::format("Path MTU {} equals the server's interface MTU ({} {}), below the "
                        "client's {} (dev {}): the server's end sets it",
                        path, nf.server_iface, *nf.server_iface_mtu_bytes, iface, r.dev);
  } else if (path < iface && nf.server_iface_mtu_bytes) {
    sev = Severity::kWarn;
    title = fmt::format("Path MTU {} below both ends' interfaces (client {} dev {}, server {} {}): "
                        "a smaller MTU on the way to {}",
                        path, iface, r.dev, *nf.server_iface_mtu_bytes, nf.server_iface,
                        r.address);
  } else if (path < iface) {
    sev = Severity::kWarn;
    title = fmt::format("Path MTU {} below the interface's {} (dev {}): a smaller MTU on the way "
                        "to {}",
                        path, iface, r.dev, r.address);
  } else {
    title = fmt::format("Path MTU {} equals the interface's (dev {})", path, r.dev);
  }
  Finding f = Make("net.path_mtu", sev, std::move(title));
  f.evidence = {Num("path_mtu", path, "bytes"), Num("interface_mtu", iface, "bytes"),
                Text("dev", r.dev)};
  if (nf.server_iface_mtu_bytes) {
    f.evidence.push_back(Num("server_interface_mtu", *nf.server_iface_mtu_bytes, "bytes"));
    f.evidence.push_back(Text("server_dev", nf.server_iface));
  }
  if (r.cached_mtu_bytes) f.evidence.push_back(Num("kernel_cached_mtu", *r.cached_mtu_bytes, "bytes"));
  if (nf.probe.tcp.snd_mss_min_bytes)
    f.evidence.push_back(Num("tcp_mss", *nf.probe.tcp.snd_mss_min_bytes, "bytes"));
  if (!r.pmtu_note.empty()) f.evidence.push_back(Text("probe", r.pmtu_note));
  if (sev == Severity::kFail) {
    f.advice = fmt::format(
        "A device on the path drops packets above {0} bytes and does not send ICMP "
        "'fragmentation needed' (a firewall filtering ICMP, a tunnel): let ICMP type 3 code 4 "
        "through, or clamp TCP's MSS on the device (`iptables -t mangle -A FORWARD -p tcp "
        "--tcp-flags SYN,RST SYN -j TCPMSS --clamp-mss-to-pmtu`), or lower the MTU on the "
        "client (`ip link set dev {1} mtu {0}`); `sysctl net.ipv4.tcp_mtu_probing=1` lets TCP "
        "find it by itself.",
        path, r.dev);
  } else if (sev == Severity::kWarn) {
    f.advice = fmt::format(
        "Every full-size packet is fragmented or sent again smaller: set the MTU of {} to {} "
        "on the client, or clamp TCP's MSS on the tunnel's end, so packets fit the path.",
        r.dev, path);
  }
  out.push_back(std::move(f));
}

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
      f.title += fmt::format("; the server's own, from {}, is {} issued by {}",
                             nf.expected_cert_source, nf.expected_cert_subject,
                             nf.expected_cert_issuer);
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
      !ratio ? "" : *ratio < kTlsStreamWarnRatio
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
                Num("ttfb_plain_p50", plain.ttfb.p50_ms, "ms"), Num("ttfb_added", added, "ms"),
                Num("tls_handshake_p50", tls.tls.p50_ms, "ms"),
                Num("ttft_kept_alive_https_p50", tls.ttft_reused.p50_ms, "ms"),
                Num("ttft_kept_alive_plain_p50", plain.ttft_reused.p50_ms, "ms"),
                Num("stream_https", tls.bandwidth.stream_tokens_per_s, "tokens/s"),
                Num("stream_plain", plain.bandwidth.stream_tokens_per_s, "tokens/s"),
                Text("plain_url", plain.url)};
  if (sev != Severity::kOk) {
    f.advice = "Find what handles HTTPS differently: a TLS-inspecting firewall or proxy on the "
               "HTTPS path (see net.tls_inspection), or a TLS terminator short of CPU; exempt the "
               "server from inspection or terminate TLS closer to it.";
    if (tls.ttft_reused.p50_ms && *tls.ttft_reused.p50_ms > 0)
      f.latency_share = std::clamp(added / *tls.ttft_reused.p50_ms, 0.0, 1.0);
  }
  out.push_back(std::move(f));
}

// The bandwidth stream stopped coming part-way while the probe's small requests passed: large
// packets are lost on the path (a PMTU black hole, a middlebox dropping full-size segments).
void StreamStall(const NetFacts& nf, const ProbeFacts& p, std::vector<Finding>& out) {
  const net::BandwidthFacts& b = p.bandwidth;
  if (!b.stalled) return;
  const net::RouteFacts& r = nf.route;
  std::string why = "large packets are lost on the path (a PMTU black hole or a middlebox)";
  if (r.pmtu_black_hole && r.path_mtu_bytes)
    why = fmt::format("packets above the path MTU of {} bytes vanish (PMTU black hole)", *r.path_mtu_bytes);
  Finding f = Make(
      "net.stream_stall", Severity::kFail,
      fmt::format("The {}-token stream ({}-byte prompt) stalled after {:.0f} bytes of its answer "
                  "({:.0f} tokens): nothing more for {:.1f} s while the small requests passed; {}",
                  b.stream_tokens_requested, b.stream_prompt_bytes, b.stall_bytes.value_or(0),
                  b.stall_tokens.value_or(0), b.stall_quiet_ms.value_or(0) / 1e3, why));
  f.evidence = {Num("stream_tokens_requested", b.stream_tokens_requested, ""),
                Num("stream_prompt", b.stream_prompt_bytes, "B"),
                Num("bytes_before_stall", b.stall_bytes, "B"),
                Num("tokens_before_stall", b.stall_tokens, ""),
                Num("quiet", b.stall_quiet_ms, "ms"), Text("ended", b.stall_error),
                Text("url", p.url)};
  if (r.path_mtu_bytes) f.evidence.push_back(Num("path_mtu", *r.path_mtu_bytes, "bytes"));
  if (p.tcp.connections > 0) f.evidence.push_back(Num("tcp_retransmitted", p.tcp.retrans_segs, ""));
  f.advice = "Long responses will hang the same way: find the device that drops large packets "
             "(see net.path_mtu; `tracepath` to the server), let ICMP 'fragmentation needed' "
             "through or clamp TCP's MSS there, or lower the client's MTU to the path's.";
  out.push_back(std::move(f));
}

std::vector<Finding> EvaluateNetRules(const NetFacts& facts) {
  std::vector<Finding> out;
  const ProbeFacts& p = facts.probe;
  Loss(facts.probe, out);
  if (facts.compare_probe) {
    std::vector<Finding> b;
    Loss(*facts.compare_probe, b);
    for (auto& f : b) {
      if (f.severity == Severity::kOk) continue;
      f.title += " via " + facts.compare_probe->url;
      out.push_back(std::move(f));
    }
  }
  NoKeepalive(p, out);
  RoundTrip(p, out);
  GatewayDelay(facts, out);
  Jitter(p, out);
  IdleClose(facts.probe, out);
  Headroom(facts.probe, out);
  StreamStall(facts, facts.probe, out);
  Path(facts, out);
  Retransmits(facts.probe, out);
  Route(facts, out);
  PathMtu(facts, out);
  TlsInspection(facts, out);
  TlsOverhead(facts, out);
  if (facts.compare_probe) {
    std::vector<Finding> b;
    Retransmits(*facts.compare_probe, b);
    for (auto& f : b) {
      if (f.severity != Severity::kWarn && f.severity != Severity::kFail) continue;
      f.title += " via " + facts.compare_probe->url;
      out.push_back(std::move(f));
    }
  }
  return out;
}

namespace {

std::optional<double> ValueOf(const Finding& f, const std::string& name) {
  for (const auto& e : f.evidence)
    if (e.name == name) return e.value;
  return std::nullopt;
}

}  // namespace

void ScaleNetFindings(std::vector<Finding>& fs, const NetLoadContext& load) {
  const std::optional<double>& mean_e2el_ms = load.mean_e2el_ms;
  const bool load_kept_alive = load.kept_alive;
  for (auto& f : fs) {
    if (f.id == "net.no_keepalive" && load_kept_alive && f.severity >= Severity::kWarn) {
      // The load test kept connections alive, so this workload did not pay it: information
      // for clients that do not keep them alive, not a failure of this path.
      f.severity = Severity::kInfo;
      f.title += " (paid by clients that do not keep connections alive; this load test did)";
      f.latency_share.reset();
      continue;
    }
    if (!f.latency_share || !mean_e2el_ms || *mean_e2el_ms <= 0) continue;
    std::optional<double> ms;
    if (f.id == "net.no_keepalive") ms = ValueOf(f, "handshake_cost");
    else if (f.id == "net.round_trip") ms = ValueOf(f, "per_request_network");
    else if (f.id == "net.gateway_delay") {
      // The delay in the phase the rule judged it by (first byte, TTFT, TLS, ...). A load that
      // keeps connections alive pays what a gateway adds to a new connection (DNS, connect,
      // TLS, a new connection's TTFT) once per connection, not per request: per request it
      // pays the first byte and the kept-alive TTFT.
      std::string phase = "ttfb";
      for (const auto& e : f.evidence)
        if (e.name == "phase" && !e.text.empty()) phase = e.text;
      const bool per_connection =
          phase == "dns" || phase == "connect" || phase == "tls" || phase == "ttft_new";
      if (load_kept_alive && per_connection) {
        std::optional<double> a = ValueOf(f, "ttfb_p50_added");
        std::optional<double> b = ValueOf(f, "ttft_reused_p50_added");
        if (a || b) ms = std::max(a.value_or(0), b.value_or(0));
      } else {
        ms = ValueOf(f, phase + "_p50_added");
      }
    }
    // Jitter moves the tail, not the mean: no share of the mean to claim.
    f.latency_share = ms ? std::optional<double>(std::clamp(*ms / *mean_e2el_ms, 0.0, 1.0))
                         : std::nullopt;
  }
}

}  // namespace latdoc::rules
