// Thresholds of every trace analysis, in one place, with their defaults and where each
// default comes from. All are overridable from `latdoc trace` flags.
#pragma once

#include <cstdint>

namespace latdoc::trace {

struct AnalysisOptions {
  // Kernel hot list length (terminal; JSON keeps `hot_list_json` entries).
  int hot_list = 15;
  int hot_list_json = 100;
  // Outliers: an instance slower than `outlier_factor` × its kernel's median and at least
  // `outlier_min_excess_ns` above it, for kernels with ≥ `outlier_min_count` instances.
  // (A design choice, not taken from another tool.)
  double outlier_factor = 5.0;
  int64_t outlier_min_excess_ns = 20'000;
  int outlier_min_count = 10;
  int outliers_kept = 50;
  // Small copies: below this size (bytes). Storm: ≥ `storm_min_run` small copies in a row with
  // gaps < `storm_max_gap_ns` (RATELProf coalescable_transfers: gap < 1e6 ns, ≥ 3 in a row).
  int64_t small_copy_bytes = 64 * 1024;
  int storm_min_run = 3;
  int64_t storm_max_gap_ns = 1'000'000;
  // ROCm pageable heuristic (after RATELProf's hip_memcpy_async report, Kassouley/RATELProf
  // bin/lua/consts_reports.lua): an HtoD/DtoH copy launched by an *Async
  // call that stayed on the host for ≥ this share of the copy's device time.
  double rocm_pageable_blocking_share = 0.8;
  // Idle gaps (HTA get_idle_time_breakdown): gaps shorter than this after a GPU op whose
  // successor was already launched are "kernel wait" (HTA: 30, in trace µs).
  int64_t kernel_wait_max_ns = 30'000;
  int largest_gaps = 5;
  // Launch: tiny kernel below this duration (TraceLens short_kernel_threshold_us = 10);
  // launch delays above this are a clock-domain mismatch and rejected (real rocprof v1
  // results.csv files have DispatchNs ~12.4 s before BeginNs).
  int64_t tiny_kernel_ns = 10'000;
  int64_t max_plausible_launch_delay_ns = 1'000'000'000;
  // Steady state starts after this share of the host timeline (warm-up excluded).
  double warmup_share = 0.2;
  // Steps (steps.cc): at least this many to call it a loop; the cadence guess needs names run
  // a multiple of N times (give or take cadence_extra_share of their count) to hold this share
  // of the device's ops (a design choice: a decode step's ops repeat exactly, warm-up and
  // one-off ops are few); a sync call that ended this
  // close before an idle gap began still counts as the cause of the gap (clock noise).
  int64_t min_steps = 3;
  double cadence_coverage = 0.8;
  double cadence_extra_share = 0.02;
  double cadence_divisor_names_share = 0.25;   // names run a divisor of N times: N is a layer
  int64_t sync_gap_tolerance_ns = 10'000;
  // Copy/compute overlap: copies longer than this count (RATELProf hidden_transfers 1e5 ns).
  int64_t overlap_min_copy_ns = 100'000;
};

}  // namespace latdoc::trace
