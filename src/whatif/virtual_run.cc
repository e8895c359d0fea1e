#include "whatif/virtual_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <random>
#include <vector>

#include <fmt/core.h>

#include "stats/sample_summary.h"

namespace latdoc::whatif {
namespace {

struct Req {
  int64_t send_ns = 0;
  int input = 0, output = 0;
  int64_t first_ns = -1, last_ns = -1;
  int tokens = 0;
};

// np.percentile(x, p), method "linear", as bench reports it (stats::PercentileOfSorted). `v` is
// sorted here.
double Pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return stats::PercentileOfSorted(v, p);
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// A step that schedules nothing while work waits would repeat forever: a request that can never
// be admitted. After this many such steps in a row the run stops with an error.
constexpr int kMaxIdleSteps = 1000;

// The shortest and longest lengths drawn around `l` (--range-ratio).
int LenLo(const Workload& w, int l) {
  return std::max(1, int(std::floor(l * (1 - w.range_ratio))));
}
int LenHi(const Workload& w, int l) { return std::max(1, int(std::ceil(l * (1 + w.range_ratio)))); }

// The options a run can start with: a positive load, lengths of at least 1, and a request of
// the longest lengths that fits one step (without chunked prefill) and the KV cache.
Status ValidateRun(const VirtualRunOptions& o) {
  const sim::EngineConfig& ec = o.engine;
  const Workload& w = o.workload;
  if (!(o.load > 0)) return InvalidArgument("the load must be positive");
  if (w.input_len < 1 || w.output_len < 1) return InvalidArgument("--input-len and --output-len must be at least 1");
  if (!(w.range_ratio >= 0 && w.range_ratio < 1)) return InvalidArgument("--range-ratio must be in [0, 1)");
  if (ec.max_num_seqs < 1 || ec.max_num_batched_tokens < 1) {
    return InvalidArgument("max-num-seqs and max-num-batched-tokens must be at least 1");
  }
  auto hi = [&](int l) { return LenHi(w, l); };
  if (!ec.enable_chunked_prefill && hi(w.input_len) > ec.max_num_batched_tokens) {
    return InvalidArgument(fmt::format(
        "without chunked prefill a prompt of up to {} tokens never fits max-num-batched-tokens {}",
        hi(w.input_len), ec.max_num_batched_tokens));
  }
  const int64_t max_seq_blocks = (hi(w.input_len) + hi(w.output_len) + ec.block_size - 1) / ec.block_size;
  if (max_seq_blocks > sim::Engine::TotalBlocks(ec)) {
    return InvalidArgument(fmt::format("a request of up to {} tokens needs {} KV blocks; the cache has {}",
                                       hi(w.input_len) + hi(w.output_len), max_seq_blocks,
                                       sim::Engine::TotalBlocks(ec)));
  }
  return Status::Ok();
}

// What the steps measured, in ms, one entry per token or request.
struct Samples {
  std::vector<double> ttft, tpot, itl, e2el;
  int64_t out_tokens = 0;
  double step_ms_sum = 0;
};

// The round's first sends: open loop, every send time drawn up front (exponential gaps) until
// `send` refuses one; closed loop, one request per client at the round's start. `sent` is the
// count `send` keeps.
template <typename Send>
void SendRoundStart(const VirtualRunOptions& o, int64_t round_start, const int& sent, int per_round,
                    Send send, std::exponential_distribution<double>& gap_s, std::mt19937_64& rng) {
  if (o.rate_mode) {
    double t_s = 0;
    while (sent < per_round) {
      int before = sent;
      send(round_start + std::llround(t_s * 1e9));
      if (sent == before) break;
      t_s += gap_s(rng);
    }
  } else {
    for (int i = 0; i < int(o.load); ++i) send(round_start);
  }
}

// One step's token events at `now`: TTFT or ITL per token; E2EL, TPOT and output tokens per
// finished request, counted in `done`; in a closed loop, a finished request's client sends again.
template <typename Send>
void RecordTokens(const std::vector<sim::TokenEvent>& events, int64_t now, bool rate_mode,
                  std::vector<Req>& reqs, Samples& samples, size_t& done, Send send) {
  std::vector<double>& ttft = samples.ttft;
  std::vector<double>& tpot = samples.tpot;
  std::vector<double>& itl = samples.itl;
  std::vector<double>& e2el = samples.e2el;
  int64_t& out_tokens = samples.out_tokens;
  for (const sim::TokenEvent& ev : events) {
    Req& r = reqs[ev.id];
    if (ev.first) {
      r.first_ns = now;
      ttft.push_back(double(now - r.send_ns) / 1e6);
    } else {
      itl.push_back(double(now - r.last_ns) / 1e6);
    }
    r.last_ns = now;
    r.tokens = ev.total_tokens;
    if (ev.finish != sim::FinishReason::kNone) {
      ++done;
      e2el.push_back(double(now - r.send_ns) / 1e6);
      if (r.tokens > 1) tpot.push_back(double(now - r.first_ns) / 1e6 / (r.tokens - 1));
      out_tokens += r.tokens;
      if (!rate_mode) send(now);
    }
  }
}

// The run's metrics from the engine's counters and the samples (which it sorts).
void Summarize(const sim::Engine& engine, int64_t busy_ns, Samples& samples, RunMetrics& m) {
  std::vector<double>& ttft = samples.ttft;
  std::vector<double>& tpot = samples.tpot;
  std::vector<double>& itl = samples.itl;
  std::vector<double>& e2el = samples.e2el;
  m.preemptions = engine.preemptions_total();
  m.steps = engine.steps();
  m.mean_step_ms = m.steps ? samples.step_ms_sum / double(m.steps) : 0;
  m.duration_s = double(busy_ns) / 1e9;
  if (m.duration_s > 0) {
    m.output_throughput = double(samples.out_tokens) / m.duration_s;
    m.request_throughput = double(m.completed) / m.duration_s;
  }
  m.mean_ttft_ms = Mean(ttft), m.median_ttft_ms = Pct(ttft, 50), m.p99_ttft_ms = Pct(ttft, 99);
  m.mean_tpot_ms = Mean(tpot), m.median_tpot_ms = Pct(tpot, 50), m.p99_tpot_ms = Pct(tpot, 99);
  m.mean_itl_ms = Mean(itl), m.median_itl_ms = Pct(itl, 50), m.p99_itl_ms = Pct(itl, 99);
  m.mean_e2el_ms = Mean(e2el), m.median_e2el_ms = Pct(e2el, 50), m.p99_e2el_ms = Pct(e2el, 99);
}

}  // namespace

StatusOr<RunMetrics> VirtualRun(const VirtualRunOptions& o) {
  RETURN_IF_ERROR(ValidateRun(o));
  const sim::EngineConfig& ec = o.engine;
  const Workload& w = o.workload;
  auto lo = [&](int l) { return LenLo(w, l); };
  auto hi = [&](int l) { return LenHi(w, l); };

  std::mt19937_64 rng(w.seed * 0x9E3779B97F4A7C15ull + 1);
  std::uniform_int_distribution<int> in_len(lo(w.input_len), hi(w.input_len));
  std::uniform_int_distribution<int> out_len(lo(w.output_len), hi(w.output_len));
  std::exponential_distribution<double> gap_s(o.rate_mode ? o.load : 1.0);
  const int64_t front_ns = std::llround(o.front_ms * 1e6);
  const int64_t stop_sending_ns = o.duration_s > 0 ? std::llround(o.duration_s * 1e9) : -1;
  const int per_round = o.duration_s > 0 ? std::numeric_limits<int>::max() : std::max(1, o.round_requests);
  const int rounds = o.duration_s > 0 ? 1 : std::max(1, o.rounds);

  sim::EngineConfig cfg = ec;
  cfg.max_model_len = std::max(cfg.max_model_len, hi(w.input_len) + hi(w.output_len));
  sim::Engine engine(cfg);
  RunMetrics m;
  std::vector<Req> reqs;
  Samples samples;
  int64_t now = 0;
  int64_t busy_ns = 0;  // sum of the rounds' durations

  // Plan per round: arrivals are a min-heap of (arrival time, request index). Closed loop: all
  // clients send at the round's start, and each sends again when its request completes, until
  // the round's requests are all sent. Open loop: the round's send times are drawn up front.
  for (int round = 0; round < rounds; ++round) {
    const int64_t round_start = now;
    using Arrival = std::pair<int64_t, size_t>;
    std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals;
    int sent = 0;
    auto send = [&](int64_t t) {
      if (sent >= per_round) return;
      if (stop_sending_ns >= 0 && t - round_start >= stop_sending_ns) return;
      Req r;
      r.send_ns = t;
      r.input = in_len(rng);
      r.output = out_len(rng);
      reqs.push_back(r);
      arrivals.emplace(t + front_ns, reqs.size() - 1);
      ++sent;
    };
    SendRoundStart(o, round_start, sent, per_round, send, gap_s, rng);
    size_t done = 0;
    int idle_steps = 0;
    sim::StepOutput out;
    while (!arrivals.empty() || engine.has_work()) {
      if (!engine.has_work()) now = std::max(now, arrivals.top().first);
      while (!arrivals.empty() && arrivals.top().first <= now) {
        const Req& r = reqs[arrivals.top().second];
        engine.Add({arrivals.top().second, r.input, r.output, 0});
        arrivals.pop();
      }
      sim::StepPlan plan = engine.BeginStep(now);
      m.max_running = std::max(m.max_running, plan.num_running);
      m.max_kv_cache_usage = std::max(m.max_kv_cache_usage, engine.kv_usage());
      now += plan.dur_ns;
      samples.step_ms_sum += double(plan.dur_ns) / 1e6;
      engine.FinishStep(&out);
      idle_steps = out.events.empty() && plan.prefill_tokens == 0 ? idle_steps + 1 : 0;
      if (idle_steps > kMaxIdleSteps) {
        return InvalidArgument("the engine stalls: a waiting request is never admitted");
      }
      RecordTokens(out.events, now, o.rate_mode, reqs, samples, done, send);
    }
    m.completed += int(done);
    busy_ns += now - round_start;
  }
  Summarize(engine, busy_ns, samples, m);
  return m;
}

}  // namespace latdoc::whatif
