#include "trace/importers/kineto/json_event_scanner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::trace {
namespace {

using ::testing::ElementsAre;

struct Collected {
  std::vector<std::string> events;
  std::vector<uint64_t> offsets;
  std::vector<std::string> values;
};

Status Scan(std::string_view doc, std::vector<size_t> cuts, Collected& c) {
  JsonEventScanner s(
      [&](std::string_view e, uint64_t off) {
        c.events.emplace_back(e);
        c.offsets.push_back(off);
      },
      [&](std::string_view k, std::string_view v) { c.values.push_back(std::string(k) + "=" + std::string(v)); });
  s.KeepValue("deviceProperties");
  size_t prev = 0;
  cuts.push_back(doc.size());
  for (size_t cut : cuts) {
    RETURN_IF_ERROR(s.Feed(doc.substr(prev, cut - prev)));
    prev = cut;
  }
  return s.Finish();
}

constexpr std::string_view kDoc =
    "{\"metadata\": {\"a\": [1, {\"b\": \"}]\\\"\"}]}, \"deviceProperties\": [{\"id\": 0}],\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"name\": \"k<{lambda(float)#1}>\", \"ts\": 1.5},\n"
    "  {\"ph\": \"M\", \"args\": {\"name\": \"a\\\\\"}}\n"
    " ], \"traceName\": \"x\"}\n";

// Every split point of the byte stream must yield the same events and kept values.
TEST(JsonEventScannerTest, SameEventsAtEveryChunkBoundary) {
  for (size_t cut = 0; cut <= kDoc.size(); ++cut) {
    Collected c;
    ASSERT_TRUE(Scan(kDoc, {cut}, c).ok()) << "cut=" << cut;
    EXPECT_THAT(c.events, ElementsAre("{\"ph\": \"X\", \"name\": \"k<{lambda(float)#1}>\", \"ts\": 1.5}",
                                      "{\"ph\": \"M\", \"args\": {\"name\": \"a\\\\\"}}"))
        << "cut=" << cut;
    EXPECT_THAT(c.offsets, ElementsAre(kDoc.find("{\"ph\": \"X\""), kDoc.find("{\"ph\": \"M\"")));
    EXPECT_THAT(c.values, ElementsAre("deviceProperties=[{\"id\": 0}]")) << "cut=" << cut;
  }
}

TEST(JsonEventScannerTest, ByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kDoc.size(); ++i) cuts.push_back(i);
  Collected c;
  ASSERT_TRUE(Scan(kDoc, cuts, c).ok());
  EXPECT_EQ(c.events.size(), 2u);
}

