#include "cli/flags.h"

#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/units.h"

namespace latdoc::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Every spelling of a duration a user types, and the bare number (seconds, or the unit of a
// millisecond option) that was accepted before units were.
TEST(DurationTest, UnitsAndBareNumbers) {
  EXPECT_EQ(*ParseDurationNs("30s"), 30'000'000'000);
  EXPECT_EQ(*ParseDurationNs("5m"), 300'000'000'000);
  EXPECT_EQ(*ParseDurationNs("1h"), 3'600'000'000'000);
  EXPECT_EQ(*ParseDurationNs("250ms"), 250'000'000);
  EXPECT_EQ(*ParseDurationNs("1.5"), 1'500'000'000);
  EXPECT_EQ(*ParseDurationNs("0"), 0);
  EXPECT_EQ(*ParseDurationNs("50", 1'000'000), 50'000'000);
  for (const char* bad : {"", "-1", "-1s", "nan", "inf", "5 s", "5sec", "1e3", "s", ".", "1.2.3", "9999999999h"}) {
    auto d = ParseDurationNs(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().message(), "'" + std::string(bad) + "' is not a duration (e.g. 30s, 250ms, 5m)");
  }
}

// A CLI11 app with one option of each kind, parsed as main parses.
struct Parsed {
  std::string error;  // the ParseError's text; "" when the parse succeeded
  double seconds = -1;
  int count = -1;
  double rate = -1;
};

Parsed Parse(std::vector<std::string> args) {
  Parsed p;
  CLI::App app;
  app.add_option("--duration", p.seconds)->transform(Seconds(Bound::kPositive));
  app.add_option("--count", p.count)->check(Number(Bound::kPositive));
  app.add_option("--rate", p.rate)->check(Number(Bound::kPositiveOrInf));
  std::vector<std::string> rev(args.rbegin(), args.rend());
  try {
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    p.error = e.what();
  }
  return p;
}

TEST(FlagsTest, DurationsWithUnitsBecomeSeconds) {
  EXPECT_EQ(Parse({"--duration", "5m"}).seconds, 300);
  EXPECT_EQ(Parse({"--duration", "250ms"}).seconds, 0.25);
  EXPECT_EQ(Parse({"--duration", "7"}).seconds, 7);
  EXPECT_EQ(Parse({"--duration=1.5s"}).seconds, 1.5);
}

// Zero, negative, NaN and (where not meant) infinite values are refused, naming the value.
TEST(FlagsTest, NonsenseNumbersAreRefused) {
  EXPECT_EQ(Parse({"--duration", "0"}).error, "--duration: 0: must be more than 0");
  EXPECT_EQ(Parse({"--duration", "0s"}).error, "--duration: 0s: must be more than 0");
  EXPECT_EQ(Parse({"--duration", "-5"}).error, "--duration: -5: must be more than 0");
  EXPECT_EQ(Parse({"--duration", "nan"}).error, "--duration: nan: not a number");
  EXPECT_EQ(Parse({"--duration", "5x"}).error,
            "--duration: '5x' is not a duration (e.g. 30s, 250ms, 5m)");
  EXPECT_EQ(Parse({"--count", "0"}).error, "--count: 0: must be more than 0");
  EXPECT_EQ(Parse({"--count", "-3"}).error, "--count: -3: must be more than 0");
  EXPECT_EQ(Parse({"--rate", "0"}).error, "--rate: 0: must be more than 0 (or inf)");
  EXPECT_EQ(Parse({"--rate", "nan"}).error, "--rate: nan: not a number");
  EXPECT_EQ(Parse({"--rate", "-inf"}).error, "--rate: -inf: must be a finite number");
  EXPECT_EQ(Parse({"--rate", "inf"}).error, "");
  EXPECT_TRUE(std::isinf(Parse({"--rate", "inf"}).rate));
  EXPECT_EQ(Parse({"--count", "3"}).count, 3);
}

TEST(ServerUrlTest, TrailingV1AndPastedEndpointsAreDropped) {
  struct Case {
    const char* in;
    const char* url;
    std::optional<std::string> endpoint;
  };
  for (const Case& c : {Case{"http://h:8000/v1", "http://h:8000", std::nullopt},
                        Case{"http://h:8000/v1/", "http://h:8000", std::nullopt},
                        Case{"http://h:8000/v1/completions", "http://h:8000", "completions"},
                        Case{"http://h:8000/v1/chat/completions", "http://h:8000", "chat"},
                        Case{"https://gw.example/llm/v1/chat/completions", "https://gw.example/llm", "chat"},
                        Case{"http://h:8000/v1/models", "http://h:8000", std::nullopt},
                        Case{"http://h/openai/v1?api-version=2", "http://h/openai?api-version=2", std::nullopt}}) {
    auto u = NormalizeServerUrl("--url", c.in);
    ASSERT_TRUE(u.ok()) << c.in;
    EXPECT_EQ(u->url, c.url) << c.in;
    EXPECT_EQ(u->endpoint, c.endpoint) << c.in;
    EXPECT_FALSE(u->note.empty()) << c.in;
  }
  auto u = NormalizeServerUrl("--base-url", "http://h:8000/v1");
  EXPECT_EQ(u->note, "--base-url http://h:8000/v1: ends in /v1, which latdoc adds itself; using http://h:8000");
  u = NormalizeServerUrl("--url", "http://h:8000/v1/chat/completions");
  EXPECT_EQ(u->note,
            "--url http://h:8000/v1/chat/completions: names an endpoint, and latdoc adds the endpoint's "
            "path itself; using http://h:8000 with --endpoint chat");
}

// Another path is a gateway's route: kept, silently; no path, unchanged.
TEST(ServerUrlTest, OtherPathsAreKeptAsAPrefix) {
  for (const char* in : {"http://h:8000", "http://h:8000/", "http://gw/llm", "http://gw/v1beta", "http://[::1]:8000"}) {
    auto u = NormalizeServerUrl("--url", in);
    ASSERT_TRUE(u.ok()) << in;
    EXPECT_EQ(u->url, in);
    EXPECT_EQ(u->endpoint, std::nullopt);
    EXPECT_EQ(u->note, "");
  }
  EXPECT_EQ(NormalizeServerUrl("--url", "ftp://h").status().message(), "--url 'ftp://h': scheme must be http or https");
}

TEST(ServerUrlTest, EndpointSpellings) {
  EXPECT_EQ(EndpointName("completions"), "completions");
  EXPECT_EQ(EndpointName("/v1/completions"), "completions");
  EXPECT_EQ(EndpointName("/v1/chat/completions"), "chat");
  EXPECT_EQ(EndpointName("chat"), "chat");
  EXPECT_EQ(EndpointName("/v1/embeddings"), std::nullopt);
  EXPECT_EQ(EndpointName("foo"), std::nullopt);
}

TEST(ClosestTest, SuggestsNearNamesAndNamesContainingTheWord) {
  const std::vector<std::string> opts = {"--concurrency", "--request-rate", "--num-requests", "--duration",
                                         "--url", "--max-concurrency"};
  EXPECT_THAT(Closest("--concurency", opts), ElementsAre("--concurrency"));
  EXPECT_THAT(Closest("--rate", opts), ElementsAre("--request-rate"));
  EXPECT_THAT(Closest("--durration", opts), ElementsAre("--duration"));
  EXPECT_THAT(Closest("--bogus", opts), IsEmpty());
  EXPECT_THAT(Closest("--foo", {"--slo", "--json"}), IsEmpty());  // 2 edits of 3 letters: not close
  EXPECT_THAT(Closest("benchh", {"bench", "sweep", "net"}), ElementsAre("bench"));
  EXPECT_THAT(Closest("swep", {"bench", "sweep", "net"}), ElementsAre("sweep"));
}

// --host/--port build vLLM's URL; --api-key goes into the environment, never into the flags'
// echo; a URL that names the chat endpoint selects it.
TEST(ServerFlagsTest, HostPortApiKeyAndEndpoint) {
  std::string url, endpoint = "completions", env = "OPENAI_API_KEY";
  ServerFlags f;
  f.url = &url;
  f.endpoint = &endpoint;
  f.api_key_env = &env;
  CLI::App app;
  AddServerFlags(&app, f);
  std::vector<std::string> args = {"--host", "::1", "--port", "8001", "--api-key", "sk-test-123", "--backend", "openai-chat"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ASSERT_EQ(ResolveServerFlags("test", f, true), std::nullopt);
  EXPECT_EQ(url, "http://[::1]:8001");
  EXPECT_EQ(endpoint, "chat");
  EXPECT_EQ(env, "LATDOC_API_KEY");
  EXPECT_STREQ(std::getenv("LATDOC_API_KEY"), "sk-test-123");
}

TEST(ServerFlagsTest, UrlAndHostTogetherAreRefused) {
  std::string url, endpoint = "completions", env = "OPENAI_API_KEY";
  ServerFlags f;
  f.url = &url;
  f.endpoint = &endpoint;
  f.api_key_env = &env;
  CLI::App app;
  AddServerFlags(&app, f);
  std::vector<std::string> args = {"--host", "h", "--base-url", "http://x:1"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  EXPECT_EQ(ResolveServerFlags("test", f, true), 2);
}

}  // namespace
}  // namespace latdoc::cli
