// Expert verdicts over a server log's stats series and fatal lines: the scheduler not admitting,
// the engine not progressing, throughput collapsing, prefill starving decode, the engine dying.
// Each names the points or lines it rests on and what would confirm it. See log_verdicts.h.
#include "rules/log_verdicts.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace latdoc::rules {
namespace {

using logs::EngineFacts;
using logs::EngineSeries;
using logs::LogFacts;

constexpr double kNsPerSec = 1e9;
double Sec(int64_t ns) { return static_cast<double>(ns) / kNsPerSec; }

Evidence Num(std::string name, double value, std::string unit) {
  return Evidence{std::move(name), value, std::move(unit), ""};
}
Evidence Text(std::string name, std::string text) {
  return Evidence{std::move(name), std::nullopt, "", std::move(text)};
}

std::vector<const EngineFacts*> Engines(const LogFacts& f) {
  std::vector<const EngineFacts*> out;
  for (const auto& e : f.engines) {
    if (e.engine >= 0) out.push_back(&e);
  }
  if (out.empty()) {
    for (const auto& e : f.engines) out.push_back(&e);
  }
  return out;
}

std::string EngineName(const EngineFacts& e) {
  return e.engine < 0 ? std::string("aggregated engines") : fmt::format("engine {}", e.engine);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The length of interval a series point stands for: the spacing to the point before it (the
// engine's usual interval for the first).
int64_t PointDt(const EngineFacts& e, size_t i) {
  const EngineSeries& s = e.series;
  if (i > 0) return std::max<int64_t>(0, s.t_ns[i] - s.t_ns[i - 1]);
  return static_cast<int64_t>(e.interval_s.value_or(10) * kNsPerSec);
}

// A run of consecutive series points [first, last].
struct Run {
  size_t first = 0, last = 0;
  size_t points() const { return last - first + 1; }
};

// The longest run of points meeting `cond`, by time covered.
template <typename Cond>
std::optional<Run> LongestRun(const EngineFacts& e, const Cond& cond, int64_t* dur_ns) {
  std::optional<Run> best, cur;
  int64_t best_ns = 0, cur_ns = 0;
  for (size_t i = 0; i < e.series.size(); ++i) {
    if (!cond(i)) {
      cur.reset();
      continue;
    }
    if (!cur) {
      cur = Run{i, i};
      cur_ns = 0;
    }
    cur->last = i;
    cur_ns += PointDt(e, i);
    if (!best || cur_ns > best_ns) {
      best = cur;
      best_ns = cur_ns;
    }
  }
  *dur_ns = best_ns;
  return best;
}

std::string PointText(const LogFacts& f, const EngineSeries& s, size_t i) {
  std::string hit = i < s.prefix_hit_pct.size() && s.prefix_hit_pct[i]
                        ? fmt::format(", prefix hit {:.1f}%", *s.prefix_hit_pct[i])
                        : "";
  return fmt::format("{}: prompt {:.1f} tok/s, gen {:.1f} tok/s, {} running, {} waiting, KV {:.1f}%{}",
                     f.Label(s.t_ns[i]), s.prompt_tps[i], s.gen_tps[i], s.running[i], s.waiting[i],
                     s.kv_pct[i], hit);
}

// Admission stalled: many wait, one or two run, the KV cache has room, and no prompt is being
// prefilled, interval after interval. vLLM's scheduler admits a waiting request whenever the
// running batch is below --max-num-seqs and its blocks fit (vllm/v1/core/sched/scheduler.py,
// schedule()); so a queue that stays with an almost empty batch and free KV means the head of
// the queue cannot be scheduled, or the engine is not stepping.
void AdmissionStalled(const LogFacts& f, std::vector<Finding>& out) {
  const EngineFacts* worst = nullptr;
  Run worst_run;
  int64_t worst_ns = 0;
  for (const EngineFacts* e : Engines(f)) {
    const EngineSeries& s = e->series;
    int64_t dur = 0;
    auto run = LongestRun(*e, [&](size_t i) {
      return s.waiting[i] >= kAdmissionStallMinWaiting && s.running[i] <= kAdmissionStallMaxRunning &&
             s.kv_pct[i] < kAdmissionStallMaxKvPct && s.prompt_tps[i] < 1.0;
    }, &dur);
    if (run && run->points() >= 2 && dur > worst_ns) {
      worst = e;
      worst_run = *run;
      worst_ns = dur;
    }
  }
  if (!worst || worst_ns < kAdmissionStallMinNs) return;
  const EngineSeries& s = worst->series;
  int64_t max_waiting = 0, max_running = 0;
  double max_kv = 0, max_gen = 0;
  for (size_t i = worst_run.first; i <= worst_run.last; ++i) {
    max_waiting = std::max(max_waiting, s.waiting[i]);
    max_running = std::max(max_running, s.running[i]);
    max_kv = std::max(max_kv, s.kv_pct[i]);
    max_gen = std::max(max_gen, s.gen_tps[i]);
  }
  Finding fi;
  fi.id = "logs.admission_stalled";
  fi.layer = Layer::kSystem;
  fi.severity = worst_ns >= kAdmissionStallFailNs ? Severity::kFail : Severity::kWarn;
  fi.title = fmt::format(
      "The scheduler admitted no request for {:.0f} s: up to {} waiting while {} ran and the KV "
      "cache was at most {:.1f}% full ({})",
      Sec(worst_ns), max_waiting, max_running, max_kv, EngineName(*worst));
  fi.evidence.push_back(Num("stalled_time", Sec(worst_ns), "s"));
  fi.evidence.push_back(Num("stats_lines", static_cast<double>(worst_run.points()), ""));
  fi.evidence.push_back(Text("first", PointText(f, s, worst_run.first)));
  fi.evidence.push_back(Text("last", PointText(f, s, worst_run.last)));
  fi.evidence.push_back(Num("max_waiting", static_cast<double>(max_waiting), ""));
  fi.evidence.push_back(Num("max_running", static_cast<double>(max_running), ""));
  fi.evidence.push_back(Num("max_kv_cache_usage", max_kv, "%"));
  fi.evidence.push_back(Num("max_generation_throughput", max_gen, "tok/s"));
  fi.evidence.push_back(Text("prompt_throughput", "0 tok/s in every one of these intervals: no prefill ran"));
  fi.advice = fmt::format(
      "Raising --max-num-seqs will not help: the batch is nearly empty and the KV cache has room, "
      "so the scheduler is not admitting. Look for (1) a request at the head of the queue that "
      "cannot be scheduled: a prompt longer than --max-num-batched-tokens with chunked prefill "
      "off (--enable-chunked-prefill), or one whose KV need exceeds the free blocks "
      "(--max-model-len near the cache size); (2) a stuck request that never finishes (max_tokens "
      "huge, a guided-decoding grammar that never ends): `vllm:num_requests_running` stays at {} "
      "while `vllm:request_success_total` does not move; (3) a hung engine (py-spy dump of the "
      "EngineCore process). Confirm with /metrics: `vllm:num_requests_waiting` flat at {} and "
      "`vllm:prompt_tokens_total` not increasing over these {:.0f} s",
      max_running, max_waiting, Sec(worst_ns));
  out.push_back(std::move(fi));
}

// No progress: requests running and not one token made, interval after interval (V0 logs the
// stats line every interval; V1 logs it at DEBUG when every throughput is 0, so in a V1 INFO log
// the same hang shows as stats lines that stop, with the log ending inside the gap).
void NoProgress(const LogFacts& f, std::vector<Finding>& out) {
  const EngineFacts* worst = nullptr;
  for (const EngineFacts* e : Engines(f)) {
    if (e->longest_no_progress && e->longest_no_progress->points >= kNoProgressMinIntervals &&
        (!worst || e->longest_no_progress->dur_ns > worst->longest_no_progress->dur_ns)) {
      worst = e;
    }
  }
  const logs::StatsGap* open = nullptr;
  const EngineFacts* open_at = nullptr;
  for (const EngineFacts* e : Engines(f)) {
    for (const auto& g : e->gaps) {
      const double interval_ns = e->interval_s.value_or(10) * kNsPerSec;
      if (g.open_ended && g.running_before > 0 &&
          static_cast<double>(g.gap_ns) >= kNoProgressMinIntervals * interval_ns) {
        open = &g;
        open_at = e;
      }
    }
  }
  if (!worst && !open) return;
  Finding fi;
  fi.id = "logs.no_progress";
  fi.layer = Layer::kSystem;
  fi.severity = Severity::kFail;
  if (worst) {
    const logs::Stretch& st = *worst->longest_no_progress;
    fi.title = fmt::format(
        "The engine made no progress for {:.0f} s: {:.0f} requests running and 0 tokens/s in {} "
        "stats lines in a row, from {} to {} ({})",
        Sec(st.dur_ns), st.peak, st.points, st.start_label, st.end_label, EngineName(*worst));
    fi.evidence.push_back(Num("no_progress_time", Sec(st.dur_ns), "s"));
    fi.evidence.push_back(Num("stats_lines", static_cast<double>(st.points), ""));
    fi.evidence.push_back(Num("running", st.peak, ""));
    for (size_t i = 0; i < worst->lines_before_no_progress.size(); ++i) {
      fi.evidence.push_back(Text(fmt::format("line_before_{}", i + 1), worst->lines_before_no_progress[i]));
    }
  } else {
    fi.title = fmt::format(
        "The engine stopped reporting with {} requests running: no stats line for the last {:.0f} "
        "s of the log, from {} ({})",
        open->running_before, Sec(open->gap_ns), open->start_label, EngineName(*open_at));
    fi.evidence.push_back(Num("silent_time", Sec(open->gap_ns), "s"));
    fi.evidence.push_back(Num("running_before", static_cast<double>(open->running_before), ""));
    fi.evidence.push_back(Evidence{"lines_logged_meanwhile", static_cast<double>(open->lines_between),
                                   "", "lines other than stats lines"});
    for (size_t i = 0; i < f.last_lines.size(); ++i) {
      fi.evidence.push_back(Text(fmt::format("last_line_{}", i + 1), f.last_lines[i]));
    }
  }
  fi.advice =
      "An engine hang: the requests hold their slots and no step runs. Confirm while it lasts: "
      "`py-spy dump --pid <EngineCore pid>` (where the busy loop waits), GPU utilisation at 0% "
      "or pinned at 100% with no token (a kernel or a collective stuck: NCCL_DEBUG=INFO, "
      "`dmesg` for Xid/amdgpu errors), and /metrics `vllm:generation_tokens_total` not moving. "
      "The lines above are the last ones before it";
  out.push_back(std::move(fi));
}

// Baseline: the median generation rate of the busy points before the run examined; the first
// run of kCollapseMinIntervals points far under it with the batch as large, and its baseline
// (into `base`).
std::optional<Run> GenerationFall(const EngineSeries& s, double& base) {
  std::optional<Run> fall;
  for (size_t i = 2; i < s.size() && !fall; ++i) {
    std::vector<double> before;
    int64_t run_ref = 0;
    for (size_t k = 0; k < i; ++k) {
      if (s.running[k] > 0 && s.gen_tps[k] > 0) {
        before.push_back(s.gen_tps[k]);
        run_ref = std::max(run_ref, s.running[k]);
      }
    }
    if (before.size() < 2) continue;
    base = Median(before);
    auto low = [&](size_t k) {
      return s.running[k] > 0 && s.gen_tps[k] > 0 && s.gen_tps[k] < kCollapseGenShare * base &&
             static_cast<double>(s.running[k]) >= 0.75 * static_cast<double>(run_ref);
    };
    size_t j = i;
    while (j < s.size() && low(j)) ++j;
    if (j - i >= kCollapseMinIntervals) fall = Run{i, j - 1};
  }
  return fall;
}

// Prefix-cache hit rate collapse: from >= 20% to under half of its best while busy; the point
// where it fell, and the best before it (into `hit_best`).
std::optional<size_t> HitRateFall(const EngineSeries& s, double& hit_best) {
  std::optional<size_t> hit_fall;
  for (size_t k = 0; k < s.size(); ++k) {
    if (!s.prefix_hit_pct[k]) continue;
    const double h = *s.prefix_hit_pct[k];
    if (hit_best >= 20 && h < 0.5 * hit_best && s.running[k] > 0) {
      hit_fall = k;
      break;
    }
    hit_best = std::max(hit_best, h);
  }
  return hit_fall;
}

// The finding for a collapse over `fall` from `base` tok/s; `storm` and `hit_fall` (with its
// `hit_best`) name the cause when set.
Finding CollapseFinding(const LogFacts& f, const EngineFacts& e, const Run& fall, double base,
                        const std::optional<Run>& storm, std::optional<size_t> hit_fall,
                        double hit_best) {
  const EngineSeries& s = e.series;
  const bool stormy = storm && storm->points() >= kCollapseMinIntervals;
  int64_t preempted = 0;
  double low_gen = s.gen_tps[fall.first];
  for (size_t k = fall.first; k <= fall.last; ++k) {
    preempted += s.preemptions[k];
    low_gen = std::min(low_gen, s.gen_tps[k]);
  }
  Finding fi;
  fi.id = "logs.throughput_collapse";
  fi.layer = Layer::kConfig;
  fi.severity = low_gen < 0.5 * base ? Severity::kFail : Severity::kWarn;
  fi.title = fmt::format(
      "Generation throughput collapsed from {:.0f} to {:.0f} tok/s while the batch stayed at "
      "{} running, {} stats lines from {} ({}){}",
      base, low_gen, s.running[fall.first], fall.points(), f.Label(s.t_ns[fall.first]),
      EngineName(e), stormy ? ", with preemptions in every interval" : "");
  fi.evidence.push_back(Num("baseline_generation_throughput", base, "tok/s"));
  fi.evidence.push_back(Num("lowest_generation_throughput", low_gen, "tok/s"));
  fi.evidence.push_back(Text("first_low", PointText(f, s, fall.first)));
  fi.evidence.push_back(Text("last_low", PointText(f, s, fall.last)));
  if (stormy) {
    fi.evidence.push_back(Num("preemptions_in_collapse", static_cast<double>(preempted), ""));
    fi.evidence.push_back(
        Num("consecutive_intervals_with_preemptions", static_cast<double>(storm->points()), ""));
  }
  if (hit_fall) {
    fi.evidence.push_back(
        Text("prefix_cache_hit_rate",
             fmt::format("fell from {:.1f}% to {:.1f}% at {}", hit_best,
                         *s.prefix_hit_pct[*hit_fall], f.Label(s.t_ns[*hit_fall]))));
  }
  std::string why;
  if (stormy) {
    why =
        "A preemption storm: the running batch no longer fits the KV cache, so requests are "
        "evicted and recomputed every interval. Admit fewer (--max-num-seqs lower, e.g. to the "
        "running count before the collapse) or give the cache more memory "
        "(--gpu-memory-utilization, --kv-cache-dtype fp8)";
  } else if (hit_fall) {
    why =
        "The prefix cache stopped hitting: shared prefixes were evicted by new traffic (KV "
        "cache too small for the working set) or the prompts changed; each request now "
        "prefills in full. Give the cache more room or route requests of one prefix to one "
        "replica";
  } else {
    why =
        "The same batch makes fewer tokens per second: longer contexts (attention cost grows "
        "with tokens held: see KV usage), GPU clocks throttled (latdoc doctor: gpu.throttle), "
        "or another process on the GPU";
  }
  fi.advice = why +
              ". Confirm with /metrics: vllm:num_preemptions_total rising, "
              "vllm:prefix_cache_hits_total / queries_total falling, and "
              "vllm:generation_tokens_total's rate over the same minutes";
  return fi;
}

// Throughput collapse: generation throughput falls and stays down while the batch stays as large;
// with it, preemptions in interval after interval, or the prefix-cache hit rate falling.
void ThroughputCollapse(const LogFacts& f, std::vector<Finding>& out) {
  for (const EngineFacts* e : Engines(f)) {
    const EngineSeries& s = e->series;
    if (s.size() < 4) continue;
    double base = 0;
    std::optional<Run> fall = GenerationFall(s, base);
    // Preemption storm: preemptions in consecutive intervals.
    int64_t storm_dur = 0;
    auto storm = LongestRun(
        *e, [&](size_t k) { return s.preemptions[k] > 0; }, &storm_dur);
    double hit_best = 0;
    std::optional<size_t> hit_fall = HitRateFall(s, hit_best);
    if (!fall) continue;
    out.push_back(CollapseFinding(f, *e, *fall, base, storm, hit_fall, hit_best));
    return;   // one engine is enough to say it
  }
}

// Prefill starvation of decode: intervals where prompt throughput spikes are the intervals where
// generation drops; chunked prefill lets long prompts take most of each step's token budget.
void PrefillStarvation(const LogFacts& f, std::vector<Finding>& out) {
  for (const EngineFacts* e : Engines(f)) {
    const EngineSeries& s = e->series;
    std::vector<double> decode_only, decode_running;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.prompt_tps[i] == 0 && s.gen_tps[i] > 0 && s.running[i] > 0) {
        decode_only.push_back(s.gen_tps[i]);
        decode_running.push_back(static_cast<double>(s.running[i]));
      }
    }
    if (decode_only.size() < 2) continue;
    const double base = Median(decode_only);
    // Only intervals with a batch about as large as the decode-only ones: a burst's first
    // interval (a few running, all prefilling) makes few tokens for want of streams, not for
    // prefill taking the steps.
    const double min_running = 0.5 * Median(decode_running);
    std::vector<size_t> spikes, starved;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s.running[i] == 0 || static_cast<double>(s.running[i]) < min_running ||
          s.prompt_tps[i] < kStarvationPromptOverGen * base) {
        continue;
      }
      spikes.push_back(i);
      if (s.gen_tps[i] < kStarvationGenShare * base) starved.push_back(i);
    }
    if (starved.size() < kStarvationMinIntervals || 2 * starved.size() < spikes.size()) continue;
    double worst_gen = s.gen_tps[starved[0]], peak_prompt = 0;
    for (size_t i : starved) {
      worst_gen = std::min(worst_gen, s.gen_tps[i]);
      peak_prompt = std::max(peak_prompt, s.prompt_tps[i]);
    }
    Finding fi;
    fi.id = "logs.prefill_starvation";
    fi.layer = Layer::kConfig;
    fi.severity = Severity::kWarn;
    fi.title = fmt::format(
        "Prefill starved decode: in {} of {} prompt-heavy intervals generation fell to {:.0f} tok/s "
        "(from {:.0f} with no prefill) while prompts ran at up to {:.0f} tok/s ({})",
        starved.size(), spikes.size(), worst_gen, base, peak_prompt, EngineName(*e));
    fi.evidence.push_back(Num("decode_only_generation_throughput", base, "tok/s"));
    fi.evidence.push_back(Num("lowest_generation_throughput_during_prefill", worst_gen, "tok/s"));
    fi.evidence.push_back(Num("peak_prompt_throughput", peak_prompt, "tok/s"));
    for (size_t k = 0; k < std::min<size_t>(starved.size(), 3); ++k) {
      fi.evidence.push_back(Text(fmt::format("interval_{}", k + 1), PointText(f, s, starved[k])));
    }
    fi.advice =
        "Each engine step shares --max-num-batched-tokens between decode tokens and prefill "
        "chunks; long prompts take most of it and every running stream's next token waits (ITL "
        "spikes). For a latency target, lower --max-num-batched-tokens (e.g. 2048-4096: smaller "
        "prefill chunks per step), keep chunked prefill on, or split prefill and decode "
        "(disaggregated serving). Confirm: vllm:inter_token_latency_seconds p99 jumping in the "
        "same minutes as vllm:prompt_tokens_total's rate";
    out.push_back(std::move(fi));
    return;
  }
}

