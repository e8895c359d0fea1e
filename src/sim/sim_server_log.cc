// The simulated server's log (sim/sim_server.h), in vLLM's format: the startup lines, uvicorn's
// access lines, and the periodic stats line.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include <fmt/core.h>

#include "base/clock.h"
#include "sim/sim_server_internal.h"

namespace latdoc::sim {

namespace sim_server_internal {

namespace {

// Python's repr of a string, as vLLM's startup line prints it.
std::string PyRepr(std::string_view s) {
  const char quote =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  out += quote;
  return out;
}

}  // namespace

// vLLM's startup line (vllm/entrypoints/utils.py log_non_default_args): the flags whose values
// differ from vLLM's defaults, as Python prints the dict. The API key is left out.
std::string NonDefaultArgsMessage(const SimConfig& c) {
  const EngineConfig& e = c.engine;
  std::string d = "{'model_tag': " + PyRepr(c.served_model_name);
  if (c.host != "127.0.0.1") d += ", 'host': " + PyRepr(c.host);
  if (c.port != 8000) d += fmt::format(", 'port': {}", c.port);
  if (c.disable_uvicorn_access_log) d += ", 'disable_uvicorn_access_log': True";
  if (c.enable_log_requests) d += ", 'enable_log_requests': True";
  if (c.disable_log_stats) d += ", 'disable_log_stats': True";
  d += fmt::format(", 'max_model_len': {}", e.max_model_len);
  if (e.block_size != 16) d += fmt::format(", 'block_size': {}", e.block_size);
  if (e.gpu_memory_utilization != 0.9)
    d += fmt::format(", 'gpu_memory_utilization': {}", e.gpu_memory_utilization);
  if (e.num_gpu_blocks_override > 0)
    d += fmt::format(", 'num_gpu_blocks_override': {}", e.num_gpu_blocks_override);
  if (e.max_num_seqs != 1024) d += fmt::format(", 'max_num_seqs': {}", e.max_num_seqs);
  if (e.max_num_batched_tokens != 8192)
    d += fmt::format(", 'max_num_batched_tokens': {}", e.max_num_batched_tokens);
  if (!e.enable_chunked_prefill) d += ", 'enable_chunked_prefill': False";
  return "non-default args: " + d + "}";
}

Status VllmLog::Open(const std::string& path) {
  if (path.empty()) {
    f_ = stderr;
    return Status::Ok();
  }
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) return ErrnoStatus(errno, "--log-file " + path);
  owned_ = true;
  return Status::Ok();
}

VllmLog::~VllmLog() {
  if (owned_ && f_) std::fclose(f_);
}

void VllmLog::Line(std::string_view level, std::string_view where, std::string_view msg) {
  if (!f_) return;
  char ts[32];
  time_t now = ::time(nullptr);
  tm lt;
  localtime_r(&now, &lt);
  strftime(ts, sizeof ts, "%m-%d %H:%M:%S", &lt);
  std::string line = fmt::format("(APIServer pid={}) {} {} [{}] {}\n", pid_, level, ts, where, msg);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

// uvicorn's access line: INFO:     127.0.0.1:PORT - "POST /v1/completions HTTP/1.1" 200 OK
void VllmLog::Access(std::string_view remote, std::string_view method, std::string_view target,
                     int status) {
  if (!f_) return;
  std::string line = fmt::format("(APIServer pid={}) INFO:     {} - \"{} {} HTTP/1.1\" {}\n", pid_,
                                 remote, method, target, http::StatusText(status));
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace sim_server_internal

void SimServer::Impl::LogServing(uint16_t port) {
  const EngineConfig& e = cfg.engine;
  log.Line("INFO", "api_server.py:1880",
           fmt::format("latdoc sim (vLLM-compatible) serving model {}", cfg.served_model_name));
  log.Line(
      "INFO", "scheduler.py:220",
      fmt::format("Chunked prefill is {} with max_num_batched_tokens={}.",
                  e.enable_chunked_prefill ? "enabled" : "disabled", e.max_num_batched_tokens));
  log.Line(
      "INFO", "kv_cache_utils.py:1100",
      fmt::format("GPU KV cache size: {} tokens", int64_t(engine.total_blocks()) * e.block_size));
  log.Line("INFO", "api_server.py:1950",
           fmt::format("Starting vLLM API server 0 on http://{}{}{}:{}",
                       cfg.host.find(':') != std::string::npos ? "[" : "", cfg.host,
                       cfg.host.find(':') != std::string::npos ? "]" : "", port));
}

// --- periodic stats line (vLLM V1 LoggingStatLogger.log) ------------------------------------

void SimServer::Impl::ArmStats() {
  stats_timer.ExpireAfterNs(SecToNs(cfg.log_stats_interval_s), [this] {
    LogStats();
    ArmStats();
  });
}

void SimServer::Impl::LogStats() {
  int64_t now = MonoNowNs();
  double secs = std::max(1e-9, double(now - last_stats_ns) / 1e9);
  double prompt_tput = double(interval_prompt_tokens) / secs;
  double gen_tput = double(interval_generation_tokens) / secs;
  bool idle = prompt_tput == 0 && gen_tput == 0 && prev_prompt_tput == 0 && prev_gen_tput == 0;
  if (!idle) {  // vLLM logs the idle line at DEBUG, which the default INFO level hides
    std::string msg = fmt::format(
        "Engine 000: Avg prompt throughput: {:.1f} tokens/s, Avg generation throughput: {:.1f} "
        "tokens/s, Running: {} reqs, Waiting: {} reqs, ",
        prompt_tput, gen_tput, engine.num_running(), engine.num_waiting());
    if (interval_preemptions > 0) msg += fmt::format("Preemptions: {}, ", interval_preemptions);
    // vLLM averages over its recent requests; the simulator over this interval's prefills.
    msg += fmt::format("GPU KV cache usage: {:.1f}%, Prefix cache hit rate: {:.1f}%",
                       engine.kv_usage() * 100,
                       interval_prefix_queries
                           ? 100.0 * double(interval_prefix_hits) / double(interval_prefix_queries)
                           : 0.0);
    log.Line("INFO", "loggers.py:123", msg);
  }
  prev_prompt_tput = prompt_tput;
  prev_gen_tput = gen_tput;
  interval_prompt_tokens = interval_generation_tokens = interval_preemptions = 0;
  interval_prefix_queries = interval_prefix_hits = 0;
  last_stats_ns = now;
}

}  // namespace latdoc::sim
