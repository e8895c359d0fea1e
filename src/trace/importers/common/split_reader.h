// Pieces of a parallel split read of a JSON document that do not depend on its format: where a
// part may start (a seam), the buffer a part's bytes live in, and the merge of a part's own Trace
// into the whole one. The Kineto importer's split (importers/kineto/kineto_split.cc) uses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "trace/model/trace.h"

namespace latdoc::trace {

// Where a part of the document may start: the first '{' at or after `from` that follows a ','
// and whitespace only, read from the open file `fd` of `size` bytes. That is the start of a
// traceEvents element when the ',' separates two of them, which the parse of the part before
// verifies (it may be inside an event's args, or a string). Looks at most 256 KiB; nullopt if
// none there.
std::optional<uint64_t> FindSeam(int fd, uint64_t from, uint64_t size);

// Where a part may start in `text`, looking from `*from`: the index of the first '{' that
// follows a ',' and whitespace only (as FindSeam). When none is there yet, sets `*from` to
// where the search must go on once more text has been appended.
std::optional<size_t> FindSeamIn(std::string_view text, size_t* from);

// Appends the events a later part of the document put into its own Trace (source 0, its own
// names) to `trace`: names are interned in the order the part first met them, so ids come out
// as a single pass over the whole document would have given them, and bad records follow
// those of the parts before.
void MergePart(Trace& part, uint16_t source, Trace& trace);

// Bytes of a document, not zero-filled before they are written (a std::string's would be:
// for a stream split that is a memset of the whole inflated document).
struct Bytes {
  std::unique_ptr<char[]> data;
  size_t size = 0, capacity = 0;

  // Room for at least `n` bytes, keeping the first `size`.
  void Reserve(size_t n) {
    if (n <= capacity) return;
    auto grown = std::make_unique_for_overwrite<char[]>(n);
    if (size > 0) std::memcpy(grown.get(), data.get(), size);
    data = std::move(grown);
    capacity = n;
  }
  std::string_view view() const { return {data.get(), size}; }
};

}  // namespace latdoc::trace
