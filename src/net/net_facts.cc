#include "net/net_facts.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "stats/sample_summary.h"

namespace latdoc::net {

HttpErrorCause ClassifyHttpError(int status) {
  if (status == 401 || status == 403) return HttpErrorCause::kCredentials;
  if (status == 429) return HttpErrorCause::kOverload;
  if (status >= 500) return HttpErrorCause::kServer;
  return HttpErrorCause::kRequest;
}

std::string_view FailureReasonName(FailureReason r) {
  switch (r) {
    case FailureReason::kNone: return "none";
    case FailureReason::kDns: return "dns";
    case FailureReason::kRefused: return "refused";
    case FailureReason::kConnect: return "connect";
    case FailureReason::kTls: return "tls";
    case FailureReason::kTimeout: return "timeout";
    case FailureReason::kReset: return "reset";
    case FailureReason::kHttpStatus: return "http_status";
    case FailureReason::kProtocol: return "protocol";
  }
  return "?";
}

PhaseStats SummarizePhase(const std::vector<double>& values_ms) {
  PhaseStats s;
  auto sum = stats::Summarize(values_ms);
  if (!sum) return s;
  std::vector<double> sorted = values_ms;
  std::sort(sorted.begin(), sorted.end());
  s.count = sum->count;
  s.p50_ms = stats::PercentileOfSorted(sorted, 50);
  s.p99_ms = sum->p99;
  s.mean_ms = sum->mean;
  s.stddev_ms = sum->std;
  s.min_ms = sum->min;
  s.max_ms = sum->max;
  s.jitter_ms = *s.p99_ms - *s.p50_ms;
  return s;
}

namespace {

template <typename F>
PhaseStats Phase(const std::vector<ProbeSample>& samples, F get) {
  std::vector<double> v;
  for (const auto& s : samples)
    if (auto x = get(s)) v.push_back(*x);
  return SummarizePhase(v);
}

}  // namespace

void SummarizeProbe(ProbeFacts& p) {
  p.dns = Phase(p.samples, [](const ProbeSample& s) { return s.dns_ms; });
  p.connect = Phase(p.samples, [](const ProbeSample& s) { return s.connect_ms; });
  p.tls = Phase(p.samples, [](const ProbeSample& s) { return s.tls_ms; });
  p.ttfb = Phase(p.samples, [](const ProbeSample& s) { return s.ttfb_ms; });
  p.ttft_new = Phase(p.samples, [](const ProbeSample& s) { return s.ttft_new_ms; });
  p.ttft_reused = Phase(p.samples, [](const ProbeSample& s) { return s.ttft_reused_ms; });

  LossCounts& l = p.loss;
  l = LossCounts{};
  l.samples = static_cast<int>(p.samples.size());
  for (const auto& s : p.samples) {
    if (s.failure == FailureReason::kNone) continue;
    ++l.failed;
    switch (s.failure) {
      case FailureReason::kDns: ++l.dns; break;
      case FailureReason::kRefused: ++l.refused; break;
      case FailureReason::kConnect: ++l.connect; break;
      case FailureReason::kTls: ++l.tls; break;
      case FailureReason::kTimeout: ++l.timeout; break;
      case FailureReason::kReset: ++l.reset; break;
      case FailureReason::kHttpStatus: ++l.http_status; break;
      case FailureReason::kProtocol: ++l.protocol; break;
      case FailureReason::kNone: break;
    }
  }

  KeepAliveFacts& k = p.keepalive;
  k.ttft_new_p50_ms = p.ttft_new.p50_ms;
  k.ttft_reused_p50_ms = p.ttft_reused.p50_ms;
  k.handshake_cost_ms.reset();
  k.share_of_ttft.reset();
  if (k.ttft_new_p50_ms && k.ttft_reused_p50_ms) {
    k.handshake_cost_ms = *k.ttft_new_p50_ms - *k.ttft_reused_p50_ms;
    if (*k.ttft_new_p50_ms > 0) k.share_of_ttft = *k.handshake_cost_ms / *k.ttft_new_p50_ms;
  }
}

CompareFacts ComparePhases(const ProbeFacts& a, const ProbeFacts& b) {
  CompareFacts c;
  c.url_a = a.url;
  c.url_b = b.url;
  // Plain http has no TLS phase: it costs 0 there, so http vs https attributes the handshake.
  auto no_tls = [](const ProbeFacts& p) {
    return p.url.rfind("http://", 0) == 0 && p.loss.failed < p.loss.samples;
  };
  auto add = [&](const char* name, const PhaseStats& pa, const PhaseStats& pb) {
    PhaseDiff d;
    d.phase = name;
    d.p50_a_ms = pa.p50_ms;
    d.p50_b_ms = pb.p50_ms;
    std::optional<double> jitter_a = pa.jitter_ms, jitter_b = pb.jitter_ms;
    if (d.phase == "tls") {
      if (!d.p50_a_ms && no_tls(a)) d.p50_a_ms = jitter_a = 0.0;
      if (!d.p50_b_ms && no_tls(b)) d.p50_b_ms = jitter_b = 0.0;
    }
    if (d.p50_a_ms && d.p50_b_ms) d.p50_diff_ms = *d.p50_b_ms - *d.p50_a_ms;
    if (jitter_a && jitter_b) d.jitter_diff_ms = *jitter_b - *jitter_a;
    c.phases.push_back(std::move(d));
  };
  add("dns", a.dns, b.dns);
  add("connect", a.connect, b.connect);
  add("tls", a.tls, b.tls);
  add("ttfb", a.ttfb, b.ttfb);
  add("ttft_new", a.ttft_new, b.ttft_new);
  add("ttft_reused", a.ttft_reused, b.ttft_reused);
  return c;
}

namespace {

nlohmann::json Opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::optional<std::string> NormalizeSha256Hex(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ':' || c == ' ') continue;
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    out += c;
  }
  if (out.size() != 64) return std::nullopt;
  return out;
}

