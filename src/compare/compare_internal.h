// What the parts of `latdoc compare` share, private to src/compare: the judging of one number
// (by threshold, exactly, or from the bootstrap's interval) and the comparisons of each kind of
// document, one file each: compare_bench.cc (bench runs, read as loadgen::LoadFacts),
// compare_docs.cc (sweeps, traces, findings, stalls) and compare_render.cc (text and JSON).
// compare.cc reads the files and picks the comparisons. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compare/compare.h"
#include "loadgen/load_facts.h"

namespace latdoc::compare::internal {

// j[key] when it is a number.
std::optional<double> Num(const nlohmann::json& j, const char* key);
// Linear interpolation between closest ranks (numpy's default). REQUIRES: v non-empty.
double QuantileOf(std::vector<double>& v, double q);
// The quantile `q` of `v`, or its mean when nullopt. REQUIRES: v non-empty.
double Stat(std::vector<double>& v, std::optional<double> q);
// Fills diff, rel and the verdict from a, b and beyond_noise.
void Judge(MetricDelta& m);
MetricDelta ByThreshold(std::string group, std::string name, std::string unit, Direction dir,
                        std::optional<double> a, std::optional<double> b, double threshold,
                        double floor_abs);
MetricDelta Exact(std::string group, std::string name, std::string unit, Direction dir,
                  std::optional<double> a, std::optional<double> b);
// p90 and up, and max: a tail statistic.
bool IsTail(const std::string& name);
// Severity as a rank: a change to a higher one is worse.
int SeverityRank(const std::string& s);

// The comparisons, each appending its metrics and notes to `r`.
void CompareBench(const loadgen::LoadFacts& a, const loadgen::LoadFacts& b,
                  const std::string& group, const CompareOptions& o, CompareResult& r);
void CompareSweep(const nlohmann::json& a, const nlohmann::json& b, CompareResult& r);
// A trace document's facts (latdoc.trace/1 has them under "facts").
void CompareTrace(const nlohmann::json& fa, const nlohmann::json& fb, const std::string& group,
                  CompareResult& r);
void CompareFindings(const nlohmann::json& a, const nlohmann::json& b, CompareResult& r);
void CompareStalls(const nlohmann::json& a, const nlohmann::json& b, CompareResult& r);

}  // namespace latdoc::compare::internal
