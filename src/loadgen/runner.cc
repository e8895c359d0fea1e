// RunBench (loadgen/runner.h): checks the options, finds the model and the thread count, and
// hands the load to runner_threads.cc; also the request body, the dealing of the load and the
// merge of the threads' runs.
#include "loadgen/runner.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>

#include <cstring>

#include <algorithm>
#include <cmath>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/json_text.h"
#include "base/strings.h"
#include "loadgen/runner_internal.h"

namespace latdoc::loadgen {

std::string RequestBody(const BenchOptions& o, const std::string& model, const Prompt& p) {
  nlohmann::ordered_json j;
  j["model"] = model;
  if (o.endpoint == Endpoint::kChat && !p.messages.empty()) {  // a session's history
    j["messages"] = nlohmann::ordered_json::array();
    for (const auto& [role, content] : p.messages)
      j["messages"].push_back({{"role", role}, {"content", content}});
    j["max_completion_tokens"] = p.output_tokens;
  } else if (o.endpoint == Endpoint::kChat) {
    j["messages"] = nlohmann::ordered_json::array(
        {{{"role", "user"}, {"content", p.text.empty() ? std::string("hello") : p.text}}});
    j["max_completion_tokens"] = p.output_tokens;
  } else {
    if (!p.token_ids.empty()) j["prompt"] = p.token_ids;
    else j["prompt"] = p.text;
    j["max_tokens"] = p.output_tokens;
  }
  if (o.endpoint == Endpoint::kChat && !o.tools_json.empty())
    j["tools"] = nlohmann::ordered_json::parse(o.tools_json, nullptr, false);
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  return JsonText(j);
}

namespace {

// A bound that keeps times within the int64 nanosecond clock: a run of at most 1e6 s (11.6
// days).
constexpr double kMaxDurationS = 1e6;

}  // namespace

bool ThreadLoad::saturated() const { return busy() >= kSaturatedBusy; }

uint64_t DealtCount(uint64_t total, int threads, int thread) {
  const uint64_t n = uint64_t(std::max(threads, 1));
  return total / n + (uint64_t(thread) < total % n ? 1 : 0);
}

BenchRun MergeThreadRuns(std::vector<BenchRun> parts) {
  BenchRun out;
  for (BenchRun& p : parts) {
    for (RequestRecord& r : p.records) out.records.push_back(std::move(r));
    out.warmup_requests += p.warmup_requests;
    out.max_in_flight += p.max_in_flight;
    out.connections_opened += p.connections_opened;
    if (p.start_ns != 0 && (out.start_ns == 0 || p.start_ns < out.start_ns)) out.start_ns = p.start_ns;
    out.end_ns = std::max(out.end_ns, p.end_ns);
    out.client_cpu_s += p.client_cpu_s;
    for (const ThreadLoad& l : p.thread_load) out.thread_load.push_back(l);
  }
  // Send order: by scheduled time, ties (and a closed loop's equal stamps) by request number.
  std::stable_sort(out.records.begin(), out.records.end(),
                   [](const RequestRecord& a, const RequestRecord& b) {
                     return a.scheduled_ns != b.scheduled_ns ? a.scheduled_ns < b.scheduled_ns
                                                             : a.index < b.index;
                   });
  for (size_t i = 0; i < out.records.size(); ++i) out.records[i].index = i;
  return out;
}

namespace {

// Whether `host` (a name or an address literal) is this machine.
bool IsLocalHost(const std::string& host) {
  std::string h = ToLower(host);
  if (!h.empty() && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h == "localhost" || h.ends_with(".localhost") || h == "::1" || h.starts_with("127.") ||
      h == "0.0.0.0" || h == "::")
    return true;
  in_addr a4{};
  in6_addr a6{};
  const bool v4 = inet_pton(AF_INET, h.c_str(), &a4) == 1;
  const bool v6 = !v4 && inet_pton(AF_INET6, h.c_str(), &a6) == 1;
  if (!v4 && !v6) return false;  // a name: not resolved here (it may be any machine)
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool local = false;
  for (ifaddrs* i = list; i && !local; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (v4 && i->ifa_addr->sa_family == AF_INET)
      local = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == a4.s_addr;
    if (v6 && i->ifa_addr->sa_family == AF_INET6)
      local = memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, &a6, sizeof a6) == 0;
  }
  freeifaddrs(list);
  return local;
}

}  // namespace

int DefaultThreads(const std::string& host) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  if (IsLocalHost(host)) --cores;
  return std::max(cores, 1);
}

