// latdoc sim: runs the simulated vLLM-compatible server until SIGINT/SIGTERM.
#include <cstdio>

#include <fmt/core.h>

#include "base/exit_codes.h"
#include "cli/command.h"
#include "cli/flags.h"
#include "http/event_loop.h"
#include "sim/sim_server.h"

namespace latdoc::cli {

namespace {

int RunSim(const sim::SimConfig& cfg) {
  http::RaiseFileLimit();
  http::EventLoop loop;
  sim::SimServer server(loop, cfg);
  if (Status st = server.Start(); !st.ok()) {
    fmt::print(stderr, "latdoc sim: {}\n", st.message());
    return ExitCodeFor(st);
  }
  // The first line on standard output says where to connect (tests read it with --port 0).
  const bool v6 = cfg.host.find(':') != std::string::npos;  // "http://[::1]:8000"
  fmt::print("latdoc sim listening on http://{}{}{}:{}\n", v6 ? "[" : "", cfg.host, v6 ? "]" : "",
             server.port());
  std::fflush(stdout);
  loop.OnTerminationSignal([&](int) {
    server.Stop();
    loop.Stop();
  });
  loop.Run();
  return kExitOk;
}

// Where it listens, what it serves, and how fast its clock runs.
void AddListenFlags(CLI::App* app, sim::SimConfig& cfg) {
  app->add_option("--host", cfg.host, "Address to listen on")->capture_default_str();
  app->add_option("--port", cfg.port, "Port (0: any free port)")->capture_default_str();
  app->add_option("--api-key", cfg.api_key, "Require 'Authorization: Bearer KEY' on /v1 (as vLLM)");
  app->add_option("--served-model-name,--model", cfg.served_model_name, "Model name served")
      ->capture_default_str();
  app->add_option("--seed", cfg.seed, "Seed for generated text, EOS positions and faults")
      ->capture_default_str();
  app->add_option("--time-scale", cfg.time_scale,
                  "Wall time per unit of model time (0.1: ten times faster)")
      ->capture_default_str();
}

// vLLM's own flags.
void AddEngineFlags(CLI::App* app, sim::SimConfig& cfg) {
  sim::EngineConfig& e = cfg.engine;
  auto* g = "vLLM engine flags";
  app->add_option("--max-num-seqs", e.max_num_seqs, "Max running requests")->group(g)->capture_default_str();
  app->add_option("--max-num-batched-tokens", e.max_num_batched_tokens, "Token budget per step")
      ->group(g)->capture_default_str();
  // vLLM's boolean flags have --x and --no-x forms (argparse.BooleanOptionalAction); an
  // explicit value (--enable-chunked-prefill false) is still taken, as before.
  app->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", e.enable_chunked_prefill,
                "Split long prompts over steps (default: on)")
      ->expected(0, 1)
      ->group(g);
  app->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", cfg.enable_prefix_caching,
                "Prefix caching, as vLLM: a prompt's blocks seen before skip prefill (default: off "
                "in the simulator)")
      ->group(g);
  app->add_option("--block-size", e.block_size, "KV block size in tokens")->group(g)->capture_default_str();
  app->add_option("--max-model-len", e.max_model_len, "Max prompt + output tokens")->group(g)->capture_default_str();
  app->add_option("--gpu-memory-utilization", e.gpu_memory_utilization,
                  "Fraction of GPU memory for weights, activations and KV cache")
      ->group(g)->capture_default_str();
  app->add_option("--num-gpu-blocks-override", e.num_gpu_blocks_override,
                  "KV blocks (overrides the memory model)")->group(g)->capture_default_str();
  app->add_flag("--enable-log-requests", cfg.enable_log_requests, "Log each request (INFO)")
      ->group(g);
  app->add_flag("--disable-log-stats", cfg.disable_log_stats, "No periodic stats line")->group(g);
  app->add_flag("--disable-uvicorn-access-log", cfg.disable_uvicorn_access_log,
                "No access line per request")
      ->group(g);
}

