// One Kineto/Chrome-trace event's fields, as the Kineto importer needs them, and a one-pass
// reader for the common shape of those events.
//
// The general path (kineto_parse.h) hands each event's text to simdjson On-Demand. That
// costs two passes over every byte (the scanner finding the event's end, then simdjson's own
// index), and most of a PyTorch trace is the args of CPU ops that are never read. The fast
// reader below reads an event straight from the scanner's buffer in one pass, skipping what it
// does not need, and gives up ("bail") on anything unusual — an escape in a string it keeps, a
// number that is not a plain integer where one is expected, a value of an unexpected type —
// so that the general path decides those events. An object or array it does not read is
// skipped the way the general path skips it (simdjson's skip_child: strings whole, brackets of
// either kind counted), so a malformed value there is accepted by both or by neither. Both
// paths give the same fields for every event the fast one accepts (kineto_event_test.cc checks
// that on the real fixtures; fuzz_kineto_event on arbitrary bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace latdoc::trace {

struct KinetoEventFields {
  std::string_view ph, cat, name;
  std::optional<int64_t> pid, tid, ts_ns, dur_ns;
  std::optional<int64_t> correlation, stream, device, bytes;
  std::string_view kind_arg;
  // "External id" (kernels; CPU ops whose shapes are read), and the raw JSON text of a CPU
  // op's "Input Dims" and "Input type" arrays, read only for ops WantsShapes() names.
  std::optional<int64_t> external_id;
  std::string_view input_dims, input_types;
};

// True for the CPU-side categories whose (large) args the importer never reads.
inline bool SkipsArgs(std::string_view cat) {
  return cat == "cpu_op" || cat == "python_function" || cat == "user_annotation";
}

// True for a CPU op whose shape args are read: a Kineto "cpu_op" the roofline has a formula for
// (importers/common/op_work.h).
bool ReadsShapeArgs(std::string_view cat, std::string_view name);

// An integer given as a JSON string, as ROCm writes some ("2560", "0x0"); nullopt otherwise.
std::optional<int64_t> IntFromJsonString(std::string_view s);

// An integer field read the general way: a JSON number (a fraction truncated), or a string
// IntFromJsonString reads; nullopt otherwise.
std::optional<int64_t> JsonIntValue(simdjson::ondemand::value v);

// The general path: simdjson On-Demand over one event's text.
class KinetoEventParser {
 public:
  // nullptr when `f` holds the event's fields (its strings valid until the next Parse), else
  // why not ("malformed event", "event is not an object").
  const char* Parse(std::string_view text, KinetoEventFields& f);

 private:
  simdjson::ondemand::parser parser_;
  std::string pad_;
};

enum class FastRead {
  kDone,      // `*length` bytes were one event; `f` holds its fields
  kNeedMore,  // the event does not end within the n bytes given
  kBail,      // unusual: let the general path read it
};

// Reads the event object starting at b[0] ('{'), looking at no byte past b[n-1].
FastRead ReadKinetoEventFast(const char* b, size_t n, KinetoEventFields& f, size_t* length);

}  // namespace latdoc::trace