namespace {

// The options RunBench checks before it sends anything.
Status CheckBenchOptions(const BenchOptions& o) {
  if (o.prompts.empty()) return InvalidArgument("no prompts to send");
  if (std::isnan(o.request_rate) || o.request_rate < 0)
    return InvalidArgument("--request-rate must be a number above 0 (or inf)");
  if (o.request_rate <= 0 && o.concurrency < 1)
    return InvalidArgument("--concurrency must be at least 1");
  if (!std::isfinite(o.burstiness) || o.burstiness <= 0)
    return InvalidArgument("--burstiness must be a finite number above 0");
  if (o.max_concurrency < 0) return InvalidArgument("--max-concurrency must not be negative (0: no cap)");
  if (!(o.duration_s >= 0 && o.duration_s <= kMaxDurationS))
    return InvalidArgument(fmt::format("--duration must be between 0 and {:g} seconds", kMaxDurationS));
  if (o.scrape_metrics && !(o.scrape_interval_s >= 0.001 && o.scrape_interval_s <= 3600))
    return InvalidArgument("--scrape-interval must be between 0.001 and 3600 seconds");
  if (o.num_requests <= 0 && o.duration_s <= 0)
    return InvalidArgument("give --num-requests or --duration");
  return Status::Ok();
}

// The model to ask for when none is given: the first one /v1/models lists, with its owned_by
// (it names the server on some: servermetrics/server_dialect.h). Runs `loop` until answered.
Status FetchModel(http::EventLoop& loop, http::HttpClient& client, const http::Url& url,
                  const std::string& api_key, std::string* model, std::string* owned_by) {
  Status st;
  http::ClientRequest req{"GET", "/v1/models", "", {}};
  if (!api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + api_key);
  http::FetchAll(client, req, [&](const http::ExchangeResult& r, std::string body) {
    loop.Stop();
    if (r.failure != http::FailureKind::kNone) {
      st = Unavailable(fmt::format("{}: {}", url.Origin(), r.error));
      return;
    }
    if (r.status == 401 || r.status == 403) {
      // Reached, but refused: the key, not the network (a caller that tells the two apart
      // does not call the server unreachable).
      st =
          PermissionDenied(fmt::format("{} answered HTTP {}: check the API key "
                                       "(--api-key-env)",
                                       url.Spec("/v1/models"), r.status));
      return;
    }
    if (r.status != 200) {
      st = Unavailable(
          fmt::format("{} answered HTTP {}{}", url.Spec("/v1/models"), r.status,
                      r.status == 404 && !url.base_path.empty()
                          ? fmt::format(" (is {} part of the server's routes? latdoc adds "
                                        "/v1/... after it)",
                                        url.base_path)
                          : ""));
      return;
    }
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].contains("id") || !j["data"][0]["id"].is_string()) {
      st = InvalidArgument(
          fmt::format("{}: not an OpenAI model list (give --model)", url.Spec("/v1/models")));
      return;
    }
    *model = j["data"][0]["id"].get<std::string>();
    if (j["data"][0].contains("owned_by") && j["data"][0]["owned_by"].is_string())
      *owned_by = j["data"][0]["owned_by"].get<std::string>();
  });
  loop.Run();
  return st;
}

// The load threads: --threads, or DefaultThreads(); none without a stream, a --max-concurrency
// slot or a request to send.
int LoadThreads(const BenchOptions& o, const http::Url& url) {
  int threads = o.threads > 0 ? o.threads : DefaultThreads(url.host);
  if (o.request_rate <= 0)
    threads = std::min(threads, o.concurrency);
  else if (o.max_concurrency > 0)
    threads = std::min(threads, o.max_concurrency);
  if (o.num_requests > 0) threads = std::min(threads, o.num_requests);
  threads = std::max(threads, 1);
  return threads;
}

}  // namespace

StatusOr<BenchRun> RunBench(const BenchOptions& o, BenchRun* unreachable_run) {
  RETURN_IF_ERROR(CheckBenchOptions(o));
  ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(o.url));
  if (o.threads < 0) return InvalidArgument("--threads must be at least 1");
  http::RaiseFileLimit();
  http::EventLoop loop;
  // For /v1/models only: the load has a client per thread.
  http::HttpClient client(loop, url, o.client);

  // The model: given, or the first one the server lists.
  std::string model = o.model;
  std::string owned_by;  // names the server on some (servermetrics/server_dialect.h)
  if (model.empty()) RETURN_IF_ERROR(FetchModel(loop, client, url, o.api_key, &model, &owned_by));
  const int threads = LoadThreads(o, url);
  BenchRun run = runner_internal::RunLoadThreads(o, loop, url, threads, model);
  run.owned_by = owned_by;
  // A target that could not be reached at all is not a benchmark result.
  bool any_connected = false;
  for (const auto& r : run.records)
    if (r.outcome != Outcome::kConnect) any_connected = true;
  if (!run.records.empty() && !any_connected) {
    Status st = Unavailable(fmt::format("{}: {}", url.Origin(), run.records.front().error));
    if (unreachable_run) *unreachable_run = std::move(run);
    return st;
  }
  return run;
}

}  // namespace latdoc::loadgen
