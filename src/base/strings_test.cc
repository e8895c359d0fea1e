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

// A name that fits is unchanged; a longer one keeps its start and end around one U+2026, in
// exactly `width` code points.
TEST(StringsTest, ShortenMiddleKeepsBothEnds) {
  EXPECT_EQ(ShortenMiddle("gemm_kernel", 30), "gemm_kernel");
  EXPECT_EQ(ShortenMiddle("abcdefghij", 10), "abcdefghij");
  EXPECT_EQ(ShortenMiddle("abcdefghijk", 10), "abcde\xE2\x80\xA6hijk");
  EXPECT_EQ(CodePoints(ShortenMiddle(std::string(200, 'x'), 30)), 30u);
  // Multi-byte code points are never split.
  EXPECT_EQ(ShortenMiddle("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 4),
            "\xC3\xA9\xC3\xA9\xE2\x80\xA6\xC3\xA9");
}

// The real collision of the bundled H200 Kineto trace
// (tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz): its hot list printed rows
// 1 and 4 both as "nvjet_sm90_tst_64x8_64x16_4..." and four rows as
// "at::native::vectorized_elem...". Shortened from the middle, and widened where needed, every
// different name prints differently; equal names stay equal.
TEST(StringsTest, ShortenMiddleDistinctSeparatesTheH200TraceKernels) {
  const std::vector<std::string> names = {
      "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
      "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN",
      "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT",
      "at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
      "std::array<char*, 3ul> >",
      "at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, "
      "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
      "std::array<char*, 3ul> >",
      "at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
      "const::{lambda(float)#1}, std::array<char*, 2ul> >",
      "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, "
      "std::array<char*, 2ul> >",
      "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
  };
  const std::vector<std::string> got = ShortenMiddleDistinct(names, 30);
  ASSERT_EQ(got.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_LE(CodePoints(got[i]), std::max<size_t>(30, CodePoints(names[i]))) << i;
    for (size_t j = 0; j < names.size(); ++j) {
      EXPECT_EQ(got[i] == got[j], names[i] == names[j]) << i << " vs " << j << ": " << got[i];
    }
  }
  // The nvjet kernels differ at their ends, which a cut from the middle keeps at 30 columns.
  EXPECT_EQ(got[0], "nvjet_sm90_tst_\xE2\x80\xA6" "6_4x1_v_bz_TNT");
  EXPECT_EQ(CodePoints(got[1]), 30u);
  EXPECT_EQ(CodePoints(got[2]), 30u);
  // The vectorized kernels differ only in the middle: those were widened until they differ.
  EXPECT_GT(CodePoints(got[3]), 30u);
  EXPECT_GT(CodePoints(got[4]), 30u);
}

}  // namespace latdoc
