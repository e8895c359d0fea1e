// The terminal summary of `latdoc net` facts (findings are rendered by report/).
// Pure: facts in, text out. Values not measured print "n/a".
#pragma once

#include <string>

#include "net/net_facts.h"

namespace latdoc::net {

std::string RenderNetText(const NetFacts& facts);
// One line, "tcp: 31 connections, 412 segments sent, 3 retransmitted (0.73%), ...".
std::string RenderTcpLine(const TcpFacts& t);

}  // namespace latdoc::net
