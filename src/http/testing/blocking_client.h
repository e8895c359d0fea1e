// A tiny blocking HTTP/1.1 client over loopback for tests: one request per connection, the
// response read to its end (content-length, chunked, or close), chunked bodies decoded.
// Deliberately independent of latdoc's real client, so tests of one do not rely on the other.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace latdoc::http::testing {

struct BlockingResponse {
  int status = 0;                 // 0: no response (connection failed or reset)
  std::string head;               // status line and headers, raw
  std::string body;               // de-chunked
  bool complete = false;          // the body ended as framed (not cut short)
  int err = 0;                    // errno of a failed read (ECONNRESET, ...)
  std::vector<std::string> sse_data;  // the `data:` payloads when the body is an SSE stream
};

BlockingResponse Fetch(uint16_t port, const std::string& method, const std::string& path,
                       const std::string& body = "",
                       const std::vector<std::pair<std::string, std::string>>& headers = {});

// Writes `raw` as given on a new loopback connection and returns every byte read until the
// server closes it (5 s without a byte ends the read): for responses a framed client would not
// show as sent (a HEAD with a body, an error before the request was read).
std::string RawExchange(uint16_t port, const std::string& raw);

// Splits an SSE body into its data payloads (test helper; no multi-line data).
std::vector<std::string> SseData(const std::string& body);

}  // namespace latdoc::http::testing
