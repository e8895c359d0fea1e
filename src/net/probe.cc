#include "net/probe.h"

#include <time.h>

#include <algorithm>
#include <memory>

#include <fmt/core.h>

#include "base/clock.h"
#include "http/client.h"
#include "http/event_loop.h"
#include "http/sse_decoder.h"
#include "http/openai_chunk.h"
#include "net/idle_close.h"

namespace latdoc::net {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// Collects one exchange: status, body bytes, and for SSE streams the first and last content
// chunk times and the token count (final usage when sent, else content chunks).
class Collector final : public http::ExchangeObserver {
 public:
  void OnHeaders(int status, std::string_view content_type, int64_t) override {
    status_ = status;
    sse_ = content_type.find("text/event-stream") != std::string_view::npos;
  }
  void OnBody(std::string_view data, int64_t now_ns) override {
    bytes_ += data.size();
    last_body_ns_ = now_ns;
    if (!sse_ || status_ != 200) return;
    (void)decoder_.Feed(data, [&](const http::SseEvent& ev) {
      http::ChunkInfo c = parser_.Parse(ev.data);
      if (c.usage_completion_tokens) usage_tokens_ = c.usage_completion_tokens;
      if (c.error && error_.empty()) error_ = c.error_message.empty() ? "error event" : c.error_message;
      if (!c.content) return;
      if (first_content_ns_ < 0) first_content_ns_ = now_ns;
      last_content_ns_ = now_ns;
      ++content_chunks_;
    });
  }
  void OnComplete(const http::ExchangeResult& r) override {
    result_ = r;
    complete_ = true;
  }

  bool complete() const { return complete_; }
  const http::ExchangeResult& result() const { return result_; }
  int64_t first_content_ns() const { return first_content_ns_; }
  int64_t last_content_ns() const { return last_content_ns_; }
  int64_t last_body_ns() const { return last_body_ns_; }  // -1: no body byte yet
  uint64_t bytes() const { return bytes_; }
  int64_t tokens() const { return usage_tokens_ ? *usage_tokens_ : content_chunks_; }
  const std::string& stream_error() const { return error_; }

