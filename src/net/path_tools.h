// External tools that `latdoc net` runs through the host module's CommandRunner seam (so tests
// substitute FakeCommandRunner): tracepath / traceroute for the path's hops, and `iperf3 -J`
// for the link rate. Parsers are pure; Run* functions only build argv and interpret results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/command_runner.h"
#include "net/net_facts.h"

namespace latdoc::net {

// Hops of `tracepath -n` output (iputils). Each hop keeps its lowest RTT; "no reply" hops have
// an empty address and no RTT; the "[LOCALHOST]" pmtu line is not a hop.
std::vector<PathHop> ParseTracepath(std::string_view text);
// Hops of `traceroute -n` output; '*' probes are skipped, the first address of a hop is kept.
std::vector<PathHop> ParseTraceroute(std::string_view text);
// Sets jump_hop/jump_ms: the largest RTT rise between consecutive replying hops (the first
// replying hop rises from 0).
void FindLatencyJump(PathFacts& p);

// Runs tracepath, or traceroute when tracepath is not installed; neither: ran=false with the
// reason. Bounded by `timeout_ns` per tool.
PathFacts RunPath(CommandRunner& runner, const std::string& host, int64_t timeout_ns);

struct Iperf3Result {
  double received_mbps = 0;  // end.sum_received (TCP) or end.sum (UDP), megabits per second
};
// Parses `iperf3 -J` output. Errors: not JSON, an "error" member (iperf3's own message), or no
// end summary.
StatusOr<Iperf3Result> ParseIperf3Json(std::string_view text);

// Runs `iperf3 -J -R -t SECONDS -c SERVER` (-R: the server sends, the direction of a token
// stream). NotFound when iperf3 is not installed.
StatusOr<Iperf3Result> RunIperf3(CommandRunner& runner, const std::string& server,
                                 int seconds, int64_t timeout_ns);

}  // namespace latdoc::net
