// Differential: the one-pass Kineto event reader against the general simdjson path. Whenever
// the fast reader accepts an event, the general path must read the same bytes as a valid event
// with the same fields; otherwise the fast path would be deciding something it must leave to
// the general one (kineto_event.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "trace/importers/kineto/kineto_event.h"

namespace {

std::string Describe(const latdoc::trace::KinetoEventFields& f) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  return std::string(f.ph) + "|" + std::string(f.cat) + "|" + std::string(f.name) + "|" + opt(f.pid) +
         "|" + opt(f.tid) + "|" + opt(f.ts_ns) + "|" + opt(f.dur_ns) + "|" + opt(f.correlation) + "|" +
         opt(f.stream) + "|" + opt(f.device) + "|" + opt(f.bytes) + "|" + std::string(f.kind_arg);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = latdoc::fuzz::AsView(data, size);
  latdoc::trace::KinetoEventFields fast;
  size_t length = 0;
  if (latdoc::trace::ReadKinetoEventFast(bytes.data(), bytes.size(), fast, &length) !=
      latdoc::trace::FastRead::kDone) {
    return 0;
  }
  if (length > bytes.size()) std::abort();
  const std::string got = Describe(fast);
  static latdoc::trace::KinetoEventParser general;
  latdoc::trace::KinetoEventFields want;
  const char* why = general.Parse(bytes.substr(0, length), want);
  if (why != nullptr) {
    std::fprintf(stderr, "fast path accepted what the general path calls '%s'\n", why);
    std::abort();
  }
  if (got != Describe(want)) {
    std::fprintf(stderr, "fields differ:\n fast:    %s\n general: %s\n", got.c_str(), Describe(want).c_str());
    std::abort();
  }
  return 0;
}
