#include "http/openai_chunk.h"

#include <cctype>
#include <cstdint>
#include <string>

#include <fmt/core.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace latdoc::http {

namespace {

// The fast path of ChunkParser::Parse: one pass over the payload that validates it as JSON and
// takes the facts ChunkInfo needs on the way, without building a document (a DOM parse of a
// 300-byte chunk costs more than the rest of the client's user-space work per event).
//
// It is conservative: Run() returns false, and the caller parses the payload with simdjson's
// DOM (the reference), for anything it does not handle exactly as that parse does: invalid
// JSON (so the DOM path writes the error), a byte of 0x80 or more (UTF-8 is validated there),
// a \u escape, an escaped key, a key of interest given twice, an error object, an exponent or
// an integer of more than 18 digits, nesting deeper than 64. What it returns true for, it
// returns the same ChunkInfo as the DOM path (ChunkParserTest checks both on every prefix and
// on mutations of real chunks).
class FastChunkScanner {
 public:
  explicit FastChunkScanner(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool Run(ChunkInfo* c) {
    c_ = c;
    Ws();
    if (!Top()) return false;
    Ws();
    if (p_ != end_) return false;
    c_->json = true;
    return true;
  }

 private:
  // Servers send compact JSON: a byte above ' ' ends the whitespace at once.
  void Ws() {
    while (p_ < end_ && static_cast<unsigned char>(*p_) <= ' ' &&
           (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t'))
      ++p_;
  }
  bool Eat(char ch) {
    if (p_ < end_ && *p_ == ch) {
      ++p_;
      return true;
    }
    Ws();
    if (p_ < end_ && *p_ == ch) {
      ++p_;
      return true;
    }
    return false;
  }
  bool Peek(char ch) {
    Ws();
    return p_ < end_ && *p_ == ch;
  }

  // A string at p_ (its opening quote); `raw`: its bytes between the quotes, escapes as sent.
  bool String(std::string_view* raw, bool* escaped) {
    if (p_ >= end_ || *p_ != '"') return false;
    const char* begin = ++p_;
    *escaped = false;
    while (p_ < end_) {
#ifdef __SSE2__
      // Sixteen bytes at a time up to the first one that needs a look: a quote, a backslash,
      // a control character or a byte of 0x80 or more (negative as a signed byte).
      while (end_ - p_ >= 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
        const __m128i stop = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
            _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
        const int mask = _mm_movemask_epi8(stop);
        if (mask != 0) {
          p_ += __builtin_ctz(static_cast<unsigned>(mask));
          break;
        }
        p_ += 16;
      }
      if (p_ >= end_) break;
#endif
      const unsigned char ch = static_cast<unsigned char>(*p_);
      if (ch == '"') {
        *raw = std::string_view(begin, size_t(p_ - begin));
        ++p_;
        return true;
      }
      if (ch < 0x20 || ch >= 0x80) return false;
      if (ch == '\\') {
        if (p_ + 1 >= end_) return false;
        const char e = p_[1];
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't')
          return false;  // \u (surrogates are checked by the DOM path) or invalid
        *escaped = true;
        p_ += 2;
        continue;
      }
      ++p_;
    }
    return false;
  }

  // A number; `*integer` and `*value` when it is an integer of at most 18 digits.
  bool Number(bool* integer, int64_t* value) {
    const char* q = p_;
    bool neg = false;
    if (q < end_ && *q == '-') {
      neg = true;
      ++q;
    }
    if (q >= end_ || *q < '0' || *q > '9') return false;
    int64_t v = 0;
    int digits = 0;
    if (*q == '0') {
      ++q;
      digits = 1;
    } else {
      while (q < end_ && *q >= '0' && *q <= '9') {
        if (++digits > 18) return false;
        v = v * 10 + (*q - '0');
        ++q;
      }
    }
    *integer = true;
    if (q < end_ && *q == '.') {
      ++q;
      if (q >= end_ || *q < '0' || *q > '9') return false;
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
      *integer = false;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) return false;
    // simdjson wants a structural character or whitespace after a number.
    if (q < end_ && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\n' &&
        *q != '\r' && *q != '\t')
      return false;
    *value = neg ? -v : v;
    p_ = q;
    return true;
  }

  bool Literal(std::string_view word) {
    if (size_t(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    if (p_ < end_ && *p_ != ',' && *p_ != '}' && *p_ != ']' && *p_ != ' ' && *p_ != '\n' &&
        *p_ != '\r' && *p_ != '\t')
      return false;
    return true;
  }

  // Any value, validated and passed over.
  bool Skip() {
    Ws();
    if (p_ >= end_) return false;
    switch (*p_) {
      case '"': {
        std::string_view raw;
        bool esc;
        return String(&raw, &esc);
      }
      case '{': {
        if (++depth_ > kMaxDepth) return false;
        ++p_;
        if (!Eat('}')) {
          do {
            Ws();
            std::string_view key;
            bool esc;
            if (!String(&key, &esc) || !Eat(':') || !Skip()) return false;
          } while (Eat(','));
          if (!Eat('}')) return false;
        }
        --depth_;
        return true;
      }
      case '[': {
        size_t n;
        return Array(&n, [this] { return Skip(); });
      }
      case 't': return Literal("true");
      case 'f': return Literal("false");
      case 'n': return Literal("null");
      default: {
        bool integer;
        int64_t v;
        return Number(&integer, &v);
      }
    }
  }

  // An array at p_, each element read by `element()`; `*n`: how many.
  template <typename F>
  bool Array(size_t* n, F element) {
    if (++depth_ > kMaxDepth) return false;
    ++p_;
    *n = 0;
    if (!Eat(']')) {
      do {
        Ws();
        if (p_ >= end_) return false;  // element() looks at *p_
        if (!element()) return false;
        ++*n;
      } while (Eat(','));
      if (!Eat(']')) return false;
    }
    --depth_;
    return true;
  }

  // An object at p_; `member(key)` reads each value (p_ just after the colon). Keys of interest
  // seen twice and escaped keys go to the DOM path.
  template <typename F>
  bool Object(F member) {
    if (++depth_ > kMaxDepth) return false;
    ++p_;
    if (!Eat('}')) {
      do {
        Ws();
        std::string_view key;
        bool esc;
        if (!String(&key, &esc) || esc || !Eat(':')) return false;
        Ws();
        if (p_ >= end_) return false;  // member() looks at *p_
        if (!member(key)) return false;
      } while (Eat(','));
      if (!Eat('}')) return false;
    }
    --depth_;
    return true;
  }

  // Sets bit `bit` of `*seen`; false if it was set (a key of interest given twice).
  static bool First(unsigned* seen, unsigned bit) {
    if (*seen & bit) return false;
    *seen |= bit;
    return true;
  }

  bool NonEmptyString(bool* nonempty) {
    std::string_view raw;
    bool esc;
    if (!String(&raw, &esc)) return false;
    *nonempty = !raw.empty();
    return true;
  }

  bool Top() {
    if (!Peek('{')) return false;
    unsigned seen = 0;
    return Object([&](std::string_view key) {
      if (key == "choices") {
        if (!First(&seen, 1)) return false;
        if (*p_ != '[') return Skip();
        size_t n;
        if (!Array(&n, [this] { return *p_ == '{' ? Choice() : Skip(); })) return false;
        if (n > 0) c_->has_choices = true;
        return true;
      }
      if (key == "usage") {
        if (!First(&seen, 2)) return false;
        return *p_ == '{' ? Usage() : Skip();
      }
      if (key == "object") {
        if (!First(&seen, 4)) return false;
        if (*p_ != '"') return Skip();
        std::string_view raw;
        bool esc;
        // An error object (or an escaped type that could spell one): the DOM path.
        return String(&raw, &esc) && !esc && raw != "error";
      }
      if (key == "error") {
        if (!First(&seen, 8)) return false;
        return Literal("null");  // anything else is an error: the DOM path takes its message
      }
      return Skip();
    });
  }

  bool Choice() {
    unsigned seen = 0;
    return Object([&](std::string_view key) {
      if (key == "text") {
        if (!First(&seen, 1)) return false;
        if (*p_ != '"') return Skip();
        return VisibleText();
      }
      if (key == "delta") {
        if (!First(&seen, 2)) return false;
        return *p_ == '{' ? Delta() : Skip();
      }
      if (key == "finish_reason") {
        if (!First(&seen, 4)) return false;
        if (*p_ == 'n') return Literal("null");
        c_->finished = true;
        return Skip();
      }
      return Skip();
    });
  }

  bool Delta() {
    unsigned seen = 0;
    return Object([&](std::string_view key) {
      unsigned bit = key == "content" ? 1 : key == "reasoning_content" ? 2 : key == "reasoning" ? 4
                   : key == "tool_calls" ? 8 : 0;
      if (bit == 0) return Skip();
      if (!First(&seen, bit)) return false;
      if (bit == 8) {
        if (*p_ != '[') return Skip();
        size_t n;
        if (!Array(&n, [this] { return Skip(); })) return false;
        if (n > 0) {
          c_->content = c_->answer = true;
          c_->tool_calls += int(n);
        }
        return true;
      }
      if (*p_ != '"') return Skip();
      if (bit == 1) return VisibleText();
      bool nonempty;
      if (!NonEmptyString(&nonempty)) return false;
      if (nonempty) c_->content = c_->reasoning = true;
      return true;
    });
  }

  // A visible string (text, delta.content): an answer, and whether it opens or closes a
  // <think> span. A \u escape could spell a tag: the DOM path decodes it.
  bool VisibleText() {
    std::string_view raw;
    bool esc;
    if (!String(&raw, &esc)) return false;
    if (esc && raw.find("\\u") != std::string_view::npos) return false;
    if (raw.empty()) return true;
    c_->content = c_->answer = true;
    if (raw.find("<think>") != std::string_view::npos) c_->think_open = true;
    if (raw.find("</think>") != std::string_view::npos) c_->think_close = true;
    return true;
  }

  bool Usage() {
    unsigned seen = 0;
    return Object([&](std::string_view key) {
      const bool completion = key == "completion_tokens";
      if (!completion && key != "prompt_tokens") return Skip();
      if (!First(&seen, completion ? 1 : 2)) return false;
      if (*p_ != '-' && (*p_ < '0' || *p_ > '9')) return Skip();
      bool integer;
      int64_t v;
      if (!Number(&integer, &v)) return false;
      if (integer) (completion ? c_->usage_completion_tokens : c_->usage_prompt_tokens) = v;
      return true;
    });
  }

  static constexpr int kMaxDepth = 64;
  const char* p_;
  const char* end_;
  ChunkInfo* c_ = nullptr;
  int depth_ = 0;
};

}  // namespace

ChunkInfo ChunkParser::Parse(std::string_view data) {
  if (data == "[DONE]") {
    ChunkInfo c;
    c.done = true;
    return c;
  }
  ChunkInfo c;
  if (FastChunkScanner(data).Run(&c)) return c;
  return ParseWithDom(data);
}

ChunkInfo ChunkParser::ParseWithDom(std::string_view data) {
  ChunkInfo c;
  if (data == "[DONE]") {
    c.done = true;
    return c;
  }
  simdjson::dom::element doc;
  if (parser_.parse(data.data(), data.size(), true).get(doc) != simdjson::SUCCESS ||
      !doc.is_object()) {
    // Not a chunk the server meant to send (a proxy's page, a payload cut and spliced): the
    // stream's token counts and timings can no longer be trusted.
    c.error = true;
    c.error_message = fmt::format("a data payload that is not a JSON object: '{}'{}",
                                  data.substr(0, 60), data.size() > 60 ? "..." : "");
    return c;
  }
  c.json = true;
  simdjson::dom::object obj = doc.get_object().value_unsafe();
  simdjson::dom::element err;
  if (obj["error"].get(err) == simdjson::SUCCESS && !err.is_null()) {
    c.error = true;
    std::string_view msg;
    if (err.is_object() && err["message"].get(msg) == simdjson::SUCCESS) c.error_message = msg;
    else if (err.is_string()) c.error_message = err.get_string().value_unsafe();
  }
  std::string_view object_type;
  if (obj["object"].get(object_type) == simdjson::SUCCESS && object_type == "error") {
    c.error = true;
    std::string_view msg;
    if (obj["message"].get(msg) == simdjson::SUCCESS) c.error_message = msg;
  }
  simdjson::dom::array choices;
  if (obj["choices"].get(choices) == simdjson::SUCCESS && choices.size() > 0) {
    c.has_choices = true;
    for (simdjson::dom::element ch : choices) {
      std::string_view text;
      auto visible = [&](std::string_view t) {
        c.content = c.answer = true;
        if (t.find("<think>") != std::string_view::npos) c.think_open = true;
        if (t.find("</think>") != std::string_view::npos) c.think_close = true;
      };
      if (ch["text"].get(text) == simdjson::SUCCESS && !text.empty()) visible(text);
      simdjson::dom::object delta;
      if (ch["delta"].get(delta) == simdjson::SUCCESS) {
        if (delta["content"].get(text) == simdjson::SUCCESS && !text.empty()) visible(text);
        for (const char* key : {"reasoning_content", "reasoning"}) {
          if (delta[key].get(text) == simdjson::SUCCESS && !text.empty()) c.content = c.reasoning = true;
        }
        simdjson::dom::array tools;
        if (delta["tool_calls"].get(tools) == simdjson::SUCCESS && tools.size() > 0) {
          c.content = c.answer = true;
          c.tool_calls += int(tools.size());
        }
      }
      simdjson::dom::element fin;
      if (ch["finish_reason"].get(fin) == simdjson::SUCCESS && !fin.is_null()) c.finished = true;
    }
  }
  simdjson::dom::object usage;
  if (obj["usage"].get(usage) == simdjson::SUCCESS) {
    int64_t v;
    if (usage["completion_tokens"].get(v) == simdjson::SUCCESS) c.usage_completion_tokens = v;
    if (usage["prompt_tokens"].get(v) == simdjson::SUCCESS) c.usage_prompt_tokens = v;
  }
  return c;
}

}  // namespace latdoc::http
