// The simulator's engine model: a continuous-batching scheduler on a shared step clock, the
// way vLLM's V1 engine works (DESIGN.md, "The simulator's engine model").
//
// Each step the scheduler keeps running requests going (one decode token each, or the rest of a
// chunked prefill), admits waiting requests while max_num_seqs, max_num_batched_tokens and free
// KV blocks allow, and preempts the newest running request (recompute) when blocks run out.
// Step time grows with the work in the step, so the latency knee, prefill stalls and goodput
// collapse emerge from load rather than being scripted.
//
// The engine is pure: it has no clock and does no I/O. Its driver calls BeginStep(now) to plan a
// step (which returns its duration) and FinishStep() at the step's end to collect the tokens it
// produced. Times are in the engine's own nanoseconds ("model time"); the driver maps them to
// wall time. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

namespace latdoc::sim {

struct EngineConfig {
  // Scheduler limits (vLLM's flags of the same names).
  int max_num_seqs = 1024;
  int max_num_batched_tokens = 8192;
  bool enable_chunked_prefill = true;
  int block_size = 16;
  int max_model_len = 8192;
  // KV capacity: (gpu_memory_gib * gpu_memory_utilization - weights - activations) / bytes per
  // block, unless num_gpu_blocks_override > 0. Defaults: an 8B model (Llama-3-8B: 32 layers,
  // 8 KV heads of 128, bf16 -> 128 KiB of KV per token) on an 80 GiB GPU.
  double gpu_memory_utilization = 0.9;
  double gpu_memory_gib = 80;
  double weights_gib = 16;
  double activation_gib = 2;
  double kv_bytes_per_token = 131072;
  int num_gpu_blocks_override = 0;

  // Step-time model, in model time. Defaults resemble an 8B model on one H100-class GPU:
  // ~6 ms per decode step at batch 1, ~16k prefill tokens/s, ~28 ms per step at batch 256.
  double step_base_ms = 6.0;             // fixed cost of a step (launches, sampling)
  double step_prefill_token_us = 60.0;   // per prompt token computed in the step
  double step_decode_seq_us = 80.0;      // per sequence decoding in the step
  double step_context_token_ns = 5.0;    // per KV token attended by decoding sequences

  // Pathologies (0 = off).
  double host_overhead_per_seq_us = 0;   // GIL-bound scheduler: host time per running sequence
  double slow_kernel_factor = 1.0;       // step-time multiplier of a slow kernel...
  int slow_kernel_every = 1;             // ...on every k-th step (1: always)
  int log_stall_every_steps = 0;         // synchronous log write every N steps...
  double log_stall_ms = 0;               // ...stalling the step this long
  double swap_stall_every_s = 0;         // periodic swap stall, every this many seconds...
  double swap_stall_ms = 0;              // ...of this length
  // A busy host thread: every N steps the driver's own thread spins on a CPU this long (model
  // time) before the step's kernels run (a CPU-bound scheduler, detokenizer or GC pause).
  int cpu_stall_every_steps = 0;
  double cpu_stall_ms = 0;
  // A host gap: every N steps the host launches nothing for this long (model time) and leaves
  // no trace on the host's counters (a wait on a lock, an RPC, the GIL held elsewhere): the
  // step's kernels run at their usual speed after it, the GPU idle meanwhile.
  int host_gap_every_steps = 0;
  double host_gap_ms = 0;
  // Log, swap, CPU stalls and host gaps are host stalls of one step each: at most one starts per
  // step, and one of another kind than the last waits until kStepsBetweenInjectedStalls steps
  // after it, so that each stall of the ground truth has one cause and two causes never meet
  // within the host sampler's resolution (a sample every 10 ms; attribution/host_sampler.h). A
  // stall of the same kind as the last keeps its schedule (one pending per kind: a kind that
  // comes due again while it waits loses that one).
  int spec_tokens = 1;                   // tokens per decode step (speculative decoding)
  // Speculative decoding with acceptance (vLLM's --speculative-config num_speculative_tokens):
  // each decode step verifies spec_draft_tokens drafts; each is accepted with probability
  // spec_accept_rate until the first rejection, and the step yields the accepted drafts plus one
  // token of the target model. 0: off (spec_tokens applies). Draws follow spec_seed.
  int spec_draft_tokens = 0;
  double spec_accept_rate = 0;
  uint64_t spec_seed = 0;
};

constexpr int kStepsBetweenInjectedStalls = 12;

struct EngineRequest {
  uint64_t id = 0;
  int prompt_tokens = 1;
  int max_tokens = 16;      // generation stops here ("length")
  int stop_at_tokens = 0;   // > 0: an EOS after this many tokens ("stop")
  // Prompt tokens whose KV the prefix cache already holds: the first prefill starts past them
  // (they cost no step time). REQUIRES: 0 <= cached_tokens < prompt_tokens (vLLM recomputes at
  // least the last prompt token). A preempted request recomputes everything.
  int cached_tokens = 0;
};

enum class FinishReason { kNone, kLength, kStop };

// Per step, what happened to one request.
struct TokenEvent {
  uint64_t id;
  int new_tokens;           // tokens generated in this step (0 for a prefill chunk)
  int total_tokens;         // generated so far
  bool first;               // these include the request's first token
  FinishReason finish;
};

struct StepPlan {
  int64_t dur_ns = 0;
  int prefill_tokens = 0;
  int decode_seqs = 0;
  int num_running = 0;      // after admission
  int num_waiting = 0;
  int new_preemptions = 0;
  int64_t context_tokens = 0;
  bool slow_kernel = false;
  bool log_stall = false;
  bool swap_stall = false;
  int64_t cpu_stall_ns = 0;  // > 0: the driver spins this long (model time) first; in dur_ns
  bool host_gap = false;
  // Of dur_ns, the host stall's time (log, swap, CPU stall or host gap): the GPU waits for the
  // host first, then runs the step's kernels (sim/profiler_trace.h).
  int64_t host_stall_ns = 0;
};

struct StepOutput {
  std::vector<TokenEvent> events;
  std::vector<uint64_t> scheduled_first;   // requests scheduled for the first time this step
  std::vector<uint64_t> preempted;         // requests preempted in this step
};

class Engine {
 public:
  explicit Engine(EngineConfig config);

