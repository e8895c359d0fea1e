#include "loadgen/merge.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/units.h"
#include "loadgen/shard.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;

namespace {

// A value as a message quotes it: strings in quotes, the rest as JSON, long ones cut.
std::string Quote(const ordered_json& v) {
  std::string s = JsonText(v);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// The first path under `prefix` where `a` and `b` differ ("shard.load.request_rate"), with
// the two values; nullopt when equal.
struct Difference {
  std::string path;
  ordered_json a, b;
};
std::optional<Difference> FirstDifference(const ordered_json& a, const ordered_json& b,
                                          const std::string& prefix) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [k, v] : a.items()) {
      const std::string path = prefix + "." + k;
      if (!b.contains(k)) return Difference{path, v, ordered_json()};
      if (auto d = FirstDifference(v, b[k], path)) return d;
    }
    for (const auto& [k, v] : b.items())
      if (!a.contains(k)) return Difference{prefix + "." + k, ordered_json(), v};
    return std::nullopt;
  }
  if (a == b) return std::nullopt;
  return Difference{prefix, a, b};
}

// What a shard file must hold, checked before anything is taken from it.
struct Shard {
  const ShardResult* file;
  const ordered_json* block;  // its "shard"
  int index = 0, count = 0;
  int64_t started_unix_ns = 0, ended_unix_ns = 0;
};

StatusOr<Shard> CheckShard(const ShardResult& f) {
  const ordered_json& j = f.json;
  auto bad = [&](const std::string& what) { return InvalidArgument(fmt::format("{}: {}", f.path, what)); };
  if (!j.is_object()) return bad("not a JSON object");
  const std::string schema = j.contains("schema") && j["schema"].is_string() ? j["schema"].get<std::string>() : "";
  if (schema != kBenchSchema) {
    return bad(fmt::format("schema {}: expected \"{}\" (a result of latdoc bench --shard)",
                           j.contains("schema") ? Quote(j["schema"]) : "missing", kBenchSchema));
  }
  if (!j.contains("shard") || !j["shard"].is_object()) {
    // bench writes its error and no records when it sent nothing (no /v1/models, say).
    if (j.contains("error") && j["error"].is_string())
      return bad(fmt::format("no \"shard\" block: that bench sent no request ({})", j["error"].get<std::string>()));
    return bad("no \"shard\" block: not a result of latdoc bench --shard");
  }
  const ordered_json& s = j["shard"];
  const std::string shard_schema = s.contains("schema") && s["schema"].is_string() ? s["schema"].get<std::string>() : "";
  if (shard_schema != kShardSchema) {
    return bad(fmt::format("shard.schema {}: expected \"{}\"",
                           s.contains("schema") ? Quote(s["schema"]) : "missing", kShardSchema));
  }
  Shard out{&f, &s};
  for (auto [key, dest] : {std::pair{"index", &out.index}, std::pair{"count", &out.count}}) {
    if (!s.contains(key) || !s[key].is_number_integer()) return bad(fmt::format("shard.{}: expected an integer", key));
    *dest = int(std::clamp<int64_t>(s[key].get<int64_t>(), -1, kMaxShards + 1));
  }
  if (out.count < 1 || out.count > kMaxShards) return bad(fmt::format("shard.count {}: expected 1 to {}", out.count, kMaxShards));
  if (out.index < 0 || out.index >= out.count)
    return bad(fmt::format("shard.index {}: expected 0 to {}", out.index, out.count - 1));
  for (auto [key, dest] : {std::pair{"started_unix_ns", &out.started_unix_ns},
                           std::pair{"ended_unix_ns", &out.ended_unix_ns}}) {
    if (!s.contains(key) || !s[key].is_number_integer()) return bad(fmt::format("shard.{}: expected an integer", key));
    *dest = s[key].get<int64_t>();
  }
  for (const char* key : {"target", "load"})
    if (!s.contains(key) || !s[key].is_object()) return bad(fmt::format("shard.{}: expected an object", key));
  if (!j.contains("requests"))
    return bad("no per-request records (\"requests\"): write shards with latdoc bench --shard");
  return out;
}

// The number of requests in flight at once at most, from the records' send and end times (on
// the shards' wall clocks; ends before starts at equal times).
int MaxInFlight(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<int64_t, int>> events;
  for (const RequestRecord& r : records) {
    if (r.sent_ns < 0 || r.end_ns < 0) continue;
    events.emplace_back(r.sent_ns, +1);
    events.emplace_back(r.end_ns, -1);
  }
  std::sort(events.begin(), events.end());
  int now = 0, most = 0;
  for (const auto& [t, d] : events) most = std::max(most, now += d);
  return most;
}

