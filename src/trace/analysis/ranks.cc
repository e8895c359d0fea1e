#include "trace/analysis/ranks.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "trace/analysis/gpu_timeline.h"

namespace latdoc::trace {
namespace {

bool ContainsNoCase(std::string_view s, std::string_view what) {
  if (what.size() > s.size()) return false;
  for (size_t i = 0; i + what.size() <= s.size(); ++i) {
    size_t j = 0;
    while (j < what.size() &&
           std::tolower(static_cast<unsigned char>(s[i + j])) == static_cast<unsigned char>(what[j])) {
      ++j;
    }
    if (j == what.size()) return true;
  }
  return false;
}

struct Collective {
  std::string_view kind;
  int64_t dur_ns;
};

}  // namespace

std::string_view CollectiveKind(std::string_view n) {
  // Kernel names: NCCL 2.19+ "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)", older
  // "ncclKernel_AllGather_RING_LL_Sum_int8_t(...)", "ncclDevKernel_SendRecv(...)"; RCCL the same
  // families, and "ncclDevKernel_Generic_1" where one kernel serves every collective.
  if (ContainsNoCase(n, "allreduce") || ContainsNoCase(n, "all_reduce")) return "AllReduce";
  if (ContainsNoCase(n, "reducescatter") || ContainsNoCase(n, "reduce_scatter")) return "ReduceScatter";
  if (ContainsNoCase(n, "allgather") || ContainsNoCase(n, "all_gather")) return "AllGather";
  if (ContainsNoCase(n, "alltoall") || ContainsNoCase(n, "all_to_all")) return "AllToAll";
  if (ContainsNoCase(n, "sendrecv") || ContainsNoCase(n, "_send") || ContainsNoCase(n, "_recv")) return "SendRecv";
  if (ContainsNoCase(n, "broadcast")) return "Broadcast";
  if (ContainsNoCase(n, "reduce")) return "Reduce";
  return "Collective";
}

namespace {

// A rank's units: per (file, device), its collective kernels in start order (send/receive left
// out: they pair ranks, not the world).
using UnitKey = std::pair<uint16_t, int32_t>;
using CollectivesByUnit = std::map<UnitKey, std::vector<Collective>>;

// One pass over the kernels: each unit's collectives, and how many communication kernels each
// unit ran (send/receive included).
void CollectCollectives(const Trace& trace, CollectivesByUnit& per_unit,
                        std::map<UnitKey, int64_t>& comm_kernels) {
  std::vector<int8_t> is_comm(trace.names.size(), -1);
  trace.gpu_ops.ForEach([&](const GpuOp& op) {
    if (op.kind != GpuOpKind::kKernel) return;
    int8_t& c = is_comm[op.name];
    if (c < 0) c = IsCommunicationKernel(trace.Name(op.name)) ? 1 : 0;
    if (c == 0) return;
    ++comm_kernels[{op.source, op.device}];
    const std::string_view kind = CollectiveKind(trace.Name(op.name));
    auto& v = per_unit[{op.source, op.device}];
    if (kind != "SendRecv") v.push_back({kind, op.dur_ns});
  });
}

// A unit with communication kernels as a rank of the report: its rank, label and timeline.
RankInfo DescribeRank(const UnitKey& key, const std::vector<SourceFile>& sources,
                      const TraceReport& r) {
  RankInfo ri;
  ri.source = key.first;
  ri.device = key.second;
  const SourceFile* sf = key.first < sources.size() ? &sources[key.first] : nullptr;
  if (sf != nullptr) ri.rank = sf->rank;
  std::string device_name;
  for (const DeviceInfo& d : r.devices) {
    if (d.source == key.first && d.device == key.second) device_name = d.name;
  }
  ri.label = fmt::format(
      "{} (device {}{}{})",
      ri.rank ? fmt::format("rank {}", *ri.rank) : fmt::format("file {}", key.first), key.second,
      device_name.empty() ? "" : ", " + device_name, sf != nullptr ? ", " + sf->path : "");
  for (const GpuTimeline& t : r.per_device) {
    if (t.source == key.first && t.device == key.second) {
      ri.total_ns = t.total_ns;
      ri.busy_ns = t.busy_ns;
      ri.total_comm_ns = t.total_comm_ns;
      ri.exposed_comm_ns = t.exposed_comm_ns;
    }
  }
  return ri;
}

// Do the files fit together? Same world size, no rank twice, as many ranks as the world.
void CheckFilesFit(const std::vector<SourceFile>& sources, RankStats& out) {
  std::map<int32_t, std::vector<std::string>> by_rank;
  std::map<int32_t, int> world_sizes;
  for (size_t s = 0; s < sources.size(); ++s) {
    if (sources[s].rank) by_rank[*sources[s].rank].push_back(sources[s].path);
    if (sources[s].world_size) ++world_sizes[*sources[s].world_size];
  }
  for (const auto& [rank, paths] : by_rank) {
    if (paths.size() > 1) {
      out.problems.push_back(fmt::format("rank {} appears in {} files ({}): the same rank twice",
                                         rank, paths.size(), fmt::join(paths, ", ")));
      out.files_conflict = true;
    }
  }
  if (world_sizes.size() > 1) {
    std::vector<std::string> w;
    for (const auto& [size, n] : world_sizes) w.push_back(fmt::format("{} ({} files)", size, n));
    out.problems.push_back(
        fmt::format("the files record different world sizes: {}", fmt::join(w, ", ")));
    out.files_conflict = true;
  } else if (world_sizes.size() == 1 &&
             static_cast<size_t>(world_sizes.begin()->first) != out.ranks.size() &&
             world_sizes.begin()->first > 0) {
    out.problems.push_back(
        fmt::format("world size {} but {} ranks with collectives were given: the straggler is "
                    "judged among these only",
                    world_sizes.begin()->first, out.ranks.size()));
  }
}

// The k-th collectives of the ranks aligned, up to the fewest a rank has or the first whose
// kinds differ; each one's straggler (the rank whose kernel was shortest: the others waited
// for it) when the longest wait is at least straggler_min_wait_ns; the five worst kept.
void AlignCollectives(const std::vector<std::vector<Collective>*>& lists, const RankOptions& o,
                      RankStats& out) {
  size_t n = SIZE_MAX;
  for (const auto* l : lists) n = std::min(n, l->size());
  for (size_t i = 0; i < lists.size(); ++i) {
    if (lists[i]->size() != n) {
      out.problems.push_back(fmt::format("{} has {} collectives, the fewest is {}: the first {} are aligned",
                                         out.ranks[i].label, lists[i]->size(), n, n));
    }
  }
  std::vector<int64_t> wait_of_collective;
  for (size_t k = 0; k < n; ++k) {
    const std::string_view kind = (*lists[0])[k].kind;
    size_t bad = 0;
    for (size_t i = 1; i < lists.size() && bad == 0; ++i) {
      if ((*lists[i])[k].kind != kind) bad = i;
    }
    if (bad != 0) {
      out.problems.push_back(fmt::format("collective {}: {} runs {} where {} runs {}: the ranks diverge there, the "
                                         "first {} are aligned",
                                         k, out.ranks[0].label, kind, out.ranks[bad].label, (*lists[bad])[k].kind, k));
      break;
    }
    ++out.collectives_aligned;
    size_t last = 0;
    for (size_t i = 1; i < lists.size(); ++i) {
      if ((*lists[i])[k].dur_ns < (*lists[last])[k].dur_ns) last = i;
    }
    const int64_t shortest = (*lists[last])[k].dur_ns;
    int64_t max_wait = 0, caused = 0;
    for (size_t i = 0; i < lists.size(); ++i) {
      const int64_t wait = (*lists[i])[k].dur_ns - shortest;
      out.ranks[i].waited_ns += wait;
      out.total_wait_ns += wait;
      caused += wait;
      max_wait = std::max(max_wait, wait);
    }
    if (max_wait < o.straggler_min_wait_ns) continue;
    ++out.collectives_with_straggler;
    ++out.ranks[last].straggler_count;
    out.ranks[last].caused_wait_ns += caused;
    out.worst.push_back({static_cast<int64_t>(k), std::string(kind), last, max_wait});
  }
  std::stable_sort(out.worst.begin(), out.worst.end(),
                   [](const StragglerExample& a, const StragglerExample& b) { return a.max_wait_ns > b.max_wait_ns; });
  if (out.worst.size() > 5) out.worst.resize(5);
}

// The usual straggler: the rank last in at least usual_share of the collectives with one (and
// at least usual_min_count times).
void FindUsualStraggler(const RankOptions& o, RankStats& out) {
  if (out.collectives_with_straggler > 0) {
    size_t top = 0;
    for (size_t i = 1; i < out.ranks.size(); ++i) {
      if (out.ranks[i].straggler_count > out.ranks[top].straggler_count) top = i;
    }
    const double share = static_cast<double>(out.ranks[top].straggler_count) /
                         static_cast<double>(out.collectives_with_straggler);
    if (share >= o.usual_share && out.ranks[top].straggler_count >= o.usual_min_count) {
      out.usual_straggler = top;
      out.usual_share = share;
    }
  }
}

}  // namespace

void ComputeRanks(const Trace& trace, const std::vector<SourceFile>& sources, TraceReport& r,
                  const RankOptions& o) {
  RankStats& out = r.ranks;
  out = RankStats{};
  out.straggler_min_wait_ns = o.straggler_min_wait_ns;
  // Plan: one pass collects each (file, device)'s collective kernels in start order; with two
  // or more such ranks, check the files fit together, align the k-th collectives, and judge
  // each one's straggler from the kernels' durations.
  CollectivesByUnit per_unit;
  std::map<UnitKey, int64_t> comm_kernels;
  CollectCollectives(trace, per_unit, comm_kernels);
  if (comm_kernels.size() < 2) return;

  std::vector<std::vector<Collective>*> lists;
  for (const auto& [key, n] : comm_kernels) {
    RankInfo ri = DescribeRank(key, sources, r);
    auto& v = per_unit[key];
    ri.collectives = static_cast<int64_t>(v.size());
    lists.push_back(&v);
    out.ranks.push_back(std::move(ri));
  }
  CheckFilesFit(sources, out);
  AlignCollectives(lists, o, out);
  FindUsualStraggler(o, out);
}

nlohmann::json RanksToJson(const RankStats& r) {
  using nlohmann::json;
  json j;
  j["ranks"] = json::array();
  for (const RankInfo& x : r.ranks) {
    j["ranks"].push_back({{"source", x.source}, {"device", x.device}, {"rank", x.rank ? json(*x.rank) : json(nullptr)},
                          {"label", x.label}, {"total_ns", x.total_ns}, {"busy_ns", x.busy_ns},
                          {"total_comm_ns", x.total_comm_ns}, {"exposed_comm_ns", x.exposed_comm_ns},
                          {"collectives", x.collectives}, {"straggler_count", x.straggler_count},
                          {"caused_wait_ns", x.caused_wait_ns}, {"waited_ns", x.waited_ns}});
  }
  j["collectives_aligned"] = r.collectives_aligned;
  j["collectives_with_straggler"] = r.collectives_with_straggler;
  j["straggler_min_wait_ns"] = r.straggler_min_wait_ns;
  j["total_wait_ns"] = r.total_wait_ns;
  j["usual_straggler"] = r.usual_straggler ? json(*r.usual_straggler) : json(nullptr);
  j["usual_share"] = r.usual_share;
  j["worst"] = json::array();
  for (const StragglerExample& w : r.worst) {
    j["worst"].push_back({{"index", w.index}, {"collective", w.collective}, {"straggler", w.straggler},
                          {"max_wait_ns", w.max_wait_ns}});
  }
  j["problems"] = r.problems;
  j["files_conflict"] = r.files_conflict;
  return j;
}

std::string RenderRanksText(const RankStats& r) {
  if (r.ranks.empty()) return "";
  std::string out = fmt::format("\nRanks: {} with collectives; {} collectives aligned by order, {} with a straggler "
                                "(a wait of {:.0f} us or more)\n",
                                r.ranks.size(), r.collectives_aligned, r.collectives_with_straggler,
                                static_cast<double>(r.straggler_min_wait_ns) / 1e3);
  out += fmt::format("  {:<48} {:>9} {:>7} {:>12} {:>11} {:>9} {:>11}\n", "rank", "window ms", "busy %", "exposed comm",
                     "collectives", "last in", "waited ms");
  for (const RankInfo& x : r.ranks) {
    out += fmt::format("  {:<48} {:>9.3f} {:>6.1f}% {:>9.3f} ms {:>11} {:>9} {:>11.3f}\n", x.label.substr(0, 48),
                       static_cast<double>(x.total_ns) / 1e6,
                       x.total_ns > 0 ? 100.0 * static_cast<double>(x.busy_ns) / static_cast<double>(x.total_ns) : 0.0,
                       static_cast<double>(x.exposed_comm_ns) / 1e6, x.collectives, x.straggler_count,
                       static_cast<double>(x.waited_ns) / 1e6);
  }
  if (r.usual_straggler) {
    out += fmt::format("  straggler: {} came last in {:.0f}% of the collectives with a straggler\n",
                       r.ranks[*r.usual_straggler].label, 100 * r.usual_share);
  }
  for (const std::string& p : r.problems) out += "  mismatch: " + p + "\n";
  return out;
}

}  // namespace latdoc::trace
