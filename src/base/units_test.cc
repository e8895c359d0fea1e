#include "base/units.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace latdoc {
namespace {

// A count prints as a whole number, whatever double carried it.
TEST(UnitsTest, CountsPrintAsWholeNumbers) {
  EXPECT_EQ(FormatCount(0.0), "0");
  EXPECT_EQ(FormatCount(1414.0), "1414");
  EXPECT_EQ(FormatCount(262144.0), "262144");
  EXPECT_EQ(FormatCount(19.6), "20");
  EXPECT_EQ(FormatCount(-3.0), "-3");
  EXPECT_EQ(FormatCount(std::optional<double>()), "n/a");
  EXPECT_EQ(FormatCount(std::optional<double>(85.0)), "85");
  EXPECT_EQ(FormatCount(std::nan("")), "n/a");
}

// No formatter prints a negative zero: a value that rounds to zero is zero.
TEST(UnitsTest, NoNegativeZero) {
  EXPECT_EQ(FormatCount(-0.0), "0");
  EXPECT_EQ(FormatCount(-0.4), "0");
  EXPECT_EQ(FormatFixed(-0.0, 2), "0.00");
  EXPECT_EQ(FormatFixed(-0.004, 2), "0.00");
  EXPECT_EQ(FormatFixed(-0.005001, 2), "-0.01");
  EXPECT_EQ(FormatFixed(-5.7e-13, 3), "0.000");
  EXPECT_EQ(FormatSignificant(-0.0, 4), "0");
  EXPECT_EQ(FormatSignificant(-1e-300, 4), "-1e-300");  // not zero: keeps its sign
  EXPECT_EQ(FormatOptional(-0.0001, 1, " ms"), "0.0 ms");
}

TEST(UnitsTest, SignificantKeepsWholeNumbersWhole) {
  EXPECT_EQ(FormatSignificant(262144.0, 4), "262144");
  EXPECT_EQ(FormatSignificant(85.0, 4), "85");
  EXPECT_EQ(FormatSignificant(0.0123, 4), "0.0123");
  EXPECT_EQ(FormatSignificant(12.5, 4), "12.5");
  EXPECT_EQ(FormatSignificant(55077.5, 4), "55078");
  EXPECT_EQ(FormatSignificant(1234.56, 4), "1235");  // four digits before the point: no exponent
  EXPECT_EQ(FormatSignificant(1.5e15, 4), "1.5e+15");
  EXPECT_EQ(FormatSignificant(std::numeric_limits<double>::infinity(), 4), "inf");
}

}  // namespace
}  // namespace latdoc
