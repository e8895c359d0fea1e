#include "diagnose/profile_at.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <fmt/core.h>

#include "base/clock.h"
#include "http/client.h"
#include "http/event_loop.h"
#include "base/json_text.h"
#include "rules/trace_rules.h"
#include "servermetrics/server_snapshot.h"
#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::diagnose {
namespace {

struct Answer {
  std::string error;   // the exchange failed
  int status = 0;
  std::string body;
};

// One exchange on a private loop, bounded by `timeout_ns`.
Answer Exchange(const std::string& base, const loadgen::BenchOptions& b, const std::string& method,
                const std::string& target, int64_t timeout_ns = 10'000'000'000) {
  Answer a;
  auto url = http::ParseUrl(base);
  if (!url.ok()) {
    a.error = url.status().message();
    return a;
  }
  http::EventLoop loop;
  http::ClientOptions co = b.client;
  co.connect_timeout_ns = 10'000'000'000;
  co.first_byte_timeout_ns = co.idle_timeout_ns = co.request_timeout_ns = timeout_ns;
  http::HttpClient client(loop, *url, co);
  http::ClientRequest req;
  req.method = method;
  req.target = target;
  if (!b.api_key.empty()) req.headers.push_back({"Authorization", "Bearer " + b.api_key});
  bool done = false;
  http::FetchAll(client, std::move(req), [&](const http::ExchangeResult& r, std::string body) {
    if (r.failure != http::FailureKind::kNone) a.error = r.error;
    a.status = r.status;
    a.body = std::move(body);
    done = true;
    loop.Stop();
  });
  if (!done) loop.Run();
  client.Shutdown();
  return a;
}

std::map<std::string, uintmax_t> Sizes(const std::vector<std::string>& files) {
  std::map<std::string, uintmax_t> out;
  for (const std::string& f : files) {
    std::error_code ec;
    uintmax_t s = std::filesystem::file_size(f, ec);
    if (!ec) out[f] = s;
  }
  return out;
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

std::vector<std::string> TraceFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    auto ends = [&](std::string_view s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (name.empty() || name[0] == '.') continue;  // a writer's temporary file
    if (ends(".json") || ends(".json.gz") || ends(".sqlite") || ends(".csv"))
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::ordered_json AnalyseProfileTraces(const std::vector<std::string>& files,
                                            std::vector<rules::Finding>* findings,
                                            std::string* status) {
  using nlohmann::ordered_json;
  try {
    trace::Trace t;
    auto results = trace::ImportFiles(files, trace::ImportOptions{}, t);
    std::string errors;
    for (const auto& r : results)
      if (!r.status.ok()) errors += (errors.empty() ? "" : "; ") + r.status.message();
    if (t.gpu_ops.empty() && t.api_calls.empty() && t.aggregates.empty()) {
      *status = "failed: " + (errors.empty() ? std::string("no GPU events in the traces") : errors);
      return nullptr;
    }
    trace::TraceReport report = trace::Analyze(t, trace::AnalysisOptions{});
    rules::AddKnowledgeFacts(report);
    auto fs = rules::EvaluateTraceRules(report, rules::TraceRuleOptions{});
    rules::PlaceTraceFindings(fs, /*of_server_under_test=*/true, /*load_measured=*/true);
    ordered_json tj;
    tj["schema"] = "latdoc.trace/1";
    tj["complete"] = errors.empty();
    if (!errors.empty()) tj["errors"] = errors;
    tj["recorded_from"] = "server under test (--profile-at)";
    tj["files"] = files;
    tj["facts"] = ordered_json::parse(JsonText(trace::ReportToJson(report)));
    ordered_json a = ordered_json::array();
    for (const auto& f : fs) a.push_back(ordered_json::parse(JsonText(rules::ToJson(f))));
    tj["findings"] = std::move(a);
    for (auto& f : fs) findings->push_back(std::move(f));
    *status = errors.empty() ? "measured" : "measured (some files failed: " + errors + ")";
    return tj;
  } catch (const trace::SpillReadError& e) {
    *status = std::string("failed: ") + e.what();
    return nullptr;
  }
}

nlohmann::ordered_json ProfileCapture::Json() const {
  nlohmann::ordered_json j;
  j["recorded"] = recorded;
  j["status"] = status;
  j["files"] = files;
  j["running_at_start"] = recorded ? nlohmann::ordered_json(running_at_start) : nlohmann::ordered_json(nullptr);
  j["profiled_s"] = recorded ? nlohmann::ordered_json(profiled_s) : nlohmann::ordered_json(nullptr);
  return j;
}

namespace {

// The load CaptureProfile runs: closed-loop at r.concurrency, r.requests requests, quiet.
loadgen::BenchOptions ProfileLoad(const ProfileRequest& r) {
  loadgen::BenchOptions b = r.bench;
  b.url = r.url;
  b.command = "diagnose";
  b.concurrency = std::max(1, r.concurrency);
  b.request_rate = 0;
  b.num_requests = std::max(1, r.requests);
  b.duration_s = 0;
  b.progress = false;
  b.scrape_metrics = false;
  return b;
}

// Polls /metrics until the server runs r.running_at requests (into out.running_at_start), the
// load ends or two minutes pass; nullopt when reached, else why the profile is skipped.
std::optional<std::string> WaitForRunning(const ProfileRequest& r, const std::string& metrics_base,
                                          const loadgen::BenchOptions& b,
                                          const std::atomic<bool>& load_done, ProfileCapture& out) {
  double max_running = 0;
  bool reached = false, metrics_ok = false;
  const int64_t give_up_ns = MonoNowNs() + 120'000'000'000;
  while (!load_done.load() && MonoNowNs() < give_up_ns) {
    Answer m = Exchange(metrics_base, b, "GET", "/metrics");
    if (m.error.empty() && m.status == 200) {
      metrics_ok = true;
      auto snap = servermetrics::SnapshotFromText(m.body, b.model);
      if (snap.requests_running) {
        max_running = std::max(max_running, *snap.requests_running);
        if (*snap.requests_running >= r.running_at) {
          reached = true;
          out.running_at_start = *snap.requests_running;
          break;
        }
      }
    }
    SleepMs(kPollMs);
  }
  if (reached) return std::nullopt;
  return !metrics_ok ? std::string(
                           "skipped: the server's /metrics could not be read, so the load "
                           "reached is unknown")
                     : fmt::format(
                           "skipped: the load never reached {} running requests (at most "
                           "{:g} seen on /metrics)",
                           r.running_at, max_running);
}

// Starts the profiler, keeps it on r.seconds (or until the load ends), stops it; the times
// into started_ns and stopped_ns; nullopt when both answered 200, else why not.
std::optional<std::string> RunProfiler(const ProfileRequest& r, const loadgen::BenchOptions& b,
                                       const std::atomic<bool>& load_done, int64_t& started_ns,
                                       int64_t& stopped_ns) {
  std::optional<std::string> skip;
  Answer s = Exchange(r.url, b, "POST", "/start_profile");
  if (!s.error.empty()) {
    skip = "failed: POST /start_profile: " + s.error;
  } else if (s.status == 404 || s.status == 405) {
    skip = fmt::format(
        "skipped: the server has no profiler endpoint (POST /start_profile answered "
        "{}): start vLLM with VLLM_TORCH_PROFILER_DIR={} (or --profiler-config) to "
        "profile under load",
        s.status, r.dir);
  } else if (s.status != 200) {
    skip = fmt::format("failed: POST /start_profile answered {}", s.status);
  } else {
    started_ns = MonoNowNs();
    const int64_t until = started_ns + int64_t(r.seconds * 1e9);
    while (!load_done.load() && MonoNowNs() < until) SleepMs(kPollMs);
    // vLLM answers once the trace is flushed: minutes for a large model (its docs advise a
    // long VLLM_RPC_TIMEOUT for it).
    Answer e = Exchange(r.url, b, "POST", "/stop_profile", int64_t(kStopTimeoutS * 1e9));
    stopped_ns = MonoNowNs();
    if (!e.error.empty())
      skip = "failed: POST /stop_profile: " + e.error;
    else if (e.status != 200)
      skip = fmt::format("failed: POST /stop_profile answered {}", e.status);
  }
  return skip;
}

// The trace files new in r.dir since `before`, once their sizes held between two looks (the
// server may still be writing); empty when none held within kFileWaitS.
std::vector<std::string> WaitForNewFiles(const ProfileRequest& r,
                                         const std::set<std::string>& before) {
  std::vector<std::string> files;
  std::map<std::string, uintmax_t> last;
  const int64_t wait_until = MonoNowNs() + int64_t(kFileWaitS * 1e9);
  while (MonoNowNs() < wait_until) {
    std::vector<std::string> fresh;
    for (const std::string& f : TraceFilesIn(r.dir))
      if (!before.count(f)) fresh.push_back(f);
    auto sizes = Sizes(fresh);
    if (!sizes.empty() && sizes == last) {
      files = fresh;
      break;
    }
    last = std::move(sizes);
    SleepMs(200);
  }
  return files;
}

}  // namespace

ProfileCapture CaptureProfile(const ProfileRequest& r) {
  ProfileCapture out;
  const std::string metrics_base = r.metrics_url.empty() ? r.url : r.metrics_url;
  std::error_code ec;
  if (!std::filesystem::is_directory(r.dir, ec)) {
    out.status = fmt::format(
        "skipped: --profile-dir {} is not a directory (the server's "
        "VLLM_TORCH_PROFILER_DIR, here or mounted)",
        r.dir);
    return out;
  }
  const std::set<std::string> before = [&] {
    auto v = TraceFilesIn(r.dir);
    return std::set<std::string>(v.begin(), v.end());
  }();

  // The load, on its own thread; this thread watches /metrics and drives the profiler.
  const loadgen::BenchOptions b = ProfileLoad(r);
  std::atomic<bool> load_done{false};
  std::string load_error;
  std::thread load([&] {
    auto run = loadgen::RunBench(b);
    if (!run.ok()) load_error = run.status().message();
    load_done.store(true);
  });

  std::optional<std::string> skip = WaitForRunning(r, metrics_base, b, load_done, out);
  int64_t started_ns = 0, stopped_ns = 0;
  if (!skip) skip = RunProfiler(r, b, load_done, started_ns, stopped_ns);
  load.join();
  if (skip) {
    out.status = *skip;
    return out;
  }
  out.profiled_s = double(stopped_ns - started_ns) / 1e9;
  out.files = WaitForNewFiles(r, before);
  if (out.files.empty()) {
    out.status = fmt::format("failed: the profiler ran {:.1f} s but no new trace file appeared in {} "
                             "within {:g} s (is --profile-dir the server's VLLM_TORCH_PROFILER_DIR, "
                             "on this host or mounted?)", out.profiled_s, r.dir, kFileWaitS);
    return out;
  }
  out.recorded = true;
  out.status = fmt::format("recorded {} file{} over {:.1f} s {}, from {:g} running requests",
                           out.files.size(), out.files.size() == 1 ? "" : "s", out.profiled_s, r.why,
                           out.running_at_start);
  if (!load_error.empty()) out.status += " (the load then failed: " + load_error + ")";
  return out;
}

nlohmann::ordered_json LoadProfile::Json() const {
  nlohmann::ordered_json j;
  j["recorded"] = recorded;
  j["status"] = status;
  j["files"] = files;
  j["profiled_s"] = recorded ? nlohmann::ordered_json(profiled_s) : nlohmann::ordered_json(nullptr);
  return j;
}

LoadProfile StartLoadProfile(const std::string& url, const loadgen::BenchOptions& bench,
                             const std::string& dir) {
  LoadProfile p;
  p.dir = dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    p.status = fmt::format("skipped: --profile-dir {} is not a directory (the server's "
                           "VLLM_TORCH_PROFILER_DIR, here or mounted)", dir);
    return p;
  }
  p.before = TraceFilesIn(dir);
  Answer s = Exchange(url, bench, "POST", "/start_profile");
  if (!s.error.empty()) {
    p.status = "failed: POST /start_profile: " + s.error;
  } else if (s.status == 404 || s.status == 405) {
    p.status = fmt::format("skipped: the server has no profiler endpoint (POST /start_profile answered "
                           "{}): start vLLM with VLLM_TORCH_PROFILER_DIR={} (or --profiler-config) to "
                           "profile the load", s.status, dir);
  } else if (s.status != 200) {
    p.status = fmt::format("failed: POST /start_profile answered {}", s.status);
  } else {
    p.started = true;
    p.started_ns = MonoNowNs();
  }
  return p;
}

void StopLoadProfile(const std::string& url, const loadgen::BenchOptions& bench, LoadProfile* p) {
  if (!p->started) return;
  p->started = false;
  // vLLM answers once the trace is flushed (CaptureProfile).
  Answer e = Exchange(url, bench, "POST", "/stop_profile", int64_t(kStopTimeoutS * 1e9));
  p->profiled_s = double(MonoNowNs() - p->started_ns) / 1e9;
  if (!e.error.empty()) {
    p->status = "failed: POST /stop_profile: " + e.error;
    return;
  }
  if (e.status != 200) {
    p->status = fmt::format("failed: POST /stop_profile answered {}", e.status);
    return;
  }
  // The new files, once their sizes held between two looks (the server may still be writing).
  const std::set<std::string> before(p->before.begin(), p->before.end());
  std::map<std::string, uintmax_t> last;
  const int64_t wait_until = MonoNowNs() + int64_t(kFileWaitS * 1e9);
  while (MonoNowNs() < wait_until) {
    std::vector<std::string> fresh;
    for (const std::string& f : TraceFilesIn(p->dir))
      if (!before.count(f)) fresh.push_back(f);
    auto sizes = Sizes(fresh);
    if (!sizes.empty() && sizes == last) {
      p->files = fresh;
      break;
    }
    last = std::move(sizes);
    SleepMs(200);
  }
  if (p->files.empty()) {
    p->status = fmt::format("failed: the profiler ran {:.1f} s but no new trace file appeared in {} "
                            "within {:g} s (is --profile-dir the server's VLLM_TORCH_PROFILER_DIR, "
                            "on this host or mounted?)", p->profiled_s, p->dir, kFileWaitS);
    return;
  }
  p->recorded = true;
  p->status = fmt::format("recorded {} file{} over the target load ({:.1f} s)", p->files.size(),
                          p->files.size() == 1 ? "" : "s", p->profiled_s);
}

}  // namespace latdoc::diagnose
