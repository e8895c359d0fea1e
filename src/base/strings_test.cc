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
}  // namespace latdoc
