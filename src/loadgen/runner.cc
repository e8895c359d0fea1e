#include "loadgen/runner.h"

#include <sys/resource.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "http/sse_decoder.h"

namespace latdoc::loadgen {

std::string RequestBody(const BenchOptions& o, const std::string& model, const Prompt& p) {
  nlohmann::ordered_json j;
  j["model"] = model;
  if (o.endpoint == Endpoint::kChat) {
    j["messages"] = nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", p.text.empty() ? std::string("hello") : p.text}}});
    j["max_completion_tokens"] = p.output_tokens;
  } else {
    if (!p.token_ids.empty()) j["prompt"] = p.token_ids;
    else j["prompt"] = p.text;
    j["max_tokens"] = p.output_tokens;
  }
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  return JsonText(j);
}

namespace {

// Bounds that keep times within the int64 nanosecond clock: a run of at most 1e6 s (11.6
// days), an arrival gap of at most 1e7 s.
constexpr double kMaxDurationS = 1e6;
constexpr double kMaxArrivalGapS = 1e7;

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

class Runner;

// One request in flight: decodes its SSE stream into its record.
class Flight final : public http::ExchangeObserver {
 public:
  Flight(Runner* runner, RequestRecord* rec, ChunkParser* parser)
      : runner_(runner), rec_(rec), parser_(parser), acct_(rec) {}

  void OnHeaders(int status, std::string_view content_type, int64_t now) override {
    rec_->http_status = status;
    rec_->headers_ns = now;
    if (status != 200) {
      rec_->outcome = Outcome::kHttpStatus;
    } else if (ToLower(content_type).find("text/event-stream") == std::string::npos) {  // any case
      rec_->outcome = Outcome::kProtocol;
      rec_->error = fmt::format("expected text/event-stream, got '{}'", content_type);
    }
  }

  void OnBody(std::string_view data, int64_t now) override {
    if (rec_->outcome != Outcome::kPending) {
      if (snippet_.size() < 300) snippet_.append(data.substr(0, 300 - snippet_.size()));
      return;
    }
    Status st = sse_.Feed(data, [&](const http::SseEvent& ev) {
      acct_.OnPayload(parser_->Parse(ev.data), now);
    });
    if (!st.ok() && rec_->outcome == Outcome::kPending) {
      rec_->outcome = Outcome::kStreamError;
      rec_->error = st.message();
    }
  }

  void OnComplete(const http::ExchangeResult& r) override;

 private:
  Runner* runner_;
  RequestRecord* rec_;
  ChunkParser* parser_;
  StreamAccountant acct_;
  http::SseDecoder sse_;
  std::string snippet_;
};

class Runner {
 public:
  Runner(const BenchOptions& o, http::EventLoop& loop, http::HttpClient& client)
      : o_(o), loop_(loop), client_(client), dispatch_timer_(loop), stop_timer_(loop),
        scrape_timer_(loop), progress_timer_(loop), drain_timer_(loop), rng_(o.seed ^ 0x5bd1e995),
        prompt_next_(o.first_prompt) {}

  // A connection's later snapshot supersedes its earlier one (the counters are its totals).
  void OnTcp(uint64_t connection_id, const http::TcpConnInfo& t) { tcp_last_[connection_id] = t; }

  void Finished(Flight* f, RequestRecord* rec) {
    --in_flight_;
    ++done_;
    if (rec->outcome != Outcome::kOk) ++failed_;
    flights_.erase(f);
    // Stopping (Ctrl-C, SIGTERM) sends nothing more, warm-up included.
    if (stopping_) {
      if (in_flight_ == 0) Finish();
      return;
    }
    if (phase_ == Phase::kWarmup) {
      if (in_flight_ == 0 && sent_ >= uint64_t(o_.warmup)) StartMeasured();
      else if (sent_ < uint64_t(o_.warmup)) Dispatch(true);
      return;
    }
    if (!open_loop()) {
      if (MoreToSend()) Dispatch(false);
      else if (in_flight_ == 0) Finish();
    } else {
      if (!queue_.empty()) SendQueued();
      if (!MoreToSend() && queue_.empty() && in_flight_ == 0) Finish();
    }
  }