// Elements and kept values far larger than the 4 KiB the scanner copies at a time to complete
// an element a slice cut, fed in slices of many sizes, through the fast reader (which asks for
// more bytes until an element is whole, or declines one) and the general path: each element is
// delivered once, whole, with its document offset, and the kept value whole.
TEST(JsonEventScannerTest, LargeElementsAcrossSlicesOfEverySize) {
  auto event = [](int i, size_t pad) {
    return "{\"ph\": \"X\", \"i\": " + std::to_string(i) + ", \"args\": {\"s\": \"" + std::string(pad, 'x') +
           "\\\"}]\", \"a\": [[1, 2], {\"b\": []}]}}";
  };
  std::vector<std::string> want;
  std::string doc = "{\"deviceProperties\": [\"" + std::string(10000, 'd') + "\"], \"traceEvents\": [\n";
  std::vector<uint64_t> want_offsets;
  const size_t pads[] = {10, 20000, 3, 4090, 4100, 9000, 1, 70000, 5};
  for (int i = 0; i < 9; ++i) {
    if (i > 0) doc += ",\n";
    want_offsets.push_back(doc.size());
    want.push_back(event(i, pads[i]));
    doc += want.back();
  }
  doc += "\n]}";
  for (const bool fast : {false, true}) {
    for (size_t slice : {size_t{1} << 20, size_t{1}, size_t{7}, size_t{1000}, size_t{4095}, size_t{4096},
                         size_t{4097}, size_t{9999}, size_t{65536}}) {
      if (slice == 1 && fast) continue;  // byte by byte re-reads each large element per byte
      std::vector<std::string> got;
      std::vector<uint64_t> offsets;
      std::vector<std::string> values;
      JsonEventScanner s(
          [&](std::string_view e, uint64_t off) {
            got.emplace_back(e);
            offsets.push_back(off);
          },
          [&](std::string_view k, std::string_view v) { values.push_back(std::string(k) + "=" + std::string(v)); });
      s.KeepValue("deviceProperties");
      if (fast) {
        // Reads an element whole by counting brackets outside strings; declines every third.
        s.SetFastElement([&](const char* b, size_t n, uint64_t off, size_t* length) {
          bool in_string = false;
          int depth = 0;
          for (size_t i = 0; i < n; ++i) {
            if (in_string) {
              if (b[i] == '\\') {
                ++i;
              } else if (b[i] == '"') {
                in_string = false;
              }
            } else if (b[i] == '"') {
              in_string = true;
            } else if (b[i] == '{' || b[i] == '[') {
              ++depth;
            } else if ((b[i] == '}' || b[i] == ']') && --depth == 0) {
              if (got.size() % 3 == 2) return JsonEventScanner::FastResult::kDecline;
              got.emplace_back(b, i + 1);
              offsets.push_back(off);
              *length = i + 1;
              return JsonEventScanner::FastResult::kDone;
            }
          }
          return JsonEventScanner::FastResult::kNeedMore;
        });
      }
      for (size_t at = 0; at < doc.size(); at += slice) {
        ASSERT_TRUE(s.Feed(std::string_view(doc).substr(at, slice)).ok()) << "slice " << slice;
      }
      ASSERT_TRUE(s.Finish().ok()) << "slice " << slice;
      EXPECT_EQ(got, want) << "slice " << slice << (fast ? " fast" : "");
      EXPECT_EQ(offsets, want_offsets) << "slice " << slice;
      EXPECT_EQ(s.events(), 9u);
      ASSERT_EQ(values.size(), 1u);
      EXPECT_EQ(values[0], "deviceProperties=[\"" + std::string(10000, 'd') + "\"]") << "slice " << slice;
    }
  }
}

TEST(JsonEventScannerTest, BareArrayIsATrace) {
  Collected c;
  ASSERT_TRUE(Scan("[{\"ph\":\"X\"},{\"ph\":\"B\"}]", {}, c).ok());
  EXPECT_EQ(c.events.size(), 2u);
}

TEST(JsonEventScannerTest, CutMidEventNamesBothOffsets) {
  const std::string doc = "{\"traceEvents\": [{\"ph\": \"X\"}, {\"ph\": \"X\", \"na";
  Collected c;
  const Status st = Scan(doc, {}, c);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_EQ(st.message(), "byte 45: document cut inside the event that starts at byte 30");
  EXPECT_EQ(c.events.size(), 1u);
}

TEST(JsonEventScannerTest, CutBetweenEvents) {
  Collected c;
  const Status st = Scan("{\"traceEvents\": [{\"ph\": \"X\"},", {}, c);
  EXPECT_EQ(st.message(), "byte 29: document cut inside traceEvents after 1 events");
}

TEST(JsonEventScannerTest, StructuralErrorsNameTheByte) {
  Collected c;
  EXPECT_EQ(Scan("hello", {}, c).message(), "byte 0: not a JSON trace: expected '{' or '['");
  EXPECT_EQ(Scan("{\"traceEvents\": [{}  {}]}", {}, c).message(),
            "byte 21: expected ',' or ']' in traceEvents");
  EXPECT_EQ(Scan("{\"traceEvents\": 3}", {}, c).message(),
            "byte 16: \"traceEvents\" is not an array");
  EXPECT_EQ(Scan("", {}, c).message(), "byte 0: empty document");
}

}  // namespace
}  // namespace latdoc::trace
