#include "fleet/prometheus_client.h"

#include <cmath>
#include <cstdlib>
#include <memory>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "http/event_loop.h"

namespace latdoc::fleet {
namespace {

using nlohmann::json;

// RFC 3986 unreserved characters stay; everything else is %XX (a PromQL query has braces,
// quotes, spaces, '+' and '=').
std::string PercentEncode(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// Prometheus writes sample values as strings: "0.25", "NaN", "+Inf".
std::optional<double> SampleValue(const json& v) {
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || std::isnan(x)) return std::nullopt;
  return x;
}

std::optional<std::pair<double, double>> Sample(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number()) return std::nullopt;
  std::optional<double> v = SampleValue(pair[1]);
  if (!v) return std::nullopt;
  return std::make_pair(pair[0].get<double>(), *v);
}

}  // namespace

std::string QueryTarget(const PromQuery& q) {
  if (q.range)
    return fmt::format("/api/v1/query_range?query={}&start={:.3f}&end={:.3f}&step={:.3f}",
                       PercentEncode(q.promql), q.start_s, q.end_s, q.step_s);
  return fmt::format("/api/v1/query?query={}&time={:.3f}", PercentEncode(q.promql), q.time_s);
}

StatusOr<std::vector<PromSeries>> ParseQueryAnswer(std::string_view where, std::string_view promql,
                                                   int http_status, std::string_view body) {
  if (http_status == 401 || http_status == 403) {
    return PermissionDenied(fmt::format(
        "Prometheus at {} answered HTTP {}: it wants credentials, or refused them (a bearer "
        "token in an environment variable: --prometheus-token-env VAR)",
        where, http_status));
  }
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("status")) {
    return Unavailable(fmt::format("{} answered HTTP {} without Prometheus's JSON: is it the "
                                   "Prometheus server's base URL (--prometheus)?",
                                   where, http_status));
  }
  if (j.value("status", "") != "success") {
    const std::string type = j.value("errorType", "");
    const std::string error = j.value("error", "");
    std::string msg = fmt::format("Prometheus at {} refused the query '{}': {}{}{}", where, promql,
                                  type, type.empty() ? "" : ": ", error);
    if (http_status == 400 || type == "bad_data") return InvalidArgument(std::move(msg));
    return Unavailable(std::move(msg));
  }
  std::vector<PromSeries> out;
  const json* data = j.contains("data") ? &j["data"] : nullptr;
  if (!data || !data->is_object() || !data->contains("result"))
    return Unavailable(fmt::format("{}: an answer without data.result", where));
  const std::string type = data->value("resultType", "");
  const json& result = (*data)["result"];
  if (type == "scalar") {
    PromSeries s;
    if (auto x = Sample(result)) s.samples.push_back(*x);
    out.push_back(std::move(s));
    return out;
  }
  if (!result.is_array())
    return Unavailable(fmt::format("{}: data.result is not an array", where));
  for (const json& r : result) {
    PromSeries s;
    if (r.contains("metric") && r["metric"].is_object())
      for (const auto& [k, v] : r["metric"].items())
        if (v.is_string()) s.labels[k] = v.get<std::string>();
    if (r.contains("value")) {
      if (auto x = Sample(r["value"])) s.samples.push_back(*x);
    } else if (r.contains("values") && r["values"].is_array()) {
      for (const json& p : r["values"])
        if (auto x = Sample(p)) s.samples.push_back(*x);
    }
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<PrometheusClient> PrometheusClient::Create(std::string_view url, int64_t timeout_ns,
                                                    std::string bearer_token) {
  StatusOr<http::Url> u = http::ParseUrl(url);
  // ParseUrl's messages quote the URL: "'ftp://x': scheme must be http or https".
  if (!u.ok()) return InvalidArgument(fmt::format("--prometheus {}", u.status().message()));
  return PrometheusClient(std::move(*u), timeout_ns, std::move(bearer_token));
}

StatusOr<std::vector<std::vector<PromSeries>>> PrometheusClient::Run(
    const std::vector<PromQuery>& queries) const {
  http::EventLoop loop;
  http::ClientOptions co;
  co.connect_timeout_ns = co.first_byte_timeout_ns = co.idle_timeout_ns = timeout_ns_;
  co.request_timeout_ns = timeout_ns_;
  http::HttpClient client(loop, url_, co);
  std::vector<StatusOr<std::vector<PromSeries>>> answers(
      queries.size(), StatusOr<std::vector<PromSeries>>(Internal("no answer")));
  size_t pending = queries.size();
  const std::string where = url_.Origin() + url_.base_path;
  for (size_t i = 0; i < queries.size(); ++i) {
    http::ClientRequest req;
    req.method = "GET";
    req.target = QueryTarget(queries[i]);
    req.headers = {{"Accept", "application/json"}};
    if (!bearer_token_.empty()) req.headers.push_back({"Authorization", "Bearer " + bearer_token_});
    http::FetchAll(client, std::move(req),
                   [&, i](const http::ExchangeResult& r, std::string body) {
                     if (r.failure != http::FailureKind::kNone) {
                       // The client's errors name the URL already ("connect URL: ...").
                       const bool named = r.error.find(where) != std::string::npos;
                       answers[i] = Unavailable(fmt::format(
                           "Prometheus unreachable: {}{}{} (is --prometheus right, and "
                           "Prometheus running?)",
                           named ? "" : where, named ? "" : ": ", r.error));
                     } else {
                       answers[i] = ParseQueryAnswer(where, queries[i].promql, r.status, body);
                     }
                     if (--pending == 0) loop.Stop();
                   });
  }
  if (pending > 0) loop.Run();
  client.Shutdown();
  std::vector<std::vector<PromSeries>> out;
  out.reserve(answers.size());
  for (auto& a : answers) {
    if (!a.ok()) return a.status();
    out.push_back(std::move(*a));
  }
  return out;
}

}  // namespace latdoc::fleet
