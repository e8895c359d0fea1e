// CPU-side ranges of a trace, and the table that holds them without holding them all in memory.
//
// CPU ops are most of a PyTorch trace's events (63% of the H200 fixture's; Python frames and
// framework ops) and one analysis reads them, in one pass: what the launching thread did
// during the largest idle gaps. So the table keeps the ops in the order they were added and,
// past one block, writes full blocks to an unnamed temporary file (spill_table.h): its memory
// stays at one block however long the trace. Reading walks the blocks back in order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "trace/model/spill_table.h"
#include "trace/model/string_table.h"

namespace latdoc::trace {

enum class CpuOpKind : uint8_t { kOp, kAnnotation, kPython, kMarker, kOther };

// A CPU-side range: framework op, user annotation, Python frame, marker (ROCTx/NVTX).
struct CpuOp {
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  NameId name = 0;
  int32_t pid = 0;
  int32_t tid = 0;
  uint16_t source = 0;
  CpuOpKind kind = CpuOpKind::kOp;
  int64_t end_ns() const { return start_ns + dur_ns; }
};
static_assert(std::is_trivially_copyable_v<CpuOp>, "CpuOp blocks are written to a file as bytes");

// CPU ops in the order they were added: 8 MiB of memory at most, before and after the first
// spill.
using CpuOpTable = SpillTable<CpuOp>;

}  // namespace latdoc::trace
