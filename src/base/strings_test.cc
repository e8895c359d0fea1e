#include "base/strings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc {
namespace {

using ::testing::ElementsAre;

TEST(StringsTest, SplitKeepsEmptyFields) {
  EXPECT_THAT(Split("a,,b", ','), ElementsAre("a", "", "b"));
  EXPECT_THAT(Split("", ','), ElementsAre(""));
  EXPECT_THAT(SplitWhitespace("  a \t b\n"), ElementsAre("a", "b"));
}

TEST(StringsTest, AppendIntWritesEveryInt64) {
  std::string s = "n=";
  AppendInt(s, 0);
  s += ',';
  AppendInt(s, -42);
  s += ',';
  AppendInt(s, INT64_MIN);
  s += ',';
  AppendInt(s, INT64_MAX);
  EXPECT_EQ(s, "n=0,-42,-9223372036854775808,9223372036854775807");
}

TEST(StringsTest, NumbersParseWholeStringOrNothing) {
  EXPECT_EQ(ParseInt64(" 42 "), 42);
  EXPECT_EQ(ParseInt64("-7"), -7);
  EXPECT_EQ(ParseInt64("42x"), std::nullopt);
  EXPECT_EQ(ParseInt64(""), std::nullopt);
  EXPECT_EQ(ParseUint64("-1"), std::nullopt);
  EXPECT_DOUBLE_EQ(*ParseDouble("1.5e3"), 1500.0);
  EXPECT_EQ(ParseDouble("abc"), std::nullopt);
  EXPECT_EQ(ParseDouble("1.5.2"), std::nullopt);
}

}  // namespace
TEST(StringsTest, TerminalTextHasNoControlCharacters) {
  // A title escape, a line erase and a carriage return from a kernel name: each one U+FFFD.
  EXPECT_EQ(ToTerminalText("evil\x1b]0;T\x07\x1b[2K\rfake"),
            "evil\xEF\xBF\xBD]0;T\xEF\xBF\xBD\xEF\xBF\xBD[2K\xEF\xBF\xBD" "fake");
  EXPECT_EQ(ToTerminalText("a\tb\nc\x7f"), "a\tb\xEF\xBF\xBD" "c\xEF\xBF\xBD");
  EXPECT_EQ(ToTerminalText("csi \xC2\x9B" "31m"), "csi \xEF\xBF\xBD" "31m");  // C1 CSI
  EXPECT_EQ(ToTerminalText("bad \xff utf-8, caf\xC3\xA9 fine"), "bad \xEF\xBF\xBD utf-8, caf\xC3\xA9 fine");
}

}  // namespace latdoc
