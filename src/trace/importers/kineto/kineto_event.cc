// The fast reader of kineto_event.h (one pass over the scanner's buffer) and what both paths
// share; the general path, simdjson On-Demand, is kineto_event_general.cc.
#include "trace/importers/kineto/kineto_event.h"

#include "trace/importers/common/op_work.h"

#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>

#include <simdjson.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "trace/importers/kineto/kineto_importer.h"

namespace latdoc::trace {

std::optional<int64_t> IntFromJsonString(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    return static_cast<int64_t>(std::strtoull(std::string(s.substr(2)).c_str(), nullptr, 16));
  }
  int64_t i = 0;
  bool any = false;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (i > (INT64_MAX - 9) / 10) return std::nullopt;  // past int64 (fuzz 35e78bb6)
    i = i * 10 + (c - '0');
    any = true;
  }
  return any ? std::optional<int64_t>(i) : std::nullopt;
}

namespace {


// The first i >= p with b[i] one of `"` `\\` or a control byte (< 0x20): where a string's
// plain run ends. n if none. Sixteen bytes a step with SSE2.
size_t StringStop(const char* b, size_t p, size_t n) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i control_max = _mm_set1_epi8(0x1F);
  for (; p + 16 <= n; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + p));
    const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, control_max), v);  // v <= 0x1F
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), control);
    const int mask = _mm_movemask_epi8(m);
    if (mask != 0) return p + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
  }
#endif
  while (p < n && b[p] != '"' && b[p] != '\\' && static_cast<unsigned char>(b[p]) >= 0x20) ++p;
  return p;
}

// What simdjson rejects anywhere in an event and the reader does not check as it goes: a byte
// below 0x20 other than JSON's whitespace (tab, LF, CR; simdjson splits a token there or
// rejects the event; in a string the reader has bailed already), and invalid UTF-8 (checked
// only when a byte >= 0x80 is present: ASCII is valid UTF-8). One SSE2 pass.
bool AcceptableBytes(const char* b, size_t n) {
  size_t i = 0;
  bool non_ascii = false;
#ifdef __SSE2__
  const __m128i control_max = _mm_set1_epi8(0x1F);
  const __m128i tab = _mm_set1_epi8('\t'), lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r');
  int high = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(v, control_max), v);
    const __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, lf)), _mm_cmpeq_epi8(v, cr));
    if (_mm_movemask_epi8(_mm_andnot_si128(ws, control)) != 0) return false;
    high |= _mm_movemask_epi8(v);  // the top bit of each byte
  }
  non_ascii = high != 0;
#endif
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
    non_ascii |= c >= 0x80;
  }
  return !non_ascii || simdjson::validate_utf8(b, n);
}

// std::popcount without a library call where the target has no POPCNT instruction (x86-64's
// baseline lacks it; a resolver picking a POPCNT clone at load time runs before the sanitizers'
// runtimes are up and crashed the TSan build).
inline int CountBits(uint64_t x) {
#ifdef __POPCNT__
  return std::popcount(x);
#else
  x -= (x >> 1) & 0x5555555555555555u;
  x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Fu;
  return static_cast<int>((x * 0x0101010101010101u) >> 56);
#endif
}

// The bytes after a backslash: one of `"\\/bfnrt`, or `u` and four hex digits.
bool IsEscape(const char* e, size_t n) {
  if (n == 1) return std::string_view("\"\\/bfnrt").find(e[0]) != std::string_view::npos;
  for (size_t i = 1; i < n; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(e[i]))) return false;
  }
  return e[0] == 'u';
}

// Byte classes, one table load each (the scalar loops test every byte).
enum ByteClass : uint8_t { kScalarByte = 1, kEndsScalar = 2, kWs = 4, kSkipStop = 8 };
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    // A byte a JSON number or literal can hold.
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
        c == '+' || c == '.') {
      t[c] |= kScalarByte;
    }
    // A byte that ends a scalar token, as simdjson's structural index splits them.
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' || c == '}' || c == ']' ||
        c == '{' || c == '[' || c == ':' || c == '"') {
      t[c] |= kEndsScalar;
    }
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') t[c] |= kWs;  // JSON's whitespace
    // Where skipping an object or array must look: strings, brackets, a stray backslash.
    if (c == '"' || c == '{' || c == '}' || c == '[' || c == ']' || c == '\\') t[c] |= kSkipStop;
  }
  return t;
}();

bool IsWs(char c) { return kByteClass[static_cast<unsigned char>(c)] & kWs; }

