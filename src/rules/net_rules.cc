// The network rules of the probe's timings (net_rules.h): keep-alive, gateway delay, jitter,
// loss, idle close, headroom and round trip; EvaluateNetRules calls them with the path and TLS
// rules (net_rules_internal.h) in the order of the report, and ScaleNetFindings.
#include "rules/net_rules.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include "rules/net_rules_internal.h"

namespace latdoc::rules {
namespace net_rules_internal {

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

}  // namespace net_rules_internal

namespace {

using net::NetFacts;
using net::PhaseStats;
using net::ProbeFacts;
using namespace net_rules_internal;

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

// The phases B adds to (or saves in) over A: the verdict, the phase named and the one with the
// largest difference. REQUIRES: `known` not empty, each with p50_diff_ms.
struct GatewayVerdict {
  Severity sev;
  bool faster;                  // B adds nothing that matters and saves more somewhere
  double add;                   // the most B adds, ms
  const net::PhaseDiff* named;  // the phase the title names
  const net::PhaseDiff* top;    // the phase with the largest difference in the same direction
};

GatewayVerdict JudgeGatewayPhases(const std::vector<const net::PhaseDiff*>& known) {
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
  return {sev, faster, add, named, top};
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
  const auto [sev, faster, add, named, top] = JudgeGatewayPhases(known);
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

// What to do about the failures `l` counts, by the first kind that occurred (`http_status`: of
// the first HTTP error answer).
std::string LossAdvice(const net::LossCounts& l, int http_status) {
  if (l.dns > 0) {
    return "Check the name: `getent hosts NAME` on the client; fix the URL or DNS.";
  } else if (l.refused > 0) {
    return "Nothing listens there: check the server is up and bound to that address "
           "(vLLM `--host 0.0.0.0 --port PORT`) and that the URL's port matches.";
  } else if (l.tls > 0) {
    return "Fix the certificate (expired, self-signed or wrong name), or pass --insecure to "
           "measure anyway; clients must trust the server's CA.";
  } else if (l.timeout > 0) {
    return "Something accepts but does not answer: a hung proxy, a full listen backlog or a "
           "firewall dropping packets; compare with --compare against the server directly.";
  } else if (l.http_status > 0) {
    switch (net::ClassifyHttpError(http_status)) {
      case net::HttpErrorCause::kCredentials:
        return fmt::format(
            "The server refused the request's credentials (HTTP {}): give the API key in "
            "$OPENAI_API_KEY, or name the variable that holds it with --api-key-env (sent as a "
            "Bearer token; vLLM checks it against its --api-key).",
            http_status);
      case net::HttpErrorCause::kOverload:
        return "The server or a gateway shed load (HTTP 429): it is rate-limited or "
               "overloaded. Measure again at a quieter time or with a higher limit, and look "
               "at the gateway's rate-limit settings and the server's queue (`latdoc logs`).";
      case net::HttpErrorCause::kServer:
        return fmt::format(
            "The server or a gateway failed the request (HTTP {}): look at their logs at the "
            "failure times (`latdoc logs`): an engine error or restart, out of memory, or a "
            "gateway with no healthy upstream (502, 503, 504).",
            http_status);
      case net::HttpErrorCause::kRequest:
        return "The server answered with an HTTP error: check the model name (--model; GET "
               "/v1/models lists the server's), the cheap request's path (--cheap-path) and the "
               "URL's path prefix; the body of the error says more (`curl -i URL/v1/models`).";
    }
    return std::string();
  } else {
    return "Look at the server's and the gateway's logs at the failure times "
           "(`latdoc logs`), and retry with more --samples.";
  }
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
  f.advice = LossAdvice(l, http_status);
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
