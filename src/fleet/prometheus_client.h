// PrometheusClient: PromQL instant and range queries against Prometheus's HTTP API
// (/api/v1/query, /api/v1/query_range), run concurrently over latdoc's HTTP client, with the
// JSON answers parsed into label sets and samples.
//
// Not here: which queries to ask (fleet.h). Errors: Prometheus unreachable, or answering
// something that is not its API, is kUnavailable (exit 3); a query Prometheus refuses as bad
// (HTTP 400, errorType bad_data: a PromQL syntax error) is kInvalidArgument (exit 2) with
// Prometheus's own message; a query it fails to execute (422, 503: timeout, too many samples)
// is kUnavailable; HTTP 401 or 403 (credentials missing or refused) is kPermissionDenied
// (exit 3).
// Thread safety: Run() blocks the calling thread; one call at a time per client.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "http/client.h"

namespace latdoc::fleet {

struct PromQuery {
  std::string promql;
  bool range = false;       // /api/v1/query_range over [start_s, end_s] by step_s
  double time_s = 0;        // instant: evaluation time (Unix seconds)
  double start_s = 0, end_s = 0, step_s = 0;
};

// One series of an answer: its labels and its samples (one for an instant vector), as
// (Unix seconds, value). NaN samples (histogram_quantile of no traffic) are dropped.
struct PromSeries {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<double, double>> samples;
};

// The request target for `q` ("/api/v1/query?query=...&time=..."), percent-encoded.
std::string QueryTarget(const PromQuery& q);

// Parses Prometheus's answer to `promql` (HTTP status and body). Sample answers:
//   {"status":"success","data":{"resultType":"vector","result":[
//       {"metric":{"instance":"a:8000"},"value":[1733350000.5,"0.25"]}]}}
//   {"status":"success","data":{"resultType":"matrix","result":[
//       {"metric":{...},"values":[[1733350000,"1"],[1733350001,"1"]]}]}}
//   {"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected \"}\""}
// `where` names Prometheus in messages ("http://127.0.0.1:9090").
StatusOr<std::vector<PromSeries>> ParseQueryAnswer(std::string_view where, std::string_view promql,
                                                   int http_status, std::string_view body);

class PrometheusClient {
 public:
  // `url`: Prometheus's base URL ("http://host:9090", or with a path prefix). `timeout_ns`
  // bounds each query (connect, first byte, whole answer).
  // `bearer_token`: sent as "Authorization: Bearer TOKEN" when not empty (never in messages).
  static StatusOr<PrometheusClient> Create(std::string_view url, int64_t timeout_ns,
                                           std::string bearer_token = "");

  // Runs every query at once; the answers in the order of `queries`. The first error (in the
  // order of `queries`) is returned instead.
  StatusOr<std::vector<std::vector<PromSeries>>> Run(const std::vector<PromQuery>& queries) const;

  const http::Url& url() const { return url_; }

 private:
  PrometheusClient(http::Url url, int64_t timeout_ns, std::string bearer_token)
      : url_(std::move(url)), timeout_ns_(timeout_ns), bearer_token_(std::move(bearer_token)) {}
  http::Url url_;
  int64_t timeout_ns_;
  std::string bearer_token_;
};

}  // namespace latdoc::fleet