  // Blocks of KV cache the config yields.
  static int64_t TotalBlocks(const EngineConfig& c);

  // Queues a request (FCFS). REQUIRES: prompt_tokens + max_tokens <= max_model_len and
  // 1 <= prompt_tokens, checked by the caller (the API layer answers 400 first).
  void Add(const EngineRequest& r);
  // Drops a request wherever it is and frees its blocks (client went away). Unknown id: no-op.
  void Abort(uint64_t id);

  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  bool in_step() const { return in_step_; }

  // Plans a step that starts at `now_ns` (model time). REQUIRES: !in_step() && has_work().
  StepPlan BeginStep(int64_t now_ns);
  // Ends the step begun last: generates tokens, finishes requests, fills `out`.
  void FinishStep(StepOutput* out);

  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int total_blocks() const { return total_blocks_; }
  int free_blocks() const { return free_blocks_; }
  double kv_usage() const;  // fraction 0..1 of blocks in use
  uint64_t preemptions_total() const { return preemptions_total_; }
  uint64_t steps() const { return steps_; }
  // Speculative decoding counters (vLLM's spec_decode_num_drafts, _num_draft_tokens,
  // _num_accepted_tokens): drafts verified, draft tokens proposed, draft tokens accepted.
  uint64_t spec_drafts() const { return spec_drafts_; }
  uint64_t spec_draft_tokens() const { return spec_draft_tokens_; }
  uint64_t spec_accepted_tokens() const { return spec_accepted_tokens_; }
  const EngineConfig& config() const { return config_; }

 private:
  struct Seq {
    EngineRequest req;
    int computed = 0;     // tokens whose KV is computed (prompt + generated - 1 when decoding)
    int generated = 0;
    int blocks = 0;
    int scheduled_now = 0;  // tokens scheduled in the current step
    bool started = false;   // scheduled at least once
    bool prefilled = false; // the prompt (and, after a preemption, the output) is computed
  };

  // Tokens a (re)prefill must compute before the next token can be sampled.
  static int PrefillTarget(const Seq& s) { return s.req.prompt_tokens + s.generated; }
  int BlocksFor(int tokens) const { return (tokens + config_.block_size - 1) / config_.block_size; }
  bool Grow(Seq& s, int tokens);  // reserves blocks for `tokens` computed tokens
  void Free(Seq& s);
  void PreemptLast(StepPlan* plan);
  // Schedules up to `budget` tokens of `s`; returns the tokens scheduled (0: out of blocks).
  int Schedule(Seq& s, int budget);
  // BeginStep's steps (engine.cc says what each follows of vLLM's scheduler). The schedulers
  // take the token budget left and return what is left after them.
  int ScheduleRunning(int budget, StepPlan* plan);
  int AdmitWaiting(int budget);
  void CountScheduled(StepPlan* plan) const;
  double KernelAndHostMs(StepPlan* plan) const;
  void InjectHostStall(int64_t now_ns, StepPlan* plan, double* dur_ms);

  EngineConfig config_;
  int total_blocks_ = 0;
  int free_blocks_ = 0;
  std::unordered_map<uint64_t, Seq> seqs_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_;   // admission order: the last is the newest
  bool in_step_ = false;
  uint64_t steps_ = 0;
  uint64_t preemptions_total_ = 0;
  int64_t next_swap_stall_ns_ = -1;
  // Injected host stalls: the step each kind came due at (0: not due), the last one started.
  enum { kLogStall, kSwapStall, kCpuStall, kHostGap, kInjectedStallKinds };
  uint64_t due_since_[kInjectedStallKinds] = {0, 0, 0, 0};
  int last_stall_kind_ = -1;
  uint64_t last_stall_step_ = 0;
  StepOutput step_out_;             // what BeginStep already knows (scheduled, preempted)
  uint64_t spec_drafts_ = 0, spec_draft_tokens_ = 0, spec_accepted_tokens_ = 0;
  uint64_t spec_rng_ = 0;           // splitmix64 state of the acceptance draws
};

}  // namespace latdoc::sim
