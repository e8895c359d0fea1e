#include "sim/stall_record.h"

#include <cerrno>

#include <fmt/core.h>

namespace latdoc::sim {

StallRecorder::~StallRecorder() {
  if (f_) std::fclose(f_);
}

Status StallRecorder::Open(const std::string& path) {
  if (path.empty()) return Status::Ok();
  f_ = std::fopen(path.c_str(), "w");
  if (!f_) return ErrnoStatus(errno, "--sim-stall-record " + path);
  return Status::Ok();
}

void StallRecorder::OnStep(const StepPlan& p, int64_t start_ns, int64_t dur_ns) {
  if (!f_) return;
  auto line = [&](const char* cause) {
    fmt::print(f_, "{{\"start_ns\":{},\"dur_ns\":{},\"cause\":\"{}\",\"prefill_tokens\":{}}}\n",
               start_ns, dur_ns, cause, p.prefill_tokens);
  };
  if (p.log_stall) line("log");
  if (p.swap_stall) line("swap");
  if (p.cpu_stall_ns > 0) line("host_cpu");
  if (p.host_gap) line("host_gap");
  if (p.slow_kernel) line("slow_kernel");
  if (p.new_preemptions > 0) line("preemption");
  if (p.prefill_tokens >= kGroundTruthPrefillTokens) line("prefill");
  std::fflush(f_);
}

std::string LogStallMessage(uint64_t step) {
  // As vLLM's request logging of a long prompt: "Received request ...: prompt: '...'".
  std::string msg = fmt::format("Received request cmpl-stall-{}: prompt: '", step);
  while (msg.size() + 2 < kLogStallMessageBytes) msg += "lorem ipsum ";
  msg.resize(kLogStallMessageBytes - 1);
  msg += "'";
  return msg;
}

}  // namespace latdoc::sim
