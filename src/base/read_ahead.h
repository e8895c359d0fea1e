// ReadAhead: an InputStream that reads (and decompresses) its source on a background thread,
// a few slices ahead of the consumer, so that inflating a gzip trace and parsing it use two
// cores instead of taking turns on one. Memory is bounded: `slices` buffers of `slice_bytes`.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
//   in = ReadAhead(std::move(in));
//   while ((n = in->Read(buf, sizeof buf)) > 0) ...
//
// The source's errors arrive in order, after the bytes read before them. The returned stream
// is used from one thread (like any InputStream); destroying it stops the reader.
#pragma once

#include <cstddef>
#include <memory>

#include "base/file_util.h"

namespace latdoc {

std::unique_ptr<InputStream> ReadAhead(std::unique_ptr<InputStream> source,
                                       size_t slice_bytes = size_t{1} << 20, size_t slices = 4);

}  // namespace latdoc