 private:
  bool complete_ = false;
  bool sse_ = false;
  int status_ = 0;
  http::ExchangeResult result_;
  http::SseDecoder decoder_;
  http::ChunkParser parser_;
  uint64_t bytes_ = 0;
  int64_t first_content_ns_ = -1, last_content_ns_ = -1, last_body_ns_ = -1;
  int64_t content_chunks_ = 0;
  std::optional<int64_t> usage_tokens_;
  std::string error_;
};

struct Outcome {
  FailureReason failure = FailureReason::kNone;
  std::string error;
  int http_status = 0;  // the answer's status, when it was an HTTP error
};

std::string_view PendingPhase(const http::ExchangeTimes& t, bool tls) {
  if (t.reused) return t.headers_ns < 0 ? "waiting for the first byte" : "reading the body";
  if (t.dns_ns < 0) return "resolving the name";
  if (t.connect_ns < 0) return "connecting";
  if (tls && t.tls_ns < 0) return "in the TLS handshake";
  if (t.headers_ns < 0) return "waiting for the first byte";
  return "reading the body";
}

// Sends one request and runs the loop until it completes or the hard deadline passes (then the
// client is shut down, which completes the exchange at once).
Outcome RunExchange(http::EventLoop& loop, http::HttpClient& client, http::ClientRequest req,
                    Collector& c, int64_t timeout_ns) {
  client.Send(std::move(req), &c);
  // The client's own timeouts equal `timeout_ns`; this deadline catches what they do not
  // cover (a name lookup that hangs).
  const int64_t deadline = MonoNowNs() + timeout_ns + 250'000'000;
  bool cancelled = false;
  while (!c.complete()) {
    if (MonoNowNs() >= deadline) {
      cancelled = true;
      client.Shutdown();
      break;
    }
    loop.RunFor(5'000'000);
  }
  // Shutdown() completes the exchange synchronously; run queued handlers so nothing dangles.
  loop.RunFor(0);
  const http::ExchangeResult& r = c.result();
  Outcome o;
  if (cancelled) {
    o.failure = FailureReason::kTimeout;
    o.error = fmt::format("no answer within {:.1f} s ({})", static_cast<double>(timeout_ns) / 1e9,
                          PendingPhase(r.times, client.url().tls()));
    return o;
  }
  switch (r.failure) {
    case http::FailureKind::kNone:
      if (r.status != 200) {
        o.failure = FailureReason::kHttpStatus;
        o.http_status = r.status;
        o.error = fmt::format("HTTP {}", r.status);
      } else if (!c.stream_error().empty()) {
        o.failure = FailureReason::kHttpStatus;
        o.error = "error in the stream: " + c.stream_error();
      }
      return o;
    case http::FailureKind::kConnect:
      if (r.error.rfind("resolve", 0) == 0) o.failure = FailureReason::kDns;
      else if (r.error.find("TLS handshake") != std::string::npos) o.failure = FailureReason::kTls;
      else if (r.error.find("refused") != std::string::npos) o.failure = FailureReason::kRefused;
      else o.failure = FailureReason::kConnect;
      break;
    case http::FailureKind::kTimeout: o.failure = FailureReason::kTimeout; break;
    case http::FailureKind::kReset: o.failure = FailureReason::kReset; break;
    case http::FailureKind::kProtocol: o.failure = FailureReason::kProtocol; break;
  }
  o.error = r.error;
  return o;
}

// `prompt_bytes` > 5: "Hello" followed by " hello" words up to about that many bytes.
std::string CompletionBody(const ProbeOptions& o, int max_tokens, int prompt_bytes = 0) {
  std::string model = o.model.empty() ? "" : fmt::format("\"model\":\"{}\",", o.model);
  std::string prompt = "Hello";
  while (static_cast<int>(prompt.size()) + 6 <= prompt_bytes) prompt += " hello";
  return fmt::format(
      "{{{}\"prompt\":\"{}\",\"max_tokens\":{},\"stream\":true,\"ignore_eos\":true,"
      "\"stream_options\":{{\"include_usage\":true}}}}",
      model, prompt, max_tokens);
}

http::ClientRequest Completion(const ProbeOptions& o, int max_tokens, int prompt_bytes = 0) {
  http::ClientRequest r;
  r.method = "POST";
  r.target = "/v1/completions";
  r.body = CompletionBody(o, max_tokens, prompt_bytes);
  r.headers = {{"Content-Type", "application/json"}};
  if (!o.api_key.empty()) r.headers.emplace_back("Authorization", "Bearer " + o.api_key);
  return r;
}

// A server started with --api-key (vLLM) refuses /v1 without it: /v1/models as the cheap path.
http::ClientRequest Get(const ProbeOptions& o, const std::string& path) {
  http::ClientRequest r;
  r.method = "GET";
  r.target = path;
  if (!o.api_key.empty()) r.headers.emplace_back("Authorization", "Bearer " + o.api_key);
  return r;
}

void Record(ProbeSample& s, const Outcome& o, const char* phase) {
  s.failure = o.failure;
  s.failed_phase = phase;
  s.error = o.error;
  s.http_status = o.http_status;
}

// What the steps of RunProbe share: the options, the loop with its two clients, and the facts.
// TCP facts: a new connection's snapshot is its whole life (it closes after one exchange); the
// kept-alive connection's counters grow, so only its last snapshot counts, once, when it is
// replaced or at the end.
struct ProbeSession {
  const ProbeOptions& options;
  http::EventLoop& loop;
  http::HttpClient& fresh;  // a new connection per request
  http::HttpClient& kept;   // one kept-alive connection
  ProbeFacts& p;
  const int64_t timeout;
  std::optional<http::TcpConnInfo> kept_tcp;

