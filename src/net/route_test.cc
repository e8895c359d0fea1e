#include "net/route.h"

#include <gtest/gtest.h>

namespace latdoc::net {
namespace {

// iproute2's answers, as `ip route get` printed them in the namespace tests and on a host.
TEST(ParseIpRouteGetTest, GatewayDevSourceAndLearntMtu) {
  RouteFacts r;
  ASSERT_TRUE(ParseIpRouteGet("10.242.2.2 via 10.242.1.1 dev vc src 10.242.1.2 uid 0 \n"
                              "    cache expires 597sec mtu 1400 \n",
                              r));
  EXPECT_EQ(r.dev, "vc");
  EXPECT_EQ(r.gateway, "10.242.1.1");
  EXPECT_EQ(r.src, "10.242.1.2");
  EXPECT_FALSE(r.local);
  EXPECT_EQ(r.cached_mtu_bytes, 1400u);
}

TEST(ParseIpRouteGetTest, DirectOnTheSubnetHasNoGateway) {
  RouteFacts r;
  ASSERT_TRUE(ParseIpRouteGet("10.242.1.2 dev ta src 10.242.1.1 uid 0 \n    cache \n", r));
  EXPECT_EQ(r.dev, "ta");
  EXPECT_EQ(r.gateway, "");
  EXPECT_FALSE(r.cached_mtu_bytes);
}

TEST(ParseIpRouteGetTest, LocalAndLockedMtu) {
  RouteFacts r;
  ASSERT_TRUE(ParseIpRouteGet("local 127.0.0.1 dev lo src 127.0.0.1 uid 0 \n    cache <local> \n", r));
  EXPECT_TRUE(r.local);
  EXPECT_EQ(r.dev, "lo");
  RouteFacts m;
  ASSERT_TRUE(ParseIpRouteGet("10.0.0.9 via 10.0.0.1 dev eth0 src 10.0.0.5 uid 0 \n"
                              "    cache mtu lock 1280 \n",
                              m));
  EXPECT_EQ(m.cached_mtu_bytes, 1280u);
}

TEST(ParseIpRouteGetTest, NoDevIsNoRoute) {
  RouteFacts r;
  EXPECT_FALSE(ParseIpRouteGet("RTNETLINK answers: Network is unreachable\n", r));
  EXPECT_FALSE(ParseIpRouteGet("", r));
}

TEST(InterfaceMtuTest, LoopbackHasOneAndNoSuchDeviceHasNone) {
  EXPECT_TRUE(InterfaceMtu("lo").has_value());
  EXPECT_FALSE(InterfaceMtu("no-such-dev0").has_value());
  EXPECT_FALSE(InterfaceMtu("").has_value());
}

}  // namespace
}  // namespace latdoc::net