nlohmann::json ToJson(const TcpFacts& t) {
  auto u = [](const std::optional<uint32_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  if (t.connections == 0) return {{"connections", 0}};
  return {{"connections", t.connections},
          {"segs_out", t.segs_out},
          {"retrans_segs", t.retrans_segs},
          {"retrans_share", Opt(t.retrans_share)},
          {"rcv_ooo_packets", t.rcv_ooo_packets},
          {"srtt_min_ms", Opt(t.srtt_min_ms)},
          {"srtt_max_ms", Opt(t.srtt_max_ms)},
          {"rttvar_max_ms", Opt(t.rttvar_max_ms)},
          {"pmtu_min_bytes", u(t.pmtu_min_bytes)},
          {"ip_mtu_min_bytes", u(t.ip_mtu_min_bytes)},
          {"snd_mss_min_bytes", u(t.snd_mss_min_bytes)},
          {"advmss_bytes", u(t.advmss_bytes)},
          {"reordering_max", u(t.reordering_max)},
          {"worst_ca_state", t.worst_ca_state}};
}

nlohmann::json ToJson(const PhaseStats& s) {
  return {{"count", s.count},         {"p50_ms", Opt(s.p50_ms)},   {"p99_ms", Opt(s.p99_ms)},
          {"jitter_ms", Opt(s.jitter_ms)}, {"mean_ms", Opt(s.mean_ms)},
          {"stddev_ms", Opt(s.stddev_ms)}, {"min_ms", Opt(s.min_ms)}, {"max_ms", Opt(s.max_ms)}};
}

nlohmann::json ToJson(const ProbeSample& s) {
  nlohmann::json j = {{"index", s.index},
                      {"ok", s.failure == FailureReason::kNone},
                      {"dns_ms", Opt(s.dns_ms)},
                      {"connect_ms", Opt(s.connect_ms)},
                      {"tls_ms", Opt(s.tls_ms)},
                      {"ttfb_ms", Opt(s.ttfb_ms)},
                      {"ttft_new_ms", Opt(s.ttft_new_ms)},
                      {"ttft_reused_ms", Opt(s.ttft_reused_ms)},
                      {"tcp", ToJson(s.tcp)}};
  if (s.failure != FailureReason::kNone) {
    j["failure"] = FailureReasonName(s.failure);
    j["failed_phase"] = s.failed_phase;
    j["error"] = s.error;
    if (s.http_status != 0) j["http_status"] = s.http_status;
  }
  return j;
}

nlohmann::json ToJson(const ProbeFacts& p) {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : p.samples) samples.push_back(ToJson(s));
  nlohmann::json chain = nlohmann::json::array();
  for (const auto& c : p.tls_chain)
    chain.push_back({{"subject", c.subject}, {"issuer", c.issuer}, {"sha256", c.sha256_hex}});
  const LossCounts& l = p.loss;
  const KeepAliveFacts& k = p.keepalive;
  const IdleCloseFacts& i = p.idle;
  const BandwidthFacts& b = p.bandwidth;
  return {
      {"url", p.url},
      {"cheap_path", p.cheap_path},
      {"wall_s", p.wall_s},
      {"ttfb_clock",
       {{"definition", kTtfbDefinition},
        {"resolution_ns", p.clock_resolution_ns > 0 ? nlohmann::json(p.clock_resolution_ns)
                                                    : nlohmann::json(nullptr)},
        {"samples_out_of_order", p.ttfb_unordered}}},
      {"phases",
       {{"dns", ToJson(p.dns)},
        {"connect", ToJson(p.connect)},
        {"tls", ToJson(p.tls)},
        {"ttfb", ToJson(p.ttfb)},
        {"ttft_new", ToJson(p.ttft_new)},
        {"ttft_reused", ToJson(p.ttft_reused)}}},
      {"loss",
       {{"samples", l.samples}, {"failed", l.failed}, {"dns", l.dns}, {"refused", l.refused},
        {"connect", l.connect}, {"tls", l.tls}, {"timeout", l.timeout}, {"reset", l.reset},
        {"http_status", l.http_status}, {"protocol", l.protocol}}},
      {"keepalive",
       {{"ttft_new_p50_ms", Opt(k.ttft_new_p50_ms)},
        {"ttft_reused_p50_ms", Opt(k.ttft_reused_p50_ms)},
        {"handshake_cost_ms", Opt(k.handshake_cost_ms)},
        {"share_of_ttft", Opt(k.share_of_ttft)},
        {"reused_count", k.reused_count}}},
      {"idle_close",
       {{"checked", i.checked},
        {"skipped_reason", i.skipped_reason},
        {"closed", i.closed},
        {"closed_after_s", Opt(i.closed_after_s)},
        {"waited_s", i.waited_s}}},
      {"bandwidth",
       {{"stream_bytes", Opt(b.stream_bytes)},
        {"stream_tokens", Opt(b.stream_tokens)},
        {"bytes_per_token", Opt(b.bytes_per_token)},
        {"stream_tokens_per_s", Opt(b.stream_tokens_per_s)},
        {"peak_tokens_per_s", Opt(b.peak_tokens_per_s)},
        {"rate_source", b.rate_source},
        {"required_mbps", Opt(b.required_mbps)},
        {"link_mbps", Opt(b.link_mbps)},
        {"link_source", b.link_source},
        {"link_note", b.link_note},
        {"headroom", Opt(b.headroom)},
        {"stream_tokens_requested", b.stream_tokens_requested},
        {"stream_prompt_bytes", b.stream_prompt_bytes},
        {"stalled", b.stalled},
        {"stall_bytes", Opt(b.stall_bytes)},
        {"stall_tokens", Opt(b.stall_tokens)},
        {"stall_quiet_ms", Opt(b.stall_quiet_ms)},
        {"stall_error", b.stall_error}}},
      {"tcp", ToJson(p.tcp)},
      {"tls_chain", chain},
      {"samples", samples},
  };
}