  void OnFresh(ProbeSample& s, const Collector& c) {
    if (p.tls_chain.empty()) {
      for (const http::PeerCert& pc : c.result().peer_certs)
        p.tls_chain.push_back({pc.subject, pc.issuer, pc.sha256_hex});
    }
    if (!c.result().tcp) return;
    AddConnection(s.tcp, *c.result().tcp);
    AddConnection(p.tcp, *c.result().tcp);
  }
  void OnKept(const Collector& c) {
    if (!c.result().times.reused && kept_tcp) AddConnection(p.tcp, *kept_tcp);  // a new one
    if (c.result().tcp) kept_tcp = c.result().tcp;
  }
};

// 1. The cheap request on a new connection: name lookup, connect, TLS and first byte.
Outcome CheapRequest(ProbeSession& ps, int i, ProbeSample& s) {
  ProbeFacts& p = ps.p;
  auto cheap = std::make_unique<Collector>();
  Outcome o = RunExchange(ps.loop, ps.fresh, Get(ps.options, p.cheap_path), *cheap, ps.timeout);
  if (i == 0 && o.failure == FailureReason::kHttpStatus && cheap->result().status == 404 &&
      p.cheap_path == "/health") {
    p.cheap_path = "/v1/models";  // servers without /health (some gateways)
    ps.OnFresh(s, *cheap);
    cheap = std::make_unique<Collector>();
    o = RunExchange(ps.loop, ps.fresh, Get(ps.options, p.cheap_path), *cheap, ps.timeout);
  }
  ps.OnFresh(s, *cheap);
  const http::ExchangeTimes& t = cheap->result().times;
  if (t.dns_ns >= 0) s.dns_ms = Ms(t.dns_ns - t.start_ns);
  if (t.connect_ns >= 0 && t.dns_ns >= 0) s.connect_ms = Ms(t.connect_ns - t.dns_ns);
  if (t.tls_ns >= 0 && t.connect_ns >= 0) s.tls_ms = Ms(t.tls_ns - t.connect_ns);
  if (o.failure != FailureReason::kNone) return o;
  // Both stamps are CLOCK_MONOTONIC: sent_ns just before the send() of the request's last
  // byte, headers_ns the kernel's arrival stamp of the answer (http/client.h). The answer
  // cannot arrive before the request was written; a stamp that says so came across a clock
  // step, and that sample has no ttfb rather than a made-up 0.
  if (t.headers_ns >= 0 && t.sent_ns >= 0) {
    if (t.headers_ns > t.sent_ns)
      s.ttfb_ms = Ms(t.headers_ns - t.sent_ns);
    else
      ++p.ttfb_unordered;
  }
  return o;
}

// 2. TTFT of a one-token completion on a new connection.
Outcome NewConnectionTtft(ProbeSession& ps, ProbeSample& s) {
  Collector fresh_ttft;
  Outcome o = RunExchange(ps.loop, ps.fresh, Completion(ps.options, 1), fresh_ttft, ps.timeout);
  ps.OnFresh(s, fresh_ttft);
  if (o.failure == FailureReason::kNone && fresh_ttft.first_content_ns() < 0) {
    o = {FailureReason::kProtocol, "the stream carried no token"};
  }
  if (o.failure != FailureReason::kNone) return o;
  s.ttft_new_ms = Ms(fresh_ttft.first_content_ns() - fresh_ttft.result().times.start_ns);
  return o;
}

// 3. The same on the kept-alive connection. The first one opens it and is not counted
// (times.reused is false), so no extra warm-up request is needed.
Outcome KeptAliveTtft(ProbeSession& ps, ProbeSample& s) {
  Collector reused;
  Outcome o = RunExchange(ps.loop, ps.kept, Completion(ps.options, 1), reused, ps.timeout);
  ps.OnKept(reused);
  if (o.failure == FailureReason::kNone && reused.first_content_ns() < 0) {
    o = {FailureReason::kProtocol, "the stream carried no token"};
  }
  if (o.failure != FailureReason::kNone) return o;
  if (reused.result().times.reused) {
    s.ttft_reused_ms = Ms(reused.first_content_ns() - reused.result().times.start_ns);
    ++ps.p.keepalive.reused_count;
  }
  return o;
}

// One sample: its three exchanges, up to the first that fails (recorded with its phase).
ProbeSample RunSample(ProbeSession& ps, int i) {
  ProbeSample s;
  s.index = i;
  Outcome o = CheapRequest(ps, i, s);
  if (o.failure != FailureReason::kNone) {
    Record(s, o, "cheap");
    return s;
  }
  o = NewConnectionTtft(ps, s);
  if (o.failure != FailureReason::kNone) {
    Record(s, o, "ttft_new");
    return s;
  }
  o = KeptAliveTtft(ps, s);
  if (o.failure != FailureReason::kNone) Record(s, o, "ttft_reused");
  return s;
}

// The bandwidth stream, on the kept-alive connection: its rate, or where it stalled.
void RunBandwidthStream(ProbeSession& ps) {
  const ProbeOptions& options = ps.options;
  ProbeFacts& p = ps.p;
  const int64_t timeout = ps.timeout;
  Collector stream;
  const int64_t stream_start_ns = MonoNowNs();
  Outcome o = RunExchange(ps.loop, ps.kept,
                          Completion(options, options.stream_tokens, options.stream_prompt_bytes),
                          stream, timeout);
  const int64_t stream_end_ns = MonoNowNs();
  ps.OnKept(stream);
  p.bandwidth.stream_tokens_requested = options.stream_tokens;
  p.bandwidth.stream_prompt_bytes = options.stream_prompt_bytes;
  // A stream that stopped coming while the small requests above passed: nothing for
  // kStreamStallMinNs before the timeout (or a reset) ended it. A stream still flowing when the
  // timeout came is slow, not stalled.
  const int64_t quiet_ns =
      stream_end_ns - (stream.last_body_ns() >= 0 ? stream.last_body_ns() : stream_start_ns);
  if (o.failure != FailureReason::kNone && o.failure != FailureReason::kHttpStatus &&
      quiet_ns >= std::min<int64_t>(kStreamStallMinNs, timeout / 2)) {
    BandwidthFacts& b = p.bandwidth;
    b.stalled = true;
    b.stall_bytes = static_cast<double>(stream.bytes());
    b.stall_tokens = static_cast<double>(stream.tokens());
    b.stall_quiet_ms = static_cast<double>(quiet_ns) / 1e6;
    b.stall_error = o.error;
  }
  if (o.failure == FailureReason::kNone && stream.tokens() > 0) {
    BandwidthFacts& b = p.bandwidth;
    b.stream_bytes = static_cast<double>(stream.bytes());
    b.stream_tokens = static_cast<double>(stream.tokens());
    b.bytes_per_token = *b.stream_bytes / *b.stream_tokens;
    int64_t span_ns = stream.last_content_ns() - stream.first_content_ns();
    if (stream.tokens() > 1 && span_ns > 0)
      b.stream_tokens_per_s =
          static_cast<double>(stream.tokens() - 1) / (static_cast<double>(span_ns) / 1e9);
  }
}

}  // namespace

