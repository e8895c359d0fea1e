// Files: whole small files, atomic output, and streamed input that may be gzip or zstd.
//
// Output files are written atomically (a temporary file beside the target, fsync, rename), so a
// crash or a Ctrl-C never leaves a half-written result. Input larger than memory is read with
// InputStream, which decompresses gzip and zstd transparently, in slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace latdoc {

// Reads a whole file. Errors name the path. Use only for small files (configs, sysfs values).
StatusOr<std::string> ReadFileToString(const std::string& path);

// Writes `content` to `path` through a temporary file and rename(2). On error nothing is left
// at `path` that was not there before, and the temporary is removed.
Status WriteFileAtomic(const std::string& path, std::string_view content);

// Whether a file can be written at `path` later (its directory exists and is writable, and the
// path is not a directory): checked before a run, so no measurement is lost to a typo in an
// output path. InvalidArgument naming the path otherwise.
Status CheckOutputPath(const std::string& path);

enum class Compression { kNone, kGzip, kZstd };

// A sequential byte source over a file or standard input ("-"), decompressing gzip or zstd
// (detected from the first bytes, not the name). Not thread-safe.
class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to `n` bytes into `buf`; returns 0 at the end. A truncated or corrupt compressed
  // stream is a kDataLoss error naming the path and the compressed byte offset.
  virtual StatusOr<size_t> Read(char* buf, size_t n) = 0;
  // Bytes consumed from the underlying file so far (compressed bytes for compressed input).
  virtual uint64_t raw_offset() const = 0;
  virtual Compression compression() const = 0;
  virtual const std::string& path() const = 0;
};

// Opens `path` ("-" is standard input). A directory or a missing file is an error.
StatusOr<std::unique_ptr<InputStream>> OpenInput(const std::string& path);

// Opens an in-memory buffer as an InputStream (for tests and fuzzers). `data` must outlive it.
std::unique_ptr<InputStream> OpenMemoryInput(std::string_view data, std::string name = "<memory>");

// Reads `in` to its end in slices of up to `slice_bytes` (> 0), handing each to `feed` in
// order; stops at the first error, from the stream or from `feed`. Ok at the end of the stream.
Status ForEachSlice(InputStream& in, size_t slice_bytes,
                    const std::function<Status(std::string_view)>& feed);

// Reads the whole stream (decompressed). For tests and small inputs.
StatusOr<std::string> ReadAll(InputStream& in);

}  // namespace latdoc
