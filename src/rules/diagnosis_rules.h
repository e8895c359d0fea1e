// Judgments a diagnosis makes when it puts layers together: the load test that could not run
// (the target unreachable, refusing, or dying after the baseline), and the front end's part of
// TTFT once the network probe has measured the network's. diagnose/ gathers the facts and calls
// these; it decides no severity itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rules/finding.h"
#include "rules/load_rules.h"

namespace latdoc::rules {

// load.unreachable: no request reached the target (`why`: the error).
Finding LoadUnreachable(std::string_view url, std::string_view why);
// load.stopped_answering: the target answered `answered` requests of the baseline, then none.
Finding LoadStoppedAnswering(std::string_view url, uint64_t answered, std::string_view why);
// load.refused: the target answered but the run could not start (401 on /v1/models: the key).
Finding LoadRefused(std::string_view url, std::string_view why);

// The time outside the engine (client TTFT - server TTFT) split by the network probe.
struct FrontEndSplit {
  double outside_ms = 0;     // network and front end together, as the load measured it
  double network_ms = 0;     // of which the probe measured as network
  double front_end_ms = 0;   // the rest: tokenizer, API server, gateway
  std::optional<double> client_ttft_ms;
};

// Re-weighs load.network_front_end in `all` to the front end's part alone: its share becomes
// front_end_ms of the mean end-to-end latency, and a `warn` whose front end is small (under
// LoadRuleOptions::network_min_ms, or under network_share_warn of the client's TTFT) becomes
// `info`, its title saying where the rest went (the net.* findings).
void ReweighFrontEnd(std::vector<Finding>& all, const FrontEndSplit& split,
                     std::optional<double> mean_e2el_ms, const LoadRuleOptions& options);

}  // namespace latdoc::rules