  BenchRun Run(std::string model) {
    run_.model = std::move(model);
    // The first signal stops sending and lets the streams in flight finish (up to the drain
    // timeout); a second one cancels them at once. Either way the run is returned, partial.
    loop_.OnTerminationSignal([this](int sig) {
      if (!stopping_) Stop(sig);
      else StopNow();
    });
    if (o_.progress) ArmProgress();
    if (o_.warmup > 0) {
      phase_ = Phase::kWarmup;
      int c = open_loop() ? std::max(1, o_.max_concurrency) : o_.concurrency;
      for (int i = 0; i < c && sent_ < uint64_t(o_.warmup); ++i) Dispatch(true);
    } else {
      StartMeasured();
    }
    loop_.Run();
    run_.end_ns = run_.end_ns ? run_.end_ns : MonoNowNs();
    for (RequestRecord& r : records_) {
      if (r.warmup) continue;
      r.index = run_.records.size();
      run_.records.push_back(std::move(r));
    }
    run_.client_cpu_s = CpuSeconds() - cpu0_;
    run_.connections_opened = client_.connections_opened() - connections0_;
    for (const auto& [id, t] : tcp_last_) http::AddConnection(run_.tcp, t);
    if (o_.progress) fmt::print(stderr, "\r\x1b[K");
    return std::move(run_);
  }

  http::EventLoop& loop() { return loop_; }

 private:
  enum class Phase { kWarmup, kMeasured, kDone };
  bool open_loop() const { return o_.request_rate > 0; }

  bool MoreToSend() const {
    if (stopping_) return false;
    uint64_t measured_sent = sent_ - run_.warmup_requests;
    if (o_.num_requests > 0 && measured_sent >= uint64_t(o_.num_requests)) return false;
    if (o_.duration_s > 0 && MonoNowNs() >= run_.start_ns + SecToNs(o_.duration_s)) return false;
    return true;
  }

  void StartMeasured() {
    run_.warmup_requests = sent_;
    phase_ = Phase::kMeasured;
    // The client's cost and connections count from here: the warm-up's are not the run's.
    cpu0_ = CpuSeconds();
    connections0_ = client_.connections_opened();
    auto begin = [this] {
      run_.start_ns = MonoNowNs();
      if (o_.duration_s > 0) {
        stop_timer_.ExpireAfterNs(SecToNs(o_.duration_s), [this] {
          if (!open_loop() && in_flight_ == 0) Finish();
          if (open_loop() && in_flight_ == 0 && queue_.empty()) Finish();
        });
      }
      if (open_loop()) {
        next_due_ns_ = run_.start_ns;
        ScheduleNext();
      } else {
        for (int i = 0; i < o_.concurrency && MoreToSend(); ++i) Dispatch(false);
        if (in_flight_ == 0) Finish();
      }
      if (o_.scrape_metrics && run_.metrics_available) ArmScrape();
    };
    if (o_.scrape_metrics) {
      Scrape([this, begin](bool ok) {
        run_.metrics_available = ok;
        begin();
      }, &run_.before);
    } else {
      begin();
    }
  }

  // Open loop: the next arrival is due at next_due_ns_ (gamma inter-arrival times).
  void ScheduleNext() {
    if (!MoreToSend()) {
      if (in_flight_ == 0 && queue_.empty()) Finish();
      return;
    }
    // An arrival due after --duration is not sent; the stop timer, or the last request to
    // finish, ends the run.
    if (o_.duration_s > 0 && next_due_ns_ >= run_.start_ns + SecToNs(o_.duration_s)) return;
    dispatch_timer_.ExpireAtNs(next_due_ns_, [this] {
      int64_t due = next_due_ns_;
      Arrive(due);
      // An infinite rate sends every request at once (vLLM's default); a gap is capped so that
      // a tiny rate (or a gamma draw far in its tail) cannot overflow the clock.
      double gap_s = 0;
      if (std::isfinite(o_.request_rate)) {
        const double shape = o_.burstiness;
        gap_s = std::gamma_distribution<double>(shape, 1.0 / (o_.request_rate * shape))(rng_);
      }
      next_due_ns_ = due + SecToNs(std::min(gap_s, kMaxArrivalGapS));
      ScheduleNext();
    });
  }

  // An arrival always becomes a record: sent now, or queued for a concurrency slot.
  void Arrive(int64_t due) {
    ++sent_;
    RequestRecord* rec = NewRecord(false, due);
    if (o_.max_concurrency > 0 && in_flight_ >= o_.max_concurrency) {
      queue_.push_back(rec->index);
      return;
    }
    Send(rec);
  }

  void SendQueued() {
    while (!queue_.empty() && (o_.max_concurrency == 0 || in_flight_ < o_.max_concurrency)) {
      size_t idx = queue_.front();
      queue_.pop_front();
      Send(&records_[idx]);
    }
  }

