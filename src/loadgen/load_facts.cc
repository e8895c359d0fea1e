#include "loadgen/load_facts.h"

#include <cmath>

#include <fmt/core.h>

#include "base/strings.h"
#include "stats/sample_summary.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;

namespace keys {
const char* const kMeanTtftMs = "mean_ttft_ms";
const char* const kMedianTtftMs = "median_ttft_ms";
const char* const kP99TtftMs = "p99_ttft_ms";
const char* const kMeanTpotMs = "mean_tpot_ms";
const char* const kMedianTpotMs = "median_tpot_ms";
const char* const kP99TpotMs = "p99_tpot_ms";
const char* const kMeanItlMs = "mean_itl_ms";
const char* const kMedianItlMs = "median_itl_ms";
const char* const kP99ItlMs = "p99_itl_ms";
const char* const kMeanE2elMs = "mean_e2el_ms";
const char* const kMedianE2elMs = "median_e2el_ms";
const char* const kP99E2elMs = "p99_e2el_ms";
const char* const kRequestThroughput = "request_throughput";
const char* const kOutputThroughput = "output_throughput";
const char* const kTotalTokenThroughput = "total_token_throughput";
const char* const kRequestGoodput = "request_goodput";
const char* const kCompleted = "completed";
const char* const kFailed = "failed";
const char* const kServerMetrics = "server_metrics";
const char* const kMaxRunning = "max_running";
const char* const kMaxWaiting = "max_waiting";
const char* const kMaxKvCacheUsage = "max_kv_cache_usage";
const char* const kPreemptions = "preemptions";
const char* const kQueueMeanMs = "queue_mean_ms";
const char* const kPrefillMeanMs = "prefill_mean_ms";
}  // namespace keys

std::string StatKey(std::string_view stat, std::string_view metric) {
  return fmt::format("{}_{}_ms", stat, metric);
}

std::optional<double> LatencyStats::At(double percent) const {
  for (const Percentile& p : percentiles)
    if (p.percent == percent) return p.ms;
  return std::nullopt;
}