bool IsScalarByte(char c) { return kByteClass[static_cast<unsigned char>(c)] & kScalarByte; }

// A JSON literal or a number by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsJsonScalar(std::string_view t) {
  if (t == "true" || t == "false" || t == "null") return true;
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i > from;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// Ends a scalar token the way simdjson's structural index does.
bool EndsScalar(char c) { return kByteClass[static_cast<unsigned char>(c)] & kEndsScalar; }

// One pass over an event object. Every method returns false when reading must stop, with the
// reason in `stop`.
class EventReader {
 public:
  EventReader(const char* b, size_t n) : b_(b), n_(n) {}

  FastRead Read(KinetoEventFields& f, size_t* length) {
    if (!ReadObject(f)) return stop_;
    // simdjson rejects an event with invalid UTF-8 anywhere in it; so does this reader, by
    // handing such an event to the general path.
    if (!AcceptableBytes(b_, p_)) return FastRead::kBail;
    *length = p_;
    return FastRead::kDone;
  }

 private:
  bool Stop(FastRead r) {
    stop_ = r;
    return false;
  }
  bool SkipWs() {
    if (p_ < n_ && !IsWs(b_[p_])) return true;  // most tokens: none
    if (p_ + 1 < n_ && b_[p_] == ' ' && !IsWs(b_[p_ + 1])) {  // most others: one space
      ++p_;
      return true;
    }
#ifdef __SSE2__
    // Indentation runs (PyTorch writes events indented on several lines): 16 bytes a step.
    const __m128i space = _mm_set1_epi8(' '), lf = _mm_set1_epi8('\n');
    const __m128i cr = _mm_set1_epi8('\r'), tab = _mm_set1_epi8('\t');
    for (; p_ + 16 <= n_; p_ += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b_ + p_));
      const __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, lf)),
                                      _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
      const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(ws)) & 0xFFFFu;
      if (other != 0) {
        p_ += static_cast<size_t>(__builtin_ctz(other));
        return true;
      }
    }