  RequestRecord* NewRecord(bool warmup, int64_t scheduled) {
    records_.emplace_back();  // a deque: pointers to earlier records stay valid
    RequestRecord* rec = &records_.back();
    rec->index = records_.size() - 1;
    rec->warmup = warmup;
    rec->scheduled_ns = scheduled;
    return rec;
  }

  void Dispatch(bool warmup) {
    ++sent_;
    RequestRecord* rec = NewRecord(warmup, MonoNowNs());
    Send(rec);
  }

  void Send(RequestRecord* rec) {
    const Prompt& p = o_.prompts[prompt_next_++ % o_.prompts.size()];
    rec->prompt_tokens = p.input_tokens;
    rec->requested_output_tokens = p.output_tokens;
    rec->chunks.reserve(size_t(std::clamp(p.output_tokens, 1, 4096)));  // one allocation
    rec->sent_ns = MonoNowNs();
    http::ClientRequest req;
    req.method = "POST";
    req.target = o_.endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
    req.body = RequestBody(o_, run_.model, p);
    req.headers.emplace_back("Content-Type", "application/json");
    req.headers.emplace_back("x-request-id", fmt::format("latdoc-bench-{}", rec->index));
    if (!o_.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + o_.api_key);
    auto f = std::make_unique<Flight>(this, rec, &parser_);
    Flight* raw = f.get();
    flights_.emplace(raw, std::move(f));
    ++in_flight_;
    run_.max_in_flight = std::max(run_.max_in_flight, in_flight_);
    client_.Send(std::move(req), raw);
  }

  void Finish() {
    if (phase_ == Phase::kDone) return;
    phase_ = Phase::kDone;
    run_.end_ns = MonoNowNs();
    // Stopped during the warm-up: the measured phase never began and lasted nothing.
    if (run_.start_ns == 0) run_.start_ns = run_.end_ns;
    dispatch_timer_.Cancel();
    stop_timer_.Cancel();
    scrape_timer_.Cancel();
    if (o_.scrape_metrics && run_.metrics_available) {
      Scrape([this](bool) { loop_.Stop(); }, &run_.after);
    } else {
      loop_.Stop();
    }
  }

