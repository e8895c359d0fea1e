#include "report/html_report_data.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "base/strings.h"
#include "base/units.h"
#include "servermetrics/metric_names.h"

namespace latdoc::report {
namespace {

using nlohmann::ordered_json;

const ordered_json& Child(const ordered_json& j, const char* key) {
  static const ordered_json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

ordered_json Num(std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); }

// Rounds to 6 significant digits so the data block stays small and stable.
double Round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::pow(10.0, 5 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  return std::round(v * mag) / mag;
}

std::optional<double> R6(std::optional<double> v) {
  if (v) return Round6(*v);
  return v;
}

// An array of numbers-or-null, thinned by `stride`; entries of another type become null.
ordered_json SeriesColumn(const ordered_json& arr, size_t stride, double scale) {
  ordered_json out = ordered_json::array();
  if (!arr.is_array()) return out;
  for (size_t i = 0; i < arr.size(); i += stride) {
    const ordered_json& v = arr[i];
    if (v.is_number() && std::isfinite(v.get<double>())) out.push_back(Round6(v.get<double>() * scale));
    else out.push_back(nullptr);
  }
  return out;
}

constexpr size_t kMaxSeriesPoints = 4000;

ordered_json Sweep(const std::optional<loadgen::SweepCurve>& sweep) {
  if (!sweep || sweep->steps.empty()) return nullptr;
  ordered_json out;
  ordered_json rows = ordered_json::array();
  for (const loadgen::SweepCurve::Step& s : sweep->steps) {
    ordered_json r;
    r["x"] = s.load;
    r[loadgen::keys::kP99TtftMs] = Num(R6(s.p99_ttft_ms));
    r[loadgen::keys::kP99ItlMs] = Num(R6(s.p99_itl_ms));
    r[loadgen::keys::kP99E2elMs] = Num(R6(s.p99_e2el_ms));
    r[loadgen::keys::kOutputThroughput] = Num(R6(s.output_throughput));
    rows.push_back(std::move(r));
  }
  out["x_name"] = sweep->rate_mode ? "request_rate" : "concurrency";
  out["steps"] = std::move(rows);
  if (sweep->knee) {
    ordered_json k;
    k["x"] = *sweep->knee;
    k["reached"] = sweep->knee_reached ? ordered_json(*sweep->knee_reached) : ordered_json(nullptr);
    out["knee"] = std::move(k);
  } else {
    out["knee"] = nullptr;
  }
  return out;
}

ordered_json Waterfall(const ordered_json& diagnosis) {
  const ordered_json* src = &Child(diagnosis, "ttft_waterfall");
  std::string source = "diagnose";
  if (!NumberAt(*src, "client_ttft_ms")) {
    src = &Child(Child(Child(diagnosis, "bench"), "server_metrics"), "ttft_breakdown");
    source = "bench";
  }
  const std::optional<double> client = NumberAt(*src, "client_ttft_ms");
  if (!client) return nullptr;
  static const std::pair<const char*, const char*> kParts[] = {
      {"network_and_front_end_ms", "network + front end"},
      {"queue_ms", "queue"},
      {"prefill_ms", "prefill"},
      {"server_other_ms", "server other"}};
  // With the network probed (diagnose), its part is measured and only the front end inferred.
  static const std::pair<const char*, const char*> kProbedParts[] = {
      {"network_ms", "network (measured)"},
      {"front_end_ms", "front end (inferred)"},
      {"queue_ms", "queue"},
      {"prefill_ms", "prefill"},
      {"server_other_ms", "server other"}};
  std::vector<std::pair<const char*, const char*>> parts;
  // Open loop: the wait in the client's own queue comes first, when there was one.
  if (NumberAt(*src, "client_queue_ms").value_or(0) >= 0.005) parts.push_back({"client_queue_ms", "client queue"});
  if (NumberAt(*src, "network_ms")) parts.insert(parts.end(), std::begin(kProbedParts), std::end(kProbedParts));
  else parts.insert(parts.end(), std::begin(kParts), std::end(kParts));
  // A server whose metrics time only some parts (llama.cpp, TGI): the rest stays unsplit.
  if (NumberAt(*src, "unsplit_ms")) parts.push_back({"unsplit_ms", "rest (not split)"});
  ordered_json segs = ordered_json::array();
  double at_ms = 0;
  int measured = 0;
  for (auto [key, label] : parts) {
    std::optional<double> ms = NumberAt(*src, key);
    ordered_json s;
    s["key"] = key;
    s["label"] = label;
    s["ms"] = Num(R6(ms));
    s["start_ms"] = Round6(at_ms);
    if (ms) {
      // A negative part (clock skew between client and server) is shown as 0 wide.
      at_ms += std::max(0.0, *ms);
      ++measured;
    }
    segs.push_back(std::move(s));
  }
  if (measured == 0) return nullptr;
  ordered_json out;
  out["client_ttft_ms"] = Round6(*client);
  out["segments"] = std::move(segs);
  out["source"] = source;
  return out;
}

ordered_json Bench(const std::optional<loadgen::LoadFacts>& bench) {
  if (!bench) return nullptr;
  const loadgen::LoadFacts& b = *bench;
  ordered_json out;
  auto count = [](uint64_t v) { return ordered_json(static_cast<double>(v)); };
  out[loadgen::keys::kCompleted] = count(b.completed);
  out[loadgen::keys::kFailed] = count(b.failed);
  out["max_concurrency"] = b.max_concurrency ? ordered_json(static_cast<double>(*b.max_concurrency))
                                             : ordered_json(nullptr);
  out[loadgen::keys::kRequestThroughput] = Num(R6(b.request_throughput));
  out[loadgen::keys::kOutputThroughput] = Num(R6(b.output_throughput));
  using Stats = loadgen::LatencyStats;
  static const std::pair<const char*, std::optional<double> (*)(const Stats&)> kStats[] = {
      {"mean", [](const Stats& st) { return st.mean_ms; }},
      {"median", [](const Stats& st) { return st.median_ms; }},
      {"p99", [](const Stats& st) { return st.p99_ms(); }}};
  const std::pair<const char*, const std::optional<Stats>*> metrics[] = {
      {"ttft", &b.ttft}, {"tpot", &b.tpot}, {"itl", &b.itl}, {"e2el", &b.e2el}};
  for (auto [stat, of] : kStats) {
    for (auto [name, m] : metrics)
      out[loadgen::StatKey(stat, name)] = Num(R6(*m ? of(**m) : std::nullopt));
  }
  return out;
}

// With several devices or files, their sum (each on its own window); else the one timeline.
const ordered_json& Timeline(const ordered_json& facts) {
  const ordered_json& summed = Child(facts, "gpu_timeline_devices_summed");
  return summed.is_object() ? summed : Child(facts, "gpu_timeline");
}

ordered_json GpuTime(const ordered_json& facts) {
  const ordered_json& tl = Timeline(facts);
  const std::optional<double> total = NumberAt(tl, "total_ms");
  if (!total || *total <= 0) return nullptr;
  ordered_json parts = ordered_json::array();
  for (auto [key, label] : {std::pair{"computation_ms", "computation"},
                            std::pair{"exposed_comm_ms", "exposed communication"},
                            std::pair{"exposed_memcpy_ms", "exposed memcpy"},
                            std::pair{"idle_ms", "idle"}}) {
    if (auto v = NumberAt(tl, key)) parts.push_back({{"label", label}, {"ms", Round6(*v)}});
  }
  if (parts.empty()) return nullptr;
  return {{"total_ms", Round6(*total)}, {"parts", std::move(parts)}};
}

constexpr size_t kKernelsShown = 12;
constexpr size_t kKernelLabelWidth = 44;  // code points of a kernel's chart label

ordered_json Kernels(const ordered_json& facts) {
  const ordered_json& ks = Child(facts, "kernels");
  if (!ks.is_array() || ks.empty()) return nullptr;
  ordered_json items = ordered_json::array();
  std::vector<std::string> names;
  for (const ordered_json& k : ks) {
    if (items.size() == kKernelsShown) break;
    const std::optional<double> total_ns = NumberAt(k, "total_ns");
    if (!total_ns) continue;
    const std::optional<double> share = NumberAt(k, "busy_share");
    const std::optional<double> mean_ns = NumberAt(k, "mean_ns");
    names.push_back(StringAt(k, "name"));
    items.push_back({{"name", names.back()},
                     {"label", nullptr},
                     {"count", Num(NumberAt(k, "count"))},
                     {"total_ms", Round6(*total_ns / 1e6)},
                     {"mean_us", Num(mean_ns ? std::optional(Round6(*mean_ns / 1e3)) : std::nullopt)},
                     {"busy_pct", Num(share ? std::optional(Round6(*share * 100)) : std::nullopt)}});
  }
  if (items.empty()) return nullptr;
  // Chart labels: cut from the middle (a kernel family shares its start and differs in the
  // template arguments at the end), widened where two would read the same.
  const std::vector<std::string> labels = ShortenMiddleDistinct(names, kKernelLabelWidth);
  for (size_t i = 0; i < items.size(); ++i) items[i]["label"] = labels[i].empty() ? "(unnamed)" : labels[i];
  ordered_json out;
  out["busy_ms"] = Num(R6(NumberAt(Timeline(facts), "busy_ms")));
  out["items"] = std::move(items);
  const std::optional<double> name_count = NumberAt(facts, "kernel_names");
  out["shown_of"] = name_count ? ordered_json(*name_count) : ordered_json(ks.size());
  return out;
}

// Log-spaced bins, in µs, for gap durations: the HTA "kernel wait" threshold (30 µs) is a bin
// edge, so the histogram separates launch-latency gaps from host stalls.
constexpr double kGapBinEdgesUs[] = {10, 30, 100, 300, 1000, 3000, 10000};

std::string BinLabel(size_t i) {
  auto us = [](double v) {
    return v >= 1000 ? fmt::format("{:g} ms", v / 1000) : fmt::format("{:g} us", v);
  };
  const size_t n = std::size(kGapBinEdgesUs);
  if (i == 0) return "< " + us(kGapBinEdgesUs[0]);
  if (i == n) return ">= " + us(kGapBinEdgesUs[n - 1]);
  const double lo = kGapBinEdgesUs[i - 1], hi = kGapBinEdgesUs[i];
  if (lo >= 1000) return fmt::format("{:g}-{:g} ms", lo / 1000, hi / 1000);
  if (hi < 1000) return fmt::format("{:g}-{:g} us", lo, hi);
  return us(lo) + "-" + us(hi);
}

ordered_json Idle(const ordered_json& facts) {
  const ordered_json& idle = Child(facts, "idle");
  if (!idle.is_object()) return nullptr;
  ordered_json out;
  const std::optional<double> span_ns = NumberAt(facts, "span_ns");
  out["span_ms"] = Num(span_ns ? std::optional(Round6(*span_ns / 1e6)) : std::nullopt);
  ordered_json gaps = ordered_json::array();
  std::vector<double> durs_us;
  const ordered_json& largest = Child(idle, "largest_gaps");
  if (largest.is_array()) {
    for (const ordered_json& g : largest) {
      const std::optional<double> at = NumberAt(g, "at_ns"), dur = NumberAt(g, "dur_ns");
      if (!at || !dur) continue;
      gaps.push_back({{"device", Num(NumberAt(g, "device"))},
                      {"at_ms", Round6(*at / 1e6)},
                      {"dur_us", Round6(*dur / 1e3)},
                      {"next_op", StringAt(g, "next_op")}});
      durs_us.push_back(*dur / 1e3);
    }
  }
  out["gaps"] = std::move(gaps);
  ordered_json split = ordered_json::array();
  for (auto [key, label] : {std::pair{"host_wait_ns", "host wait (launch came late)"},
                            std::pair{"kernel_wait_ns", "kernel wait (< 30 us, launched)"},
                            std::pair{"other_ns", "other"}}) {
    if (auto v = NumberAt(idle, key)) split.push_back({{"label", label}, {"ms", Round6(*v / 1e6)}});
  }
  out["split"] = std::move(split);

  ordered_json hist = ordered_json::array();
  const ordered_json& given = Child(idle, "gap_histogram");
  if (given.is_array() && !given.empty()) {
    for (const ordered_json& b : given) {
      const std::optional<double> lo = NumberAt(b, "lo_ns"), hi = NumberAt(b, "hi_ns");
      const std::optional<double> count = NumberAt(b, "count");
      if (!count) continue;
      std::string label = lo && hi ? fmt::format("{:g}-{:g} us", *lo / 1e3, *hi / 1e3)
                          : lo     ? fmt::format(">= {:g} us", *lo / 1e3)
                          : hi     ? fmt::format("< {:g} us", *hi / 1e3)
                                   : std::string("?");
      hist.push_back({{"label", label}, {"count", *count}});
    }
    out["histogram_of"] = "all gaps";
  } else if (!durs_us.empty()) {
    std::vector<int64_t> counts(std::size(kGapBinEdgesUs) + 1, 0);
    for (double d : durs_us) {
      size_t i = 0;
      while (i < std::size(kGapBinEdgesUs) && d >= kGapBinEdgesUs[i]) ++i;
      ++counts[i];
    }
    for (size_t i = 0; i < counts.size(); ++i) hist.push_back({{"label", BinLabel(i)}, {"count", counts[i]}});
    out["histogram_of"] = "largest gaps listed";
  } else {
    out["histogram_of"] = nullptr;
  }
  out["histogram"] = std::move(hist);
  if (out["gaps"].empty() && out["split"].empty()) return nullptr;
  return out;
}

ordered_json ServerSeries(const Diagnosis& dx) {
  const ordered_json& diagnosis = dx.sections;
  ordered_json out = ordered_json::array();
  if (dx.bench && dx.bench->server.timeline && !dx.bench->server.timeline->empty()) {
    const std::vector<loadgen::TimelinePoint>& tl = *dx.bench->server.timeline;
    const size_t stride = (tl.size() + kMaxSeriesPoints - 1) / kMaxSeriesPoints;
    ordered_json t = ordered_json::array(), run = ordered_json::array(), wait = ordered_json::array(),
                 kv = ordered_json::array();
    for (size_t i = 0; i < tl.size(); i += stride) {
      const loadgen::TimelinePoint& p = tl[i];
      if (!std::isfinite(p.t_s)) continue;
      t.push_back(Round6(p.t_s));
      run.push_back(Num(p.running));
      wait.push_back(Num(p.waiting));
      kv.push_back(
          Num(p.kv_cache_usage ? std::optional(Round6(*p.kv_cache_usage * 100)) : std::nullopt));
    }
    if (!t.empty()) {
      out.push_back({{"source", "bench: server /metrics during the load"}, {"t_s", std::move(t)},
                     {"running", std::move(run)}, {"waiting", std::move(wait)}, {"kv_pct", std::move(kv)}});
    }
  }
  const ordered_json& engines = Child(Child(Child(diagnosis, "logs"), "facts"), "engines");
  if (engines.is_array()) {
    for (const ordered_json& e : engines) {
      const ordered_json& s = Child(e, "series");
      const ordered_json& t = Child(s, "t_s");
      if (!t.is_array() || t.empty()) continue;
      const size_t stride = (t.size() + kMaxSeriesPoints - 1) / kMaxSeriesPoints;
      // The log facts number the engines; -1 is vLLM's "N Engines Aggregated" line.
      const std::optional<double> n = NumberAt(e, "engine");
      const std::string engine = !n ? "" : *n < 0 ? ": engines aggregated" : fmt::format(": engine {:.0f}", *n);
      out.push_back({{"source", "server log" + engine},
                     {"t_s", SeriesColumn(t, stride, 1)},
                     {"running", SeriesColumn(Child(s, "running"), stride, 1)},
                     {"waiting", SeriesColumn(Child(s, "waiting"), stride, 1)},
                     {"kv_pct", SeriesColumn(Child(s, "kv_pct"), stride, 1)}});
    }
  }
  return out.empty() ? ordered_json(nullptr) : out;
}

ordered_json Layers(const Diagnosis& diagnosis) {
  ordered_json out = ordered_json::array();
  for (const char* l : {"network", "system", "kernel", "config", "load", "logs"}) {
    const std::string status = diagnosis.LayerStatusOf(l);
    out.push_back({{"layer", l}, {"status", status.empty() ? "not reported" : status}});
  }
  return out;
}

}  // namespace

std::string StringAt(const ordered_json& j, const char* key) {
  const ordered_json& v = Child(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::optional<double> NumberAt(const ordered_json& j, const char* key) {
  const ordered_json& v = Child(j, key);
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

std::string FormatNumber(std::optional<double> v) {
  if (!v) return "n/a";
  const double a = std::fabs(*v);
  if (a < 1e-9) return "0";   // float noise of a difference (e.g. -5.7e-13 ms)
  if (a < 1e15 && *v == std::trunc(*v)) return FormatCount(*v);  // "16", not "16.0"
  if (a >= 1e6 || a < 1e-3) return FormatSignificant(*v, 3);
  if (a >= 100) return FormatFixed(*v, 0);
  if (a >= 10) return FormatFixed(*v, 1);
  return FormatSignificant(*v, 3);
}

std::string FormatCountValue(std::optional<double> v) { return FormatCount(v); }

ReportSubject SubjectOf(const Diagnosis& d) {
  const ordered_json& diagnosis = d.sections;
  ReportSubject s;
  s.target = d.target.value_or("");
  s.model = d.Model();
  const std::string version =
      StringAt(Child(Child(Child(diagnosis, "logs"), "facts"), "vllm_server"), "version");
  const std::string metrics_kind = d.MetricsServer();
  if (!version.empty()) {
    s.server = "vLLM " + version + " (from its log)";
  } else if (!metrics_kind.empty()) {
    s.server = fmt::format("its /metrics in {}'s names", servermetrics::ServerKindName(metrics_kind));
  }
  return s;
}

std::string SharePercent(double part, double whole) {
  double pct = whole != 0 ? 100 * part / whole : 0;
  if (std::fabs(pct) < 0.5) pct = 0;
  return fmt::format("{:.0f}%", pct);
}

// Steps shown in the step chart: the first ones of a long trace (a bar each stays readable).
constexpr size_t kStepsShown = 400;

// The per-step table of `latdoc trace --json` (facts.steps.table): each step's time and its
// GPU-busy part, for the step chart. null when the trace had no steps.
ordered_json Steps(const ordered_json& facts) {
  const ordered_json& steps = Child(facts, "steps");
  const ordered_json& table = Child(steps, "table");
  if (!table.is_array() || table.empty()) return nullptr;
  ordered_json items = ordered_json::array();
  for (const ordered_json& row : table) {
    if (items.size() == kStepsShown) break;
    const std::optional<double> wall = NumberAt(row, "wall_ns"), busy = NumberAt(row, "gpu_busy_ns");
    if (!wall || !busy) continue;
    items.push_back({{"index", Num(NumberAt(row, "index"))},
                     {"wall_ms", Round6(*wall / 1e6)},
                     {"busy_ms", Round6(std::min(*busy, *wall) / 1e6)}});
  }
  if (items.empty()) return nullptr;
  ordered_json out;
  out["method"] = StringAt(steps, "method");
  out["count"] = table.size();
  const ordered_json& wall_q = Child(Child(steps, "quantiles"), "wall_ns");
  auto ms = [](std::optional<double> ns) { return ns ? std::optional(Round6(*ns / 1e6)) : std::nullopt; };
  out["p50_ms"] = Num(ms(NumberAt(wall_q, "p50")));
  out["p99_ms"] = Num(ms(NumberAt(wall_q, "p99")));
  out["items"] = std::move(items);
  return out;
}

// The stall timeline (attribution.series, docs/attribution.md): the series as diagnose wrote
// them (the optional ones, kOptionalSeries, only when present and of the same length), each
// stall as {at_s, dur_ms, cause} ("unexplained" when none; the first cause when several), and
// each throughput dip likewise. Null when there is no series.
ordered_json AttributionTimeline(const ordered_json& a) {
  const ordered_json& s = Child(a, "series");
  const ordered_json& t = Child(s, "t_s");
  if (!t.is_array() || t.empty()) return nullptr;
  ordered_json out;
  for (const char* k : {"t_s", "itl_p99_ms", "running", "waiting"}) {
    const ordered_json& col = Child(s, k);
    if (!col.is_array() || col.size() != t.size()) return nullptr;
    ordered_json clean = ordered_json::array();
    for (const auto& v : col) clean.push_back(v.is_number() ? v : ordered_json(nullptr));
    out[k] = std::move(clean);
  }
  // Drawn under the ITL when diagnose sampled them: the output token rate, the log's write rate,
  // the busiest server thread, the run queue, PSI, the GPU kernel time.
  for (const char* k : {"output_tok_s", "log_write_kib_s", "thread_busy_pct", "run_queue", "psi_cpu_pct",
                        "psi_memory_pct", "psi_io_pct", "gpu_kernel_ms"}) {
    const ordered_json& col = Child(s, k);
    if (!col.is_array() || col.size() != t.size()) continue;
    ordered_json clean = ordered_json::array();
    for (const auto& v : col) clean.push_back(v.is_number() ? v : ordered_json(nullptr));
    out[k] = std::move(clean);
  }
  ordered_json stalls = ordered_json::array();
  for (const char* list : {"stalls", "stream_stalls"}) {
    const ordered_json& st = Child(a, list);
    if (!st.is_array()) continue;
    for (const auto& x : st) {
      const std::optional<double> at = NumberAt(x, "at_s"), dur = NumberAt(x, "dur_ms");
      if (!at || !dur) continue;
      const ordered_json& causes = Child(x, "causes");
      std::string cause = "unexplained";
      if (causes.is_array() && !causes.empty() && causes[0].is_string()) cause = causes[0].get<std::string>();
      stalls.push_back({{"at_s", Round6(*at)}, {"dur_ms", Round6(*dur)}, {"cause", cause}});
    }
  }
  out["stalls"] = std::move(stalls);
  ordered_json dips = ordered_json::array();
  if (const ordered_json& ds = Child(a, "dips"); ds.is_array()) {
    for (const auto& x : ds) {
      const std::optional<double> at = NumberAt(x, "at_s"), dur = NumberAt(x, "dur_ms"),
                                  rate = NumberAt(x, "rate_tok_s");
      if (!at || !dur || !rate) continue;
      const ordered_json& causes = Child(x, "causes");
      std::string cause = "unexplained";
      if (causes.is_array() && !causes.empty() && causes[0].is_string()) cause = causes[0].get<std::string>();
      dips.push_back({{"at_s", Round6(*at)}, {"dur_ms", Round6(*dur)}, {"rate_tok_s", Round6(*rate)}, {"cause", cause}});
    }
  }
  out["dips"] = std::move(dips);
  return out;
}

ordered_json ReportData(const Diagnosis& dx) {
  const ordered_json& diagnosis = dx.sections;
  ordered_json d;
  d["sweep"] = Sweep(dx.sweep);
  d["waterfall"] = Waterfall(diagnosis);
  d["bench"] = Bench(dx.bench);
  const ordered_json& facts = Child(Child(diagnosis, "trace"), "facts");
  d["gpu_time"] = GpuTime(facts);
  d["kernels"] = Kernels(facts);
  d["idle"] = Idle(facts);
  d["steps"] = Steps(facts);
  d["server_series"] = ServerSeries(dx);
  d["attribution"] = AttributionTimeline(Child(diagnosis, "attribution"));
  d["layers"] = Layers(dx);
  return d;
}

}  // namespace latdoc::report
