#include "rules/diagnosis_rules.h"

#include <algorithm>
#include <string>

#include <fmt/core.h>

namespace latdoc::rules {
namespace {

// The load test did not run: `id` says why, the error is the evidence.
Finding LoadFailed(std::string id, std::string title, std::string_view why, std::string advice) {
  Finding f;
  f.id = std::move(id);
  f.layer = Layer::kLoad;
  f.severity = Severity::kFail;
  f.title = std::move(title);
  f.evidence = {{"error", std::nullopt, "", std::string(why)}};
  f.advice = std::move(advice);
  return f;
}

}  // namespace

Finding LoadUnreachable(std::string_view url, std::string_view why) {
  return LoadFailed("load.unreachable", fmt::format("the target {} could not be reached", url), why,
                    "Check that the server is up and the URL (scheme, host, port) is right; "
                    "`latdoc net --url ...` separates DNS, connect and TLS problems.");
}

Finding LoadStoppedAnswering(std::string_view url, uint64_t answered, std::string_view why) {
  Finding f = LoadFailed(
      "load.stopped_answering",
      fmt::format("the target {} stopped answering after {} requests", url, answered), why,
      "The server was reached, then stopped answering: check whether it crashed, was killed "
      "(the kernel's OOM killer: `dmesg`) or restarted (its log: `latdoc logs`), then run again.");
  f.evidence.push_back({"answered_requests", double(answered), "", ""});
  return f;
}

Finding LoadRefused(std::string_view url, std::string_view why) {
  return LoadFailed("load.refused",
                    fmt::format("the target {} answered but the load test could not run", url), why,
                    "Check the API key (--api-key-env names the variable), --model and the URL's "
                    "path.");
}

void ReweighFrontEnd(std::vector<Finding>& all, const FrontEndSplit& s,
                     std::optional<double> mean_e2el_ms, const LoadRuleOptions& lo) {
  for (Finding& f : all) {
    if (f.id != "load.network_front_end") continue;
    f.evidence.push_back({"network_measured", s.network_ms, "ms", ""});
    f.evidence.push_back({"front_end_inferred", s.front_end_ms, "ms", ""});
    if (mean_e2el_ms && *mean_e2el_ms > 0)
      f.latency_share = std::clamp(s.front_end_ms / *mean_e2el_ms, 0.0, 1.0);
    const bool front_end_small =
        s.front_end_ms < lo.network_min_ms ||
        (s.client_ttft_ms && *s.client_ttft_ms > 0 &&
         s.front_end_ms / *s.client_ttft_ms < lo.network_share_warn);
    if (f.severity == Severity::kWarn && front_end_small) {
      f.severity = Severity::kInfo;
      f.title = fmt::format("{:.1f} ms of TTFT is spent outside the engine; the network probe "
                            "measured {:.1f} ms of it (see the net.* findings), leaving {:.1f} ms "
                            "for the front end", s.outside_ms, s.network_ms, s.front_end_ms);
    }
  }
}

}  // namespace latdoc::rules
