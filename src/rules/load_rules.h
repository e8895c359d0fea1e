// Rules of the load layer: what a load test's results and the server's /metrics say about
// where the latency goes. Input: the facts of two bench runs (loadgen/load_facts.h), at low load
// (the baseline, may be null) and at the target load (null: no load test ran). Pure.
//
// Thresholds (LoadRuleOptions) and what each rule means:
//   load.failures        any failed request (fail above 1% of requests)
//   load.queueing        server queue time >= 25% of client TTFT and >= 5 ms (fail >= 50%)
//   load.kv_pressure     preemptions, or KV cache usage >= 95%; when requests also queued, the
//                        queue time is the KV cache's (it carries load.queueing's share)
//   load.prefill_heavy   prefill >= 50% of TTFT and >= 50 ms
//   load.network_front_end  client TTFT - server TTFT >= 5 ms and >= 20% of TTFT
//   load.itl_stalls      p99 ITL >= 3x median ITL and >= 10 ms: periodic decode stalls
//   load.itl_growth      median ITL at load >= 2x the baseline's: steps slow as the batch grows
//   load.ttft_tail       p99 TTFT >= 3x median TTFT
//   load.slo             the --slo was missed
// latency_share is the finding's share of the mean end-to-end latency, one scale for TTFT and
// ITL findings alike. A rule that does not fire yields an `ok` finding with its evidence; one whose
// inputs are missing yields `skip` with the reason.
#pragma once

#include <vector>

#include "loadgen/load_facts.h"
#include "rules/finding.h"

namespace latdoc::rules {

struct LoadRuleOptions {
  double failure_fail_rate = 0.01;
  double queue_share_warn = 0.25, queue_share_fail = 0.5, queue_min_ms = 5;
  double kv_usage_warn = 0.95;
  double prefill_share_warn = 0.5, prefill_min_ms = 50;
  double network_min_ms = 5, network_share_warn = 0.2;
  double itl_spike_ratio = 3, itl_spike_min_ms = 10;
  // Share of the decode time above the median step (mean - median ITL, over the mean) when
  // the longest gaps are spikes: warn, fail; judged only over at least itl_stall_min_gaps
  // inter-token gaps (total output tokens - completed requests), so that a p99.9 is a few gaps.
  double itl_stall_share_warn = 0.15, itl_stall_share_fail = 0.3, itl_stall_min_gaps = 1000;
  double itl_growth_ratio = 2;
  double ttft_tail_ratio = 3;
};

std::vector<Finding> EvaluateLoadRules(const loadgen::LoadFacts* baseline,
                                       const loadgen::LoadFacts* load,
                                       const LoadRuleOptions& options = {});

}  // namespace latdoc::rules
