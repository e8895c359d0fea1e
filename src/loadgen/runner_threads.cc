// The load threads of RunBench (loadgen/runner.h): one Worker per event-loop thread, one
// Flight per request in flight, and the Coordinator on the calling thread. runner.cc checks the
// options, finds the model and the thread count, then calls RunLoadThreads().
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <csignal>
#include <thread>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/strings.h"
#include "http/sse_decoder.h"
#include "loadgen/runner.h"
#include "loadgen/runner_internal.h"

namespace latdoc::loadgen {
namespace {

// A bound that keeps times within the int64 nanosecond clock: an arrival gap of at most 1e7 s.
constexpr double kMaxArrivalGapS = 1e7;


double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU time of the calling thread.
int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

class Worker;
class Coordinator;

// One request in flight: decodes its SSE stream into its record.
class Flight final : public http::ExchangeObserver {
 public:
  Flight(Worker* worker, RequestRecord* rec, ChunkParser* parser, uint64_t* events)
      : worker_(worker), rec_(rec), parser_(parser), events_(events), acct_(rec) {}

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
      ++*events_;
      acct_.OnPayload(parser_->Parse(ev.data), now);
    });
    if (!st.ok() && rec_->outcome == Outcome::kPending) {
      rec_->outcome = Outcome::kStreamError;
      rec_->error = st.message();
    }
  }

  void OnComplete(const http::ExchangeResult& r) override;

 private:
  Worker* worker_;
  RequestRecord* rec_;
  ChunkParser* parser_;
  uint64_t* events_;
  StreamAccountant acct_;
  http::SseDecoder sse_;
  std::string snippet_;
};

// A worker's counts for the coordinator's progress line and stop message: written by the
// worker only, read by the coordinator (relaxed: figures for display, never for results).
struct WorkerCounters {
  std::atomic<uint64_t> done{0}, failed{0};
  std::atomic<int> in_flight{0};
};

// One load thread: its own event loop, HTTP client, parser and records. Everything here runs on
// the worker's thread, except the constructor, the destructor and the read of the results,
// which the coordinator does before the thread starts or after it has been joined. The
// coordinator drives it by posting StartWarmup(), Begin(), Stop() and StopNow(); it answers by
// posting OnWarmupDone() (at most once) and OnWorkerDone() (exactly once) to the coordinator.
class Worker {
 public:
  Worker(const BenchOptions& o, int thread, int threads, const http::Url& url,
         const std::string& model, Coordinator* coord)
      : o_(o), thread_(thread), threads_(threads), model_(model), coord_(coord),
        client_(loop_, url, LoadClientOptions(o)), dispatch_timer_(loop_), stop_timer_(loop_),
        drain_timer_(loop_), rng_(o.seed ^ 0x5bd1e995) {
    const bool open = o.request_rate > 0;
    concurrency_ = int(DealtCount(uint64_t(open ? std::max(0, o.max_concurrency) : o.concurrency),
                                  threads, thread));
    num_requests_ = DealtCount(uint64_t(std::max(0, o.num_requests)), threads, thread);
    // The warm-up runs closed loop at the run's concurrency (open loop: its cap, at least 1),
    // dealt to the threads that have a warm-up stream.
    const int streams = open ? std::max(1, o.max_concurrency) : o.concurrency;
    warmup_threads_ = std::min(streams, threads);
    warmup_streams_ = int(DealtCount(uint64_t(streams), threads, thread));
    warmup_ = thread < warmup_threads_
                  ? DealtCount(uint64_t(std::max(0, o.warmup)), warmup_threads_, thread) : 0;
  }

  http::EventLoop& loop() { return loop_; }
  WorkerCounters& counters() { return counters_; }

  // Sends this thread's share of the warm-up, then says so.
  void StartWarmup() {
    phase_ = Phase::kWarmup;
    for (int i = 0; i < warmup_streams_ && warmup_sent_ < warmup_; ++i) DispatchWarmup();
    if (in_flight_ == 0) WarmupDone();
  }

