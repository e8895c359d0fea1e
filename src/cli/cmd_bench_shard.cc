// latdoc bench --shard and --start-at (cmd_bench_internal.h): the shard's part of the load, the
// wait for the start time, and the shard's additions to the result.
#include <time.h>

#include <cerrno>
#include <cmath>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/units.h"
#include "cli/cmd_bench_internal.h"
#include "loadgen/shard.h"

namespace latdoc::cli::bench_internal {

namespace {

// The whole load as the result's shard.load says it (before `a.o` becomes the shard's part).
nlohmann::ordered_json ShardLoadJson(const BenchArgs& a) {
  using nlohmann::ordered_json;
  const loadgen::BenchOptions& o = a.o;
  const bool open = o.request_rate > 0;
  ordered_json load;
  load["mode"] = open ? "open" : "closed";
  load["concurrency"] = open ? ordered_json(nullptr) : ordered_json(o.concurrency);
  load["request_rate"] = !open                           ? ordered_json(nullptr)
                         : std::isfinite(o.request_rate) ? ordered_json(o.request_rate)
                                                         : ordered_json("inf");
  load["burstiness"] = open ? ordered_json(o.burstiness) : ordered_json(nullptr);
  load["max_concurrency"] =
      open && o.max_concurrency > 0 ? ordered_json(o.max_concurrency) : ordered_json(nullptr);
  load["num_prompts"] = o.num_requests > 0 ? ordered_json(o.num_requests) : ordered_json(nullptr);
  load["duration_s"] = o.duration_s > 0 ? ordered_json(o.duration_s) : ordered_json(nullptr);
  load["warmup_per_shard"] = o.warmup;
  load["ignore_eos"] = !a.no_ignore_eos;
  load["seed"] = o.seed;
  if (!a.dataset.empty()) {
    load["workload"] = {{"dataset", a.dataset}};
  } else {
    load["workload"] = {{"random",
                         {{"input_len", a.random.input_len},
                          {"output_len", a.random.output_len},
                          {"range_ratio", a.random.range_ratio},
                          {"prefix_len", a.random.prefix_len},
                          {"token_ids", a.random.token_ids}}}};
  }
  return load;
}

}  // namespace

StatusOr<ShardPlan> PlanShard(BenchArgs& a) {
  ShardPlan p;
  loadgen::BenchOptions& o = a.o;
  if (!a.start_at.empty()) {
    const int64_t now = WallNowNs();
    ASSIGN_OR_RETURN(int64_t at, loadgen::ParseStartAt(a.start_at, now));
    if (at - now > 24 * 3600 * kNsPerSec) {
      return InvalidArgument(fmt::format("--start-at '{}' is {} ahead: more than 24 h", a.start_at,
                                         FormatDurationNs(at - now)));
    }
    p.start_at_unix_ns = at;
  }
  if (a.shard.empty()) return p;
  ASSIGN_OR_RETURN(p.spec, loadgen::ParseShard(a.shard));
  p.active = true;
  using nlohmann::ordered_json;
  const bool open = o.request_rate > 0;
  ordered_json load = ShardLoadJson(a);
  // Counts are dealt: C / N each, one more to each of the lowest C % N shards.
  const loadgen::ShardSpec sp = p.spec;
  auto share = [&](int64_t total, const char* what) -> StatusOr<int> {
    const int64_t n = loadgen::ShareOf(total, sp);
    if (n == 0) {
      return InvalidArgument(
          fmt::format("--shard {}/{}: {} of {} leaves this shard none: give at least {}", sp.index,
                      sp.count, what, total, sp.count));
    }
    return int(n);
  };
  ordered_json part;
  if (open) {
    if (std::isfinite(o.request_rate)) o.request_rate /= sp.count;
    if (o.max_concurrency > 0) {
      ASSIGN_OR_RETURN(o.max_concurrency, share(o.max_concurrency, "--max-concurrency"));
    }
    part["request_rate"] =
        std::isfinite(o.request_rate) ? ordered_json(o.request_rate) : ordered_json("inf");
    part["max_concurrency"] =
        o.max_concurrency > 0 ? ordered_json(o.max_concurrency) : ordered_json(nullptr);
  } else {
    ASSIGN_OR_RETURN(o.concurrency, share(o.concurrency, "a concurrency"));
    part["concurrency"] = o.concurrency;
  }
  p.num_prompts = o.num_requests;
  if (o.num_requests > 0) {
    ASSIGN_OR_RETURN(o.num_requests, share(o.num_requests, "--num-prompts"));
    part["num_prompts"] = o.num_requests;
  }
  // A shard exists to be merged: its records go into the results file.
  if (a.json_out.empty()) {
    return InvalidArgument(
        fmt::format("--shard {}/{}: give --json FILE (or --save-result): the "
                    "shard's requests go there, for latdoc merge",
                    sp.index, sp.count));
  }
  ordered_json& b = p.block;
  b["schema"] = loadgen::kShardSchema;
  b["index"] = sp.index;
  b["count"] = sp.count;
  b["start_at"] = p.start_at_unix_ns ? ordered_json(loadgen::FormatRfc3339Utc(*p.start_at_unix_ns))
                                     : ordered_json(nullptr);
  b["start_at_unix_ns"] =
      p.start_at_unix_ns ? ordered_json(*p.start_at_unix_ns) : ordered_json(nullptr);
  b["target"] = {{"url", loadgen::ServerLabel(o.url, "")}, {"endpoint", a.endpoint}};
  b["load"] = std::move(load);
  b["part"] = std::move(part);
  b["judge"] = {{"slo", a.slo}, {"max_error_rate", a.max_error_rate >= 0 ? a.max_error_rate : 0.0}};
  b["summary"] = {{"percentile_metrics", o.summary_metrics},
                  {"metric_percentiles", o.summary_percentiles}};
  return p;
}

void WaitUntil(const ShardPlan& p, bool quiet) {
  const int64_t at = *p.start_at_unix_ns, now = WallNowNs();
  const std::string who =
      p.active ? fmt::format("shard {}/{}", p.spec.index, p.spec.count) : "--start-at";
  if (at <= now) {
    fmt::print(stderr, "latdoc bench: {}: {} passed {} ago: starting now\n", who,
               loadgen::FormatRfc3339Utc(at), FormatDurationNs(now - at));
    return;
  }
  if (!quiet) {
    fmt::print(stderr, "latdoc bench: {}: starting at {} (in {})\n", who,
               loadgen::FormatRfc3339Utc(at), FormatDurationNs(at - now));
  }
  const timespec ts{time_t(at / kNsPerSec), long(at % kNsPerSec)};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void AddShardResult(ShardPlan& p, const loadgen::BenchRun& run, nlohmann::ordered_json& json) {
  const int64_t mono_to_unix_ns = WallNowNs() - MonoNowNs();
  p.block["started_unix_ns"] = run.start_ns + mono_to_unix_ns;
  p.block["ended_unix_ns"] = run.end_ns + mono_to_unix_ns;
  p.block["target"]["model"] = run.model;
  json["shard"] = p.block;
  json["requests"] = loadgen::RecordsJson(run, mono_to_unix_ns);
}

}  // namespace latdoc::cli::bench_internal
