#include "host/host_facts.h"

#include <gtest/gtest.h>

#include "base/file_util.h"
#include "host/collector.h"

namespace latdoc::host {
namespace {

TEST(HostFactsTest, JsonRoundTripIsLossless) {
  for (const char* tree : {"tests/data/host/mi300x_unhealthy_built/tree",
                           "tests/data/host/h200_recorded/tree"}) {
    CollectOptions o;
    o.sysroot = tree;
    o.sample_interval_ns = 0;
    HostFacts f = CollectHostFacts(o);
    const std::string once = FactsToJson(f);
    auto back = FactsFromJson(once, "facts.json");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(FactsToJson(*back), once) << tree;
  }
}

TEST(HostFactsTest, UnknownFactKeepsItsReason) {
  Fact<int64_t> f = Fact<int64_t>::Unknown("/x: Permission denied");
  nlohmann::json j = f;
  EXPECT_EQ(j.dump(), R"({"unknown":"/x: Permission denied"})");
  Fact<int64_t> back = j.get<Fact<int64_t>>();
  EXPECT_FALSE(back.known());
  EXPECT_EQ(back.reason, "/x: Permission denied");
  nlohmann::json k = Fact<int64_t>::Known(0, "/y");
  EXPECT_EQ(k.dump(), R"({"source":"/y","value":0})");
}

TEST(HostFactsTest, CheckedInFactFixturesParse) {
  for (const char* name : {"facts/h200_recorded", "facts/h200_snapshot", "facts/mi300x_built",
                           "facts/unhealthy_built", "h200_live/h200_live_facts"}) {
    const std::string path = std::string("tests/data/host/") + name + ".json";
    auto text = ReadFileToString(path);
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto f = FactsFromJson(*text, path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    EXPECT_EQ(FactsToJson(*f), FactsToJson(*FactsFromJson(FactsToJson(*f), "again"))) << path;
  }
}

TEST(HostFactsTest, BadInputErrorsSayWhatAndWhere) {
  EXPECT_EQ(FactsFromJson("{", "f.json").status().message(), "f.json: not valid JSON");
  EXPECT_EQ(FactsFromJson("[]", "f.json").status().message(), "f.json: expected a JSON object");
  EXPECT_EQ(FactsFromJson(R"({"schema": "latdoc.doctor/1"})", "f.json").status().message(),
            "f.json: schema is \"latdoc.doctor/1\", expected \"latdoc.host_facts/1\" (write it "
            "with latdoc doctor --collect)");
  auto wrong = FactsFromJson(R"({"schema": "latdoc.host_facts/1", "cpu": {"numa_balancing": {"value": "x"}}})",
                             "f.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message().rfind("f.json: in \"cpu\": ", 0), 0u) << wrong.status().message();
}

// A file from a newer latdoc says so, and what to do, instead of "wrong schema".
TEST(HostFactsTest, NewerSchemaSaysSo) {
  EXPECT_EQ(FactsFromJson(R"({"schema": "latdoc.host_facts/2"})", "new.json").status().message(),
            "new.json: schema \"latdoc.host_facts/2\" is newer than this latdoc reads "
            "(\"latdoc.host_facts/1\"): collect again with this latdoc's `doctor --collect`, or "
            "judge the file with the latdoc that wrote it");
}

}  // namespace
}  // namespace latdoc::host