  // The measured phase begins at `start_ns` (the same instant for every thread).
  void Begin(int64_t start_ns) {
    if (stopping_ || phase_ == Phase::kDone) return;
    phase_ = Phase::kMeasured;
    start_ns_ = start_ns;
    cpu0_ns_ = ThreadCpuNs();
    wall0_ns_ = MonoNowNs();
    events0_ = events_;
    reads0_ = client_.reads();
    late0_ = client_.late_reads();
    connections0_ = client_.connections_opened();
    if (o_.duration_s > 0) {
      stop_timer_.ExpireAtNs(start_ns_ + SecToNs(o_.duration_s), [this] {
        if (in_flight_ == 0 && queue_.empty()) Done();
      });
    }
    if (open_loop()) {
      next_due_ns_ = start_ns_;
      ScheduleNext();
    } else {
      for (int i = 0; i < concurrency_ && MoreToSend(); ++i) DispatchMeasured();
      if (in_flight_ == 0) Done();
    }
  }

  // A signal: send nothing more; the streams in flight get the drain timeout.
  void Stop(const std::string& why) {
    if (stopping_ || phase_ == Phase::kDone) return;
    stopping_ = true;
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
      Done();
      return;
    }
    drain_timer_.ExpireAfterNs(o_.drain_timeout_ns, [this] { client_.Shutdown(); });
  }

  // A second signal: the streams in flight are cancelled now.
  void StopNow() {
    if (phase_ == Phase::kDone || in_flight_ == 0) return;
    drain_timer_.Cancel();
    client_.Shutdown();
  }

  // A connection's later snapshot supersedes its earlier one (the counters are its totals).
  void OnTcp(uint64_t connection_id, const http::TcpConnInfo& t) { tcp_last_[connection_id] = t; }

  void Finished(Flight* f, RequestRecord* rec) {
    --in_flight_;
    counters_.in_flight.store(in_flight_, std::memory_order_relaxed);
    counters_.done.fetch_add(1, std::memory_order_relaxed);
    if (rec->outcome != Outcome::kOk) counters_.failed.fetch_add(1, std::memory_order_relaxed);
    flights_.erase(f);
    if (stopping_) {
      if (in_flight_ == 0) Done();
      return;
    }
    if (phase_ == Phase::kWarmup) {
      if (warmup_sent_ < warmup_) DispatchWarmup();
      else if (in_flight_ == 0) WarmupDone();
      return;
    }
    if (!open_loop()) {
      if (MoreToSend()) DispatchMeasured();
      else if (in_flight_ == 0) Done();
    } else {
      if (!queue_.empty()) SendQueued();
      if (!MoreToSend() && queue_.empty() && in_flight_ == 0) Done();
    }
  }

  // The thread's part of the run; call after the thread has been joined. Records keep their
  // number in the whole run as `index`.
  BenchRun TakeRun() {
    BenchRun part;
    part.start_ns = start_ns_;
    part.end_ns = done_ns_;
    for (RequestRecord& r : records_)
      if (!r.warmup) part.records.push_back(std::move(r));
    part.warmup_requests = warmup_sent_;
    part.max_in_flight = max_in_flight_;
    part.connections_opened = phase_ == Phase::kIdle ? 0 : client_.connections_opened() - connections0_;
    for (const auto& [id, t] : tcp_last_) http::AddConnection(part.tcp, t);
    part.thread_load.push_back(load_);
    return part;
  }
  const std::map<uint64_t, http::TcpConnInfo>& tcp_last() const { return tcp_last_; }

 private:
  enum class Phase { kIdle, kWarmup, kMeasured, kDone };
  bool open_loop() const { return o_.request_rate > 0; }

  static http::ClientOptions LoadClientOptions(const BenchOptions& o) {
    // TCP_INFO as each request ends (two system calls a request, none per read): the load's
    // retransmits and RTT.
    http::ClientOptions c = o.client;
    c.capture_tcp_info = true;
    return c;
  }

  bool MoreToSend() const {
    if (stopping_) return false;
    if (open_loop()) {
      if (o_.num_requests > 0 && next_k_ >= uint64_t(o_.num_requests)) return false;
    } else if (o_.num_requests > 0 && measured_sent_ >= num_requests_) {
      return false;
    }
    if (o_.duration_s > 0 && MonoNowNs() >= start_ns_ + SecToNs(o_.duration_s)) return false;
    return true;
  }

  void WarmupDone();
  void Done();

  // Open loop: the run's one schedule of arrivals, arrival k due at next_due_ns_ when next_k_
  // is k (gamma inter-arrival times drawn in order from the seed). Every thread draws every
  // gap, so each sees the same schedule, and takes the arrivals k with k % threads == thread.
  void AdvanceSchedule() {
    if (!o_.arrival_offsets_ns.empty()) {  // a replayed trace: its own times
      ++next_k_;
      next_due_ns_ = start_ns_ + o_.arrival_offsets_ns[std::min<size_t>(size_t(next_k_), o_.arrival_offsets_ns.size() - 1)];
      return;
    }
    // An infinite rate sends every request at once (vLLM's default); a gap is capped so that a
    // tiny rate (or a gamma draw far in its tail) cannot overflow the clock.
    double gap_s = 0;
    if (std::isfinite(o_.request_rate)) {
      const double shape = o_.burstiness;
      gap_s = std::gamma_distribution<double>(shape, 1.0 / (o_.request_rate * shape))(rng_);
    }
    next_due_ns_ += SecToNs(std::min(gap_s, kMaxArrivalGapS));
    ++next_k_;
  }

  void ScheduleNext() {
    while (next_k_ % uint64_t(threads_) != uint64_t(thread_)) AdvanceSchedule();
    if (!MoreToSend()) {
      if (in_flight_ == 0 && queue_.empty()) Done();
      return;
    }
    // An arrival due after --duration is not sent; the stop timer, or the last request to
    // finish, ends the thread's part.
    if (o_.duration_s > 0 && next_due_ns_ >= start_ns_ + SecToNs(o_.duration_s)) return;
    dispatch_timer_.ExpireAtNs(next_due_ns_, [this] {
      Arrive(next_due_ns_, next_k_);
      AdvanceSchedule();
      ScheduleNext();
    });
  }

  // An arrival always becomes a record: sent now, or queued for a concurrency slot.
  void Arrive(int64_t due, uint64_t k) {
    RequestRecord* rec = NewRecord(false, due, uint64_t(std::max(0, o_.warmup)) + k);
    if (o_.max_concurrency > 0 && in_flight_ >= concurrency_) {
      queue_.push_back(records_.size() - 1);
      return;
    }
    Send(rec);
  }

  void SendQueued() {
    while (!queue_.empty() && in_flight_ < concurrency_) {
      size_t pos = queue_.front();
      queue_.pop_front();
      Send(&records_[pos]);
    }
  }

  RequestRecord* NewRecord(bool warmup, int64_t scheduled, uint64_t number) {
    records_.emplace_back();  // a deque: pointers to earlier records stay valid
    RequestRecord* rec = &records_.back();
    rec->index = number;
    rec->warmup = warmup;
    rec->scheduled_ns = scheduled;
    return rec;
  }

  // The j-th request of this thread (warm-up, or the measured closed loop) is the run's
  // request j * threads + thread of its phase.
  void DispatchWarmup() {
    uint64_t number = warmup_sent_++ * uint64_t(warmup_threads_) + uint64_t(thread_);
    Send(NewRecord(true, MonoNowNs(), number));
  }
  void DispatchMeasured() {
    uint64_t number = uint64_t(std::max(0, o_.warmup)) +
                      measured_sent_++ * uint64_t(threads_) + uint64_t(thread_);
    Send(NewRecord(false, MonoNowNs(), number));
  }

  void Send(RequestRecord* rec) {
    // Prompts cycle in the order of the run's request numbers, whatever thread sends them.
    const Prompt& p = o_.prompts[(o_.first_prompt + rec->index) % o_.prompts.size()];
    rec->prompt_tokens = p.input_tokens;
    rec->requested_output_tokens = p.output_tokens;
    rec->chunks.reserve(size_t(std::clamp(p.output_tokens, 1, 4096)));  // one allocation
    rec->sent_ns = MonoNowNs();
    http::ClientRequest req;
    req.method = "POST";
    req.target = o_.endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
    req.body = RequestBody(o_, model_, p);
    req.headers.emplace_back("Content-Type", "application/json");
    req.headers.emplace_back("x-request-id", fmt::format("latdoc-bench-{}", rec->index));
    if (!o_.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + o_.api_key);
    auto f = std::make_unique<Flight>(this, rec, &parser_, &events_);
    Flight* raw = f.get();
    flights_.emplace(raw, std::move(f));
    ++in_flight_;
    counters_.in_flight.store(in_flight_, std::memory_order_relaxed);
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    client_.Send(std::move(req), raw);
  }

  const BenchOptions& o_;
  const int thread_, threads_;
  const std::string model_;
  Coordinator* const coord_;
  int concurrency_ = 0;         // closed loop: streams; open loop: the --max-concurrency share
  uint64_t num_requests_ = 0;   // closed loop: this thread's share of --num-requests
  uint64_t warmup_ = 0;         // this thread's share of --warmup
  int warmup_threads_ = 1;      // threads with a warm-up stream (they are the first ones)
  int warmup_streams_ = 0;      // this thread's warm-up streams
  http::EventLoop loop_;
  http::HttpClient client_;
  http::EventLoop::Timer dispatch_timer_, stop_timer_, drain_timer_;
  std::mt19937_64 rng_;
  ChunkParser parser_;
  WorkerCounters counters_;
  std::unordered_map<Flight*, std::unique_ptr<Flight>> flights_;
  std::deque<RequestRecord> records_;  // every request of this thread, warm-up included
  std::deque<size_t> queue_;           // open loop: arrivals (positions in records_) waiting
  Phase phase_ = Phase::kIdle;
  bool stopping_ = false;
  uint64_t warmup_sent_ = 0, measured_sent_ = 0;
  int in_flight_ = 0, max_in_flight_ = 0;
  uint64_t next_k_ = 0;                // open loop: the next arrival of the schedule
  int64_t next_due_ns_ = 0;
  int64_t start_ns_ = 0, done_ns_ = 0;
  int64_t cpu0_ns_ = 0, wall0_ns_ = 0;
  uint64_t events_ = 0, events0_ = 0, reads0_ = 0, late0_ = 0, connections0_ = 0;
  ThreadLoad load_;
  std::map<uint64_t, http::TcpConnInfo> tcp_last_;  // by connection id
};