  // A signal (SIGINT, SIGTERM) stops the run; after its end (during the last /metrics scrape)
  // it changes nothing: the run is whole.
  void Stop(int sig) {
    if (stopping_ || phase_ == Phase::kDone) return;
    const std::string why = fmt::format("interrupted by {}", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stopping_ = true;
    run_.partial = true;
    run_.partial_reason = why;
    run_.stop_signal = sig;
    dispatch_timer_.Cancel();
    stop_timer_.Cancel();
    // Requests queued on the client side were never sent: they end as cancelled.
    while (!queue_.empty()) {
      RequestRecord& r = records_[queue_.front()];
      queue_.pop_front();
      r.outcome = Outcome::kCancelled;
      r.error = "never sent: " + why;
      r.end_ns = MonoNowNs();
    }
    if (in_flight_ == 0) {
      Finish();
      return;
    }
    if (!o_.command.empty()) {
      // On the line of the progress display, when there is one; that line is redrawn below.
      fmt::print(stderr, "{}latdoc {}: stopping: draining {} in-flight stream{} (up to {:g} s); "
                 "Ctrl-C again to stop now\n", o_.progress ? "\r\x1b[K" : "", o_.command,
                 in_flight_, in_flight_ == 1 ? "" : "s", NsToSec(o_.drain_timeout_ns));
    }
    drain_timer_.ExpireAfterNs(o_.drain_timeout_ns, [this] { client_.Shutdown(); });
    // Finished() calls Finish() when the last flight ends.
  }

  // A second signal while draining: the streams in flight are cancelled now (each ends as
  // `cancelled`, keeping the tokens it got), and the run ends.
  void StopNow() {
    if (phase_ == Phase::kDone || in_flight_ == 0) return;
    if (!o_.command.empty()) {
      fmt::print(stderr, "{}latdoc {}: stopping now: cancelling {} stream{}\n",
                 o_.progress ? "\r\x1b[K" : "", o_.command, in_flight_, in_flight_ == 1 ? "" : "s");
    }
    drain_timer_.Cancel();
    client_.Shutdown();
  }

  void Scrape(std::function<void(bool)> done, servermetrics::ServerSnapshot* into) {
    if (!metrics_client_) {
      auto url = http::ParseUrl(o_.metrics_url.empty() ? o_.url : o_.metrics_url);
      if (!url.ok()) {
        run_.metrics_error = url.status().message();
        done(false);
        return;
      }
      // --metrics-url may name the endpoint itself (http://host:port/metrics).
      if (!o_.metrics_url.empty() && url->base_path.size() >= 8 &&
          url->base_path.compare(url->base_path.size() - 8, 8, "/metrics") == 0) {
        url->base_path.resize(url->base_path.size() - 8);
      }
      http::ClientOptions co = o_.client;
      co.first_byte_timeout_ns = 5 * kNsPerSec;
      co.idle_timeout_ns = 5 * kNsPerSec;
      metrics_client_ = std::make_unique<http::HttpClient>(loop_, *url, co);
    }
    http::FetchAll(*metrics_client_, {"GET", "/metrics", "", {}},
                   [this, done, into](const http::ExchangeResult& r, std::string body) {
                     if (r.failure != http::FailureKind::kNone || r.status != 200) {
                       run_.metrics_error = r.failure != http::FailureKind::kNone
                                                ? r.error
                                                : fmt::format("{} answered HTTP {}",
                                                              metrics_client_->url().Spec("/metrics"), r.status);
                       done(false);
                       return;
                     }
                     ServerSample s;
                     *into = servermetrics::SnapshotFromText(body, run_.model);
                     s.t_ns = MonoNowNs();
                     s.running = into->requests_running;
                     s.waiting = into->requests_waiting;
                     s.kv_cache_usage = into->kv_cache_usage_fraction;
                     s.preemptions_total = into->preemptions_total;
                     run_.timeline.push_back(s);
                     done(!into->server.empty());
                   });
  }

  void ArmScrape() {
    scrape_timer_.ExpireAfterNs(SecToNs(o_.scrape_interval_s), [this] {
      if (phase_ != Phase::kMeasured) return;
      Scrape([this](bool) { ArmScrape(); }, &scratch_);
    });
  }

  void ArmProgress() {
    progress_timer_.ExpireAfterNs(kNsPerSec / 2, [this] {
      double secs = run_.start_ns ? NsToSec(MonoNowNs() - run_.start_ns) : 0;
      fmt::print(stderr, "\r\x1b[K[latdoc bench] {} done, {} failed, {} in flight{}{}",
                 done_, failed_, in_flight_,
                 secs > 0 ? fmt::format(", {:.1f} req/s", double(done_) / secs) : "",
                 stopping_ ? "; stopping (Ctrl-C again to stop now)" : "");
      ArmProgress();
    });
  }

  friend class Flight;
  const BenchOptions& o_;
  http::EventLoop& loop_;
  http::HttpClient& client_;
  http::EventLoop::Timer dispatch_timer_, stop_timer_, scrape_timer_, progress_timer_, drain_timer_;
  std::mt19937_64 rng_;
  ChunkParser parser_;
  BenchRun run_;
  servermetrics::ServerSnapshot scratch_;
  std::unordered_map<Flight*, std::unique_ptr<Flight>> flights_;
  std::deque<RequestRecord> records_;  // every request of the run, warm-up included
  std::deque<size_t> queue_;      // open loop: arrivals waiting for a concurrency slot
  Phase phase_ = Phase::kMeasured;
  uint64_t sent_ = 0, done_ = 0, failed_ = 0;
  int in_flight_ = 0;
  size_t prompt_next_ = 0;
  int64_t next_due_ns_ = 0;
  bool stopping_ = false;
  double cpu0_ = 0;
  uint64_t connections0_ = 0;
  std::map<uint64_t, http::TcpConnInfo> tcp_last_;  // by connection id
  // Last, so destroyed first: shutting it down completes a scrape in flight, whose handler
  // writes run_ and re-arms scrape_timer_, which must still be there.
  std::unique_ptr<http::HttpClient> metrics_client_;
};

void Flight::OnComplete(const http::ExchangeResult& r) {
  int64_t now = r.times.end_ns > 0 ? r.times.end_ns : MonoNowNs();
  rec_->connect_ns = r.times.connect_ns;
  rec_->tls_ns = r.times.tls_ns;
  rec_->reused_connection = r.times.reused;
  if (r.tcp) runner_->OnTcp(r.connection_id, *r.tcp);
  if (rec_->outcome == Outcome::kPending && r.failure != http::FailureKind::kNone) {
    switch (r.failure) {
      case http::FailureKind::kConnect: rec_->outcome = Outcome::kConnect; break;
      case http::FailureKind::kTimeout: rec_->outcome = Outcome::kTimeout; break;
      case http::FailureKind::kProtocol: rec_->outcome = Outcome::kProtocol; break;
      default:
        rec_->outcome = r.status ? Outcome::kCutShort : Outcome::kReset;
        if (r.error == "cancelled") rec_->outcome = Outcome::kCancelled;
        break;
    }
    rec_->error = r.error;
  }
  if (rec_->outcome == Outcome::kHttpStatus) {
    rec_->error = fmt::format("HTTP {}: {}", r.status, snippet_);
  }
  acct_.Finish(r.body_complete, now);
  RequestRecord* rec = rec_;
  runner_->Finished(this, rec);  // deletes this
}

}  // namespace

StatusOr<BenchRun> RunBench(const BenchOptions& o, BenchRun* unreachable_run) {
  if (o.prompts.empty()) return InvalidArgument("no prompts to send");
  if (std::isnan(o.request_rate) || o.request_rate < 0)
    return InvalidArgument("--request-rate must be a number above 0 (or inf)");
  if (o.request_rate <= 0 && o.concurrency < 1)
    return InvalidArgument("--concurrency must be at least 1");
  if (!std::isfinite(o.burstiness) || o.burstiness <= 0)
    return InvalidArgument("--burstiness must be a finite number above 0");
  if (o.max_concurrency < 0) return InvalidArgument("--max-concurrency must not be negative (0: no cap)");
  if (!(o.duration_s >= 0 && o.duration_s <= kMaxDurationS))
    return InvalidArgument(fmt::format("--duration must be between 0 and {:g} seconds", kMaxDurationS));
  if (o.scrape_metrics && !(o.scrape_interval_s >= 0.001 && o.scrape_interval_s <= 3600))
    return InvalidArgument("--scrape-interval must be between 0.001 and 3600 seconds");
  if (o.num_requests <= 0 && o.duration_s <= 0)
    return InvalidArgument("give --num-requests or --duration");
  ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(o.url));
  http::RaiseFileLimit();
  http::EventLoop loop;
  // TCP_INFO as each request ends (two system calls a request, none per read): the load's
  // retransmits and RTT.
  http::ClientOptions load_client = o.client;
  load_client.capture_tcp_info = true;
  http::HttpClient client(loop, url, load_client);

