// Several ranks of one tensor- or pipeline-parallel job, one trace file per rank (Kineto per
// rank, rocprofv3 per rank, nsys per process): per rank GPU busy time and communication not
// hidden under compute, and the straggler of each collective.
//
// Ranks are aligned by collective order, not by clocks (each file has its own): the k-th
// collective kernel on every rank is the same collective. All ranks leave a collective at
// about the same moment, so a rank that arrived early spends the difference waiting inside the
// kernel: the rank with the shortest collective kernel arrived last (the straggler), and each
// other rank waited its kernel's duration less that shortest one. Point-to-point kernels
// (Send/Recv of pipeline stages) are not aligned: their pairs differ between ranks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "trace/analysis/trace_report.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

struct RankOptions {
  // A collective has a straggler when the longest wait in it is at least this long (NCCL
  // kernels of equal arrival vary by a few microseconds).
  int64_t straggler_min_wait_ns = 20'000;
  // The same rank last in at least this share of the collectives with a straggler (and in at
  // least usual_min_count of them) is "always the same rank".
  double usual_share = 0.6;
  int64_t usual_min_count = 3;
};

// "AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "Reduce", "SendRecv"
// from an NCCL/RCCL kernel name; "Collective" when the name has none (RCCL's
// ncclDevKernel_Generic).
std::string_view CollectiveKind(std::string_view kernel_name);

// `r.per_device` must be filled (Analyze does it before). Sets r.ranks.
void ComputeRanks(const Trace& trace, const std::vector<SourceFile>& sources, TraceReport& r,
                  const RankOptions& o = {});

nlohmann::json RanksToJson(const RankStats& r);

// The terminal section (blank line first); empty without ranks.
std::string RenderRanksText(const RankStats& r);

}  // namespace latdoc::trace
