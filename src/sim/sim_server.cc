// The simulated server object (sim/sim_server.h): config checks, start and stop, and the engine
// driver that runs the steps on the loop. The HTTP API, the responses, the log and the ground
// truth are in the sim_server_*.cc files beside it (sim/sim_server_internal.h lists them).
#include "sim/sim_server.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/json_text.h"
#include "sim/sim_server_internal.h"

namespace latdoc::sim {

using sim_server_internal::Escape;
using sim_server_internal::Mix;

int CountPromptTokens(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n < 1 ? 1 : n;
}

Status ValidateSimConfig(const SimConfig& c) {
  const EngineConfig& e = c.engine;
  if (e.max_num_seqs < 1) return InvalidArgument("--max-num-seqs must be at least 1");
  if (e.max_num_batched_tokens < 1)
    return InvalidArgument("--max-num-batched-tokens must be at least 1");
  if (e.block_size < 1) return InvalidArgument("--block-size must be at least 1");
  if (e.max_model_len < 2) return InvalidArgument("--max-model-len must be at least 2");
  if (e.max_num_batched_tokens < e.max_num_seqs) {  // vLLM's SchedulerConfig refuses it too
    return InvalidArgument(fmt::format(
        "max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs ({}).",
        e.max_num_batched_tokens, e.max_num_seqs));
  }
  if (e.gpu_memory_utilization <= 0 || e.gpu_memory_utilization > 1)
    return InvalidArgument("--gpu-memory-utilization must be in (0, 1]");
  if (c.time_scale <= 0) return InvalidArgument("--time-scale must be positive");
  if (!e.enable_chunked_prefill && e.max_num_batched_tokens < e.max_model_len) {
    return InvalidArgument(fmt::format(
        "max_num_batched_tokens ({}) is smaller than max_model_len ({}). This effectively limits "
        "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer "
        "sequences. Please increase max_num_batched_tokens or decrease max_model_len.",
        e.max_num_batched_tokens, e.max_model_len));
  }
  int64_t kv_tokens = Engine::TotalBlocks(e) * e.block_size;
  if (kv_tokens < e.max_model_len) {
    return InvalidArgument(fmt::format(
        "The model's max seq len ({}) is larger than the maximum number of tokens that can be "
        "stored in KV cache ({}). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
        e.max_model_len, kv_tokens));
  }
  for (double r : {c.faults.http_429, c.faults.http_500, c.faults.http_503,
                   c.faults.reset_before_first_token, c.faults.reset_after_first_token,
                   c.faults.cut_stream, c.faults.slow_first_byte}) {
    if (r < 0 || r > 1) return InvalidArgument("fault rates must be in [0, 1]");
  }
  return Status::Ok();
}

namespace sim_server_internal {

using nlohmann::json;

std::string Escape(std::string_view s) { return JsonText(json(std::string(s))); }  // with quotes

}  // namespace sim_server_internal

SimServer::Impl::Impl(http::EventLoop& l, SimConfig c)
    : loop(l),
      cfg(std::move(c)),
      engine([&] {
        EngineConfig e = cfg.engine;
        e.spec_seed ^= cfg.seed;  // the acceptance draws follow --seed
        return e;
      }()),
      metrics(cfg.engine.max_model_len),
      rng(cfg.seed),
      jitter_rng(Mix(cfg.seed)),
      step_timer(l),
      stats_timer(l),
      model_json(Escape(cfg.served_model_name)) {}

// --- engine driver -------------------------------------------------------------------------

void SimServer::Impl::Kick() {
  if (!stepping && engine.has_work()) StartStep(MonoNowNs());
}

void SimServer::Impl::StartStep(int64_t start_ns) {
  stepping = true;
  step_start_ns = start_ns;
  StepPlan p = engine.BeginStep(ModelNs(start_ns));
  step_plan = p;
  metrics.running = p.num_running;
  metrics.waiting = p.num_waiting;
  metrics.kv_usage = engine.kv_usage();
  metrics.preemptions += p.new_preemptions;
  interval_preemptions += p.new_preemptions;
  step_due_ns = start_ns + Scaled(double(p.dur_ns));
  stalls.OnStep(p, start_ns, step_due_ns - start_ns);  // ground truth (sim/stall_record.h)
  if (p.log_stall) log.Line("INFO", "logger.py:71", LogStallMessage(engine.steps()));
  if (p.swap_stall) host_counters.OnSwapStallStart(Scaled(cfg.engine.swap_stall_ms * 1e6) / 1000);
  if (p.cpu_stall_ns > 0) {
    // A busy host thread: this thread (the loop's, the one the engine runs on) spins on a CPU for
    // the stall instead of waiting for the step's timer, as a CPU-bound scheduler would; the
    // timer then fires for the rest of the step.
    const int64_t until_ns = MonoNowNs() + Scaled(double(p.cpu_stall_ns));
    volatile uint64_t spins = 0;
    while (MonoNowNs() < until_ns) spins = spins + 1;
  }
  step_timer.ExpireAtNs(step_due_ns, [this] { EndStep(); });
}

void SimServer::Impl::EndStep() {
  int64_t now = MonoNowNs();
  metrics.step_overrun.Observe(double(std::max<int64_t>(0, now - step_due_ns)) / 1e9);
  engine.FinishStep(&step_out);
  if (step_plan.swap_stall) host_counters.OnSwapStallEnd(Scaled(cfg.engine.swap_stall_ms * 1e6) / 1000);
  profiler.OnStep(step_start_ns, now, step_plan);
  for (uint64_t id : step_out.scheduled_first)
    if (auto it = active.find(id); it != active.end()) {
      // A step planned on schedule may start before a request that arrived while the loop was
      // late; it cannot have been scheduled before it arrived.
      it->second->scheduled_ns = std::max(step_start_ns, it->second->arrival_ns);
    }
  for (uint64_t id : step_out.preempted)
    if (auto it = active.find(id); it != active.end()) ++it->second->preemptions;
  // vLLM's iteration_tokens_total (IterationStats): the tokens generated in the step, plus a
  // request's whole prompt in the step that gives its first token (not the chunks scheduled).
  int64_t step_tokens = 0;
  for (const TokenEvent& ev : step_out.events) {
    step_tokens += ev.new_tokens;
    auto it = active.find(ev.id);
    if (it == active.end()) continue;
    if (ev.first) step_tokens += it->second->prompt_tokens;
    if (!Emit(*it->second, ev, now)) active.erase(ev.id);
  }
  metrics.iteration_tokens.Observe(static_cast<double>(step_tokens));
  metrics.spec_decode = engine.config().spec_draft_tokens > 0;
  metrics.spec_drafts = engine.spec_drafts();
  metrics.spec_draft_tokens = engine.spec_draft_tokens();
  metrics.spec_accepted_tokens = engine.spec_accepted_tokens();
  metrics.running = engine.num_running();
  metrics.waiting = engine.num_waiting();
  metrics.kv_usage = engine.kv_usage();
  stepping = false;
  if (engine.has_work()) {
    // Keep the schedule: the next step starts when this one was due, unless we fell far
    // behind (then start now rather than bunch steps up).
    StartStep(now - step_due_ns > 50 * kNsPerMs ? now : step_due_ns);
  }
}

SimServer::SimServer(http::EventLoop& loop, SimConfig config)
    : impl_(std::make_unique<Impl>(loop, std::move(config))) {}

SimServer::~SimServer() {
  Stop();
}

Status SimServer::Start() {
  Impl& s = *impl_;
  RETURN_IF_ERROR(ValidateSimConfig(s.cfg));
  RETURN_IF_ERROR(s.log.Open(s.cfg.log_file));
  RETURN_IF_ERROR(s.stalls.Open(s.cfg.stall_record_file));
  RETURN_IF_ERROR(s.host_counters.Open(s.cfg.host_counters_dir));
  s.log.Line("INFO", "utils.py:328", sim_server_internal::NonDefaultArgsMessage(s.cfg));
  RETURN_IF_ERROR(s.OpenTrace());
  http::ServerOptions o;
  o.host = s.cfg.host;
  o.port = s.cfg.port;
  o.max_body_bytes = s.cfg.max_body_bytes;
  o.keep_alive_timeout_ns = SecToNs(s.cfg.keep_alive_timeout_s);
  if (s.cfg.network_delay_ms > 0 || s.cfg.network_jitter_ms > 0) {
    o.write_delay_ns = [&s] {
      double j =
          s.cfg.network_jitter_ms > 0
              ? std::uniform_real_distribution<double>(0, s.cfg.network_jitter_ms)(s.jitter_rng)
              : 0;
      return s.Scaled((s.cfg.network_delay_ms + j) * 1e6);
    };
  }
  s.server = std::make_unique<http::Server>(
      s.loop, o, [&s](const http::Request& r, std::shared_ptr<http::ResponseStream> w) {
        s.Handle(r, std::move(w));
      });
  RETURN_IF_ERROR(s.server->Listen());
  s.LogServing(port());
  // vLLM reads VLLM_LOG_STATS_INTERVAL <= 0 as its default, 10 s (--disable-log-stats turns it off).
  if (!(s.cfg.log_stats_interval_s > 0)) s.cfg.log_stats_interval_s = 10;
  if (!s.cfg.disable_log_stats) s.ArmStats();
  return Status::Ok();
}

uint16_t SimServer::port() const { return impl_->server ? impl_->server->port() : 0; }

void SimServer::Stop() {
  Impl& s = *impl_;
  if (!s.server) return;
  s.stats_timer.Cancel();
  s.step_timer.Cancel();
  s.server->Stop();
  s.server.reset();
  s.active.clear();
}

}  // namespace latdoc::sim
