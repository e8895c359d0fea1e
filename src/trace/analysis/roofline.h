// The achieved side of a roofline, per kernel family: FLOPs and bytes each kernel instance did,
// from the work of the framework op that launched it (Trace::op_work, joined on Kineto's
// External id) or from rocprof's memory counters (GpuOp::bytes of a kernel: FETCH_SIZE +
// WRITE_SIZE), over the time the instances ran. Peaks, bounds and verdicts are the rules' part
// (rules/trace_roofline_rules.h): the GPU spec table lives there.
//
// A framework op that launched several kernels (a split-K GEMM and its reduction) has its
// work split among them by their durations, so that no FLOP is counted twice.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "trace/analysis/trace_report.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

// Kernel families kept in RooflineStats::kernels (by total time).
inline constexpr size_t kRooflineKernels = 30;

// `trace` must be finalized; `busy_ns` is BusyOfAllOps (for each family's busy share).
RooflineStats ComputeRoofline(const Trace& trace, int64_t busy_ns);

nlohmann::json RooflineToJson(const RooflineStats& r);

// The terminal section: a blank line, a header and up to `rows` families, each line ending in
// '\n'; empty when no kernel has known work.
std::string RenderRooflineText(const RooflineStats& r, size_t rows);

}  // namespace latdoc::trace
