#include "net/path_tools.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace latdoc::net {
namespace {

void AddHop(std::vector<PathHop>& hops, int n, const std::string& address,
            std::optional<double> rtt_ms) {
  for (auto& h : hops) {
    if (h.hop != n) continue;
    if (h.address.empty()) h.address = address;
    if (rtt_ms && (!h.rtt_ms || *rtt_ms < *h.rtt_ms)) h.rtt_ms = rtt_ms;
    return;
  }
  hops.push_back(PathHop{n, address, rtt_ms});
}

}  // namespace

// `tracepath -n 10.0.0.5` (iputils 20221126):
//    1?: [LOCALHOST]                      pmtu 1500
//    1:  192.168.1.1                                           0.512ms
//    1:  192.168.1.1                                           0.433ms
//    2:  10.20.0.1                                             8.123ms
//    3:  no reply
//    4:  10.0.0.5                                             12.007ms reached
//        Resume: pmtu 1500 hops 4 back 4
// Fields: hop number (with '?' when the TTL was guessed), address, RTT with "ms" glued on,
// then optional notes (asymm N, reached, pmtu N).
std::vector<PathHop> ParseTracepath(std::string_view text) {
  std::vector<PathHop> hops;
  for (std::string_view line : Split(text, '\n')) {
    auto words = SplitWhitespace(line);
    if (words.size() < 2) continue;
    std::string_view head = words[0];
    if (head.empty() || head.back() != ':') continue;
    head.remove_suffix(1);
    if (!head.empty() && head.back() == '?') head.remove_suffix(1);
    auto n = ParseInt64(head);
    if (!n || *n <= 0) continue;
    if (words[1] == "[LOCALHOST]") continue;
    if (words[1] == "no" && words.size() >= 3 && words[2] == "reply") {
      AddHop(hops, static_cast<int>(*n), "", std::nullopt);
      continue;
    }
    std::optional<double> rtt;
    for (size_t i = 2; i < words.size(); ++i) {
      std::string_view w = words[i];
      if (w.size() > 2 && w.substr(w.size() - 2) == "ms") {
        rtt = ParseDouble(w.substr(0, w.size() - 2));
        if (rtt) break;
      }
    }
    AddHop(hops, static_cast<int>(*n), std::string(words[1]), rtt);
  }
  return hops;
}

// `traceroute -n 10.0.0.5` (traceroute 2.1):
//   traceroute to 10.0.0.5 (10.0.0.5), 30 hops max, 60 byte packets
//    1  192.168.1.1  0.412 ms  0.389 ms  0.371 ms
//    2  * * *
//    3  10.0.0.5  9.812 ms 10.0.0.6  9.790 ms  10.101 ms !H
// Fields: hop number, then per probe an optional address (when it differs from the previous
// probe's), an RTT followed by "ms" or '*', and optional !-annotations.
std::vector<PathHop> ParseTraceroute(std::string_view text) {
  std::vector<PathHop> hops;
  for (std::string_view line : Split(text, '\n')) {
    auto words = SplitWhitespace(line);
    if (words.size() < 2) continue;
    auto n = ParseInt64(words[0]);
    if (!n || *n <= 0) continue;
    std::string address;
    std::optional<double> best;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string_view w = words[i];
      if (w == "*" || w == "ms" || (!w.empty() && w[0] == '!')) continue;
      if (i + 1 < words.size() && words[i + 1] == "ms") {
        if (auto r = ParseDouble(w); r && (!best || *r < *best)) best = r;
        continue;
      }
      if (address.empty()) address = std::string(w);
    }
    AddHop(hops, static_cast<int>(*n), address, best);
  }
  return hops;
}

void FindLatencyJump(PathFacts& p) {
  p.jump_hop.reset();
  p.jump_ms.reset();
  double prev = 0;
  for (const auto& h : p.hops) {
    if (!h.rtt_ms) continue;
    double rise = *h.rtt_ms - prev;
    if (!p.jump_ms || rise > *p.jump_ms) {
      p.jump_ms = rise;
      p.jump_hop = h.hop;
    }
    prev = *h.rtt_ms;
  }
}

PathFacts RunPath(CommandRunner& runner, const std::string& host, int64_t timeout_ns) {
  PathFacts p;
  auto tp = runner.Run({"tracepath", "-n", "-m", "20", host}, timeout_ns);
  if (tp.ok()) {
    p.ran = true;
    p.tool = "tracepath";
    p.hops = ParseTracepath(tp->stdout_text);
  } else if (tp.status().code() == StatusCode::kNotFound) {
    auto tr = runner.Run({"traceroute", "-n", "-q", "3", "-w", "2", "-m", "20", host}, timeout_ns);
    if (tr.ok()) {
      p.ran = true;
      p.tool = "traceroute";
      p.hops = ParseTraceroute(tr->stdout_text);
    } else if (tr.status().code() == StatusCode::kNotFound) {
      p.skipped_reason = "neither tracepath nor traceroute is installed (apt-get install iputils-tracepath)";
    } else {
      p.tool = "traceroute";
      p.skipped_reason = "traceroute: " + tr.status().message();
    }
  } else {
    p.tool = "tracepath";
    p.skipped_reason = "tracepath: " + tp.status().message();
  }
  if (p.ran && p.hops.empty()) p.skipped_reason = p.tool + " printed no hops";
  FindLatencyJump(p);
  return p;
}

// `iperf3 -J -R -c host` ends with (TCP):
//   "end": {"sum_sent": {"bytes": 1179648000, "bits_per_second": 943718400.0, ...},
//           "sum_received": {"bytes": 1177000000, "bits_per_second": 941600000.0, ...}}
// UDP runs have "end": {"sum": {"bits_per_second": ...}}. Failures keep "end": {} and put
// iperf3's message in "error": "unable to connect to server: Connection refused".
StatusOr<Iperf3Result> ParseIperf3Json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("iperf3 -J: output is not JSON");
  if (auto e = j.find("error"); e != j.end() && e->is_string())
    return InvalidArgument("iperf3: " + e->get<std::string>());
  auto end = j.find("end");
  if (end == j.end() || !end->is_object()) return InvalidArgument("iperf3 -J: no \"end\" summary");
  for (const char* key : {"sum_received", "sum"}) {
    auto s = end->find(key);
    if (s == end->end() || !s->is_object()) continue;
    auto bps = s->find("bits_per_second");
    if (bps != s->end() && bps->is_number()) return Iperf3Result{bps->get<double>() / 1e6};
  }
  return InvalidArgument("iperf3 -J: \"end\" has no sum_received.bits_per_second");
}

StatusOr<Iperf3Result> RunIperf3(CommandRunner& runner, const std::string& server,
                                 int seconds, int64_t timeout_ns) {
  ASSIGN_OR_RETURN(CommandResult r,
                   runner.Run({"iperf3", "-J", "-R", "-t", std::to_string(seconds), "-c", server},
                              timeout_ns));
  auto parsed = ParseIperf3Json(r.stdout_text);
  if (!parsed.ok() && r.exit_code != 0 && r.stdout_text.empty())
    return InvalidArgument(fmt::format("iperf3 exited with {} and printed nothing", r.exit_code));
  return parsed;
}

}  // namespace latdoc::net
