#include "sim/engine.h"

#include <algorithm>
#include <cmath>

namespace latdoc::sim {

int64_t Engine::TotalBlocks(const EngineConfig& c) {
  if (c.num_gpu_blocks_override > 0) return c.num_gpu_blocks_override;
  double kv_gib = c.gpu_memory_gib * c.gpu_memory_utilization - c.weights_gib - c.activation_gib;
  if (kv_gib <= 0) return 0;
  double block_bytes = c.kv_bytes_per_token * c.block_size;
  return static_cast<int64_t>(std::floor(kv_gib * 1024.0 * 1024.0 * 1024.0 / block_bytes));
}

Engine::Engine(EngineConfig config) : config_(config) {
  total_blocks_ = static_cast<int>(std::min<int64_t>(TotalBlocks(config_), 1 << 30));
  free_blocks_ = total_blocks_;
  if (config_.spec_tokens < 1) config_.spec_tokens = 1;
  if (config_.spec_draft_tokens > 0) config_.spec_tokens = config_.spec_draft_tokens + 1;
  spec_rng_ = config_.spec_seed ^ 0x6a09e667f3bcc909ULL;
  if (config_.slow_kernel_every < 1) config_.slow_kernel_every = 1;
}

double Engine::kv_usage() const {
  return total_blocks_ == 0 ? 0.0
                            : static_cast<double>(total_blocks_ - free_blocks_) / total_blocks_;
}

void Engine::Add(const EngineRequest& r) {
  Seq s;
  s.req = r;
  s.computed = std::clamp(r.cached_tokens, 0, std::max(0, r.prompt_tokens - 1));
  seqs_.emplace(r.id, s);
  waiting_.push_back(r.id);
}

void Engine::Abort(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Free(it->second);
  seqs_.erase(it);
  if (auto r = std::find(running_.begin(), running_.end(), id); r != running_.end()) {
    running_.erase(r);
  } else if (auto w = std::find(waiting_.begin(), waiting_.end(), id); w != waiting_.end()) {
    waiting_.erase(w);
  }
}

bool Engine::Grow(Seq& s, int tokens) {
  int need = BlocksFor(tokens) - s.blocks;
  if (need <= 0) return true;
  if (need > free_blocks_) return false;
  free_blocks_ -= need;
  s.blocks += need;
  return true;
}

void Engine::Free(Seq& s) {
  free_blocks_ += s.blocks;
  s.blocks = 0;
}

void Engine::PreemptLast(StepPlan* plan) {
  uint64_t id = running_.back();
  running_.pop_back();
  Seq& v = seqs_.at(id);
  Free(v);
  v.computed = 0;
  v.prefilled = false;
  v.scheduled_now = 0;
  waiting_.push_front(id);
  ++preemptions_total_;
  ++plan->new_preemptions;
  step_out_.preempted.push_back(id);
}

int Engine::Schedule(Seq& s, int budget) {
  if (!s.prefilled) {
    int n = std::min(PrefillTarget(s) - s.computed, budget);
    if (n <= 0 || !Grow(s, s.computed + n)) return 0;
    return n;
  }
  int remaining = s.req.max_tokens - s.generated;
  if (s.req.stop_at_tokens > 0) remaining = std::min(remaining, s.req.stop_at_tokens - s.generated);
  int n = std::min({config_.spec_tokens, std::max(remaining, 1), budget});
  // As vLLM's allocate_slots: room for the computed tokens and the n this step computes (the
  // last sampled token first); the token the step samples gets its KV in the next step.
  if (n <= 0 || !Grow(s, s.computed + n)) return 0;
  return n;
}

// 1. Running requests first, in admission order: each gets its decode token(s) or the next
//    chunk of its prefill within the token budget. When KV blocks run out, the newest running
//    request is preempted (its blocks freed, its progress reset, back to the head of the
//    queue) until the current one fits, or it is itself the newest.
int Engine::ScheduleRunning(int budget, StepPlan* plan) {
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& s = seqs_.at(running_[i]);
    s.scheduled_now = 0;
    if (budget <= 0) continue;
    for (;;) {
      int n = Schedule(s, budget);
      if (n > 0) {
        s.scheduled_now = n;
        budget -= n;
        break;
      }
      // Out of blocks: preempt the newest running request.
      bool self = running_.back() == s.req.id;
      PreemptLast(plan);
      if (self) break;
    }
    if (i >= running_.size()) break;
  }
  return budget;
}