namespace {

// --- writing ----------------------------------------------------------------------------------

template <typename T>
ordered_json Opt(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

// Keys latdoc added over the versions: written when set, left out when not (files of an older
// latdoc lack them).
template <typename T>
void PutIf(ordered_json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

ordered_json TtftSplitJson(const TtftSplit& b) {
  ordered_json j;
  j["client_ttft_ms"] = b.client_ttft_ms;
  PutIf(j, "client_queue_ms", b.client_queue_ms);
  j["server_ttft_ms"] = Opt(b.server_ttft_ms);
  j["queue_ms"] = Opt(b.queue_ms);
  j["prefill_ms"] = Opt(b.prefill_ms);
  j["network_and_front_end_ms"] = Opt(b.network_and_front_end_ms);
  j["server_other_ms"] = Opt(b.server_other_ms);
  PutIf(j, "unsplit_ms", b.unsplit_ms);
  PutIf(j, "not_measurable", b.not_measurable);
  j["note"] = b.note;
  return j;
}

ordered_json TcpJson(const TcpFacts& t) {
  ordered_json j;
  j["connections"] = t.connections;
  j["segs_out"] = t.segs_out;
  j["retrans_segs"] = t.retrans_segs;
  j["retrans_share"] = Opt(t.retrans_share);
  j["rcv_ooo_packets"] = t.rcv_ooo_packets;
  j["srtt_max_ms"] = Opt(t.srtt_max_ms);
  j["pmtu_min_bytes"] = Opt(t.pmtu_min_bytes);
  j["snd_mss_min_bytes"] = Opt(t.snd_mss_min_bytes);
  j["worst_ca_state"] = t.worst_ca_state;
  return j;
}

ordered_json ClientLoadJson(const ClientLoadFacts& c) {
  ordered_json j;
  j["cpu_s"] = c.cpu_s;
  j["events"] = c.events;
  j["events_per_cpu_s"] = Opt(c.events_per_cpu_s);
  j["reads"] = c.reads;
  j["late_reads"] = c.late_reads;
  j["late_read_share"] = Opt(c.late_read_share);
  j["late_read_ms"] = c.late_read_ms;
  j["saturated_threads"] = c.saturated_threads;
  ordered_json per = ordered_json::array();
  for (const ThreadLoadFacts& l : c.per_thread) {
    per.push_back({{"cpu_s", l.cpu_s},
                   {"wall_s", l.wall_s},
                   {"busy", l.busy},
                   {"events", l.events},
                   {"events_per_cpu_s", Opt(l.events_per_cpu_s)},
                   {"reads", l.reads},
                   {"late_reads", l.late_reads},
                   {"saturated", l.saturated}});
  }
  j["per_thread"] = per;
  return j;
}

void PutStats(ordered_json& j, const LatencyStats& s, std::string_view metric) {
  j[StatKey("mean", metric)] = Opt(s.mean_ms);
  j[StatKey("median", metric)] = Opt(s.median_ms);
  j[StatKey("std", metric)] = Opt(s.std_ms);
  for (const Percentile& p : s.percentiles)
    j[StatKey("p" + stats::PercentileWord(p.percent), metric)] = Opt(p.ms);
  j[StatKey("max", metric)] = Opt(s.max_ms);
}

// --- reading ----------------------------------------------------------------------------------

// Reads the fields of one JSON object; the first mistyped key becomes `status` and later reads
// do nothing. `where` is the object's dotted path ("" at the top, "server_metrics.").
class Reader {
 public:
  Reader(const ordered_json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  void Fail(const std::string& key, std::string_view what) {
    if (status_.ok())
      status_ = InvalidArgument(fmt::format("{}{}: expected {}", where_, key, what));
  }
  std::string Path(const std::string& key) const { return where_ + key + "."; }

  // The value at `key`, or nullptr when missing or null.
  const ordered_json* Find(const std::string& key) const {
    if (!status_.ok()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  const ordered_json* Object(const std::string& key) {
    const ordered_json* v = Find(key);
    if (v && !v->is_object()) {
      Fail(key, "an object");
      return nullptr;
    }
    return v;
  }
  const ordered_json* Array(const std::string& key) {
    const ordered_json* v = Find(key);
    if (v && !v->is_array()) {
      Fail(key, "an array");
      return nullptr;
    }
    return v;
  }

  void Get(const std::string& key, std::optional<double>* out) {
    if (const ordered_json* v = Find(key)) {
      if (v->is_number())
        *out = v->get<double>();
      else
        Fail(key, "a number");
    }
  }
  void Get(const std::string& key, double* out) {
    std::optional<double> v;
    Get(key, &v);
    if (v) *out = *v;
  }
  // Integers: a float with an integral value is taken too (a file edited by hand).
  void Get(const std::string& key, std::optional<int64_t>* out) {
    if (const ordered_json* v = Find(key)) {
      if (v->is_number_integer())
        *out = v->get<int64_t>();
      else if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>())
        *out = int64_t(v->get<double>());
      else
        Fail(key, "an integer");
    }
  }
  void Get(const std::string& key, int64_t* out) {
    std::optional<int64_t> v;
    Get(key, &v);
    if (v) *out = *v;
  }
  void Get(const std::string& key, std::optional<uint64_t>* out) {
    if (const ordered_json* v = Find(key)) {
      if (v->is_number_unsigned())
        *out = v->get<uint64_t>();
      else if (v->is_number_integer() && v->get<int64_t>() >= 0)
        *out = uint64_t(v->get<int64_t>());
      else if (v->is_number_float() && v->get<double>() >= 0 &&
               std::nearbyint(v->get<double>()) == v->get<double>())
        *out = uint64_t(v->get<double>());
      else
        Fail(key, "a count (an integer >= 0)");
    }
  }
  void Get(const std::string& key, uint64_t* out) {
    std::optional<uint64_t> v;
    Get(key, &v);
    if (v) *out = *v;
  }
  void Get(const std::string& key, std::optional<bool>* out) {
    if (const ordered_json* v = Find(key)) {
      if (v->is_boolean())
        *out = v->get<bool>();
      else
        Fail(key, "true or false");
    }
  }
  void Get(const std::string& key, bool* out) {
    std::optional<bool> v;
    Get(key, &v);
    if (v) *out = *v;
  }
  void Get(const std::string& key, std::optional<std::string>* out) {
    if (const ordered_json* v = Find(key)) {
      if (v->is_string())
        *out = v->get<std::string>();
      else
        Fail(key, "a string");
    }
  }
  void Get(const std::string& key, std::string* out) {
    std::optional<std::string> v;
    Get(key, &v);
    if (v) *out = *v;
  }
  void Get(const std::string& key, std::vector<std::string>* out) {
    if (const ordered_json* v = Array(key)) {
      for (const auto& e : *v) {
        if (!e.is_string()) return Fail(key, "an array of strings");
        out->push_back(e.get<std::string>());
      }
    }
  }
  void Get(const std::string& key, std::vector<double>* out) {
    if (const ordered_json* v = Array(key)) {
      for (const auto& e : *v) {
        if (!e.is_number()) return Fail(key, "an array of numbers");
        out->push_back(e.get<double>());
      }
    }
  }
  void Get(const std::string& key, std::map<std::string, uint64_t>* out) {
    if (const ordered_json* v = Object(key)) {
      for (const auto& [k, n] : v->items()) {
        std::optional<uint64_t> count;
        Reader(*v, "").Get(k, &count);
        if (!count) return Fail(key + "." + k, "a count (an integer >= 0)");
        (*out)[k] = *count;
      }
    }
  }

 private:
  const ordered_json& j_;
  std::string where_;
  Status status_;
};

StatusOr<TtftSplit> TtftSplitFromJson(const ordered_json& j, const std::string& where) {
  Reader r(j, where);
  TtftSplit b;
  r.Get("client_ttft_ms", &b.client_ttft_ms);
  r.Get("client_queue_ms", &b.client_queue_ms);
  r.Get("server_ttft_ms", &b.server_ttft_ms);
  r.Get("queue_ms", &b.queue_ms);
  r.Get("prefill_ms", &b.prefill_ms);
  r.Get("network_and_front_end_ms", &b.network_and_front_end_ms);
  r.Get("server_other_ms", &b.server_other_ms);
  r.Get("unsplit_ms", &b.unsplit_ms);
  r.Get("not_measurable", &b.not_measurable);
  r.Get("note", &b.note);
  if (!r.ok()) return r.status();
  return b;
}

StatusOr<ServerFacts> ServerFromJson(const ordered_json& j, const std::string& where) {
  if (!j.is_object())
    return InvalidArgument(
        fmt::format("{}: expected an object", where.substr(0, where.size() - 1)));
  Reader r(j, where);
  ServerFacts s;
  r.Get("metrics_available", &s.metrics_available);
  r.Get("error", &s.error);
  r.Get("server", &s.server);
  r.Get("server_kind", &s.server_kind);
  r.Get("ttft_mean_ms", &s.ttft_mean_ms);
  r.Get("ttft_p50_ms", &s.ttft_p50_ms);
  r.Get("ttft_p99_ms", &s.ttft_p99_ms);
  r.Get(keys::kQueueMeanMs, &s.queue_mean_ms);
  r.Get(keys::kPrefillMeanMs, &s.prefill_mean_ms);
  r.Get("decode_mean_ms", &s.decode_mean_ms);
  r.Get("itl_mean_ms", &s.itl_mean_ms);
  r.Get("e2e_mean_ms", &s.e2e_mean_ms);
  r.Get("server_restarted", &s.server_restarted);
  r.Get(keys::kPreemptions, &s.preemptions);
  r.Get("requests_finished", &s.requests_finished);
  r.Get(keys::kMaxRunning, &s.max_running);
  r.Get(keys::kMaxWaiting, &s.max_waiting);
  r.Get(keys::kMaxKvCacheUsage, &s.max_kv_cache_usage);
  if (const ordered_json* tl = r.Array("timeline")) {
    s.timeline.emplace();
    for (size_t i = 0; i < tl->size() && r.ok(); ++i) {
      const ordered_json& e = (*tl)[i];
      const std::string w = fmt::format("{}timeline[{}]", where, i);
      if (!e.is_object()) return InvalidArgument(w + ": expected an object");
      Reader pr(e, w + ".");
      TimelinePoint p;
      pr.Get("t_s", &p.t_s);
      pr.Get("running", &p.running);
      pr.Get("waiting", &p.waiting);
      pr.Get("kv_cache_usage", &p.kv_cache_usage);
      if (!pr.ok()) return pr.status();
      s.timeline->push_back(p);
    }
  }
  if (const ordered_json* b = r.Object("ttft_breakdown")) {
    ASSIGN_OR_RETURN(s.ttft_breakdown, TtftSplitFromJson(*b, r.Path("ttft_breakdown")));
  }
  if (!r.ok()) return r.status();
  return s;
}

StatusOr<TcpFacts> TcpFromJson(const ordered_json& j, const std::string& where) {
  Reader r(j, where);
  TcpFacts t;
  r.Get("connections", &t.connections);
  r.Get("segs_out", &t.segs_out);
  r.Get("retrans_segs", &t.retrans_segs);
  r.Get("retrans_share", &t.retrans_share);
  r.Get("rcv_ooo_packets", &t.rcv_ooo_packets);
  r.Get("srtt_max_ms", &t.srtt_max_ms);
  r.Get("pmtu_min_bytes", &t.pmtu_min_bytes);
  r.Get("snd_mss_min_bytes", &t.snd_mss_min_bytes);
  r.Get("worst_ca_state", &t.worst_ca_state);
  if (!r.ok()) return r.status();
  return t;
}

StatusOr<ClientLoadFacts> ClientLoadFromJson(const ordered_json& j, const std::string& where) {
  Reader r(j, where);
  ClientLoadFacts c;
  r.Get("cpu_s", &c.cpu_s);
  r.Get("events", &c.events);
  r.Get("events_per_cpu_s", &c.events_per_cpu_s);
  r.Get("reads", &c.reads);
  r.Get("late_reads", &c.late_reads);
  r.Get("late_read_share", &c.late_read_share);
  r.Get("late_read_ms", &c.late_read_ms);
  r.Get("saturated_threads", &c.saturated_threads);
  if (const ordered_json* per = r.Array("per_thread")) {
    for (size_t i = 0; i < per->size(); ++i) {
      const ordered_json& e = (*per)[i];
      const std::string w = fmt::format("{}per_thread[{}]", where, i);
      if (!e.is_object()) return InvalidArgument(w + ": expected an object");
      Reader tr(e, w + ".");
      ThreadLoadFacts t;
      tr.Get("cpu_s", &t.cpu_s);
      tr.Get("wall_s", &t.wall_s);
      tr.Get("busy", &t.busy);
      tr.Get("events", &t.events);
      tr.Get("events_per_cpu_s", &t.events_per_cpu_s);
      tr.Get("reads", &t.reads);
      tr.Get("late_reads", &t.late_reads);
      tr.Get("saturated", &t.saturated);
      if (!tr.ok()) return tr.status();
      c.per_thread.push_back(t);
    }
  }
  if (!r.ok()) return r.status();
  return c;
}

// vLLM's "inf" for every request at once.
void GetRequestRate(Reader& r, const ordered_json& j, std::optional<double>* out) {
  auto it = j.find("request_rate");
  if (it != j.end() && it->is_string()) {
    if (it->get<std::string>() == "inf")
      *out = INFINITY;
    else
      r.Fail("request_rate", "a number or \"inf\"");
    return;
  }
  r.Get("request_rate", out);
}

// LoadFactsFromJson's parts, in the order of the JSON: what was asked with the counts and rates
// (vLLM's keys), latdoc's accounting, then the server's figures and the verdicts. An error of a
// part read with `r` is left in `r`; one of a nested object is returned.
void ReadAsked(Reader& r, const ordered_json& j, LoadFacts& f) {
  r.Get("schema", &f.schema);
  r.Get("date", &f.date);
  r.Get("endpoint_type", &f.endpoint_type);
  r.Get("backend", &f.backend);
  r.Get("model_id", &f.model_id);
  r.Get("num_prompts", &f.num_prompts);
  GetRequestRate(r, j, &f.request_rate);
  r.Get("burstiness", &f.burstiness);
  r.Get("max_concurrency", &f.max_concurrency);
  r.Get("duration", &f.duration_s);
  r.Get(keys::kCompleted, &f.completed);
  r.Get(keys::kFailed, &f.failed);
  r.Get("total_input_tokens", &f.total_input_tokens);
  r.Get("total_output_tokens", &f.total_output_tokens);
  r.Get(keys::kRequestThroughput, &f.request_throughput);
  r.Get(keys::kRequestGoodput, &f.request_goodput);
  r.Get(keys::kOutputThroughput, &f.output_throughput);
  r.Get(keys::kTotalTokenThroughput, &f.total_token_throughput);
  r.Get("max_concurrent_requests", &f.max_concurrent_requests);
}

Status ReadAccounting(Reader& r, LoadFacts& f) {
  if (const ordered_json* pr = r.Object("per_request")) {
    Reader pr_reader(*pr, "per_request.");
    PerRequestSamples s;
    pr_reader.Get("ttft_ms", &s.ttft_ms);
    pr_reader.Get("tpot_ms", &s.tpot_ms);
    pr_reader.Get("e2el_ms", &s.e2el_ms);
    if (!pr_reader.ok()) return pr_reader.status();
    f.per_request = std::move(s);
  }
  r.Get("partial", &f.partial);
  r.Get("partial_reason", &f.partial_reason);
  r.Get("sent", &f.sent);
  r.Get("not_sent", &f.not_sent);
  r.Get("cancelled", &f.cancelled);
  r.Get("failures", &f.failures);
  r.Get("errors_sample", &f.errors_sample);
  r.Get("token_count_method", &f.token_count_method);
  r.Get("token_count_mismatches", &f.token_count_mismatches);
  if (const ordered_json* q = r.Object("client_queue")) {
    ASSIGN_OR_RETURN(f.client_queue, LatencyStatsFromJson(*q, "client_queue", "client_queue."));
    if (!f.client_queue) f.client_queue.emplace();
  }
  r.Get("warmup_requests", &f.warmup_requests);
  r.Get("connections_opened", &f.connections_opened);
  if (const ordered_json* t = r.Object("tcp")) {
    ASSIGN_OR_RETURN(f.tcp, TcpFromJson(*t, "tcp."));
  }
  r.Get("client_cpu_s", &f.client_cpu_s);
  r.Get("client_threads", &f.client_threads);
  if (const ordered_json* c = r.Object("client_load")) {
    ASSIGN_OR_RETURN(f.client_load, ClientLoadFromJson(*c, "client_load."));
  }
  r.Get("start_mono_ns", &f.start_mono_ns);
  if (const ordered_json* k = r.Object("server_kind")) {
    Reader kr(*k, "server_kind.");
    ServerKindFacts sk;
    kr.Get("id", &sk.id);
    kr.Get("name", &sk.name);
    kr.Get("evidence", &sk.evidence);
    if (!kr.ok()) return kr.status();
    f.server_kind = std::move(sk);
  }
  return Status::Ok();
}

Status ReadServerAndVerdicts(Reader& r, LoadFacts& f) {
  if (const ordered_json* s = r.Object(keys::kServerMetrics)) {
    ASSIGN_OR_RETURN(f.server, ServerFactsFromJson(*s));
  }
  if (const ordered_json* s = r.Object("slo")) {
    Reader sr(*s, "slo.");
    SloResult slo;
    sr.Get("good_percent", &slo.good_percent);
    sr.Get("target_percent", &slo.target_percent);
    sr.Get("met", &slo.met);
    if (!sr.ok()) return sr.status();
    f.slo = slo;
  }
  r.Get("error_rate", &f.error_rate);
  r.Get("max_error_rate", &f.max_error_rate);
  r.Get("problems", &f.problems);
  if (const ordered_json* v = r.Object("validation")) f.validation = *v;
  return Status::Ok();
}

}  // namespace

ordered_json ToJson(const LatencyStats& s, std::string_view metric) {
  ordered_json j;
  PutStats(j, s, metric);
  return j;
}

ordered_json ToJson(const ServerFacts& s) {
  ordered_json j;
  j["metrics_available"] = s.metrics_available;
  PutIf(j, "error", s.error);
  if (!s.metrics_available) return j;
  PutIf(j, "server", s.server);
  PutIf(j, "server_kind", s.server_kind);
  j["ttft_mean_ms"] = Opt(s.ttft_mean_ms);
  j["ttft_p50_ms"] = Opt(s.ttft_p50_ms);
  j["ttft_p99_ms"] = Opt(s.ttft_p99_ms);
  j[keys::kQueueMeanMs] = Opt(s.queue_mean_ms);
  j[keys::kPrefillMeanMs] = Opt(s.prefill_mean_ms);
  j["decode_mean_ms"] = Opt(s.decode_mean_ms);
  j["itl_mean_ms"] = Opt(s.itl_mean_ms);
  j["e2e_mean_ms"] = Opt(s.e2e_mean_ms);
  PutIf(j, "server_restarted", s.server_restarted);
  j[keys::kPreemptions] = Opt(s.preemptions);
  j["requests_finished"] = Opt(s.requests_finished);
  j[keys::kMaxRunning] = Opt(s.max_running);
  j[keys::kMaxWaiting] = Opt(s.max_waiting);
  j[keys::kMaxKvCacheUsage] = Opt(s.max_kv_cache_usage);
  if (s.timeline) {
    ordered_json tl = ordered_json::array();
    for (const TimelinePoint& p : *s.timeline) {
      tl.push_back({{"t_s", p.t_s},
                    {"running", Opt(p.running)},
                    {"waiting", Opt(p.waiting)},
                    {"kv_cache_usage", Opt(p.kv_cache_usage)}});
    }
    j["timeline"] = tl;
  }
  if (s.ttft_breakdown) j["ttft_breakdown"] = TtftSplitJson(*s.ttft_breakdown);
  return j;
}

ordered_json ToJson(const LoadFacts& f) {
  ordered_json j;
  // What was asked, counts and rates: vLLM's keys in its order.
  j["schema"] = f.schema;
  j["date"] = f.date;
  j["endpoint_type"] = Opt(f.endpoint_type);
  j["backend"] = Opt(f.backend);
  j["model_id"] = Opt(f.model_id);
  j["num_prompts"] = f.num_prompts;
  if (f.request_rate && std::isfinite(*f.request_rate))
    j["request_rate"] = *f.request_rate;
  else
    j["request_rate"] = "inf";
  j["burstiness"] = Opt(f.burstiness);
  j["max_concurrency"] = Opt(f.max_concurrency);
  j["duration"] = Opt(f.duration_s);
  j[keys::kCompleted] = f.completed;
  j[keys::kFailed] = f.failed;
  j["total_input_tokens"] = f.total_input_tokens;
  j["total_output_tokens"] = f.total_output_tokens;
  j[keys::kRequestThroughput] = Opt(f.request_throughput);
  j[keys::kRequestGoodput] = Opt(f.request_goodput);
  j[keys::kOutputThroughput] = Opt(f.output_throughput);
  j[keys::kTotalTokenThroughput] = Opt(f.total_token_throughput);
  j["max_concurrent_requests"] = Opt(f.max_concurrent_requests);
  for (auto [stats, metric] : {std::pair{&f.ttft, "ttft"}, std::pair{&f.tpot, "tpot"},
                               std::pair{&f.itl, "itl"}, std::pair{&f.e2el, "e2el"}}) {
    if (*stats) PutStats(j, **stats, metric);
  }
  if (f.per_request) {
    j["per_request"] = {{"ttft_ms", f.per_request->ttft_ms},
                        {"tpot_ms", f.per_request->tpot_ms},
                        {"e2el_ms", f.per_request->e2el_ms}};
  }
  // latdoc's additions.
  j["partial"] = f.partial;
  PutIf(j, "partial_reason", f.partial_reason);
  PutIf(j, "sent", f.sent);
  PutIf(j, "not_sent", f.not_sent);
  PutIf(j, "cancelled", f.cancelled);
  j["failures"] = f.failures;
  j["errors_sample"] = f.errors_sample;
  j["token_count_method"] = f.token_count_method;
  j["token_count_mismatches"] = f.token_count_mismatches;
  if (f.client_queue) j["client_queue"] = ToJson(*f.client_queue, "client_queue");
  j["warmup_requests"] = f.warmup_requests;
  PutIf(j, "connections_opened", f.connections_opened);
  if (f.tcp) j["tcp"] = TcpJson(*f.tcp);
  PutIf(j, "client_cpu_s", f.client_cpu_s);
  PutIf(j, "client_threads", f.client_threads);
  if (f.client_load) j["client_load"] = ClientLoadJson(*f.client_load);
  PutIf(j, "start_mono_ns", f.start_mono_ns);
  if (f.server_kind) {
    j["server_kind"] = {{"id", f.server_kind->id},
                        {"name", Opt(f.server_kind->name)},
                        {"evidence", f.server_kind->evidence}};
  }
  j[keys::kServerMetrics] = ToJson(f.server);
  // Verdicts.
  if (f.slo) {
    j["slo"] = {{"good_percent", f.slo->good_percent},
                {"target_percent", f.slo->target_percent},
                {"met", f.slo->met}};
  }
  PutIf(j, "error_rate", f.error_rate);
  j["max_error_rate"] = Opt(f.max_error_rate);
  j["problems"] = f.problems;
  if (!f.validation.is_null()) j["validation"] = f.validation;
  return j;
}

StatusOr<std::optional<LatencyStats>> LatencyStatsFromJson(const ordered_json& j,
                                                           std::string_view metric,
                                                           std::string_view where) {
  if (!j.is_object()) return std::optional<LatencyStats>();
  Reader r(j, std::string(where));
  LatencyStats s;
  bool any = false;
  const std::string suffix = fmt::format("_{}_ms", metric);
  for (const auto& [key, v] : j.items()) {
    if (key.size() <= suffix.size() + 1 ||
        key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string stat = key.substr(0, key.size() - suffix.size());
    std::optional<double>* out = nullptr;
    Percentile p;
    if (stat == "mean")
      out = &s.mean_ms;
    else if (stat == "median")
      out = &s.median_ms;
    else if (stat == "std")
      out = &s.std_ms;
    else if (stat == "max")
      out = &s.max_ms;
    else if (stat[0] == 'p') {
      // "p99", "p99.9": vLLM's word for the percent (stats::PercentileWord).
      auto percent = ParseDouble(std::string_view(stat).substr(1));
      if (!percent || stats::PercentileWord(*percent) != stat.substr(1)) continue;
      p.percent = *percent;
      out = &p.ms;
    } else {
      continue;
    }
    any = true;
    r.Get(key, out);
    if (out == &p.ms) s.percentiles.push_back(p);
  }
  if (!r.ok()) return r.status();
  if (!any) return std::optional<LatencyStats>();
  return std::optional<LatencyStats>(std::move(s));
}

StatusOr<ServerFacts> ServerFactsFromJson(const ordered_json& j) {
  return ServerFromJson(j, std::string(keys::kServerMetrics) + ".");
}

StatusOr<LoadFacts> LoadFactsFromJson(const ordered_json& j) {
  if (!j.is_object()) return InvalidArgument("expected a JSON object (a latdoc bench result)");
  Reader r(j, "");
  LoadFacts f;
  ReadAsked(r, j, f);
  if (!r.ok()) return r.status();
  ASSIGN_OR_RETURN(f.ttft, LatencyStatsFromJson(j, "ttft"));
  ASSIGN_OR_RETURN(f.tpot, LatencyStatsFromJson(j, "tpot"));
  ASSIGN_OR_RETURN(f.itl, LatencyStatsFromJson(j, "itl"));
  ASSIGN_OR_RETURN(f.e2el, LatencyStatsFromJson(j, "e2el"));
  RETURN_IF_ERROR(ReadAccounting(r, f));
  RETURN_IF_ERROR(ReadServerAndVerdicts(r, f));
  if (!r.ok()) return r.status();
  return f;
}

}  // namespace latdoc::loadgen
