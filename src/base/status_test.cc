#include "base/status.h"

#include <gtest/gtest.h>

#include "base/exit_codes.h"

namespace latdoc {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd");
  return x / 2;
}

Status UseHalf(int x, int* out) {
  ASSIGN_OR_RETURN(*out, Half(x));
  return Status::Ok();
}

TEST(StatusTest, ContextClimbsWithTheError) {
  Status s = DataLoss("byte 12: truncated").WithContext("trace.json");
  EXPECT_EQ(s.message(), "trace.json: byte 12: truncated");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
  // A path already in front is not repeated; a longer name that starts the same is no match.
  EXPECT_EQ(s.WithContext("trace.json").message(), "trace.json: byte 12: truncated");
  EXPECT_EQ(s.WithContext("trace").message(), "trace: trace.json: byte 12: truncated");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int v = 0;
  EXPECT_TRUE(UseHalf(8, &v).ok());
  EXPECT_EQ(v, 4);
  Status s = UseHalf(3, &v);
  EXPECT_EQ(s.message(), "odd");
}

TEST(StatusTest, ExitCodesFollowDesign) {
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(InvalidArgument("x")), 2);
  EXPECT_EQ(ExitCodeFor(DataLoss("x")), 2);
  EXPECT_EQ(ExitCodeFor(Unavailable("x")), 3);
  EXPECT_EQ(ExitCodeFor(PermissionDenied("x")), 3);
}

}  // namespace
}  // namespace latdoc