// The calling thread's part: starts the workers, scrapes /metrics, answers signals, draws the
// progress line, and merges the workers' runs once all are done.
class Coordinator {
 public:
  Coordinator(const BenchOptions& o, http::EventLoop& loop, const http::Url& url, int threads)
      : o_(o), loop_(loop), url_(url), threads_(threads), scrape_timer_(loop),
        progress_timer_(loop) {}

  BenchRun Run(std::string model) {
    run_.model = std::move(model);
    for (int i = 0; i < threads_; ++i)
      workers_.push_back(std::make_unique<Worker>(o_, i, threads_, url_, run_.model, this));
    for (auto& w : workers_) threads_run_.emplace_back([w = w.get()] { w->loop().Run(); });
    // The first signal stops sending and lets the streams in flight finish (up to the drain
    // timeout); a second one cancels them at once. Either way the run is returned, partial.
    loop_.OnTerminationSignal([this](int sig) {
      if (!stopping_) Stop(sig);
      else StopNow();
    });
    if (o_.progress) ArmProgress();
    if (o_.warmup > 0) {
      for (auto& w : workers_) w->loop().Post([w = w.get()] { w->StartWarmup(); });
    } else {
      StartMeasured();
    }
    loop_.Run();
    for (auto& w : workers_) w->loop().Stop();
    for (auto& t : threads_run_) t.join();
    // The threads are joined: their records and counts are ours to read.
    std::vector<BenchRun> parts;
    for (auto& w : workers_) parts.push_back(w->TakeRun());
    BenchRun merged = MergeThreadRuns(std::move(parts));
    merged.tcp = {};
    for (auto& w : workers_)
      for (const auto& [id, t] : w->tcp_last()) http::AddConnection(merged.tcp, t);
    run_.records = std::move(merged.records);
    run_.warmup_requests = merged.warmup_requests;
    run_.max_in_flight = merged.max_in_flight;
    run_.connections_opened = merged.connections_opened;
    run_.tcp = merged.tcp;
    run_.thread_load = std::move(merged.thread_load);
    if (run_.start_ns == 0) run_.start_ns = end_ns_;
    run_.end_ns = end_ns_ ? end_ns_ : MonoNowNs();
    run_.client_cpu_s = began_ ? CpuSeconds() - cpu0_ : 0;
    workers_.clear();  // their clients close their connections
    if (o_.progress) fmt::print(stderr, "\r\x1b[K");
    return std::move(run_);
  }