void ComputeHeadroom(BandwidthFacts& b) {
  b.required_mbps.reset();
  b.headroom.reset();
  std::optional<double> rate = b.peak_tokens_per_s ? b.peak_tokens_per_s : b.stream_tokens_per_s;
  b.rate_source = b.peak_tokens_per_s ? "given" : (rate ? "one stream observed" : "");
  if (b.bytes_per_token && rate) b.required_mbps = *b.bytes_per_token * 8 * *rate / 1e6;
  if (b.required_mbps && b.link_mbps && *b.required_mbps > 0)
    b.headroom = *b.link_mbps / *b.required_mbps;
}

StatusOr<ProbeFacts> RunProbe(const ProbeOptions& options) {
  ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(options.url));
  if (options.samples < 1) return InvalidArgument("--samples must be at least 1");
  if (options.sample_timeout_ns <= 0) return InvalidArgument("the sample timeout must be positive");
  if (options.cheap_path.empty() || options.cheap_path.front() != '/')
    return InvalidArgument(
        fmt::format("--cheap-path '{}' must start with '/' (e.g. /health)", options.cheap_path));
  const int64_t t0 = MonoNowNs();
  http::EventLoop loop;
  http::ClientOptions co;
  co.insecure = options.insecure;
  co.connect_timeout_ns = options.sample_timeout_ns;
  co.first_byte_timeout_ns = options.sample_timeout_ns;
  co.idle_timeout_ns = options.sample_timeout_ns;
  co.capture_tcp_info = true;
  co.capture_peer_certs = true;
  http::ClientOptions fresh_opts = co;
  fresh_opts.keep_alive = false;
  http::HttpClient fresh(loop, url, fresh_opts);  // a new connection per request
  http::HttpClient kept(loop, url, co);           // one kept-alive connection

  ProbeFacts p;
  p.url = options.url;
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
    p.clock_resolution_ns = int64_t{res.tv_sec} * 1'000'000'000 + res.tv_nsec;
  p.cheap_path = options.cheap_path;
  const int64_t timeout = options.sample_timeout_ns;
  ProbeSession ps{options, loop, fresh, kept, p, timeout, std::nullopt};
  for (int i = 0; i < options.samples; ++i) p.samples.push_back(RunSample(ps, i));

  bool any_ok = false;
  for (const auto& s : p.samples) any_ok = any_ok || s.failure == FailureReason::kNone;
  if (any_ok && options.stream_tokens > 0) RunBandwidthStream(ps);
  if (ps.kept_tcp) AddConnection(p.tcp, *ps.kept_tcp);
  fresh.Shutdown();
  kept.Shutdown();
  loop.RunFor(0);

  if (options.idle_wait_ns <= 0) {
    p.idle.skipped_reason = "not requested";
  } else if (!any_ok) {
    p.idle.skipped_reason = "no sample succeeded";
  } else {
    p.idle = CheckIdleClose(url, p.cheap_path, options.idle_wait_ns, timeout);
  }
  SummarizeProbe(p);
  ComputeHeadroom(p.bandwidth);
  p.wall_s = static_cast<double>(MonoNowNs() - t0) / 1e9;
  return p;
}

}  // namespace latdoc::net