#endif
    while (p_ < n_ && IsWs(b_[p_])) ++p_;
    return p_ < n_ || Stop(FastRead::kNeedMore);
  }

  // A string at b_[p_] == '"'. With `out`, its text (no escapes allowed: bail on one).
  bool String(std::string_view* out) { return StringRest(++p_, out); }

  // The rest of a string whose text starts at b_[start] (after its opening quote); p_ is in it.
  bool StringRest(size_t start, std::string_view* out) {
    while (true) {
      p_ = StringStop(b_, p_, n_);
      if (p_ >= n_) return Stop(FastRead::kNeedMore);
      const char c = b_[p_];
      if (c == '"') break;
      if (c != '\\' || out != nullptr) return Stop(FastRead::kBail);  // control byte, or an escape we keep
      // A skipped escape must still be one (fuzz 31503052: a backslash before a raw newline).
      const size_t escape_len = p_ + 1 < n_ && b_[p_ + 1] == 'u' ? 6 : 2;
      if (p_ + escape_len > n_) return Stop(FastRead::kNeedMore);
      if (!IsEscape(b_ + p_ + 1, escape_len - 1)) return Stop(FastRead::kBail);
      p_ += escape_len;
    }
    if (out != nullptr) *out = std::string_view(b_ + start, p_ - start);
    ++p_;
    return true;
  }

  // Most scalars in a trace are plain numbers (ids, "Input Dims", ts and dur): where
  // -?(0|[1-9][0-9]*)(.[0-9]+)? starts at b_[p_] and a token end follows, that is a JSON number
  // as it stands: the end of it. 0 for anything else (the general check decides).
  size_t PlainNumberEnd() const {
    auto digit = [&](size_t i) { return i < n_ && b_[i] >= '0' && b_[i] <= '9'; };
    size_t q = p_ + (b_[p_] == '-');
    if (!digit(q)) return 0;
    if (b_[q] == '0') {
      ++q;
    } else {
      while (digit(q)) ++q;
    }
    if (q < n_ && b_[q] == '.') {
      if (!digit(++q)) return 0;
      while (digit(q)) ++q;
    }
    return q < n_ && EndsScalar(b_[q]) ? q : 0;
  }

  // A scalar (number or literal) token at b_[p_].
  bool Scalar(std::string_view* out) {
    const size_t start = p_;
    if (const size_t end = PlainNumberEnd(); end != 0) {
      p_ = end;
      *out = std::string_view(b_ + start, p_ - start);
      return true;
    }
    while (p_ < n_ && !EndsScalar(b_[p_])) {
      if (!IsScalarByte(b_[p_])) return Stop(FastRead::kBail);
      ++p_;
    }
    if (p_ >= n_) return Stop(FastRead::kNeedMore);
    *out = std::string_view(b_ + start, p_ - start);
    return IsJsonScalar(*out) || Stop(FastRead::kBail);
  }

  // Any value, not kept. A scalar is checked against JSON's grammar; an object or array is
  // skipped as the general path skips it (simdjson On-Demand's skip_child): strings whole, and
  // brackets counted, of either kind, until the count returns to zero. Its members' grammar is
  // not checked, because the general path does not check it either: a skipped `[1 2]` or
  // `{"a" 1}` is read there as it is here, and bailing on it would only send the event to the
  // slower path for the same result. What the general path does reject in a skipped value
  // (control bytes, invalid UTF-8, a string never closed) is rejected here too (String,
  // AcceptableBytes).
  bool SkipValue() {
    const char c = b_[p_];
    if (c == '"') return String(nullptr);
    if (c != '{' && c != '[') {
      std::string_view tok;
      return Scalar(&tok);
    }
    int depth = 0;
    bool in_string = false;  // p_ is inside a string that the block loop entered
    while (true) {
      if (depth > 0) {
        if (!SkipBlocks(&depth, &in_string)) return false;
        if (depth == 0) return true;  // it ended in a block
      }
      // One step the exact way: the rest of a string, or on to the next bracket. Where blocks
      // cannot go: the first bracket, a block with a backslash, the last 63 bytes.
      if (in_string) {
        in_string = false;
        if (!StringRest(p_, nullptr)) return false;
        continue;
      }
      while (p_ < n_ && !(kByteClass[static_cast<unsigned char>(b_[p_])] & kSkipStop)) ++p_;
      if (p_ >= n_) return Stop(FastRead::kNeedMore);
      switch (b_[p_]) {
        case '"':
          if (!String(nullptr)) return false;
          continue;
        case '{':
        case '[':
          if (++depth > kMaxDepth) return Stop(FastRead::kBail);
          break;
        case '}':
        case ']':
          if (--depth == 0) {
            ++p_;
            return true;
          }
          break;
        default:
          return Stop(FastRead::kBail);  // a backslash outside a string
      }
      ++p_;
    }
  }

  // Inside an object or array being skipped, `*depth` brackets deep: 64 bytes a step, while
  // 64 bytes remain and none is a backslash. Strings are found with a prefix XOR of the quote
  // bits (as simdjson's stage 1 does), brackets outside them counted; a block where the count
  // may reach zero is walked bracket by bracket. Returns true with p_ where the exact way goes
  // on (or past the value, *depth 0); false with stop_ set.
  bool SkipBlocks(int* depth, bool* in_string) {
#ifdef __SSE2__
    while (p_ + 64 <= n_) {
      uint64_t quote = 0, backslash = 0, open = 0, close = 0, control = 0;
      const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
      const __m128i ob = _mm_set1_epi8('{'), cb = _mm_set1_epi8('}');
      const __m128i oa = _mm_set1_epi8('['), ca = _mm_set1_epi8(']');
      const __m128i control_max = _mm_set1_epi8(0x1F);
      for (int k = 0; k < 4; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b_ + p_ + 16 * k));
        auto bits = [&](__m128i m) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))) << (16 * k); };
        quote |= bits(_mm_cmpeq_epi8(v, q));
        backslash |= bits(_mm_cmpeq_epi8(v, bs));
        open |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, ob), _mm_cmpeq_epi8(v, oa)));
        close |= bits(_mm_or_si128(_mm_cmpeq_epi8(v, cb), _mm_cmpeq_epi8(v, ca)));
        control |= bits(_mm_cmpeq_epi8(_mm_min_epu8(v, control_max), v));
      }
      if (backslash != 0) return true;  // escapes: the exact way
      // Bytes in a string: from its opening quote up to, not including, its closing one.
      uint64_t in = quote;
      in ^= in << 1;
      in ^= in << 2;
      in ^= in << 4;
      in ^= in << 8;
      in ^= in << 16;
      in ^= in << 32;
      if (*in_string) in = ~in;
      // A raw control byte (tab, LF, CR included) in a string: simdjson rejects the event.
      if ((control & in) != 0) return Stop(FastRead::kBail);
      open &= ~in;
      close &= ~in;
      const int opens = CountBits(open), closes = CountBits(close);
      if (*depth + opens > kMaxDepth) return Stop(FastRead::kBail);
      if (*depth > closes) {
        *depth += opens - closes;  // cannot reach zero here
      } else {
        for (uint64_t brackets = open | close; brackets != 0; brackets &= brackets - 1) {
          const int i = std::countr_zero(brackets);
          if ((open >> i) & 1) {
            ++*depth;
          } else if (--*depth == 0) {
            p_ += static_cast<size_t>(i) + 1;
            return true;
          }
        }
      }
      *in_string = (in >> 63) != 0;
      p_ += 64;
    }
