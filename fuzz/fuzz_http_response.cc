// Beast's HTTP/1.1 response parser configured exactly as the load client configures it
// (src/http/client.cc: response_parser<StreamBody>, body_limit 2^50, header_limit 64 KiB,
// the body taken and cleared after every read), fed arbitrary bytes in slices.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>

#include "fuzz/fuzz_util.h"
#include "http/parser_input.h"

namespace bhttp = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;
  std::string_view bytes = latdoc::fuzz::AsView(data + 1, size - 1);
  // Two responses in a row on one connection, as with keep-alive: a new parser each time.
  std::string pending;
  size_t at = 0;
  for (int response = 0; response < 2; ++response) {
    bhttp::response_parser<latdoc::http::StreamBody> parser;
    parser.body_limit(uint64_t{1} << 50);
    parser.header_limit(64 * 1024);
    boost::system::error_code ec;
    while (!parser.is_done()) {
      if (at < bytes.size()) {
        pending.append(bytes.substr(at, step));
        at += step;
      }
      size_t used = parser.put(boost::asio::buffer(pending), ec);
      pending.erase(0, used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        if (at >= bytes.size()) {
          // As beast::http::read_some does at end of stream: eof before any byte is
          // end_of_stream, not put_eof (which requires got_some()).
          if (parser.got_some()) parser.put_eof(ec);
          break;
        }
        continue;
      }
      if (ec) break;
      if (parser.is_header_done()) (void)parser.get().result_int();
      parser.get().body().clear();
      if (used == 0 && at >= bytes.size()) {
        if (parser.got_some()) parser.put_eof(ec);
        break;
      }
    }
    if (ec || !parser.is_done() || !parser.keep_alive()) break;
  }
  return 0;
}
