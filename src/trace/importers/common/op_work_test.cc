#include "trace/importers/common/op_work.h"

#include <gtest/gtest.h>

namespace latdoc::trace {
namespace {

// The shapes of the real H200 traces (PyTorch 2.11, record_shapes=True).
TEST(OpWorkTest, GemmFlopsAndBytesFromShapes) {
  auto w = EstimateOpWork("aten::mm", "[[8, 2048], [2048, 6144]]", R"(["c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->kind, WorkKind::kGemm);
  EXPECT_EQ(w->dtype, WorkDtype::kBf16);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 8 * 2048 * 6144);
  EXPECT_DOUBLE_EQ(w->bytes, (8.0 * 2048 + 2048.0 * 6144 + 8.0 * 6144) * 2);
  // The heavy_every4 GEMM: 6144^3 in fp32.
  w = EstimateOpWork("aten::mm", "[[6144, 6144], [6144, 6144]]", R"(["float", "float"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->dtype, WorkDtype::kFp32);
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 6144 * 6144 * 6144);
  // addmm: bias, then the two matrices; the bias is read too.
  w = EstimateOpWork("aten::addmm", "[[6144], [8, 2048], [2048, 6144]]", R"(["c10::Half", "c10::Half", "c10::Half"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->dtype, WorkDtype::kFp16);
  EXPECT_DOUBLE_EQ(w->bytes, (6144.0 + 8.0 * 2048 + 2048.0 * 6144 + 8.0 * 6144) * 2);
  w = EstimateOpWork("aten::bmm", "[[4, 8, 16], [4, 16, 32]]", R"(["float", "float"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->flops, 2.0 * 4 * 8 * 16 * 32);
  // Inner dimensions that differ are not a GEMM this formula knows.
  EXPECT_FALSE(EstimateOpWork("aten::mm", "[[8, 2048], [1024, 6144]]", R"(["float", "float"])").has_value());
}

TEST(OpWorkTest, AttentionCountsBothMatmulsInEitherLayout) {
  // _cudnn_attention_forward: q [B,H,Lq,D], k/v [B,H,Lk,D] (heavy_every4's decode step).
  auto w = EstimateOpWork("aten::_cudnn_attention_forward",
                          "[[8, 16, 1, 128], [8, 16, 512, 128], [8, 16, 512, 128], [1, 1, 1, 512], [], []]",
                          R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", ""])");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->kind, WorkKind::kAttention);
  EXPECT_DOUBLE_EQ(w->flops, 4.0 * 8 * 16 * 1 * 512 * 128);
  EXPECT_DOUBLE_EQ(w->bytes, (8.0 * 16 * 128 + 2 * 8.0 * 16 * 512 * 128 + 8.0 * 16 * 128) * 2);
  // _flash_attention_forward: [B,L,H,D].
  auto f = EstimateOpWork("aten::_flash_attention_forward", "[[8, 1, 16, 128], [8, 512, 16, 128], [8, 512, 16, 128]]",
                          R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->flops, w->flops);
}

TEST(OpWorkTest, ElementwiseBytesWithBroadcastScalarsAndInPlace) {
  // mul [8,1,2048] x [8,1,1]: output 8*2048 elements.
  auto w = EstimateOpWork("aten::mul", "[[8, 1, 2048], [8, 1, 1]]", R"(["c10::BFloat16", "c10::BFloat16"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->kind, WorkKind::kElementwise);
  EXPECT_DOUBLE_EQ(w->bytes, (8.0 * 2048 + 8 + 8.0 * 2048) * 2);
  EXPECT_DOUBLE_EQ(w->flops, 8.0 * 2048);
  // A wrapped scalar (dims []) is not a tensor.
  w = EstimateOpWork("aten::add", "[[8, 1, 1], [], []]", R"(["float", "double", "Scalar"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 4 * 2);
  // copy_(dst fp32, src bf16): reads one, writes the other; no FLOPs.
  w = EstimateOpWork("aten::copy_", "[[8, 1, 2048], [8, 1, 2048], []]", R"(["float", "c10::BFloat16", "Scalar"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->bytes, 8.0 * 2048 * (4 + 2));
  EXPECT_DOUBLE_EQ(w->flops, 0);
  // In place: writes its first input.
  w = EstimateOpWork("aten::add_", "[[1024], [1024]]", R"(["long int", "long int"])");
  ASSERT_TRUE(w.has_value());
  EXPECT_DOUBLE_EQ(w->bytes, 3.0 * 1024 * 8);
}

TEST(OpWorkTest, OpsWithoutAFormulaOrBadArgsHaveNoWork) {
  EXPECT_FALSE(WantsShapes("aten::linear"));   // dispatches to addmm, whose kernel it is
  EXPECT_FALSE(WantsShapes("aten::to"));
  EXPECT_FALSE(WantsShapes("mm"));
  EXPECT_TRUE(WantsShapes("aten::mm"));
  EXPECT_TRUE(WantsShapes("aten::where"));
  EXPECT_FALSE(EstimateOpWork("aten::mm", "[[8, 2048], [2048, x]]", R"(["float", "float"])").has_value());
  EXPECT_FALSE(EstimateOpWork("aten::mm", "[[8, 2048]]", R"(["float"])").has_value());
  EXPECT_FALSE(EstimateOpWork("aten::mm", "[[8, 2048], [2048, 8]]", R"(["float"])").has_value());  // counts differ
  EXPECT_FALSE(EstimateOpWork("aten::cat", "[[[1, 2], [1, 2]], []]", R"(["TensorList", "Scalar"])").has_value());
  EXPECT_FALSE(EstimateOpWork("aten::mul", "[[], []]", R"(["Scalar", "Scalar"])").has_value());
}

}  // namespace
}  // namespace latdoc::trace
