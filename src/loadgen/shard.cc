#include "loadgen/shard.h"

#include <ctime>
#include <iterator>

#include <fmt/core.h>

#include "base/clock.h"
#include "base/json_text.h"
#include "base/strings.h"
#include "base/units.h"

namespace latdoc::loadgen {

using nlohmann::ordered_json;

StatusOr<ShardSpec> ParseShard(std::string_view text) {
  const std::string quoted = fmt::format("--shard '{}'", text);
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return InvalidArgument(quoted + ": expected I/N (the index from 0, then the count: 0/3)");
  auto index = ParseInt64(Trim(text.substr(0, slash)));
  auto count = ParseInt64(Trim(text.substr(slash + 1)));
  if (!index || !count)
    return InvalidArgument(quoted + ": expected I/N (the index from 0, then the count: 0/3)");
  if (*count < 1 || *count > kMaxShards)
    return InvalidArgument(fmt::format("{}: the count must be 1 to {}", quoted, kMaxShards));
  if (*index < 0 || *index >= *count) {
    return InvalidArgument(fmt::format("{}: the index must be below the count (0-based: 0/{}, ..., {}/{})",
                                       quoted, *count, *count - 1, *count));
  }
  return ShardSpec{int(*index), int(*count)};
}

namespace {

// Digits at text[pos, pos + n) as a number; nullopt when any is not a digit.
std::optional<int> Digits(std::string_view text, size_t pos, size_t n) {
  if (pos + n > text.size()) return std::nullopt;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

// RFC 3339 section 5.6: date-time = full-date "T" full-time, e.g. "2026-12-05T03:00:00.25Z" or
// "2026-12-05T04:00:00+01:00" (a lower-case "t" or "z" too, as the RFC allows).
std::optional<int64_t> ParseRfc3339(std::string_view t) {
  auto year = Digits(t, 0, 4), month = Digits(t, 5, 2), day = Digits(t, 8, 2);
  auto hour = Digits(t, 11, 2), minute = Digits(t, 14, 2), second = Digits(t, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (t[4] != '-' || t[7] != '-' || (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':')
    return std::nullopt;
  if (*month < 1 || *month > 12 || *day < 1 || *day > 31 || *hour > 23 || *minute > 59 || *second > 60)
    return std::nullopt;
  size_t pos = 19;
  int64_t frac_ns = 0;
  if (pos < t.size() && t[pos] == '.') {
    ++pos;
    int64_t scale = kNsPerSec;
    const size_t first = pos;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
      scale /= 10;
      frac_ns += (t[pos] - '0') * scale;  // digits past the nanosecond add 0
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }
  int64_t offset_s = 0;
  std::string_view zone = t.substr(pos);
  if (zone == "Z" || zone == "z") {
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    auto oh = Digits(zone, 1, 2), om = Digits(zone, 4, 2);
    if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
    offset_s = (zone[0] == '+' ? 1 : -1) * (*oh * 3600 + *om * 60);
  } else {
    return std::nullopt;
  }
  tm parts{};
  parts.tm_year = *year - 1900;
  parts.tm_mon = *month - 1;
  parts.tm_mday = *day;
  parts.tm_hour = *hour;
  parts.tm_min = *minute;
  parts.tm_sec = *second;
  const time_t utc = timegm(&parts);
  return (int64_t(utc) - offset_s) * kNsPerSec + frac_ns;
}

}  // namespace

StatusOr<int64_t> ParseStartAt(std::string_view text, int64_t now_unix_ns) {
  const std::string_view t = Trim(text);
  const std::string expected = fmt::format(
      "--start-at '{}': expected an RFC 3339 time (2026-12-05T03:00:00Z), Unix seconds, or "
      "now+DURATION (now+10s)", text);
  if (t.substr(0, 3) == "now") {
    if (t.size() == 3) return now_unix_ns;
    if (t[3] != '+') return InvalidArgument(expected);
    auto d = ParseDurationNs(t.substr(4));
    if (!d.ok()) return InvalidArgument(fmt::format("--start-at '{}': {}", text, d.status().message()));
    return now_unix_ns + *d;
  }
  if (t.find('-') != std::string_view::npos || t.find('T') != std::string_view::npos) {
    auto ns = ParseRfc3339(t);
    if (!ns) return InvalidArgument(expected);
    return *ns;
  }
  // Unix seconds, to the nanosecond at most (a double would round at 2^53 ns, about 104 days).
  const size_t dot = t.find('.');
  auto whole = ParseInt64(t.substr(0, dot));
  if (!whole || *whole < 0 || *whole > int64_t{1} << 33 || (!t.empty() && t[0] == '+'))
    return InvalidArgument(expected);
  int64_t frac_ns = 0;
  if (dot != std::string_view::npos) {
    std::string_view f = t.substr(dot + 1);
    if (f.empty() || f.size() > 9) return InvalidArgument(expected);
    auto d = Digits(f, 0, f.size());
    if (!d) return InvalidArgument(expected);
    frac_ns = *d;
    for (size_t i = f.size(); i < 9; ++i) frac_ns *= 10;
  }
  return *whole * kNsPerSec + frac_ns;
}

std::string FormatRfc3339Utc(int64_t unix_ns) {
  int64_t s = unix_ns / kNsPerSec, ns = unix_ns % kNsPerSec;
  if (ns < 0) {
    ns += kNsPerSec;
    --s;
  }
  const time_t tt = time_t(s);
  tm parts{};
  gmtime_r(&tt, &parts);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &parts);
  std::string out = buf;
  if (ns != 0) out += fmt::format(".{:03d}", ns / kNsPerMs);
  return out + "Z";
}

int64_t ShareOf(int64_t total, ShardSpec s) {
  return total / s.count + (s.index < total % s.count ? 1 : 0);
}

int64_t OffsetOf(int64_t total, ShardSpec s) {
  const int64_t base = total / s.count, extra = total % s.count;
  return int64_t(s.index) * base + std::min<int64_t>(s.index, extra);
}

uint64_t ShardSeed(uint64_t seed, ShardSpec s) {
  if (s.index == 0) return seed;
  // SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014).
  uint64_t z = (seed ^ uint64_t(s.index)) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

ordered_json RecordsJson(const BenchRun& run, int64_t mono_to_unix_ns) {
  ordered_json out = ordered_json::array();
  for (const RequestRecord& r : run.records) {
    auto after = [&](int64_t ns) -> ordered_json {
      if (ns < 0) return nullptr;
      return ns - r.scheduled_ns;
    };
    ordered_json j;
    j["outcome"] = OutcomeName(r.outcome);
    if (!r.error.empty()) j["error"] = r.error;
    j["http_status"] = r.http_status;
    j["scheduled_unix_ns"] = r.scheduled_ns + mono_to_unix_ns;
    j["sent_ns"] = after(r.sent_ns);
    j["first_token_ns"] = after(r.first_token_ns);
    j["last_token_ns"] = after(r.last_token_ns);
    j["end_ns"] = after(r.end_ns);
    j["prompt_tokens"] = r.prompt_tokens;
    j["output_tokens"] = r.output_tokens;
    j["requested_output_tokens"] = r.requested_output_tokens;
    j["token_count_method"] = TokenMethodName(r.method);
    j["count_mismatch"] = r.count_mismatch;
    ordered_json chunks = ordered_json::array();
    for (const auto& [t, k] : r.chunks) chunks.push_back({t - r.scheduled_ns, k});
    j["chunks"] = std::move(chunks);
    out.push_back(std::move(j));
  }
  return out;
}

std::string ShardResultText(const ordered_json& result) {
  if (!result.is_object() || result.empty() || std::prev(result.end()).key() != "requests" ||
      !result["requests"].is_array())
    return JsonText(result, 2) + "\n";
  ordered_json rest = result;
  rest.erase("requests");
  std::string out = JsonText(rest, 2);
  out.pop_back();  // the closing brace
  while (!out.empty() && out.back() == '\n') out.pop_back();
  out += rest.empty() ? "\n" : ",\n";
  out += "  \"requests\": [";
  const ordered_json& requests = result["requests"];
  for (size_t i = 0; i < requests.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    out += JsonText(requests[i]);
  }
  out += requests.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

namespace {

template <typename Enum, size_t N>
std::optional<Enum> ByName(std::string_view name, const Enum (&all)[N], std::string_view (*name_of)(Enum)) {
  for (Enum e : all)
    if (name_of(e) == name) return e;
  return std::nullopt;
}

constexpr Outcome kOutcomes[] = {Outcome::kOk, Outcome::kConnect, Outcome::kTimeout,
                                 Outcome::kHttpStatus, Outcome::kStreamError, Outcome::kCutShort,
                                 Outcome::kReset, Outcome::kProtocol, Outcome::kCancelled};
constexpr TokenMethod kMethods[] = {TokenMethod::kUsagePerChunk, TokenMethod::kUsageFinal,
                                    TokenMethod::kChunks};

}  // namespace

StatusOr<std::vector<RequestRecord>> RecordsFromJson(const ordered_json& requests,
                                                     std::string_view where) {
  if (!requests.is_array())
    return InvalidArgument(fmt::format("{}: \"requests\" is not an array", where));
  std::vector<RequestRecord> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const ordered_json& j = requests[i];
    auto bad = [&](std::string_view field, std::string_view what) {
      return InvalidArgument(fmt::format("{}: requests[{}].{}: {}", where, i, field, what));
    };
    if (!j.is_object()) return InvalidArgument(fmt::format("{}: requests[{}]: not an object", where, i));
    RequestRecord r;
    r.index = i;
    auto integer = [&](const char* key, int64_t* v) -> Status {
      auto it = j.find(key);
      if (it == j.end() || !it->is_number_integer()) return bad(key, "expected an integer");
      *v = it->get<int64_t>();
      return Status::Ok();
    };
    int64_t scheduled = 0;
    RETURN_IF_ERROR(integer("scheduled_unix_ns", &scheduled));
    r.scheduled_ns = scheduled;
    // A time after the scheduled one, or null for an event that never happened (-1).
    auto time = [&](const char* key, int64_t* v) -> Status {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) {
        *v = -1;
        return Status::Ok();
      }
      if (!it->is_number_integer() || it->get<int64_t>() < 0)
        return bad(key, "expected a non-negative integer or null");
      *v = scheduled + it->get<int64_t>();
      return Status::Ok();
    };
    RETURN_IF_ERROR(time("sent_ns", &r.sent_ns));
    RETURN_IF_ERROR(time("first_token_ns", &r.first_token_ns));
    RETURN_IF_ERROR(time("last_token_ns", &r.last_token_ns));
    RETURN_IF_ERROR(time("end_ns", &r.end_ns));
    auto outcome = j.find("outcome");
    if (outcome == j.end() || !outcome->is_string()) return bad("outcome", "expected a string");
    auto o = ByName(outcome->get_ref<const std::string&>(), kOutcomes, &OutcomeName);
    if (!o) return bad("outcome", fmt::format("unknown outcome '{}'", outcome->get<std::string>()));
    r.outcome = *o;
    if (auto e = j.find("error"); e != j.end() && e->is_string()) r.error = e->get<std::string>();
    int64_t v = 0;
    RETURN_IF_ERROR(integer("http_status", &v));
    r.http_status = int(v);
    RETURN_IF_ERROR(integer("prompt_tokens", &v));
    r.prompt_tokens = int(v);
    RETURN_IF_ERROR(integer("output_tokens", &v));
    r.output_tokens = int(v);
    RETURN_IF_ERROR(integer("requested_output_tokens", &v));
    r.requested_output_tokens = int(v);
    auto method = j.find("token_count_method");
    if (method == j.end() || !method->is_string()) return bad("token_count_method", "expected a string");
    auto m = ByName(method->get_ref<const std::string&>(), kMethods, &TokenMethodName);
    if (!m) return bad("token_count_method", fmt::format("unknown method '{}'", method->get<std::string>()));
    r.method = *m;
    r.count_mismatch = j.value("count_mismatch", false);
    auto chunks = j.find("chunks");
    if (chunks == j.end() || !chunks->is_array()) return bad("chunks", "expected an array");
    for (size_t c = 0; c < chunks->size(); ++c) {
      const ordered_json& p = (*chunks)[c];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number_integer())
        return bad(fmt::format("chunks[{}]", c), "expected [ns, tokens]");
      r.chunks.emplace_back(scheduled + p[0].get<int64_t>(), int(p[1].get<int64_t>()));
    }
    // What SummarizeRun takes of an ok request: its first and last token.
    if (r.outcome == Outcome::kOk && (r.first_token_ns < 0 || r.last_token_ns < 0))
      return bad("first_token_ns", "an ok request without its first and last token times");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace latdoc::loadgen
