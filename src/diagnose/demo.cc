#include "diagnose/demo.h"

#include <atomic>
#include <thread>

#include <fmt/core.h>

#include "http/event_loop.h"
#include "sim/sim_server.h"

namespace latdoc::diagnose {

StatusOr<DiagnoseResult> RunDemo(const DemoOptions& o) {
  // The simulated server, deliberately misconfigured in three ways a checklist should catch.
  sim::SimConfig sc;
  sc.port = 0;
  sc.seed = 42;
  sc.time_scale = o.time_scale;
  sc.served_model_name = "latdoc-sim/llama-3-8b";
  sc.engine.max_num_seqs = 256;                // far more than its KV cache holds...
  sc.engine.num_gpu_blocks_override = 1200;    // ...19,200 tokens of KV
  sc.engine.max_model_len = 4096;
  sc.engine.host_overhead_per_seq_us = 250;    // a GIL-bound scheduler
  sc.engine.log_stall_every_steps = 25;        // synchronous log writes stall the engine
  sc.engine.log_stall_ms = 60;
  sc.enable_log_requests = true;
  sc.log_stats_interval_s = 1;
  sc.log_file = o.work_dir + "/sim.log";
  std::remove(sc.log_file.c_str());

  http::EventLoop loop;
  sim::SimServer server(loop, sc);
  RETURN_IF_ERROR(server.Start());
  std::string url = fmt::format("http://127.0.0.1:{}", server.port());
  std::thread sim_thread([&] { loop.Run(); });
  if (o.progress) {
    fmt::print(stderr,
               "latdoc demo: simulated vLLM at {} (max_num_seqs 256 with 19,200 tokens of KV cache, "
               "a GIL-bound scheduler, request logging with synchronous log stalls)\n",
               url);
  }

  DiagnoseOptions d;
  d.url = url;
  d.concurrency = 96;
  d.requests = 384;
  d.baseline_requests = 12;
  d.workload.input_len = 256;
  d.workload.output_len = 96;
  d.workload.range_ratio = 0.2;
  d.workload.token_ids = true;
  d.logs = {sc.log_file};
  if (!o.trace_file.empty()) {
    d.traces = {o.trace_file};
    d.trace_note = "an example GPU trace (" + o.trace_file + "), not of the simulated server";
    d.trace_of_target = false;
  }
  d.local = true;
  d.sweep = true;          // the latency curve and its knee, against the target's 96
  d.sweep_max = 128;
  d.progress = o.progress;
  DiagnoseResult r = RunDiagnose(d);

  loop.Post([&] {
    server.Stop();
    loop.Stop();
  });
  sim_thread.join();
  return r;
}

}  // namespace latdoc::diagnose
