// Importer: one trace format read into the common model (trace/model/trace.h).
//
// Each format lives in its own folder under importers/ and is listed once, explicitly, in
// registry.cc. An importer appends one SourceFile per file it reads, and its events with that
// source index; bad records are counted in SourceFile::issues and the import goes on. A file
// that cannot be read at all returns an error naming the path and the byte offset or row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "trace/model/trace.h"

namespace latdoc::trace {

// The host latdoc runs on, for traces whose timestamps are a host's boot clock: rocprofiler-sdk
// (rocpd) stamps with CLOCK_BOOTTIME (ROCm/rocprofiler-sdk, source/lib/common/utility.hpp,
// default_clock_id), and a rocpd file names its host's machine-id (rocpd_info_node). A file of
// this host is placed on the wall clock with `realtime_minus_boottime_ns`.
struct LocalBootClock {
  std::string machine_id;                  // /etc/machine-id, 32 hex digits
  int64_t realtime_minus_boottime_ns = 0;  // CLOCK_REALTIME - CLOCK_BOOTTIME, now
};

struct ImportOptions {
  size_t chunk_bytes = 1 << 20;   // read slice for streamed formats
  // Set where latdoc runs on the host that recorded the traces (diagnose --local): a rocpd file
  // of this host (same machine-id) gets SourceFile::wall_clock_base_ns from it.
  std::optional<LocalBootClock> local_boot_clock;
  // A plain JSON trace of at least split_min_bytes is parsed in split_parts pieces on as many
  // threads (0: one per core, at most 8); the result is the same as one thread's. A compressed
  // one of at least split_min_bytes / 8 is inflated on one thread and cut into parts of about
  // split_part_bytes, parsed split_parts at a time.
  uint64_t split_min_bytes = uint64_t{8} << 20;
  int split_parts = 0;
  size_t split_part_bytes = size_t{256} << 10;
};

class Importer {
 public:
  virtual ~Importer() = default;
  // Short format name as shown to users: "kineto", "rocpd", "nsys", ...
  virtual std::string_view format() const = 0;
  // How sure the importer is that `path` is its format, 0 (no) to 100 (certain). `head` holds
  // the first bytes of the file, decompressed (up to 64 KiB).
  virtual int Detect(const std::string& path, std::string_view head) const = 0;
  // Reads `path` into `trace`. Paths of further files it consumed (a CSV set's siblings) are
  // added to `consumed` so the caller does not read them twice.
  virtual Status Import(const std::string& path, const ImportOptions& options, Trace& trace,
                        std::vector<std::string>& consumed) const = 0;
};

}  // namespace latdoc::trace