  http::EventLoop& loop() { return loop_; }

  // Posted by workers (run on the coordinator's loop).
  void OnWarmupDone() {
    if (++warmed_ == threads_ && !stopping_) StartMeasured();
  }
  void OnWorkerDone(int64_t done_ns) {
    end_ns_ = std::max(end_ns_, done_ns);
    if (++done_ == threads_) Finish();
  }

 private:
  void StartMeasured() {
    if (measured_) return;
    measured_ = true;
    auto begin = [this] {
      if (stopping_) return;  // a signal came during the first scrape
      // The client's cost counts from here: the warm-up's is not the run's.
      cpu0_ = CpuSeconds();
      began_ = true;
      run_.start_ns = MonoNowNs();
      for (auto& w : workers_)
        w->loop().Post([w = w.get(), start = run_.start_ns] { w->Begin(start); });
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

  void Finish() {
    if (finished_) return;
    finished_ = true;
    scrape_timer_.Cancel();
    if (o_.scrape_metrics && run_.metrics_available) {
      Scrape([this](bool) { loop_.Stop(); }, &run_.after);
    } else {
      loop_.Stop();
    }
  }

  int InFlight() {
    int n = 0;
    for (auto& w : workers_) n += w->counters().in_flight.load(std::memory_order_relaxed);
    return n;
  }

  // A signal (SIGINT, SIGTERM) stops the run; after its end (during the last /metrics scrape)
  // it changes nothing: the run is whole.
  void Stop(int sig) {
    if (stopping_ || finished_) return;
    const std::string why = fmt::format("interrupted by {}", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stopping_ = true;
    run_.partial = true;
    run_.partial_reason = why;
    run_.stop_signal = sig;
    const int in_flight = InFlight();
    if (in_flight > 0 && !o_.command.empty()) {
      // On the line of the progress display, when there is one; that line is redrawn below.
      fmt::print(stderr, "{}latdoc {}: stopping: draining {} in-flight stream{} (up to {:g} s); "
                 "Ctrl-C again to stop now\n", o_.progress ? "\r\x1b[K" : "", o_.command,
                 in_flight, in_flight == 1 ? "" : "s", NsToSec(o_.drain_timeout_ns));
    }
    for (auto& w : workers_) w->loop().Post([w = w.get(), why] { w->Stop(why); });
  }

  // A second signal while draining: the streams in flight are cancelled now.
  void StopNow() {
    if (finished_) return;
    const int in_flight = InFlight();
    if (in_flight == 0) return;
    if (!o_.command.empty()) {
      fmt::print(stderr, "{}latdoc {}: stopping now: cancelling {} stream{}\n",
                 o_.progress ? "\r\x1b[K" : "", o_.command, in_flight, in_flight == 1 ? "" : "s");
    }
    for (auto& w : workers_) w->loop().Post([w = w.get()] { w->StopNow(); });
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
      if (finished_) return;
      Scrape([this](bool) { ArmScrape(); }, &scratch_);
    });
  }


  void ArmProgress() {
    progress_timer_.ExpireAfterNs(kNsPerSec / 2, [this] {
      uint64_t done = 0, failed = 0;
      for (auto& w : workers_) {
        done += w->counters().done.load(std::memory_order_relaxed);
        failed += w->counters().failed.load(std::memory_order_relaxed);
      }
      double secs = run_.start_ns ? NsToSec(MonoNowNs() - run_.start_ns) : 0;
      fmt::print(stderr, "\r\x1b[K[latdoc bench] {} done, {} failed, {} in flight{}{}",
                 done, failed, InFlight(),
                 secs > 0 ? fmt::format(", {:.1f} req/s", double(done) / secs) : "",
                 stopping_ ? "; stopping (Ctrl-C again to stop now)" : "");
      ArmProgress();
    });
  }

  const BenchOptions& o_;
  http::EventLoop& loop_;
  const http::Url url_;
  const int threads_;
  http::EventLoop::Timer scrape_timer_, progress_timer_;
  BenchRun run_;
  servermetrics::ServerSnapshot scratch_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_run_;
  int warmed_ = 0, done_ = 0;
  bool measured_ = false, began_ = false, stopping_ = false, finished_ = false;
  int64_t end_ns_ = 0;
  double cpu0_ = 0;
  // Last, so destroyed first: shutting it down completes a scrape in flight, whose handler
  // writes run_ and re-arms scrape_timer_, which must still be there.
  std::unique_ptr<http::HttpClient> metrics_client_;
};

void Worker::WarmupDone() {
  if (phase_ != Phase::kWarmup) return;
  phase_ = Phase::kIdle;
  coord_->loop().Post([c = coord_] { c->OnWarmupDone(); });
}

void Worker::Done() {
  if (phase_ == Phase::kDone) return;
  const bool measured = phase_ == Phase::kMeasured;
  phase_ = Phase::kDone;
  done_ns_ = MonoNowNs();
  dispatch_timer_.Cancel();
  stop_timer_.Cancel();
  drain_timer_.Cancel();
  if (measured) {
    load_.cpu_s = NsToSec(ThreadCpuNs() - cpu0_ns_);
    load_.wall_s = NsToSec(done_ns_ - wall0_ns_);
    load_.events = events_ - events0_;
    load_.reads = client_.reads() - reads0_;
    load_.late_reads = client_.late_reads() - late0_;
  }
  coord_->loop().Post([c = coord_, t = done_ns_] { c->OnWorkerDone(t); });
}

void Flight::OnComplete(const http::ExchangeResult& r) {
  int64_t now = r.times.end_ns > 0 ? r.times.end_ns : MonoNowNs();
  rec_->connect_ns = r.times.connect_ns;
  rec_->tls_ns = r.times.tls_ns;
  rec_->reused_connection = r.times.reused;
  if (r.tcp) worker_->OnTcp(r.connection_id, *r.tcp);
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
  worker_->Finished(this, rec);  // deletes this
}

}  // namespace

namespace runner_internal {

BenchRun RunLoadThreads(const BenchOptions& o, http::EventLoop& loop, const http::Url& url,
                        int threads, std::string model) {
  Coordinator coordinator(o, loop, url, threads);
  return coordinator.Run(std::move(model));
}

}  // namespace runner_internal
}  // namespace latdoc::loadgen
