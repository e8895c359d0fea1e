// The stream chunk parser of the load client (loadgen/record.h) and the token accounting it
// feeds, on arbitrary SSE payloads: the input is split at '\n' into payloads, one per chunk.
// Contract: the record's token count and chunk timeline stay consistent with what was fed.
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "loadgen/record.h"

using namespace latdoc::loadgen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in = latdoc::fuzz::AsView(data, size);
  ChunkParser parser;
  RequestRecord rec;
  StreamAccountant acc(&rec);
  int64_t now_ns = 1000;
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view payload = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    ChunkInfo c = parser.Parse(payload);
    acc.OnPayload(c, now_ns);
    now_ns += 1000;
  }
  acc.Finish(true, now_ns);
  (void)OutcomeName(rec.outcome);
  return 0;
}
