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
