#include "servermetrics/server_snapshot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

#include "servermetrics/metric_names.h"
#include "servermetrics/server_dialect.h"

namespace latdoc::servermetrics {
namespace {

using SampleIndex = std::unordered_map<std::string_view, std::vector<const Sample*>>;

std::optional<double> ParseLe(std::string_view t) {
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || std::isnan(v)) {
    return std::nullopt;
  }
  return v;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

const std::vector<const Sample*>* Find(const SampleIndex& index, std::string_view name) {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &it->second;
}

}  // namespace

namespace {

// The first known server whose prefix some sample carries; nullptr when none does.
const ServerMetricTable* FindServer(const PrometheusPage& page) {
  const ServerMetricTable* table = nullptr;
  for (const ServerMetricTable& t : KnownServers()) {
    for (const Sample& s : page.samples) {
      if (StartsWith(s.name, t.prefix)) {
        table = &t;
        break;
      }
    }
    if (table) break;
  }
  return table;
}

// The server's samples by name; with `filter`, only those of `model_name` (or of no model).
SampleIndex IndexSamples(const PrometheusPage& page, const ServerMetricTable& t,
                         std::string_view model_name, bool filter) {
  SampleIndex index;
  for (const Sample& s : page.samples) {
    if (!StartsWith(s.name, t.prefix)) continue;
    if (filter) {
      std::optional<std::string_view> m = s.label(t.model_label);
      if (m && *m != model_name) continue;
    }
    index[s.name].push_back(&s);
  }
  return index;
}

// Each scalar the table names, its samples combined (summed, or the largest).
void FillScalars(const ServerMetricTable& t, const SampleIndex& index, ServerSnapshot& snap) {
  for (const ScalarName& entry : t.scalars) {
    if ((snap.*entry.field).has_value()) continue;  // a preferred name already filled it
    const auto* samples = Find(index, entry.exposed);
    if (samples == nullptr) continue;
    double total = 0;
    bool any = false;
    for (const Sample* s : *samples) {
      if (std::isnan(s->value)) continue;  // llama.cpp prints nan before any request
      const double v = s->value * entry.scale;
      if (entry.combine == Combine::kMax) {
        total = any ? std::max(total, v) : v;
      } else {
        total += v;
      }
      any = true;
      if (!entry.by_reason_label.empty()) {
        snap.request_success_by_reason[std::string(s->label(entry.by_reason_label).value_or(""))] += v;
      }
    }
    if (any) snap.*entry.field = total;
  }
}

// Each histogram the table names, its label sets summed bucket by bucket.
void FillHistograms(const ServerMetricTable& t, const SampleIndex& index, ServerSnapshot& snap) {
  for (const HistogramName& entry : t.histograms) {
    if ((snap.*entry.field).has_value()) continue;
    const std::string base(entry.exposed);
    const auto* buckets = Find(index, base + "_bucket");
    const auto* sums = Find(index, base + "_sum");
    const auto* counts = Find(index, base + "_count");
    if (buckets == nullptr && counts == nullptr) continue;
    // Sum the label sets (engines) bucket by bucket; they share their bounds.
    std::map<double, double> by_le;
    if (buckets) {
      for (const Sample* s : *buckets) {
        std::optional<std::string_view> le = s->label("le");
        std::optional<double> bound = le ? ParseLe(*le) : std::nullopt;
        if (!bound || std::isnan(s->value)) continue;
        by_le[*bound] += s->value;
      }
    }
    HistogramData h;
    for (const auto& [bound, count] : by_le) {
      h.upper_bounds.push_back(bound);
      h.cumulative_counts.push_back(count);
    }
    if (sums) for (const Sample* s : *sums) h.sum += s->value;
    if (counts) for (const Sample* s : *counts) h.count += s->value;
    snap.*entry.field = std::move(h);
  }
}

}  // namespace

ServerSnapshot BuildSnapshot(const PrometheusPage& page, std::string_view model_name) {
  ServerSnapshot snap;
  snap.bad_line_count = page.bad_line_count;

  const ServerMetricTable* table = FindServer(page);
  if (table == nullptr) return snap;
  snap.server = std::string(table->server);
  snap.kind = ServerKindFromId(snap.server);

  // The models seen. vLLM labels every series with the first served name only, so a request
  // to an alias (--served-model-name a b) or a LoRA adapter names a model no series carries:
  // when the page has one model, the filter then keeps everything (that engine serves them
  // all); with several, which one serves it is unknown, and the filter keeps nothing.
  std::set<std::string, std::less<>> models;
  if (!table->model_label.empty()) {
    for (const Sample& s : page.samples) {
      if (!StartsWith(s.name, table->prefix)) continue;
      if (std::optional<std::string_view> m = s.label(table->model_label)) models.emplace(*m);
    }
  }
  snap.model_names.assign(models.begin(), models.end());
  const bool filter = !model_name.empty() && (models.count(model_name) != 0 || models.size() > 1);
  const SampleIndex index = IndexSamples(page, *table, model_name, filter);

  FillScalars(*table, index, snap);
  FillHistograms(*table, index, snap);
  return snap;
}

ServerSnapshot SnapshotFromText(std::string_view text, std::string_view model_name) {
  return BuildSnapshot(ParsePrometheusText(text), model_name);
}

std::optional<double> HistogramDelta::mean() const {
  if (!(count > 0)) return std::nullopt;
  return sum / count;
}

// After Prometheus promql/quantile.go, bucketQuantile().
std::optional<double> HistogramDelta::Quantile(double q) const {
  if (std::isnan(q) || q < 0 || q > 1) return std::nullopt;
  const size_t n = upper_bounds.size();
  if (n < 2 || !std::isinf(upper_bounds.back()) || upper_bounds.back() < 0) return std::nullopt;
  // Cumulative counts must not decrease; scrapes taken mid-update can break that slightly.
  std::vector<double> cum(cumulative_counts.begin(), cumulative_counts.end());
  for (size_t i = 1; i < n; ++i) cum[i] = std::max(cum[i], cum[i - 1]);
  const double observations = cum.back();
  if (!(observations > 0)) return std::nullopt;
  double rank = q * observations;
  const size_t b = static_cast<size_t>(std::lower_bound(cum.begin(), cum.end(), rank) - cum.begin());
  if (b == n - 1) return upper_bounds[n - 2];
  if (b == 0 && upper_bounds[0] <= 0) return upper_bounds[0];
  double bucket_start = 0;
  const double bucket_end = upper_bounds[b];
  double count = cum[b];
  if (b > 0) {
    bucket_start = upper_bounds[b - 1];
    count -= cum[b - 1];
    rank -= cum[b - 1];
  }
  if (!(count > 0)) return bucket_end;
  return bucket_start + (bucket_end - bucket_start) * (rank / count);
}

namespace {

std::optional<double> CounterDelta(const std::optional<double>& before,
                                   const std::optional<double>& after, bool* reset) {
  if (!after) return std::nullopt;
  if (!before) return *after;
  if (*after < *before) {
    *reset = true;
    return *after;
  }
  return *after - *before;
}

std::optional<HistogramDelta> HistDelta(const std::optional<HistogramData>& before,
                                        const std::optional<HistogramData>& after, bool* reset) {
  if (!after) return std::nullopt;
  HistogramDelta d;
  d.upper_bounds = after->upper_bounds;
  d.cumulative_counts = after->cumulative_counts;
  d.count = after->count;
  d.sum = after->sum;
  if (!before) return d;
  // A restart shows as a count, a bucket or the sum going down (observations are latencies,
  // never negative, so the sum only grows): the new values are then the delta.
  if (before->upper_bounds != after->upper_bounds || after->count < before->count ||
      after->sum < before->sum) {
    *reset = true;
    return d;
  }
  for (size_t i = 0; i < d.cumulative_counts.size(); ++i) {
    const double v = after->cumulative_counts[i] - before->cumulative_counts[i];
    if (v < 0) {
      *reset = true;
      d.cumulative_counts = after->cumulative_counts;
      return d;
    }
    d.cumulative_counts[i] = v;
  }
  d.count = after->count - before->count;
  d.sum = after->sum - before->sum;
  return d;
}

}  // namespace

SnapshotDelta Delta(const ServerSnapshot& before, const ServerSnapshot& after) {
  SnapshotDelta d;
  bool* r = &d.counter_reset;
  d.preemptions = CounterDelta(before.preemptions_total, after.preemptions_total, r);
  d.prompt_tokens = CounterDelta(before.prompt_tokens_total, after.prompt_tokens_total, r);
  d.generation_tokens =
      CounterDelta(before.generation_tokens_total, after.generation_tokens_total, r);
  d.request_success = CounterDelta(before.request_success_total, after.request_success_total, r);
  d.prefix_cache_queries =
      CounterDelta(before.prefix_cache_queries_total, after.prefix_cache_queries_total, r);
  d.prefix_cache_hits =
      CounterDelta(before.prefix_cache_hits_total, after.prefix_cache_hits_total, r);
  d.prompt_seconds = CounterDelta(before.prompt_seconds_total, after.prompt_seconds_total, r);
  d.generation_seconds =
      CounterDelta(before.generation_seconds_total, after.generation_seconds_total, r);
  d.engine_steps = CounterDelta(before.engine_steps_total, after.engine_steps_total, r);
  for (const auto& [reason, value] : after.request_success_by_reason) {
    auto it = before.request_success_by_reason.find(reason);
    std::optional<double> b =
        it == before.request_success_by_reason.end() ? std::nullopt : std::optional(it->second);
    d.request_success_by_reason[reason] = *CounterDelta(b, value, r);
  }
  d.ttft_s = HistDelta(before.ttft_s, after.ttft_s, r);
  d.itl_s = HistDelta(before.itl_s, after.itl_s, r);
  d.e2e_s = HistDelta(before.e2e_s, after.e2e_s, r);
  d.queue_s = HistDelta(before.queue_s, after.queue_s, r);
  d.prefill_s = HistDelta(before.prefill_s, after.prefill_s, r);
  d.decode_s = HistDelta(before.decode_s, after.decode_s, r);
  d.inference_s = HistDelta(before.inference_s, after.inference_s, r);
  d.request_tpot_s = HistDelta(before.request_tpot_s, after.request_tpot_s, r);
  d.iteration_tokens = HistDelta(before.iteration_tokens, after.iteration_tokens, r);
  return d;
}

}  // namespace latdoc::servermetrics
