#include "exporter/ttft_decomposition.h"

#include <cmath>

#include "servermetrics/server_dialect.h"

namespace latdoc::exporter {
namespace {

// Differences of means carry float noise (3e-18 s for an exact 0); keep whole nanoseconds.
double Ns(double s) { return std::round(s * 1e9) / 1e9; }

}  // namespace

TtftDecomposition DecomposeTtft(const servermetrics::SnapshotDelta& delta,
                                std::optional<double> client_ttft_mean_s,
                                servermetrics::ServerKind kind) {
  TtftDecomposition d;
  d.client_s = client_ttft_mean_s;
  // The interval's other traffic is unknown: no request count to divide llama.cpp's sums by.
  const servermetrics::TtftParts parts = servermetrics::MeanTtftParts(kind, delta);
  d.server_s = parts.server_ttft_s;
  d.queue_s = parts.queue_s;
  d.prefill_s = parts.prefill_s;
  if (delta.ttft_s && d.server_s) d.server_requests = delta.ttft_s->count;
  if (d.server_s && d.queue_s && d.prefill_s) {
    d.server_other_s = Ns(*d.server_s - *d.queue_s - *d.prefill_s);
  }
  if (d.client_s && d.server_s) d.network_front_end_s = Ns(*d.client_s - *d.server_s);
  return d;
}

}  // namespace latdoc::exporter
