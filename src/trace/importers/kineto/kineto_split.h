// The Kineto importer's parallel split read (kineto_importer.h says what it does). It stays in
// importers/kineto/ because it drives the Kineto parse itself: it starts a KinetoParse inside
// traceEvents for each part, asks its JsonEventScanner whether a part ended at an element, and
// merges the top-level values (deviceProperties...) its KinetoReader kept. The pieces that do
// not depend on the format (seams, part buffers, merging a part's Trace) are in
// importers/common/split_reader.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "trace/importers/importer.h"
#include "trace/importers/kineto/kineto_importer.h"
#include "trace/importers/kineto/kineto_parse.h"
#include "trace/model/trace.h"

namespace latdoc::trace::kineto {

// Reads the file on `parts` threads when it is a plain (uncompressed) file of at least
// `min_bytes`: the first part on this thread from the document's start, the others from a
// seam (FindSeam) each. Each part's end is checked to be a traceEvents element boundary
// before the next part is taken; where it is not, the part goes on to the end of the file on
// its own and the later parts are dropped. So the result is always the one-thread result:
// the same events in the same order, the same name ids, bad records and errors.
// nullopt, and `main` untouched, when the file is not one for this split (not a regular file,
// compressed, too small, one worker): the caller reads it on one thread. Otherwise the
// import's status, with `*fed` and `*events` the bytes and events read in all; `main` is the
// parse of the document's head (source `source`).
std::optional<Status> ImportSplit(const std::string& path, const ImportOptions& options, Trace& trace,
                                  uint16_t source, KinetoParse& main, uint64_t* fed, uint64_t* events,
                                  KinetoSplitStats& stats);

// The split for compressed input, which is one stream: this thread inflates and cuts the
// document at seams (FindSeamIn) into parts of about ImportOptions::split_part_bytes; each part
// is parsed on its own thread, at most `workers` at once, and joined to the ones before it as
// they finish, in order (PartChain), so memory holds a few parts, not the document. The first
// part continues the parse of the first slice. Where a part cannot be taken, the last taken
// parse reads on over its bytes, the later parts' and the rest of the stream on this thread.
// The result is the one-thread result, as for the file split.
// nullopt, and `main` untouched, when the file is not compressed, is small or there is one
// worker; otherwise as ImportSplit.
std::optional<Status> ImportSplitStream(const std::string& path, const ImportOptions& options, Trace& trace,
                                        uint16_t source, KinetoParse& main, uint64_t* fed,
                                        uint64_t* events, KinetoSplitStats& stats);

}  // namespace latdoc::trace::kineto
