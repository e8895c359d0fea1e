// The general path of kineto_event.h: one event's text through simdjson On-Demand, for the
// events the fast reader (kineto_event.cc) gives up on.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include <simdjson.h>

#include "trace/importers/kineto/kineto_event.h"
#include "trace/importers/kineto/kineto_importer.h"

namespace latdoc::trace {
namespace od = simdjson::ondemand;

std::optional<int64_t> JsonIntValue(od::value v) {
  od::json_type t;
  if (v.type().get(t)) return std::nullopt;
  if (t == od::json_type::number) {
    int64_t i;
    if (!v.get_int64().get(i)) return i;
    double d;
    // In int64's range only (fuzz 9240a37c: 8.51e49 overflowed the cast).
    if (!v.get_double().get(d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return static_cast<int64_t>(d);
    return std::nullopt;
  }
  if (t == od::json_type::string) {  // ROCm: "size": "2560", "stream": "0x0"
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    return IntFromJsonString(s);
  }
  return std::nullopt;
}

namespace {

std::optional<int64_t> MicrosValue(od::value v) {
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() &&
         (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t')) {
    tok.remove_suffix(1);
  }
  if (!tok.empty() && tok.front() == '"') {  // rocprof v1 results.json writes "ts": "12"
    tok = tok.substr(1, tok.size() >= 2 ? tok.size() - 2 : 0);
  }
  return ParseMicrosToNs(tok);
}

}  // namespace

// Long on purpose: one loop over the event's fields, in the order of kineto_event.cc's fast
// reader, whose results it must equal field for field.
const char* KinetoEventParser::Parse(std::string_view text, KinetoEventFields& f) {
  pad_.assign(text.data(), text.size());
  pad_.append(simdjson::SIMDJSON_PADDING, ' ');
  od::document doc;
  if (parser_.iterate(pad_.data(), text.size(), pad_.size()).get(doc)) return "malformed event";
  od::object obj;
  if (doc.get_object().get(obj)) return "event is not an object";
  f = KinetoEventFields{};
  bool ok = true;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      ok = false;
      break;
    }
    od::value v;
    if (field.value().get(v)) {
      ok = false;
      break;
    }
    if (key == "ph") {
      if (v.get_string().get(f.ph)) ok = false;
    } else if (key == "cat") {
      if (v.get_string().get(f.cat)) ok = false;
    } else if (key == "name") {
      if (v.get_string().get(f.name)) ok = false;
    } else if (key == "pid") {
      f.pid = JsonIntValue(v);
    } else if (key == "tid") {
      f.tid = JsonIntValue(v);
    } else if (key == "ts") {
      f.ts_ns = MicrosValue(v);
    } else if (key == "dur") {
      f.dur_ns = MicrosValue(v);
    } else if (key == "args") {
      // CPU-side args (Input Dims, Concrete Inputs...) are not needed but for the shapes of
      // the ops a roofline reads: leave the rest unread.
      const bool shapes = ReadsShapeArgs(f.cat, f.name);
      if (SkipsArgs(f.cat) && !shapes) continue;
      od::object args;
      if (v.get_object().get(args)) continue;  // rocprof v1 HIP events: args is a string
      if (shapes) {
        for (auto a : args) {
          std::string_view ak;
          od::value av;
          if (a.unescaped_key().get(ak) || a.value().get(av)) {
            ok = false;
            break;
          }
          if (ak == "External id") {
            f.external_id = JsonIntValue(av);
          } else if (ak == "Input Dims" || ak == "Input type") {
            // Not an array: no shapes (the fast path keeps such a value, which then fails
            // EstimateOpWork's parse the same way).
            od::array arr;
            std::string_view raw;
            if (av.get_array().get(arr) || arr.raw_json().get(raw)) continue;
            while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' ||
                                    raw.back() == '\t')) {
              raw.remove_suffix(1);
            }
            (ak == "Input Dims" ? f.input_dims : f.input_types) = raw;
          }
        }
        if (!ok) break;
        continue;
      }
      for (auto a : args) {
        std::string_view ak;
        if (a.unescaped_key().get(ak)) {
          ok = false;
          break;
        }
        od::value av;
        if (a.value().get(av)) {
          ok = false;
          break;
        }
        if (ak == "correlation") {
          f.correlation = JsonIntValue(av);
        } else if (ak == "External id") {
          f.external_id = JsonIntValue(av);
        } else if (ak == "stream") {
          f.stream = JsonIntValue(av);
        } else if (ak == "device") {
          f.device = JsonIntValue(av);
        } else if (ak == "bytes" || ak == "size") {
          f.bytes = JsonIntValue(av);
        } else if (ak == "kind") {
          std::string_view k;
          if (!av.get_string().get(k)) f.kind_arg = k;
        }
      }
    }
    if (!ok) break;
  }
  return ok ? nullptr : "malformed event";
}

}  // namespace latdoc::trace
