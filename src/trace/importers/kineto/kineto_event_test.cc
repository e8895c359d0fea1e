// The one-pass event reader against the general (simdjson) path: the same fields for every
// event it accepts, on every real Kineto fixture; "need more" for every cut of an event;
// "bail" for what only the general path may decide.
#include "trace/importers/kineto/kineto_event.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/file_util.h"
#include "trace/importers/kineto/json_event_scanner.h"

namespace latdoc::trace {
namespace {

std::string Describe(const KinetoEventFields& f) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
  return std::string(f.ph) + "|" + std::string(f.cat) + "|" + std::string(f.name) + "|" + opt(f.pid) +
         "|" + opt(f.tid) + "|" + opt(f.ts_ns) + "|" + opt(f.dur_ns) + "|" + opt(f.correlation) + "|" +
         opt(f.stream) + "|" + opt(f.device) + "|" + opt(f.bytes) + "|" + std::string(f.kind_arg) + "|" +
         opt(f.external_id) + "|" + std::string(f.input_dims) + "|" + std::string(f.input_types);
}

// Every event of `path` (split by the scanner alone), read both ways.
void CompareOnFile(const std::string& path) {
  auto in = OpenInput(path);
  ASSERT_TRUE(in.ok()) << in.status().message();
  auto text = ReadAll(**in);
  ASSERT_TRUE(text.ok()) << text.status().message();
  std::vector<std::string> events;
  JsonEventScanner scanner([&](std::string_view e, uint64_t) { events.emplace_back(e); },
                           [](std::string_view, std::string_view) {});
  ASSERT_TRUE(scanner.Feed(*text).ok());
  ASSERT_TRUE(scanner.Finish().ok());
  ASSERT_GT(events.size(), 1000u) << path;

  KinetoEventParser general;
  size_t fast_read = 0;
  for (const std::string& e : events) {
    KinetoEventFields fast;
    size_t length = 0;
    const FastRead r = ReadKinetoEventFast(e.data(), e.size(), fast, &length);
    ASSERT_NE(r, FastRead::kNeedMore) << e;
    if (r == FastRead::kBail) continue;
    ++fast_read;
    EXPECT_EQ(length, e.size());
    const std::string got = Describe(fast);  // before Parse: its strings may point anywhere
    KinetoEventFields want;
    ASSERT_EQ(general.Parse(e, want), nullptr) << e;
    ASSERT_EQ(got, Describe(want)) << e;
  }
  // The fast path must carry real traces, not just be correct when it runs.
  EXPECT_GT(fast_read, events.size() * 99 / 100) << path;
}

TEST(KinetoEventTest, SameFieldsAsTheGeneralPathOnRealTraces) {
  for (const char* path : {"tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz",
                           "tests/data/trace/tracelens/h100_qwen0.5b/trace.json.gz",
                           "tests/data/trace/tracelens/mi300x_qwen0.5b/trace.json.gz",
                           "tests/data/trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz"}) {
    SCOPED_TRACE(path);
    CompareOnFile(path);
  }
}

constexpr std::string_view kEvent =
    R"({"ph": "X", "cat": "kernel", "name": "gemm<{lambda(float)#1}>", "pid": 0, "tid": 7,)"
    R"( "ts": 5139252745624.543, "dur": 2.272, "args": {"External id": 17, "device": 0,)"
    R"( "stream": "0x7", "correlation": 38, "grid": [1, [1], {"a": "]}"}], "bytes": "2560", "kind": "HtoD"}})";