#else
    (void)depth;
    (void)in_string;
#endif
    return true;
  }

  static constexpr int kMaxDepth = 64;

  // An integer field (IntValue in the general path): a plain decimal integer, a string the
  // general path would read as one, null/true/false/objects/arrays as "none". Anything else
  // (a fraction, an exponent, a malformed token) goes to the general path.
  bool Int(std::optional<int64_t>* out) {
    const char c = b_[p_];
    if (c == '"') {
      std::string_view s;
      if (!String(&s)) return false;
      *out = IntFromJsonString(s);
      return true;
    }
    if (c == '{' || c == '[') {
      *out = std::nullopt;
      return SkipValue();
    }
    std::string_view tok;
    if (!Scalar(&tok)) return false;
    if (tok == "null" || tok == "true" || tok == "false") {
      *out = std::nullopt;
      return true;
    }
    const bool neg = !tok.empty() && tok[0] == '-';
    const std::string_view digits = tok.substr(neg ? 1 : 0);
    if (digits.empty() || digits.size() > 18 || (digits[0] == '0' && digits.size() > 1)) {
      return Stop(FastRead::kBail);
    }
    int64_t v = 0;
    for (char d : digits) {
      if (d < '0' || d > '9') return Stop(FastRead::kBail);
      v = v * 10 + (d - '0');
    }
    *out = neg ? -v : v;
    return true;
  }

  // The common ts/dur, read in the one pass that finds its end: a non-negative number of at
  // most 15 integer digits (no overflow possible) and an optional fraction, followed by a token
  // end; the same value ParseMicrosToNs gives that token. False, p_ unmoved, for anything else.
  bool PlainMicros(std::optional<int64_t>* out) {
    auto digit = [&](size_t i) { return i < n_ && static_cast<unsigned>(b_[i] - '0') <= 9; };
    size_t q = p_;
    int64_t whole = 0;
    if (!digit(q)) return false;
    if (b_[q] == '0') {
      ++q;
    } else {
      for (; digit(q); ++q) {
        if (q - p_ == 15) return false;
        whole = whole * 10 + (b_[q] - '0');
      }
    }
    int64_t frac_ns = 0;
    if (q < n_ && b_[q] == '.') {
      const size_t first = ++q;
      for (; digit(q) && q - first < 3; ++q) frac_ns = frac_ns * 10 + (b_[q] - '0');
      if (q == first) return false;
      for (size_t k = q - first; k < 3; ++k) frac_ns *= 10;
      if (digit(q) && b_[q] >= '5') ++frac_ns;  // the fourth decimal rounds
      while (digit(q)) ++q;
    }
    if (q >= n_ || !EndsScalar(b_[q])) return false;
    p_ = q;
    *out = whole * 1000 + frac_ns;
    return true;
  }

  // ts/dur (MicrosValue in the general path): a number, or a string holding one.
  bool Micros(std::optional<int64_t>* out) {
    if (PlainMicros(out)) return true;
    const char c = b_[p_];
    std::string_view tok;
    if (c == '"') {
      if (!String(&tok)) return false;
    } else if (c == '{' || c == '[') {
      return Stop(FastRead::kBail);
    } else if (!Scalar(&tok)) {
      return false;
    }
    *out = ParseMicrosToNs(tok);
    return true;
  }

  // The members of an object at b_[p_] == '{', each handed to `member(key)`, which reads the
  // value (b_[p_] is its first byte).
  template <typename Member>
  bool Members(Member member) {
    ++p_;
    if (!SkipWs()) return false;
    if (b_[p_] == '}') {
      ++p_;
      return true;
    }
    while (true) {
      if (b_[p_] != '"') return Stop(FastRead::kBail);
      std::string_view key;
      if (!String(&key)) return false;
      if (!SkipWs()) return false;
      if (b_[p_] != ':') return Stop(FastRead::kBail);
      ++p_;
      if (!SkipWs()) return false;
      if (!member(key)) return false;
      if (!SkipWs()) return false;
      if (b_[p_] == '}') {
        ++p_;
        return true;
      }
      if (b_[p_] != ',') return Stop(FastRead::kBail);
      ++p_;
      if (!SkipWs()) return false;
    }
  }

  // A value read by JSON's grammar throughout: each element, member, string and scalar checked,
  // where SkipValue only counts brackets. For the values kept as text (the shapes): the general
  // path walks those with simdjson's array iteration, which rejects what bracket counting lets
  // through (fuzz_kineto_event: `["fl": 18 "double"]` in "Input type").
  bool StrictValue(int depth) {
    const char c = b_[p_];
    if (c == '"') return String(nullptr);
    if (c != '[' && c != '{') {
      std::string_view tok;
      return Scalar(&tok);
    }
    if (depth >= kMaxDepth) return Stop(FastRead::kBail);
    const char close = c == '[' ? ']' : '}';
    ++p_;
    if (!SkipWs()) return false;
    if (b_[p_] == close) {
      ++p_;
      return true;
    }
    while (true) {
      if (close == '}') {
        if (b_[p_] != '"') return Stop(FastRead::kBail);
        if (!String(nullptr) || !SkipWs()) return false;
        if (b_[p_] != ':') return Stop(FastRead::kBail);
        ++p_;
        if (!SkipWs()) return false;
      }
      if (!StrictValue(depth + 1) || !SkipWs()) return false;
      if (b_[p_] == close) {
        ++p_;
        return true;
      }
      if (b_[p_] != ',') return Stop(FastRead::kBail);
      ++p_;
      if (!SkipWs()) return false;
    }
  }

  // A value kept as its raw JSON text.
  bool RawValue(std::string_view* out) {
    const size_t start = p_;
    if (!StrictValue(0)) return false;
    *out = std::string_view(b_ + start, p_ - start);
    return true;
  }

  // A CPU op's args: its External id and its shapes, nothing else.
  bool ShapeArgs(KinetoEventFields& f) {
    if (b_[p_] != '{') return SkipValue();
    return Members([&](std::string_view k) {
      if (k == "External id") return Int(&f.external_id);
      if (k == "Input Dims") return RawValue(&f.input_dims);
      if (k == "Input type") return RawValue(&f.input_types);
      return SkipValue();
    });
  }

  bool Args(KinetoEventFields& f) {
    if (b_[p_] != '{') return SkipValue();  // rocprof v1 HIP events: args is a string
    return Members([&](std::string_view k) {
      if (k == "correlation") return Int(&f.correlation);
      if (k == "External id") return Int(&f.external_id);
      if (k == "stream") return Int(&f.stream);
      if (k == "device") return Int(&f.device);
      if (k == "bytes" || k == "size") return Int(&f.bytes);
      if (k == "kind" && b_[p_] == '"') return String(&f.kind_arg);
      return SkipValue();
    });
  }

  bool ReadObject(KinetoEventFields& f) {
    if (n_ == 0 || b_[0] != '{') return Stop(FastRead::kBail);
    return Members([&](std::string_view k) {
      auto str = [&](std::string_view* out) { return b_[p_] == '"' ? String(out) : Stop(FastRead::kBail); };
      if (k == "ph") return str(&f.ph);
      if (k == "cat") return str(&f.cat);
      if (k == "name") return str(&f.name);
      if (k == "pid") return Int(&f.pid);
      if (k == "tid") return Int(&f.tid);
      if (k == "ts") return Micros(&f.ts_ns);
      if (k == "dur") return Micros(&f.dur_ns);
      if (k == "args") {
        if (!SkipsArgs(f.cat)) return Args(f);
        if (ReadsShapeArgs(f.cat, f.name)) return ShapeArgs(f);
      }
      return SkipValue();
    });
  }

  const char* b_;
  size_t n_;
  size_t p_ = 0;
  FastRead stop_ = FastRead::kDone;
};

}  // namespace

bool ReadsShapeArgs(std::string_view cat, std::string_view name) {
  return cat == "cpu_op" && WantsShapes(name);
}

FastRead ReadKinetoEventFast(const char* b, size_t n, KinetoEventFields& f, size_t* length) {
  // Field by field: `f = {}` is a 192-byte `rep stos`, slow to start, once per event.
  f.ph = f.cat = f.name = f.kind_arg = {};
  f.pid = f.tid = f.ts_ns = f.dur_ns = std::nullopt;
  f.correlation = f.stream = f.device = f.bytes = f.external_id = std::nullopt;
  f.input_dims = f.input_types = {};
  return EventReader(b, n).Read(f, length);
}

}  // namespace latdoc::trace
