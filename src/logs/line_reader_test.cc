#include "logs/line_reader.h"

#include "logs/sliced_input_for_test.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

using ::testing::ElementsAre;

struct Got {
  std::vector<std::string> text;
  std::vector<uint64_t> offsets, raw;
  std::vector<bool> truncated;
};

Got ReadAllLines(LineReader& r) {
  Got g;
  Line line;
  for (;;) {
    auto n = r.Next(&line);
    EXPECT_TRUE(n.ok());
    if (!n.ok() || !*n) break;
    g.text.emplace_back(line.text);
    g.offsets.push_back(line.offset);
    g.raw.push_back(line.raw_bytes);
    g.truncated.push_back(line.truncated);
  }
  if (r.TakePartial(&line)) {
    g.text.emplace_back(line.text);
    g.offsets.push_back(line.offset);
    g.raw.push_back(line.raw_bytes);
    g.truncated.push_back(line.truncated);
  }
  return g;
}

// Every split point of the byte stream must yield the same lines, offsets and sizes.
TEST(LineReaderTest, SameLinesAtEveryChunkBoundary) {
  const std::string text = "INFO a\r\n\nsecond line\nthird\nlast-no-newline";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SlicedInput in(text, {cut});
    LineReader r(&in, /*max_line_bytes=*/64, /*read_bytes=*/16);
    Got g = ReadAllLines(r);
    EXPECT_THAT(g.text, ElementsAre("INFO a", "", "second line", "third", "last-no-newline"))
        << "cut=" << cut;
    EXPECT_THAT(g.offsets, ElementsAre(0, 8, 9, 21, 27)) << "cut=" << cut;
    EXPECT_THAT(g.raw, ElementsAre(8, 1, 12, 6, 15)) << "cut=" << cut;
  }
}

TEST(LineReaderTest, OverlongLinesAreCutAndTheRestSkippedAtEveryBoundary) {
  std::string longline(100, 'x');
  longline[0] = 'A';
  const std::string text = "short\n" + longline + "\nafter\n" + std::string(40, 'y');
  for (size_t cut = 0; cut <= text.size(); cut += 3) {
    SlicedInput in(text, {cut});
    LineReader r(&in, /*max_line_bytes=*/20, /*read_bytes=*/16);
    Got g = ReadAllLines(r);
    ASSERT_EQ(g.text.size(), 4u) << "cut=" << cut;
    EXPECT_EQ(g.text[0], "short");
    EXPECT_EQ(g.text[1], "A" + std::string(19, 'x')) << "cut=" << cut;
    EXPECT_TRUE(g.truncated[1]);
    EXPECT_EQ(g.raw[1], 101u) << "cut=" << cut;
    EXPECT_EQ(g.text[2], "after") << "cut=" << cut;
    EXPECT_EQ(g.offsets[2], 6u + 101u);
    EXPECT_EQ(g.text[3], std::string(20, 'y'));
    EXPECT_TRUE(g.truncated[3]);
    EXPECT_EQ(g.raw[3], 40u) << "cut=" << cut;
    uint64_t sum = 0;
    for (auto b : g.raw) sum += b;
    EXPECT_EQ(sum, text.size());
  }
}

// Lines of exactly the limit are whole, one byte more is cut, wherever the reads end.
TEST(LineReaderTest, LineOfExactlyTheLimitIsWholeAtEveryBoundary) {
  const std::string text = std::string(20, 'a') + "\n" + std::string(21, 'b') + "\n" +
                           std::string(20, 'c');
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    SlicedInput in(text, {cut});
    LineReader r(&in, /*max_line_bytes=*/20, /*read_bytes=*/16);
    Got g = ReadAllLines(r);
    ASSERT_EQ(g.text.size(), 3u) << "cut=" << cut;
    EXPECT_EQ(g.text[0], std::string(20, 'a')) << "cut=" << cut;
    EXPECT_FALSE(g.truncated[0]) << "cut=" << cut;
    EXPECT_EQ(g.text[1], std::string(20, 'b')) << "cut=" << cut;
    EXPECT_TRUE(g.truncated[1]) << "cut=" << cut;
    EXPECT_EQ(g.raw[1], 22u) << "cut=" << cut;
    EXPECT_EQ(g.text[2], std::string(20, 'c')) << "cut=" << cut;
    EXPECT_FALSE(g.truncated[2]) << "cut=" << cut;
  }
}

// A file being written: the partial last line waits for its '\n'.
TEST(LineReaderTest, PartialLineIsHeldUntilItsNewlineArrives) {
  const std::string text = "one\ntw";
  const std::string more = "o\nthree\n";
  SlicedInput in(text + more);
  in.SetLimit(text.size());
  LineReader r(&in, 64, 16);
  Line line;
  auto n = r.Next(&line);
  ASSERT_TRUE(n.ok() && *n);
  EXPECT_EQ(line.text, "one");
  n = r.Next(&line);
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(*n);
  in.SetLimit(text.size() + more.size());
  n = r.Next(&line);
  ASSERT_TRUE(n.ok() && *n);
  EXPECT_EQ(line.text, "two");
  EXPECT_EQ(line.number, 2u);
  n = r.Next(&line);
  ASSERT_TRUE(n.ok() && *n);
  EXPECT_EQ(line.text, "three");
  EXPECT_FALSE(r.TakePartial(&line));
}

TEST(LineReaderTest, ManyLinesThroughSmallBuffersKeepEveryByte) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "line " + std::to_string(i) + std::string(i % 37, '.') + "\n";
  auto in = OpenMemoryInput(text);
  LineReader r(in.get(), 64, 100);
  Got g = ReadAllLines(r);
  ASSERT_EQ(g.text.size(), 5000u);
  EXPECT_EQ(g.text[4321], "line 4321" + std::string(4321 % 37, '.'));
  EXPECT_EQ(r.bytes_consumed(), text.size());
}

}  // namespace
}  // namespace latdoc::logs