  // The model: given, or the first one the server lists.
  std::string model = o.model;
  std::string owned_by;  // names the server on some (servermetrics/server_dialect.h)
  if (model.empty()) {
    Status st;
    http::ClientRequest req{"GET", "/v1/models", "", {}};
    if (!o.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + o.api_key);
    http::FetchAll(client, req, [&](const http::ExchangeResult& r, std::string body) {
      loop.Stop();
      if (r.failure != http::FailureKind::kNone) {
        st = Unavailable(fmt::format("{}: {}", url.Origin(), r.error));
        return;
      }
      if (r.status == 401 || r.status == 403) {
        // Reached, but refused: the key, not the network (a caller that tells the two apart
        // does not call the server unreachable).
        st = PermissionDenied(fmt::format("{} answered HTTP {}: check the API key "
                                          "(--api-key-env)", url.Spec("/v1/models"), r.status));
        return;
      }
      if (r.status != 200) {
        st = Unavailable(fmt::format("{} answered HTTP {}{}", url.Spec("/v1/models"), r.status,
                                     r.status == 404 && !url.base_path.empty()
                                         ? fmt::format(" (is {} part of the server's routes? latdoc adds "
                                                       "/v1/... after it)", url.base_path)
                                         : ""));
        return;
      }
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
          !j["data"][0].contains("id") || !j["data"][0]["id"].is_string()) {
        st = InvalidArgument(fmt::format(
            "{}: not an OpenAI model list (give --model)", url.Spec("/v1/models")));
        return;
      }
      model = j["data"][0]["id"].get<std::string>();
      if (j["data"][0].contains("owned_by") && j["data"][0]["owned_by"].is_string())
        owned_by = j["data"][0]["owned_by"].get<std::string>();
    });
    loop.Run();
    RETURN_IF_ERROR(st);
  }
  Runner runner(o, loop, client);
  BenchRun run = runner.Run(model);
  run.owned_by = owned_by;
  // A target that could not be reached at all is not a benchmark result.
  bool any_connected = false;
  for (const auto& r : run.records)
    if (r.outcome != Outcome::kConnect) any_connected = true;
  if (!run.records.empty() && !any_connected) {
    Status st = Unavailable(fmt::format("{}: {}", url.Origin(), run.records.front().error));
    if (unreachable_run) *unreachable_run = std::move(run);
    return st;
  }
  return run;
}

}  // namespace latdoc::loadgen
