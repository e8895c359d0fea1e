// The coordinator of RunBench's load threads (runner_internal.h), on the calling thread: it
// starts the workers (runner_worker.cc), scrapes /metrics, answers signals, draws the progress
// line and merges the workers' runs.
#include <sys/resource.h>

#include <csignal>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "base/clock.h"
#include "loadgen/runner.h"
#include "loadgen/runner_internal.h"

namespace latdoc::loadgen::runner_internal {
namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

// The calling thread's part: starts the workers, scrapes /metrics, answers signals, draws the
// progress line, and merges the workers' runs once all are done.
class Coordinator {
 public:
  Coordinator(const BenchOptions& o, http::EventLoop& loop, const http::Url& url, int threads)
      : o_(o),
        loop_(loop),
        url_(url),
        threads_(threads),
        scrape_timer_(loop),
        progress_timer_(loop) {}

  BenchRun Run(std::string model) {
    run_.model = std::move(model);
    for (int i = 0; i < threads_; ++i)
      workers_.push_back(std::make_unique<Worker>(o_, i, threads_, url_, run_.model, this));
    for (auto& w : workers_) threads_run_.emplace_back([w = w.get()] { w->loop().Run(); });
    // The first signal stops sending and lets the streams in flight finish (up to the drain
    // timeout); a second one cancels them at once. Either way the run is returned, partial.
    loop_.OnTerminationSignal([this](int sig) {
      if (!stopping_)
        Stop(sig);
      else
        StopNow();
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
      Scrape(
          [this, begin](bool ok) {
            run_.metrics_available = ok;
            begin();
          },
          &run_.before);
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
      fmt::print(stderr,
                 "{}latdoc {}: stopping: draining {} in-flight stream{} (up to {:g} s); "
                 "Ctrl-C again to stop now\n",
                 o_.progress ? "\r\x1b[K" : "", o_.command, in_flight, in_flight == 1 ? "" : "s",
                 NsToSec(o_.drain_timeout_ns));
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
                       run_.metrics_error =
                           r.failure != http::FailureKind::kNone
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
      fmt::print(stderr, "\r\x1b[K[latdoc bench] {} done, {} failed, {} in flight{}{}", done,
                 failed, InFlight(),
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

BenchRun RunLoadThreads(const BenchOptions& o, http::EventLoop& loop, const http::Url& url,
                        int threads, std::string model) {
  Coordinator coordinator(o, loop, url, threads);
  return coordinator.Run(std::move(model));
}

}  // namespace latdoc::loadgen::runner_internal