// 2. Waiting requests are admitted in FCFS order while running < max_num_seqs, budget remains
//    and their blocks fit. Without chunked prefill a prompt larger than the remaining budget
//    blocks the queue.
int Engine::AdmitWaiting(int budget) {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < config_.max_num_seqs &&
         budget > 0) {
    Seq& s = seqs_.at(waiting_.front());
    int need = PrefillTarget(s) - s.computed;
    if (!config_.enable_chunked_prefill && need > budget) break;
    int n = Schedule(s, budget);
    if (n == 0) break;
    s.scheduled_now = n;
    budget -= n;
    waiting_.pop_front();
    running_.push_back(s.req.id);
    if (!s.started) {
      s.started = true;
      step_out_.scheduled_first.push_back(s.req.id);
    }
  }
  return budget;
}

// The plan's work: decode sequences and their context, prefill tokens, running and waiting.
void Engine::CountScheduled(StepPlan* plan) const {
  for (uint64_t id : running_) {
    const Seq& s = seqs_.at(id);
    if (s.scheduled_now == 0) continue;
    if (s.prefilled) {
      ++plan->decode_seqs;
      plan->context_tokens += s.req.prompt_tokens + s.generated;
    } else {
      plan->prefill_tokens += s.scheduled_now;
    }
  }
  plan->num_running = static_cast<int>(running_.size());
  plan->num_waiting = static_cast<int>(waiting_.size());
}

// 3. The step's duration from the work scheduled (see EngineConfig): kernel time, slowed on
//    the slow-kernel steps, then the host's per-sequence work.
double Engine::KernelAndHostMs(StepPlan* plan) const {
  const EngineConfig& c = config_;
  double dur_ms = c.step_base_ms + plan->prefill_tokens * c.step_prefill_token_us / 1e3 +
                  plan->decode_seqs * c.step_decode_seq_us / 1e3 +
                  static_cast<double>(plan->context_tokens) * c.step_context_token_ns / 1e6;
  if (c.slow_kernel_factor != 1.0 && steps_ % static_cast<uint64_t>(c.slow_kernel_every) == 0) {
    dur_ms *= c.slow_kernel_factor;
    plan->slow_kernel = true;
  }
  // Host-side work is not sped up or slowed by the GPU: it adds after the kernel time.
  dur_ms += plan->num_running * c.host_overhead_per_seq_us / 1e3;
  return dur_ms;
}

// Injected host stalls (log, swap, CPU, host gap): each kind comes due on its own schedule;
// the one due the longest starts, one per step, and one of another kind than the last waits
// until kStepsBetweenInjectedStalls steps after it (EngineConfig). A stall adds to *dur_ms.
void Engine::InjectHostStall(int64_t now_ns, StepPlan* plan, double* dur_ms) {
  const EngineConfig& c = config_;
  if (c.log_stall_every_steps > 0 && c.log_stall_ms > 0 &&
      steps_ % static_cast<uint64_t>(c.log_stall_every_steps) == 0 && due_since_[kLogStall] == 0)
    due_since_[kLogStall] = steps_;
  if (c.swap_stall_every_s > 0 && c.swap_stall_ms > 0) {
    int64_t every_ns = static_cast<int64_t>(c.swap_stall_every_s * 1e9);
    if (next_swap_stall_ns_ < 0) next_swap_stall_ns_ = now_ns + every_ns;
    if (now_ns >= next_swap_stall_ns_) {
      if (due_since_[kSwapStall] == 0) due_since_[kSwapStall] = steps_;
      while (next_swap_stall_ns_ <= now_ns) next_swap_stall_ns_ += every_ns;
    }
  }
  if (c.cpu_stall_every_steps > 0 && c.cpu_stall_ms > 0 &&
      steps_ % static_cast<uint64_t>(c.cpu_stall_every_steps) == 0 && due_since_[kCpuStall] == 0)
    due_since_[kCpuStall] = steps_;
  if (c.host_gap_every_steps > 0 && c.host_gap_ms > 0 &&
      steps_ % static_cast<uint64_t>(c.host_gap_every_steps) == 0 && due_since_[kHostGap] == 0)
    due_since_[kHostGap] = steps_;
  int kind = -1;
  for (int k = 0; k < kInjectedStallKinds; ++k)
    if (due_since_[k] > 0 && (kind < 0 || due_since_[k] < due_since_[kind])) kind = k;
  if (kind >= 0 && (last_stall_kind_ < 0 || kind == last_stall_kind_ ||
                    steps_ >= last_stall_step_ + kStepsBetweenInjectedStalls)) {
    due_since_[kind] = 0;
    last_stall_kind_ = kind;
    last_stall_step_ = steps_;
    double stall_ms = 0;
    if (kind == kLogStall) {
      stall_ms = c.log_stall_ms;
      plan->log_stall = true;
    } else if (kind == kSwapStall) {
      stall_ms = c.swap_stall_ms;
      plan->swap_stall = true;
    } else if (kind == kCpuStall) {
      stall_ms = c.cpu_stall_ms;
      plan->cpu_stall_ns = static_cast<int64_t>(c.cpu_stall_ms * 1e6);
    } else {
      stall_ms = c.host_gap_ms;
      plan->host_gap = true;
    }
    *dur_ms += stall_ms;
    plan->host_stall_ns = static_cast<int64_t>(stall_ms * 1e6);
  }
}

