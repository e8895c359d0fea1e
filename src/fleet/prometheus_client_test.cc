#include "fleet/prometheus_client.h"

#include "http/server.h"

#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::fleet {
namespace {

TEST(PrometheusClientTest, QueryTargetPercentEncodesThePromql) {
  PromQuery q;
  q.promql = "up{job=\"vllm\"} + 1";
  q.time_s = 1733350000.5;
  EXPECT_EQ(QueryTarget(q),
            "/api/v1/query?query=up%7Bjob%3D%22vllm%22%7D%20%2B%201&time=1733350000.500");
  q.range = true;
  q.start_s = 100;
  q.end_s = 130;
  q.step_s = 1;
  EXPECT_EQ(QueryTarget(q), "/api/v1/query_range?query=up%7Bjob%3D%22vllm%22%7D%20%2B%201"
                            "&start=100.000&end=130.000&step=1.000");
}

TEST(PrometheusClientTest, ParsesVectorMatrixAndDropsNaN) {
  auto v = ParseQueryAnswer("http://p:9090", "q", 200, R"({"status":"success","data":{
      "resultType":"vector","result":[
        {"metric":{"instance":"a:8000"},"value":[1733350000.5,"0.25"]},
        {"metric":{"instance":"b:8000"},"value":[1733350000.5,"NaN"]},
        {"metric":{"instance":"c:8000"},"value":[1733350000.5,"+Inf"]}]}})");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ((*v)[0].labels.at("instance"), "a:8000");
  ASSERT_EQ((*v)[0].samples.size(), 1u);
  EXPECT_DOUBLE_EQ((*v)[0].samples[0].second, 0.25);
  EXPECT_TRUE((*v)[1].samples.empty());
  EXPECT_TRUE(std::isinf((*v)[2].samples[0].second));
  auto m = ParseQueryAnswer("http://p:9090", "q", 200, R"({"status":"success","data":{
      "resultType":"matrix","result":[
        {"metric":{"instance":"a:8000"},"values":[[100,"1"],[101,"2"]]}]}})");
  ASSERT_TRUE(m.ok());
  ASSERT_EQ((*m)[0].samples.size(), 2u);
  EXPECT_DOUBLE_EQ((*m)[0].samples[1].first, 101);
}

// A PromQL syntax error is bad input (exit 2) with Prometheus's message; an execution error is
// "could not run" (exit 3); a body that is not the API's JSON says so.
TEST(PrometheusClientTest, ErrorsKeepPrometheusMessage) {
  auto bad = ParseQueryAnswer("http://p:9090", "up{", 400,
                              R"({"status":"error","errorType":"bad_data","error":"1:4: parse error: unexpected end of input inside braces"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "Prometheus at http://p:9090 refused the query 'up{': bad_data: 1:4: parse error: "
            "unexpected end of input inside braces");
  auto exec = ParseQueryAnswer("http://p:9090", "q", 422,
                               R"({"status":"error","errorType":"execution","error":"too many samples"})");
  EXPECT_EQ(exec.status().code(), StatusCode::kUnavailable);
  auto html = ParseQueryAnswer("http://p:9090", "q", 404, "<html>not found</html>");
  EXPECT_EQ(html.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(html.status().message(), "http://p:9090 answered HTTP 404 without Prometheus's JSON: "
                                     "is it the Prometheus server's base URL (--prometheus)?");
}

// The base URL as users paste it: a trailing slash or a path prefix (behind a proxy).
TEST(PrometheusClientTest, BaseUrl) {
  EXPECT_EQ(PrometheusClient::Create("http://p:9090/", 1)->url().base_path, "");
  EXPECT_EQ(PrometheusClient::Create("http://p/prometheus", 1)->url().base_path, "/prometheus");
  auto bad = PrometheusClient::Create("ftp://x", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "--prometheus 'ftp://x': scheme must be http or https");
}

// A Prometheus behind authentication: the token goes as a bearer token; without it, HTTP 401 is
// "permission denied" (exit 3), and no message carries the token.
TEST(PrometheusClientTest, SendsTheBearerToken) {
  http::EventLoop loop;
  http::Server server(loop, {}, [](const http::Request& r, std::shared_ptr<http::ResponseStream> w) {
    if (r.Header("authorization") != "Bearer s3cret") {
      w->Send(401, "text/plain", "Unauthorized");
      return;
    }
    w->Send(200, "application/json",
            R"({"status":"success","data":{"resultType":"vector","result":[)"
            R"({"metric":{"instance":"a:1"},"value":[1,"1"]}]}})");
  });
  ASSERT_TRUE(server.Listen().ok());
  std::thread t([&] { loop.Run(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  PromQuery q;
  q.promql = "up";
  auto with = PrometheusClient::Create(url, 5'000'000'000, "s3cret")->Run({q});
  ASSERT_TRUE(with.ok()) << with.status().message();
  EXPECT_EQ((*with)[0][0].labels.at("instance"), "a:1");
  auto wrong = PrometheusClient::Create(url, 5'000'000'000, "wrong")->Run({q});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(wrong.status().message(),
            "Prometheus at " + url + " answered HTTP 401: it wants credentials, or refused them "
            "(a bearer token in an environment variable: --prometheus-token-env VAR)");
  EXPECT_EQ(wrong.status().message().find("wrong"), std::string::npos);
  loop.Post([&] { server.Stop(); loop.Stop(); });
  t.join();
}

// Nothing listens: kUnavailable naming Prometheus's URL.
TEST(PrometheusClientTest, UnreachableIsUnavailable) {
  auto c = PrometheusClient::Create("http://127.0.0.1:1", 2'000'000'000);
  ASSERT_TRUE(c.ok());
  PromQuery q;
  q.promql = "up";
  auto r = c->Run({q, q});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), ::testing::StartsWith("Prometheus unreachable: connect http://127.0.0.1:1: "));
}

}  // namespace
}  // namespace latdoc::fleet
