#include "logs/message_template.h"

#include <gtest/gtest.h>

namespace latdoc::logs {
namespace {

std::string T(std::string_view m) {
  std::string out;
  MessageTemplate(m, &out);
  return out;
}

TEST(MessageTemplateTest, IdsNumbersAndQuotedValuesBecomePlaceholders) {
  EXPECT_EQ(T("Request cmpl-3f2a9-0 failed with an internal error during generation"),
            "Request <*> failed with an internal error during generation");
  EXPECT_EQ(T("Request chatcmpl-7f1c2a failed with an internal error during generation"),
            T("Request cmpl-0000 failed with an internal error during generation"));
  EXPECT_EQ(T("The following fields were present in the request but ignored: {'foo_field'}"),
            "The following fields were present in the request but ignored: {<str>}");
  EXPECT_EQ(T("task id = 3, error: too long (8193 > 8192)"),
            "task id = <*>, error: too long (<*> > <*>)");
  EXPECT_EQ(T("Sequence group 12 is preempted ... total_num_cumulative_preemption=51"),
            "Sequence group <*> is preempted ... total_num_cumulative_preemption=<*>");
  EXPECT_EQ(T("Engine core process died unexpectedly, shutting down"),
            "Engine core process died unexpectedly, shutting down");
  EXPECT_EQ(T("port 8000:"), "port <*>:");
  EXPECT_EQ(T("it's here"), "it's here");
}

TEST(MessageTemplateTest, LongMessagesAreCut) {
  std::string m(1000, 'a');
  EXPECT_EQ(T(m).size(), kMaxTemplateBytes);
}

}  // namespace
}  // namespace latdoc::logs
