// The real StepRunner of `latdoc sweep`: each round is one RunBench.
//
// Signals: RunBench catches SIGINT/SIGTERM while a round runs (it stops sending, drains and
// marks the run partial). Between rounds nothing of it is alive, and Asio resets the signals
// to their default action when its signal set goes away, so a Ctrl-C there would kill the
// process before the steps done were written. This runner therefore installs its own handler
// (a flag) before the first round and again after every round.
#include <signal.h>

#include <algorithm>

#include "base/clock.h"
#include "loadgen/sweep.h"

namespace latdoc::loadgen {
namespace {

volatile sig_atomic_t g_interrupted = 0;  // the signal (SIGINT, SIGTERM); 0: none yet

void OnSignal(int sig) {
  if (!g_interrupted) g_interrupted = sig;
}

void InstallHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

RoundResult RoundFromRun(const BenchRun& run) {
  RoundResult out;
  out.dur_ns = std::max<int64_t>(0, run.end_ns - run.start_ns);
  out.interrupted = run.partial;
  for (const RequestRecord& r : run.records) {
    // Queued here when the round was stopped: the server never saw it (not a failure).
    if (r.outcome == Outcome::kCancelled && r.sent_ns < 0) continue;
    RequestSample s;
    s.ok = r.outcome == Outcome::kOk;
    if (!s.ok) {
      s.failure = std::string(OutcomeName(r.outcome));
      s.error = r.error.substr(0, 120);
      out.requests.push_back(std::move(s));
      continue;
    }
    s.ttft_ns = r.first_token_ns - r.scheduled_ns;
    s.e2el_ns = r.last_token_ns - r.scheduled_ns;
    s.output_tokens = r.output_tokens;
    if (r.output_tokens > 1) s.tpot_ns = (s.e2el_ns - s.ttft_ns) / (r.output_tokens - 1);
    // A chunk of k tokens counts k inter-token latencies of gap / k (as SummarizeRun).
    for (size_t i = 1; i < r.chunks.size(); ++i) {
      int64_t gap = r.chunks[i].first - r.chunks[i - 1].first;
      int k = std::max(1, r.chunks[i].second);
      for (int t = 0; t < k; ++t) out.itl_ns.push_back(gap / k);
    }
    out.requests.push_back(std::move(s));
  }
  ServerStepMetrics& m = out.server;
  m.available = run.metrics_available;
  if (!m.available) m.error = run.metrics_error;
  if (run.metrics_available) {
    m.server = run.after.server;
    // Gauges count only from scrapes made while a request was in flight: the idle scrapes
    // before and after a round shorter than the scrape interval read 0 running, which is no
    // batch size. Without such a scrape the gauges stay unknown.
    auto in_flight = [&run](int64_t t) {
      return std::any_of(run.records.begin(), run.records.end(), [t](const RequestRecord& r) {
        return r.sent_ns >= 0 && r.sent_ns <= t && (r.end_ns < 0 || t <= r.end_ns);
      });
    };
    for (const ServerSample& s : run.timeline) {
      if (!in_flight(s.t_ns)) continue;
      if (s.running) m.max_running = std::max(m.max_running.value_or(0), *s.running);
      if (s.waiting) m.max_waiting = std::max(m.max_waiting.value_or(0), *s.waiting);
      if (s.kv_cache_usage)
        m.max_kv_cache_usage = std::max(m.max_kv_cache_usage.value_or(0), *s.kv_cache_usage);
    }
    auto d = servermetrics::Delta(run.before, run.after);
    m.preemptions = d.preemptions;
    auto take = [](const std::optional<servermetrics::HistogramDelta>& h, double& sum,
                   double& count) {
      if (h) sum = h->sum, count = h->count;
    };
    take(d.queue_s, m.queue_sum_s, m.queue_count);
    take(d.prefill_s, m.prefill_sum_s, m.prefill_count);
    take(d.decode_s, m.decode_sum_s, m.decode_count);
    take(d.itl_s, m.itl_sum_s, m.itl_count);
    if (run.after.kind == servermetrics::ServerKind::kLlamaCpp) {
      // llama.cpp has no histograms: it sums each request's prompt time and generation time
      // (servermetrics/server_dialect.h). Per generated token, a slot's step; per request that
      // got a first token in the round, its prefill.
      if (d.generation_seconds && d.generation_tokens)
        m.itl_sum_s = *d.generation_seconds, m.itl_count = *d.generation_tokens;
      double started = 0;
      for (const RequestRecord& r : run.records) started += r.first_token_ns >= 0 ? 1 : 0;
      if (d.prompt_seconds) m.prefill_sum_s = *d.prompt_seconds, m.prefill_count = started;
    }
  }
  return out;
}

namespace {

class BenchStepRunner : public StepRunner {
 public:
  BenchStepRunner(BenchOptions base, std::optional<RandomWorkloadOptions> random)
      : base_(std::move(base)), random_(std::move(random)) {
    g_interrupted = 0;
    InstallHandler();
  }
  ~BenchStepRunner() override {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
  }

  StatusOr<RoundResult> RunRound(double load, int num_requests) override {
    BenchOptions o = base_;
    if (o.request_rate > 0 || rate_mode_) {
      rate_mode_ = true;
      o.request_rate = load;
    } else {
      o.concurrency = std::max(1, int(load));
    }
    o.num_requests = num_requests;
    o.duration_s = 0;
    o.progress = false;
    o.seed = base_.seed + rounds_++;
    // No prompt twice: one sent again would find its KV blocks in the server's prefix cache,
    // and its TTFT would read low. Random prompts come as a new batch per round; a file's go
    // on where the last round stopped.
    const size_t sent = size_t(num_requests) + size_t(std::max(0, o.warmup));
    if (random_) {
      RandomWorkloadOptions w = *random_;
      w.batch = rounds_ - 1;  // the first round's batch is the workload's own (batch 0)
      o.prompts = RandomPrompts(w, sent);
      o.first_prompt = 0;
    } else {
      o.first_prompt = prompts_sent_;
      prompts_sent_ += sent;
    }
    auto run = RunBench(o);
    InstallHandler();
    if (!run.ok()) return run.status();
    if (base_.model.empty()) base_.model = run->model;  // no /v1/models per round after this
    RoundResult r = RoundFromRun(*run);
    r.validation = ValidateRun(*run, o);
    if (run->partial && !g_interrupted) g_interrupted = run->stop_signal ? run->stop_signal : SIGINT;
    if (g_interrupted) r.interrupted = true;
    return r;
  }

  bool interrupted() const override { return g_interrupted != 0; }
  int stop_signal() const override { return g_interrupted; }
  std::string model() const override { return base_.model; }

 private:
  BenchOptions base_;
  std::optional<RandomWorkloadOptions> random_;
  bool rate_mode_ = false;
  uint64_t rounds_ = 0;
  size_t prompts_sent_ = 0;
};

}  // namespace

std::unique_ptr<StepRunner> MakeBenchStepRunner(BenchOptions base,
                                                std::optional<RandomWorkloadOptions> random) {
  return std::make_unique<BenchStepRunner>(std::move(base), std::move(random));
}

}  // namespace latdoc::loadgen
