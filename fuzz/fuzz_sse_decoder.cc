// SseDecoder on arbitrary bytes. Contract checked beyond "no crash": the events must not
// depend on how the stream is split (the first input byte picks the split points), and the
// decoder's own counters must agree with what it delivered.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "http/sse_decoder.h"

namespace {

struct Ev {
  std::string data, event, id;
  bool operator==(const Ev&) const = default;
};

std::vector<Ev> Decode(std::string_view stream, size_t step, uint64_t* events) {
  latdoc::http::SseDecoder d(latdoc::http::SseDecoderOptions{.max_event_bytes = 64});
  std::vector<Ev> out;
  auto on = [&](const latdoc::http::SseEvent& e) {
    out.push_back({std::string(e.data), std::string(e.event), std::string(e.id)});
  };
  for (size_t at = 0; at < stream.size(); at += step) {
    (void)d.Feed(stream.substr(at, step), on);
  }
  *events = d.events();
  if (d.bytes_fed() != stream.size()) __builtin_trap();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 7;
  std::string_view stream = latdoc::fuzz::AsView(data + 1, size - 1);
  uint64_t n_whole = 0, n_split = 0;
  std::vector<Ev> whole = Decode(stream, stream.size() + 1, &n_whole);
  std::vector<Ev> split = Decode(stream, step, &n_split);
  if (whole != split || n_whole != whole.size() || n_split != split.size()) __builtin_trap();
  return 0;
}