// The simulated GPU and the step-time model.
void AddModelFlags(CLI::App* app, sim::SimConfig& cfg) {
  sim::EngineConfig& e = cfg.engine;
  auto* m = "Simulated GPU and step-time model";
  app->add_option("--sim-gpu-memory-gib", e.gpu_memory_gib, "GPU memory")->group(m)->capture_default_str();
  app->add_option("--sim-weights-gib", e.weights_gib, "Model weights")->group(m)->capture_default_str();
  app->add_option("--sim-kv-bytes-per-token", e.kv_bytes_per_token, "KV bytes per token")
      ->group(m)->capture_default_str();
  app->add_option("--sim-step-base-ms", e.step_base_ms, "Fixed cost per step")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(m)->capture_default_str();
  app->add_option("--sim-prefill-token-us", e.step_prefill_token_us, "Cost per prompt token")
      ->group(m)->capture_default_str();
  app->add_option("--sim-decode-seq-us", e.step_decode_seq_us, "Cost per decoding sequence")
      ->group(m)->capture_default_str();
  app->add_option("--sim-context-token-ns", e.step_context_token_ns, "Cost per attended KV token")
      ->group(m)->capture_default_str();
  app->add_option("--sim-mean-output-tokens", cfg.mean_output_tokens,
                  "Mean tokens before EOS when ignore_eos is off (0: never)")
      ->group(m)
      ->capture_default_str();
}

// Pathologies that slow steps: host overhead, slow kernels, log, swap and CPU stalls,
// host gaps.
void AddStallFlags(CLI::App* app, sim::SimConfig& cfg) {
  sim::EngineConfig& e = cfg.engine;
  auto* p = "Pathologies";
  app->add_option("--sim-host-overhead-us", e.host_overhead_per_seq_us,
                  "Host time per running sequence per step (GIL-bound scheduler)")->group(p);
  app->add_option("--sim-slow-kernel-factor", e.slow_kernel_factor, "Step-time multiplier")->group(p);
  app->add_option("--sim-slow-kernel-every", e.slow_kernel_every, "...on every k-th step")->group(p);
  app->add_option("--sim-log-stall-every", e.log_stall_every_steps,
                  "Synchronous log write stall every N steps")->group(p);
  app->add_option("--sim-log-stall-ms", e.log_stall_ms, "...of this length")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(p);
  app->add_option("--sim-swap-stall-every-s", e.swap_stall_every_s, "Swap stall period")
      ->type_name("DURATION")->transform(Seconds(Bound::kAny))->group(p);
  app->add_option("--sim-swap-stall-ms", e.swap_stall_ms, "...of this length")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(p);
  app->add_option("--sim-cpu-stall-every", e.cpu_stall_every_steps,
                  "Busy host thread: every N steps the engine's thread spins on a CPU...")
      ->check(CLI::NonNegativeNumber)->group(p);
  app->add_option("--sim-cpu-stall-ms", e.cpu_stall_ms, "...this long before the step runs")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(p);
  app->add_option("--sim-host-gap-every", e.host_gap_every_steps,
                  "Host gap: every N steps the engine launches nothing for a while (no CPU, no log: "
                  "the GPU idles inside the step)...")
      ->check(CLI::NonNegativeNumber)->group(p);
  app->add_option("--sim-host-gap-ms", e.host_gap_ms, "...this long")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(p);
}