std::string_view FatalAdvice(std::string_view kind) {
  if (kind == "oom") {
    return "GPU memory ran out at run time: lower --gpu-memory-utilization (leave room for "
           "activations and CUDA graphs), --max-num-seqs or --max-num-batched-tokens, or "
           "--max-model-len; the allocation size in the line says how much was missing";
  }
  if (kind == "collective_timeout") {
    return "A collective (all-reduce) across tensor-parallel ranks did not complete: one rank "
           "hung or died first. Find the first rank that stopped (its own log), check `dmesg` "
           "for Xid / amdgpu errors and the links (nvidia-smi topo -m, rocm-smi --showtopo); "
           "rerun with NCCL_DEBUG=INFO (RCCL reads it too)";
  }
  if (kind == "hip_error") {
    return "A ROCm kernel failed: rerun with AMD_SERIALIZE_KERNEL=3 to locate it, check `dmesg` "
           "for amdgpu faults, and that the ROCm, driver and vLLM build versions match";
  }
  if (kind == "cuda_error") {
    return "A CUDA kernel failed: rerun with CUDA_LAUNCH_BLOCKING=1 to locate it and check "
           "`dmesg` for Xid errors";
  }
  return "Start from the first ERROR line above it in the log; the engine's own traceback "
         "(EngineCore / worker) holds the cause, the API server's EngineDeadError is its echo";
}