std::optional<double> NumberOrNull(const ordered_json& j, const char* key) {
  if (j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

// The shards by index, once each and all there, every one holding the reference's count, target
// and load: shards of one load.
using ShardsByIndex = std::map<int, const Shard*>;
StatusOr<ShardsByIndex> IndexShards(const std::vector<Shard>& shards) {
  // One load: the first file is the reference every other is held to.
  const Shard& ref = shards.front();
  ShardsByIndex by_index;
  for (const Shard& s : shards) {
    const std::string& path = s.file->path;
    if (s.count != ref.count) {
      return InvalidArgument(fmt::format("{}: shard.count {} differs from {}'s {}: not shards of one load",
                                         path, s.count, ref.file->path, ref.count));
    }
    for (const char* key : {"target", "load"}) {
      if (auto d = FirstDifference((*ref.block)[key], (*s.block)[key], std::string("shard.") + key)) {
        return InvalidArgument(fmt::format(
            "{}: {} {} differs from {}'s {}: the shards ran {}", path, d->path, Quote(d->b),
            ref.file->path, Quote(d->a),
            std::string_view(key) == "target" ? "against different targets" : "different loads"));
      }
    }
    auto [it, inserted] = by_index.emplace(s.index, &s);
    if (!inserted) {
      return InvalidArgument(fmt::format("{}: shard.index {} again (also in {})", path, s.index,
                                         it->second->file->path));
    }
  }
  if (int(by_index.size()) != ref.count) {
    std::string missing;
    for (int i = 0; i < ref.count && missing.size() < 200; ++i)
      if (!by_index.count(i)) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", i);
    return InvalidArgument(fmt::format("shard{} {} of {} missing: give every shard's result",
                                       ref.count - int(by_index.size()) == 1 ? "" : "s", missing, ref.count));
  }
  return by_index;
}

// The shards' records together, and when their runs began and ended.
struct MergedRecords {
  BenchRun run;
  int64_t latest_start = 0, earliest_end = 0;
  ordered_json shard_list = ordered_json::array();  // the result's merged.shards
};

// The union of the records, in the order they were due; a partial shard adds a note.
StatusOr<MergedRecords> UnionRecords(const ShardsByIndex& by_index, const Shard& ref,
                                     std::vector<std::string>& notes) {
  MergedRecords m;
  BenchRun& run = m.run;
  run.model = ref.file->json.value("model_id", std::string());
  run.start_ns = ref.started_unix_ns;
  run.end_ns = ref.ended_unix_ns;
  m.latest_start = ref.started_unix_ns;
  m.earliest_end = ref.ended_unix_ns;
  for (const auto& [index, s] : by_index) {
    const ordered_json& j = s->file->json;
    ASSIGN_OR_RETURN(auto records, RecordsFromJson(j["requests"], s->file->path));
    if (!j.contains("model_id") || j["model_id"] != ref.file->json["model_id"]) {
      return InvalidArgument(fmt::format("{}: model_id {} differs from {}'s {}: the shards ran against different targets",
                                         s->file->path, j.contains("model_id") ? Quote(j["model_id"]) : "missing",
                                         ref.file->path, Quote(ref.file->json.value("model_id", ordered_json()))));
    }
    run.start_ns = std::min(run.start_ns, s->started_unix_ns);
    run.end_ns = std::max(run.end_ns, s->ended_unix_ns);
    m.latest_start = std::max(m.latest_start, s->started_unix_ns);
    m.earliest_end = std::min(m.earliest_end, s->ended_unix_ns);
    run.warmup_requests += j.value("warmup_requests", uint64_t{0});
    run.connections_opened += j.value("connections_opened", uint64_t{0});
    run.client_cpu_s += j.value("client_cpu_s", 0.0);
    if (j.value("partial", false)) {
      run.partial = true;
      const std::string why = j.value("partial_reason", std::string("partial"));
      run.partial_reason += fmt::format("{}shard {} ({}): {}", run.partial_reason.empty() ? "" : "; ",
                                        index, s->file->path, why);
      notes.push_back(fmt::format("shard {} ({}) is partial: {}", index, s->file->path, why));
    }
    uint64_t completed = 0, failed = 0;
    for (RequestRecord& r : records) {
      (r.outcome == Outcome::kOk ? completed : failed) += 1;
      run.records.push_back(std::move(r));
    }
    m.shard_list.push_back({{"index", index},
                            {"file", s->file->path},
                            {"started_unix_ns", s->started_unix_ns},
                            {"ended_unix_ns", s->ended_unix_ns},
                            {"requests", completed + failed},
                            {"completed", completed},
                            {"failed", failed}});
  }
  std::stable_sort(run.records.begin(), run.records.end(),
                   [](const RequestRecord& a, const RequestRecord& b) { return a.scheduled_ns < b.scheduled_ns; });
  for (size_t i = 0; i < run.records.size(); ++i) run.records[i].index = i;
  run.max_in_flight = MaxInFlight(run.records);
  return m;
}

// The whole load's options, as bench took them before the split, from the reference's shard
// block; the server's figures from `first_json`, shard 0's result.
Status WholeLoadOptions(const Shard& ref, const ordered_json& first_json,
                        const std::string& first_path, BenchOptions& o, ResultOptions& ro) {
  const ordered_json& load = (*ref.block)["load"];
  const ordered_json& target = (*ref.block)["target"];
  o.url = target.value("url", std::string());
  o.endpoint = target.value("endpoint", std::string()) == "chat" ? Endpoint::kChat : Endpoint::kCompletions;
  o.backend = ref.file->json.value("backend", std::string());
  if (load.contains("request_rate") && load["request_rate"].is_number()) o.request_rate = load["request_rate"].get<double>();
  else if (load.value("request_rate", ordered_json()) == "inf") o.request_rate = INFINITY;
  o.concurrency = int(NumberOrNull(load, "concurrency").value_or(1));
  o.max_concurrency = int(NumberOrNull(load, "max_concurrency").value_or(0));
  o.burstiness = NumberOrNull(load, "burstiness").value_or(1.0);
  const ordered_json judge = ref.block->value("judge", ordered_json::object());
  auto slo = ParseSlo(judge.value("slo", std::string()));
  if (!slo.ok()) return InvalidArgument(fmt::format("{}: shard.judge.slo: {}", ref.file->path, slo.status().message()));
  ro.slo = *slo;
  ro.max_error_rate = NumberOrNull(judge, "max_error_rate");
  const ordered_json summary = ref.block->value("summary", ordered_json::object());
  for (const auto& m : summary.value("percentile_metrics", ordered_json::array()))
    if (m.is_string()) o.summary_metrics.push_back(m.get<std::string>());
  for (const auto& p : summary.value("metric_percentiles", ordered_json::array()))
    if (p.is_number()) o.summary_percentiles.push_back(p.get<double>());
  // The server's own figures once: shard 0's, from its scrapes around its run (which the other
  // shards' runs overlap); summed, every request would count N times.
  if (auto sm = first_json.find(keys::kServerMetrics); sm != first_json.end()) {
    auto server = ServerFactsFromJson(*sm);
    if (!server.ok()) return InvalidArgument(fmt::format("{}: {}", first_path, server.status().message()));
    ro.server_metrics = std::move(*server);
  } else {
    ro.server_metrics = ServerFacts{};
  }
  return Status::Ok();
}

// The summary's "merged" block and its line under the title; a note when the shards
// overlapped for less than 90% of the window.
void AddMergedBlock(const Shard& ref, int metrics_shard, const MergedRecords& m,
                    MergedResult& out) {
  const BenchRun& run = m.run;
  const ordered_json& load = (*ref.block)["load"];
  const ordered_json& target = (*ref.block)["target"];
  ordered_json& j = out.summary.json;
  j.erase("start_mono_ns");  // no one monotonic clock: the window below is on the wall clock
  const int64_t overlap_ns = std::max<int64_t>(0, m.earliest_end - m.latest_start);
  const int64_t window_ns = run.end_ns - run.start_ns;
  j["merged"] = {{"shards", m.shard_list},
                 {"window",
                  {{"kind", "union"},
                   {"start", FormatRfc3339Utc(run.start_ns)},
                   {"start_unix_ns", run.start_ns},
                   {"end_unix_ns", run.end_ns},
                   {"duration_s", NsToSec(window_ns)},
                   {"overlap_s", NsToSec(overlap_ns)},
                   {"start_spread_s", NsToSec(m.latest_start - run.start_ns)}}},
                 {"server_metrics_from_shard", metrics_shard},
                 {"load", load},
                 {"target", target}};
  // One line under the title: how many shards, and how well they overlapped.
  const std::string line = fmt::format(
      "Merged: {} shard{}; window {} s, overlap {} s (starts spread over {} s)\n", ref.count,
      ref.count == 1 ? "" : "s", FormatFixed(NsToSec(window_ns), 2),
      FormatFixed(NsToSec(overlap_ns), 2), FormatFixed(NsToSec(m.latest_start - run.start_ns), 3));
  std::string& t = out.summary.text;
  t.insert(t.find('\n') + 1, line);
  if (ref.count > 1 && double(overlap_ns) < 0.9 * double(window_ns)) {
    out.notes.push_back(fmt::format(
        "the shards overlapped for {} s of the {} s window: the load was not the whole load "
        "all along (throughput is over the whole window)",
        FormatFixed(NsToSec(overlap_ns), 2), FormatFixed(NsToSec(window_ns), 2)));
  }
}

}  // namespace

StatusOr<MergedResult> MergeShards(const std::vector<ShardResult>& files) {
  if (files.empty()) return InvalidArgument("no shard results given");
  std::vector<Shard> shards;
  for (const ShardResult& f : files) {
    ASSIGN_OR_RETURN(Shard s, CheckShard(f));
    shards.push_back(s);
  }
  const Shard& ref = shards.front();
  ASSIGN_OR_RETURN(ShardsByIndex by_index, IndexShards(shards));
  MergedResult out;
  ASSIGN_OR_RETURN(MergedRecords m, UnionRecords(by_index, ref, out.notes));
  BenchOptions o;
  ResultOptions ro;
  RETURN_IF_ERROR(WholeLoadOptions(ref, by_index.begin()->second->file->json,
                                   by_index.begin()->second->file->path, o, ro));
  out.summary = SummarizeRun(m.run, o, ro);
  AddMergedBlock(ref, by_index.begin()->first, m, out);
  return out;
}

}  // namespace latdoc::loadgen
