// What the network rule files share, private to src/rules: the evidence and finding helpers and
// the entry points of the path and TLS rules, which EvaluateNetRules (net_rules.cc) calls in
// the order of the report. net_rules.cc: the probe's timing rules; net_path_rules.cc: the path
// (hops, retransmits, route, MTU, stalled streams); net_tls_rules.cc: TLS. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "net/net_facts.h"
#include "rules/finding.h"

namespace latdoc::rules::net_rules_internal {

Evidence Num(std::string name, std::optional<double> value, std::string unit);
Evidence Text(std::string name, std::string text);
// A network-layer finding.
Finding Make(std::string id, Severity sev, std::string title);

// net_path_rules.cc
void Path(const net::NetFacts& nf, std::vector<Finding>& out);
void Retransmits(const net::ProbeFacts& p, std::vector<Finding>& out);
void Route(const net::NetFacts& nf, std::vector<Finding>& out);
void PathMtu(const net::NetFacts& nf, std::vector<Finding>& out);
void StreamStall(const net::NetFacts& nf, const net::ProbeFacts& p, std::vector<Finding>& out);

// net_tls_rules.cc
void TlsInspection(const net::NetFacts& nf, std::vector<Finding>& out);
void TlsOverhead(const net::NetFacts& nf, std::vector<Finding>& out);

}  // namespace latdoc::rules::net_rules_internal