TEST(KinetoEventTest, ReadsAnEventAndNeedsMoreForEveryCut) {
  KinetoEventFields f;
  size_t length = 0;
  ASSERT_EQ(ReadKinetoEventFast(kEvent.data(), kEvent.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(length, kEvent.size());
  EXPECT_EQ(Describe(f), "X|kernel|gemm<{lambda(float)#1}>|0|7|5139252745624543|2272|38|7|0|2560|HtoD|17||");
  for (size_t cut = 0; cut < kEvent.size(); ++cut) {
    EXPECT_EQ(ReadKinetoEventFast(kEvent.data(), cut, f, &length), cut == 0 ? FastRead::kBail : FastRead::kNeedMore)
        << "cut at " << cut;
  }
  // Valid UTF-8 beyond ASCII is read as it is.
  const std::string utf8 = "{\"ph\": \"X\", \"name\": \"caf\xc3\xa9 \xe2\x86\x92 gemm\", \"ts\": 1}";
  ASSERT_EQ(ReadKinetoEventFast(utf8.data(), utf8.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(f.name, "caf\xc3\xa9 \xe2\x86\x92 gemm");
  // Trailing bytes after the event are not read.
  const std::string more = std::string(kEvent) + ",\n{\"ph\"";
  ASSERT_EQ(ReadKinetoEventFast(more.data(), more.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(length, kEvent.size());
}

TEST(KinetoEventTest, IntegersInStringsPastInt64AreNone) {
  EXPECT_EQ(IntFromJsonString("2560"), 2560);
  EXPECT_EQ(IntFromJsonString("0x1f"), 31);
  EXPECT_EQ(IntFromJsonString("9223372036854775799"), 9223372036854775799);
  EXPECT_EQ(IntFromJsonString("25280557472805574710"), std::nullopt);  // fuzz 35e78bb6
  EXPECT_EQ(IntFromJsonString(""), std::nullopt);
  EXPECT_EQ(IntFromJsonString("12a"), std::nullopt);
}

// The general path: a number past int64 is no integer (fuzz 9240a37c: the cast overflowed).
TEST(KinetoEventTest, GeneralPathNumbersPastInt64AreNone) {
  KinetoEventParser general;
  KinetoEventFields f;
  ASSERT_EQ(general.Parse(R"({"ph": "X", "pid": 8.51e49, "tid": -3.7, "ts": 1})", f), nullptr);
  EXPECT_EQ(f.pid, std::nullopt);
  EXPECT_EQ(f.tid, -3);
}

// Objects and arrays that are skipped are skipped as simdjson On-Demand skips them (its
// skip_child): strings whole, brackets counted. Their inner grammar is not checked on either
// path, so the fast reader takes such an event and reads what the general path reads.
TEST(KinetoEventTest, SkipsObjectsAndArraysAsTheGeneralPathDoes) {
  const std::vector<std::string> cases = {
      R"({"ph": "X", "a": [01], "ts": 1})",  // numbers by no JSON grammar, where only skipped
      R"({"ph": "X", "a": [-], "ts": 1})",
      R"({"ph": "X", "a": [1.], "ts": 1})",
      R"({"ph": "X", "a": [.5], "ts": 1})",
      R"({"ph": "X", "a": [-.5], "ts": 1})",
      R"({"ph": "X", "a": [1.5.], "ts": 1})",
      R"({"ph": "X", "a": [00.5], "ts": 1})",
      R"({"ph": "X", "a": [1x], "ts": 1})",
      R"({"ph": "X", "a": [--1], "ts": 1})",
      R"({"ph": "X", "a": [1, 2,], "ts": 1})",
      R"({"ph": "X", "a": [1 2], "ts": 1})",
      R"({"ph": "X", "a": {"k" 1}, "ts": 1})",
      R"({"ph": "X", "a": [1}, "ts": 1})",  // brackets of either kind close
      R"({"ph": "X", "cat": "cpu_op", "args": {"Input Dims": [[1, 128], [], "]"], "s": "a\"}", "External id": 3}, "ts": 1})",
  };
  for (const std::string& c : cases) {
    KinetoEventFields fast;
    size_t length = 0;
    ASSERT_EQ(ReadKinetoEventFast(c.data(), c.size(), fast, &length), FastRead::kDone) << c;
    EXPECT_EQ(length, c.size()) << c;
    KinetoEventParser general;
    KinetoEventFields want;
    ASSERT_EQ(general.Parse(c, want), nullptr) << c;
    EXPECT_EQ(Describe(fast), Describe(want)) << c;
    EXPECT_EQ(want.ts_ns, 1000) << c;
  }
  // Brackets that never balance leave the event open on both paths (fuzz 159d3592): the fast
  // reader waits for more bytes, the general path rejects the event.
  const std::string open = R"({"ph": "X", "args": {"a": [[1, 2], [3 "b": 1]}, "ts": 1})";
  KinetoEventFields f;
  size_t length = 0;
  EXPECT_EQ(ReadKinetoEventFast(open.data(), open.size(), f, &length), FastRead::kNeedMore);
  KinetoEventParser general;
  EXPECT_NE(general.Parse(open, f), nullptr);
  // Deeper than the reader goes: left to the general path.
  const std::string deep = R"({"ph": "X", "a": )" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_EQ(ReadKinetoEventFast(deep.data(), deep.size(), f, &length), FastRead::kBail);
}

TEST(KinetoEventTest, LeavesTheUnusualToTheGeneralPath) {
  const std::vector<std::string> cases = {
      R"({"ph": "X", "name": "a\"b", "ts": 1})",          // escape in a kept string
      R"({"ph": "X", "name": "a)" "\x01" R"(", "ts": 1})",  // control byte
      R"({"ph": "X", "name": "a)" "\xff" R"(", "ts": 1})",  // invalid UTF-8
      R"({"ph": "X", "pid": 1.5, "ts": 1})",               // a fraction where an integer goes
      R"({"ph": "X", "pid": 012, "ts": 1})",               // a leading zero
      R"({"ph": "X", "pid": 12345678901234567890})",       // past int64
      R"({"ph": 1})",                                      // ph not a string
      R"({"ph": "X", "ts": {"a": 1}})",                    // ts an object
      R"({"ph": "X", "dur": 8.)" "\x0c" R"(27, "ts": 1})",   // a form feed splits the token (fuzz 7aa1c4b7)
      R"({"ph": "X", "a": [1,)" "\x0c" R"(2], "ts": 1})",    // a stray control byte where skipped
      R"({"ph": "X", "ts": 1$})",                           // a byte no scalar holds
      R"({"ph": "X", "ts": , "dur": 1})",                   // an empty value (fuzz 509fe5bc)
      R"({"ph": "X", "ts": 1.2.3})",                        // not a number by JSON's grammar
      R"({"ph": "X", "ts": 1.})",
      R"({"ph": "X", "ts": 01.5})",
      R"({"ph": "X", "a": tru, "ts": 1})",
      "{\"a\": {\"\\\n\":18}}",                       // a backslash before a raw newline (fuzz 31503052)
      R"({"ph": "X", "a": "\u12g4", "ts": 1})",
      R"({"ph": "X", "a": "\q", "ts": 1})",
      R"({"ph": "X",, "ts": 1})",                          // broken structure
      R"({"ph": "X" "ts": 1})",
      R"({ph: "X"})",
      R"(["ph", "X"])",
  };
  for (const std::string& c : cases) {
    KinetoEventFields f;
    size_t length = 0;
    EXPECT_EQ(ReadKinetoEventFast(c.data(), c.size(), f, &length), FastRead::kBail) << c;
  }
  KinetoEventFields f0;
  size_t length0 = 0;
  // Every form of JSON number, skipped or read, is taken as it is.
  const std::string numbers =
      R"({"ph": "X", "a": [0, -0, 7, -12, 0.5, -0.25, 10.125, 1e3, -2E-2, 0.5e+1, 123456789012],)"
      R"( "ts": 12.5, "dur": 0.001, "pid": -3, "tid": 0})";
  ASSERT_EQ(ReadKinetoEventFast(numbers.data(), numbers.size(), f0, &length0), FastRead::kDone);
  EXPECT_EQ(Describe(f0), "X|||-3|0|12500|1|-|-|-|-||-||");
  KinetoEventParser parser;  // its fields point into the parser's buffer
  KinetoEventFields general;
  ASSERT_EQ(parser.Parse(numbers, general), nullptr);
  EXPECT_EQ(Describe(general), Describe(f0));
  // Escapes in what is skipped are fine, as are the args of CPU ops, never read.
  const std::string skipped =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "args": {"correlation": 5, "s": "x\"y\\\u00e9\n"}})";
  KinetoEventFields f;
  size_t length = 0;
  ASSERT_EQ(ReadKinetoEventFast(skipped.data(), skipped.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(Describe(f), "X|cpu_op|aten::mm|-|-|1000|-|-|-|-|-||-||");
}

// A CPU op the roofline has a formula for: its External id and raw shape args are read, both
// ways alike; any other CPU op's args stay unread.
TEST(KinetoEventTest, ShapeArgsOfWorkOpsOnly) {
  const std::string mm =
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "args": {"External id": 20012, )"
      R"("Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Dims": [[8, 2048], [2048, 6144]], "Ev Idx": 43}})";
  const std::string want = "X|cpu_op|aten::mm|-|-|1000|-|-|-|-|-||20012|[[8, 2048], [2048, 6144]]|"
                           "[\"c10::BFloat16\", \"c10::BFloat16\"]";
  KinetoEventFields f;
  size_t length = 0;
  ASSERT_EQ(ReadKinetoEventFast(mm.data(), mm.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(Describe(f), want);
  KinetoEventParser parser;
  KinetoEventFields general;
  ASSERT_EQ(parser.Parse(mm, general), nullptr);
  EXPECT_EQ(Describe(general), want);
  std::string other = mm;
  other.replace(other.find("aten::mm"), 8, "aten::to");
  ASSERT_EQ(ReadKinetoEventFast(other.data(), other.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(Describe(f), "X|cpu_op|aten::to|-|-|1000|-|-|-|-|-||-||");
}

// A shape kept as text is read by JSON's grammar, not bracket-counted: the general path walks it
// as an array and rejects what is not one (fuzz_kineto_event: a key inside "Input type").
TEST(KinetoEventTest, ShapesThatAreNoJsonArrayGoToTheGeneralPath) {
  for (const char* shape : {R"(["fl": 18 "double"])", R"([1 2])", R"([[8, 2048] [1]])", R"([1,])",
                            R"([{"a" 1}])"}) {
    const std::string ev = std::string(R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, )") +
                           R"("args": {"Input type": )" + shape + R"(, "Ev Idx": 200}})";
    KinetoEventFields f;
    size_t length = 0;
    EXPECT_EQ(ReadKinetoEventFast(ev.data(), ev.size(), f, &length), FastRead::kBail) << shape;
  }
  // Nested arrays, objects, strings and numbers of a valid shape are kept as they stand.
  const std::string ok = R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "args": )"
                         R"({"Input Dims": [[16, 559, 1], [], [{"k": [1, -2.5]}, "s", null, true]]}})";
  KinetoEventFields f;
  size_t length = 0;
  ASSERT_EQ(ReadKinetoEventFast(ok.data(), ok.size(), f, &length), FastRead::kDone);
  EXPECT_EQ(f.input_dims, R"([[16, 559, 1], [], [{"k": [1, -2.5]}, "s", null, true]])");
}

}  // namespace
}  // namespace latdoc::trace
