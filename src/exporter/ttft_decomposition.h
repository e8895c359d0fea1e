// The split of time to first token into where it went, for one exporter interval:
//
//   client TTFT (the canary, measured from outside)
//     = queue + prefill + other server time      (the server's histograms, measured)
//     + network and front end                    (client TTFT - server TTFT, inferred)
//
// The server-side parts are the means of the server's histogram deltas between two /metrics
// scrapes (servermetrics::Delta), so they cover every request the server finished in the
// interval, not only the canary's. The network and front-end part pairs the canary's TTFT
// with the server's mean TTFT over the same interval; it is not clamped, so a negative value
// says the canary was faster than the server's average request. The two differences are
// rounded to whole nanoseconds (no float noise). Pure; thread-safe.
#pragma once

#include <optional>

#include "servermetrics/server_snapshot.h"

namespace latdoc::exporter {

struct TtftDecomposition {
  std::optional<double> client_s;             // mean canary TTFT in the interval
  std::optional<double> server_s;             // mean of the server's TTFT histogram delta
  std::optional<double> queue_s;              // mean of the queue-time histogram delta
  std::optional<double> prefill_s;            // mean of the prefill-time histogram delta
  std::optional<double> server_other_s;       // server - queue - prefill
  std::optional<double> network_front_end_s;  // client - server
  double server_requests = 0;                 // observations in the server's TTFT delta
};

// Every part is nullopt when its inputs were not measured in the interval (no observation in
// a histogram delta, no successful canary). `kind` picks what the server's metrics measure
// (servermetrics::MeanTtftParts): SGLang has no prefill histogram, TGI no TTFT histogram, and
// llama.cpp times no part per request that an interval of unknown traffic could divide, so on
// llama.cpp only the client's TTFT is known; vLLM and an unknown server as today.
TtftDecomposition DecomposeTtft(const servermetrics::SnapshotDelta& delta,
                                std::optional<double> client_ttft_mean_s,
                                servermetrics::ServerKind kind = servermetrics::ServerKind::kUnknown);

}  // namespace latdoc::exporter