void EngineDied(const LogFacts& f, std::vector<Finding>& out) {
  if (f.fatal.empty()) return;
  const logs::FatalLine* first = &f.fatal.front();
  for (const auto& x : f.fatal) {
    if (x.cause) {
      first = &x;
      break;
    }
  }
  Finding fi;
  fi.id = "logs.engine_died";
  fi.layer = Layer::kSystem;
  fi.severity = Severity::kFail;
  std::string text = first->text.substr(0, 160);
  std::replace(text.begin(), text.end(), '`', '\'');
  fi.title = fmt::format("The engine died{}: {}",
                         first->label.empty() ? "" : " at " + first->label, text);
  fi.evidence.push_back(Text("first_cause", fmt::format("{} ({})", first->where, first->kind)));
  for (const auto& x : f.fatal) {
    if (&x == first) continue;
    std::string t = x.text.substr(0, 160);
    fi.evidence.push_back(Text(x.kind, fmt::format("{}{}: {}", x.where,
                                                   x.label.empty() ? "" : " at " + x.label, t)));
  }
  fi.advice = std::string(FatalAdvice(first->kind)) +
              ". Confirm: the process exit (systemd/kubectl: exit code, OOMKilled), and "
              "/health failing from the time above";
  out.push_back(std::move(fi));
}

}  // namespace

void EvaluateLogVerdicts(const logs::LogFacts& facts, std::vector<Finding>& out) {
  EngineDied(facts, out);
  AdmissionStalled(facts, out);
  NoProgress(facts, out);
  ThroughputCollapse(facts, out);
  PrefillStarvation(facts, out);
}

}  // namespace latdoc::rules