nlohmann::json ToJson(const CompareFacts& c) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& d : c.phases) {
    phases.push_back({{"phase", d.phase},
                      {"p50_a_ms", Opt(d.p50_a_ms)},
                      {"p50_b_ms", Opt(d.p50_b_ms)},
                      {"p50_diff_ms", Opt(d.p50_diff_ms)},
                      {"jitter_diff_ms", Opt(d.jitter_diff_ms)}});
  }
  return {{"url_a", c.url_a}, {"url_b", c.url_b}, {"phases", phases}};
}

nlohmann::json ToJson(const PathFacts& p) {
  nlohmann::json hops = nlohmann::json::array();
  for (const auto& h : p.hops)
    hops.push_back({{"hop", h.hop}, {"address", h.address}, {"rtt_ms", Opt(h.rtt_ms)}});
  return {{"ran", p.ran},
          {"tool", p.tool},
          {"skipped_reason", p.skipped_reason},
          {"hops", hops},
          {"jump_hop", p.jump_hop ? nlohmann::json(*p.jump_hop) : nlohmann::json(nullptr)},
          {"jump_ms", Opt(p.jump_ms)}};
}

nlohmann::json ToJson(const RouteFacts& r) {
  auto u = [](const std::optional<uint32_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"checked", r.checked},
          {"skipped_reason", r.skipped_reason},
          {"address", r.address},
          {"dev", r.dev},
          {"gateway", r.gateway.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gateway)},
          {"direct", r.checked && r.gateway.empty()},
          {"src", r.src},
          {"local", r.local},
          {"iface_mtu_bytes", u(r.iface_mtu_bytes)},
          {"cached_mtu_bytes", u(r.cached_mtu_bytes)},
          {"path_mtu_bytes", u(r.path_mtu_bytes)},
          {"pmtu_frag_needed_seen", r.pmtu_frag_needed_seen},
          {"pmtu_black_hole", r.pmtu_black_hole},
          {"pmtu_note", r.pmtu_note}};
}

nlohmann::json ToJson(const NetFacts& f) {
  nlohmann::json j = {{"probe", ToJson(f.probe)}, {"path", ToJson(f.path)},
                      {"route", ToJson(f.route)}};
  j["compare_probe"] = f.compare_probe ? ToJson(*f.compare_probe) : nlohmann::json(nullptr);
  j["compare"] = f.compare ? ToJson(*f.compare) : nlohmann::json(nullptr);
  j["expected_cert_sha256"] =
      f.expected_cert_sha256.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.expected_cert_sha256);
  j["plain_probe"] = f.plain_probe ? ToJson(*f.plain_probe) : nlohmann::json(nullptr);
  if (!f.expected_cert_source.empty()) {
    j["expected_cert_source"] = f.expected_cert_source;
    j["expected_cert_subject"] = f.expected_cert_subject;
    j["expected_cert_issuer"] = f.expected_cert_issuer;
  }
  if (f.server_iface_mtu_bytes) {
    j["server_iface_mtu_bytes"] = *f.server_iface_mtu_bytes;
    j["server_iface"] = f.server_iface;
  }
  return j;
}

}  // namespace latdoc::net
