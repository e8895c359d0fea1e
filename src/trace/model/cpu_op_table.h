// CPU-side ranges of a trace, and the table that holds them without holding them all in memory.
//
// CPU ops are most of a PyTorch trace's events (63% of the H200 fixture's; Python frames and
// framework ops) and one analysis reads them, in one pass: what the launching thread did
// during the largest idle gaps. So the table keeps the ops in the order they were added and,
// past one block, writes full blocks to an unnamed temporary file ($TMPDIR, else /var/tmp, else
// /tmp): its memory stays at one block however long the trace. Reading walks the blocks back
// in order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

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

// CPU ops in the order they were added. Not thread-safe.
class CpuOpTable {
 public:
  // Ops per block: 8 MiB of memory at most, before and after the first spill.
  static constexpr size_t kDefaultBlockOps = size_t{1} << 18;

  explicit CpuOpTable(size_t block_ops = kDefaultBlockOps);
  ~CpuOpTable();
  CpuOpTable(CpuOpTable&& other) noexcept;
  CpuOpTable& operator=(CpuOpTable&& other) noexcept;
  CpuOpTable(const CpuOpTable&) = delete;
  CpuOpTable& operator=(const CpuOpTable&) = delete;

  // Adds `op`. When the block in memory is full it goes to the spill file; where no file can
  // be made or written (no temporary directory, a full disk, a file size limit) the ops stay in
  // memory: nothing is lost, only the memory bound.
  void push_back(const CpuOp& op);
  size_t size() const { return spilled_ + mem_.size(); }
  bool empty() const { return size() == 0; }
  void clear();

  // The i-th op added, by value (a spilled one is read back). REQUIRES: i < size(). For tests
  // and single lookups; a pass over the table is ForEach.
  CpuOp operator[](size_t i) const;

  // Calls fn(const CpuOp&) for every op, in the order added, reading spilled blocks back one at
  // a time. Returns false, having called fn for the ops before it, when the spill file can no
  // longer be read (a disk error); `error` (when given) then says why.
  template <typename Fn>
  bool ForEach(Fn&& fn, std::string* error = nullptr) const {
    std::vector<CpuOp> block;
    for (size_t first = 0; first < spilled_; first += block_ops_) {
      const size_t n = std::min(block_ops_, spilled_ - first);
      if (!ReadSpilled(first, n, block, error)) return false;
      for (const CpuOp& op : block) fn(op);
    }
    for (const CpuOp& op : mem_) fn(op);
    return true;
  }

  // Ops written to the spill file so far (the first ones added).
  size_t spilled() const { return spilled_; }
  // Why the table stopped spilling and kept everything in memory; empty while it has not.
  const std::string& spill_error() const { return spill_error_; }

 private:
  void Spill();
  bool ReadSpilled(size_t first, size_t n, std::vector<CpuOp>& out, std::string* error) const;

  size_t block_ops_;
  std::vector<CpuOp> mem_;   // ops [spilled_, size())
  size_t spilled_ = 0;       // ops [0, spilled_) are in the file, at sizeof(CpuOp) each
  int fd_ = -1;
  std::string spill_error_;  // set once spilling failed: then every op stays in memory
};

}  // namespace latdoc::trace