// Plan of a step, following vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py): running
// requests first (ScheduleRunning); only if nothing was preempted, waiting ones admitted
// (AdmitWaiting); the step's duration from the work scheduled, plus any injected host stall.
StepPlan Engine::BeginStep(int64_t now_ns) {
  StepPlan plan;
  step_out_ = StepOutput{};
  ++steps_;
  int budget = config_.max_num_batched_tokens;
  budget = ScheduleRunning(budget, &plan);
  if (plan.new_preemptions == 0) AdmitWaiting(budget);
  CountScheduled(&plan);
  double dur_ms = KernelAndHostMs(&plan);
  InjectHostStall(now_ns, &plan, &dur_ms);
  plan.dur_ns = static_cast<int64_t>(dur_ms * 1e6);
  in_step_ = true;
  return plan;
}

void Engine::FinishStep(StepOutput* out) {
  in_step_ = false;
  *out = std::move(step_out_);
  step_out_ = StepOutput{};
  std::vector<uint64_t> done;
  for (uint64_t id : running_) {
    Seq& s = seqs_.at(id);
    int n = s.scheduled_now;
    s.scheduled_now = 0;
    if (n == 0) continue;
    TokenEvent ev{id, 0, 0, false, FinishReason::kNone};
    if (!s.prefilled) {
      s.computed += n;
      if (s.computed < PrefillTarget(s)) continue;  // more prompt chunks to go
      s.prefilled = true;
      ev.first = s.generated == 0;
      ev.new_tokens = 1;  // the step that completes a prefill samples one token
    } else if (config_.spec_draft_tokens > 0) {
      // n - 1 drafts verified (fewer near max_tokens); accepted up to the first rejection.
      const int drafts = n - 1;
      int accepted = 0;
      while (accepted < drafts) {
        spec_rng_ += 0x9e3779b97f4a7c15ULL;
        uint64_t z = spec_rng_;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        if (double(z >> 11) / double(1ULL << 53) >= config_.spec_accept_rate) break;
        ++accepted;
      }
      if (drafts > 0) {
        ++spec_drafts_;
        spec_draft_tokens_ += uint64_t(drafts);
        spec_accepted_tokens_ += uint64_t(accepted);
      }
      ev.new_tokens = 1 + accepted;
    } else {
      ev.new_tokens = n;
    }
    s.generated += ev.new_tokens;
    s.computed = s.req.prompt_tokens + s.generated - 1;
    ev.total_tokens = s.generated;
    if (s.req.stop_at_tokens > 0 && s.generated >= s.req.stop_at_tokens) {
      ev.finish = FinishReason::kStop;
    } else if (s.generated >= s.req.max_tokens) {
      ev.finish = FinishReason::kLength;
    }
    if (ev.finish != FinishReason::kNone) done.push_back(id);
    out->events.push_back(ev);
  }
  for (uint64_t id : done) {
    Seq& s = seqs_.at(id);
    Free(s);
    seqs_.erase(id);
    running_.erase(std::find(running_.begin(), running_.end(), id));
  }
}

}  // namespace latdoc::sim