// Pathologies of the stream and the front end: chunking, speculative decoding, reasoning,
// network delay, faults.
void AddStreamFaultFlags(CLI::App* app, sim::SimConfig& cfg) {
  sim::EngineConfig& e = cfg.engine;
  sim::FaultRates& f = cfg.faults;
  auto* p = "Pathologies";
  app->add_option("--sim-tokens-per-chunk", e.spec_tokens,
                  "Tokens per decode step and SSE chunk (speculative decoding)")->group(p);
  app->add_option("--sim-spec-tokens", e.spec_draft_tokens,
                  "Speculative decoding: draft tokens verified per decode step (vLLM's "
                  "num_speculative_tokens); each step yields the accepted drafts plus one")
      ->check(CLI::NonNegativeNumber)->group(p)->capture_default_str();
  app->add_option("--sim-spec-accept", e.spec_accept_rate,
                  "...each draft accepted with this probability, up to the first rejection")
      ->check(CLI::Range(0.0, 1.0))->group(p)->capture_default_str();
  app->add_flag(
         "--sim-think-tags", cfg.think_tags,
         "The reasoning goes out in delta.content inside <think>...</think> (no reasoning parser)")
      ->group(p);
  app->add_option("--sim-reasoning-tokens", cfg.reasoning_tokens,
                  "Chat: the first N generated tokens stream as delta.reasoning_content (a "
                  "reasoning model); a request with tools gets its answer as a tool call")
      ->check(CLI::NonNegativeNumber)
      ->group(p)
      ->capture_default_str();
  app->add_flag("--sim-event-per-token", cfg.event_per_token,
                "Send a step's tokens as one SSE event each, in one write (as TGI and llama.cpp)")
      ->group(p);
  app->add_option("--sim-network-delay-ms", cfg.network_delay_ms, "Delay on every write")
      ->type_name("DURATION")
      ->transform(Milliseconds(Bound::kAny))
      ->group(p);
  app->add_option("--sim-network-jitter-ms", cfg.network_jitter_ms, "Plus uniform jitter")
      ->type_name("DURATION")
      ->transform(Milliseconds(Bound::kAny))
      ->group(p);
  app->add_option("--sim-fault-429", f.http_429, "Rate of HTTP 429 answers")->group(p);
  app->add_option("--sim-fault-500", f.http_500, "Rate of HTTP 500 answers")->group(p);
  app->add_option("--sim-fault-503", f.http_503, "Rate of HTTP 503 answers")->group(p);
  app->add_option("--sim-fault-reset-before", f.reset_before_first_token,
                  "Rate of connection resets before the first token")->group(p);
  app->add_option("--sim-fault-reset-after", f.reset_after_first_token,
                  "Rate of connection resets after the first token")->group(p);
  app->add_option("--sim-fault-cut-stream", f.cut_stream,
                  "Rate of responses cut half-way (streams end without [DONE])")->group(p);
  app->add_option("--sim-fault-slow-first-byte", f.slow_first_byte,
                  "Rate of requests held by the front end")->group(p);
  app->add_option("--sim-slow-first-byte-ms", f.slow_first_byte_ms, "...for this long")
      ->type_name("DURATION")->transform(Milliseconds(Bound::kAny))->group(p);
}

// Logs, traces and records it writes; connection limits.
void AddOutputFlags(CLI::App* app, sim::SimConfig& cfg) {
  auto* o = "Output";
  app->add_option("--log-file", cfg.log_file, "Write logs here instead of standard error")
      ->group(o);
  app->add_option("--log-stats-interval", cfg.log_stats_interval_s,
                  "Seconds between stats lines (VLLM_LOG_STATS_INTERVAL)")
      ->type_name("DURATION")
      ->transform(Seconds(Bound::kAny))
      ->group(o)
      ->capture_default_str();
  app->add_option(
         "--sim-profiler-dir", cfg.profiler_dir,
         "As VLLM_TORCH_PROFILER_DIR: serve POST /start_profile and /stop_profile, writing "
         "a Kineto trace of the engine's steps here")
      ->group(o);
  app->add_option("--trace-requests", cfg.trace_requests_file,
                  "Write each request's true timings as JSON lines here")
      ->group(o);
  app->add_option("--sim-stall-record", cfg.stall_record_file,
                  "Write each step slowed on purpose, and why, as JSON lines here")
      ->group(o);
  app->add_option("--sim-host-counters-dir", cfg.host_counters_dir,
                  "Keep DIR/proc/vmstat and DIR/proc/pressure/* that swap stalls grow (pswpin, "
                  "PSI memory), for diagnose --local --host-counters-root DIR")
      ->group(o);
  app->add_option("--keep-alive-timeout", cfg.keep_alive_timeout_s,
                  "Seconds an idle kept-alive connection stays open")
      ->type_name("DURATION")
      ->transform(Seconds(Bound::kAny))
      ->group(o)
      ->capture_default_str();
  app->add_option("--max-body-bytes", cfg.max_body_bytes, "Larger request bodies get 413")
      ->group(o)
      ->capture_default_str();
}

}  // namespace

Command RegisterSim(CLI::App& root) {
  auto* app = root.add_subcommand(
      "sim",
      "Run a simulated OpenAI-compatible inference server that behaves like vLLM\n"
      "(continuous batching, KV cache, /metrics, logs, injectable pathologies).");
  auto cfg = std::make_shared<sim::SimConfig>();
  AddListenFlags(app, *cfg);
  AddEngineFlags(app, *cfg);
  AddModelFlags(app, *cfg);
  AddStallFlags(app, *cfg);
  AddStreamFaultFlags(app, *cfg);
  AddOutputFlags(app, *cfg);
  return {app, [cfg] { return RunSim(*cfg); }};
}

}  // namespace latdoc::cli
