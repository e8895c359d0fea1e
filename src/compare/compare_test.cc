#include "compare/compare.h"

#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace latdoc::compare {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

LoadedResult Doc(json j, std::string path = "x.json") {
  LoadedResult r;
  r.path = std::move(path);
  auto k = DetectKind(j, r.path);
  EXPECT_TRUE(k.ok()) << k.status().message();
  r.kind = k.ok() ? *k : Kind::kBench;
  r.doc = std::move(j);
  return r;
}

const MetricDelta* Find(const CompareResult& r, const std::string& group, const std::string& name) {
  for (const auto& m : r.metrics)
    if (m.group == group && m.name == name) return &m;
  return nullptr;
}

std::vector<double> Normal(double mean, double sd, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::max(0.1, d(rng)));
  return v;
}

json Bench(double mean_ttft, double p99_ttft, double tput, int failed = 0) {
  return json{{"schema", "latdoc.bench/1"}, {"completed", 100}, {"failed", failed},
              {"mean_ttft_ms", mean_ttft}, {"median_ttft_ms", mean_ttft},
              {"p99_ttft_ms", p99_ttft}, {"output_throughput", tput},
              {"request_throughput", tput / 100}};
}

TEST(CompareTest, DetectsKindFromSchemaAndRejectsOthersWithTheirPath) {
  EXPECT_EQ(*DetectKind(json{{"schema", "latdoc.sweep/1"}}, "s.json"), Kind::kSweep);
  EXPECT_EQ(*DetectKind(json{{"schema", "latdoc.trace/1"}}, "t.json"), Kind::kTrace);
  EXPECT_EQ(*DetectKind(json{{"schema", "latdoc.diagnose/1"}}, "d.json"), Kind::kDiagnose);
  EXPECT_EQ(DetectKind(json{{"a", 1}}, "a.json").status().message(),
            "a.json: no \"schema\" field: not a result written by latdoc (bench, sweep, trace "
            "or diagnose --json)");
  EXPECT_EQ(DetectKind(json{{"schema", "latdoc.bench/2"}}, "new.json").status().message(),
            "new.json: schema \"latdoc.bench/2\" is newer than this latdoc reads "
            "(latdoc.bench/1); use the latdoc that wrote it");
  EXPECT_EQ(DetectKind(json{{"schema", "latdoc.logs/1"}}, "l.json").status().message(),
            "l.json: schema \"latdoc.logs/1\" is not one latdoc compare reads (latdoc.bench, "
            "latdoc.sweep, latdoc.trace, latdoc.diagnose)");
  EXPECT_FALSE(DetectKind(json{{"schema", "latdoc.bench/x"}}, "v.json").ok());
  EXPECT_FALSE(DetectKind(json::array(), "arr.json").ok());
}

TEST(CompareTest, MismatchedKindsAreAnErrorNamingBothFiles) {
  auto r = Compare(Doc(Bench(10, 20, 100), "a.json"),
                   Doc(json{{"schema", "latdoc.sweep/1"}}, "b.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "a.json is a bench result but b.json is a sweep result: compare two results of the "
            "same kind");
}

// Without samples: a move under the documented threshold is noise, over it is a verdict whose
// direction follows the metric (lower latency and higher throughput are better).
TEST(CompareTest, ThresholdsWithoutSamples) {
  auto r = Compare(Doc(Bench(100, 200, 1000)), Doc(Bench(103, 260, 1200)));
  ASSERT_TRUE(r.ok());
  const MetricDelta* mean = Find(*r, "bench", "mean_ttft_ms");
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->method, NoiseMethod::kThreshold);
  EXPECT_FALSE(mean->beyond_noise);  // +3% < 5%
  EXPECT_EQ(mean->verdict, "within noise");
  EXPECT_DOUBLE_EQ(*mean->diff, 3);
  const MetricDelta* p99 = Find(*r, "bench", "p99_ttft_ms");
  EXPECT_TRUE(p99->beyond_noise);    // +30% > 10%
  EXPECT_EQ(p99->verdict, "worse");
  const MetricDelta* tput = Find(*r, "bench", "output_throughput");
  EXPECT_EQ(tput->verdict, "better");  // +20%
  EXPECT_EQ(r->better, 2);             // output and request throughput
  EXPECT_EQ(r->worse, 1);
  EXPECT_THAT(r->notes.front(), HasSubstr("relative thresholds"));
}

TEST(CompareTest, LatencyFloorKeepsSubMillisecondMovesInNoise) {
  // +40% but only 0.2 ms: under the absolute floor.
  auto r = Compare(Doc(Bench(0.5, 0.5, 10)), Doc(Bench(0.7, 0.7, 10)));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(Find(*r, "bench", "mean_ttft_ms")->beyond_noise);
}

TEST(CompareTest, ErrorRateMovesByPercentagePoints) {
  auto r = Compare(Doc(Bench(10, 10, 10, 0)), Doc(Bench(10, 10, 10, 5)));
  ASSERT_TRUE(r.ok());
  const MetricDelta* e = Find(*r, "bench", "error_rate");
  EXPECT_NEAR(*e->b, 100.0 * 5 / 105, 1e-9);
  EXPECT_EQ(e->verdict, "worse");
  // The test is the floor in points alone: the text says so, not "threshold 0%".
  const std::string text = RenderCompareText(*r);
  EXPECT_THAT(text, HasSubstr("worse (more than 1 pt)"));
  EXPECT_THAT(text, testing::Not(HasSubstr("threshold 0%")));
}

// The bootstrap interval of a shifted distribution excludes 0; of the same one, includes it.
TEST(CompareTest, BootstrapSeparatesShiftFromNoise) {
  auto a = Normal(100, 20, 400, 1), same = Normal(100, 20, 400, 2), shifted = Normal(110, 20, 400, 3);
  Interval none = BootstrapDiff(a, same, std::nullopt, 1000, 7);
  EXPECT_LT(none.lo, 0);
  EXPECT_GT(none.hi, 0);
  Interval up = BootstrapDiff(a, shifted, std::nullopt, 1000, 7);
  EXPECT_GT(up.lo, 0);
  EXPECT_NEAR((up.lo + up.hi) / 2, 10, 3);
  Interval med = BootstrapDiff(a, shifted, 0.5, 1000, 7);
  EXPECT_GT(med.lo, 0);
  // Seeded: the same inputs give the same interval.
  Interval again = BootstrapDiff(a, shifted, std::nullopt, 1000, 7);
  EXPECT_EQ(up.lo, again.lo);
  EXPECT_EQ(up.hi, again.hi);
}

TEST(CompareTest, BenchWithPerRequestSamplesUsesBootstrap) {
  auto with = [](const std::vector<double>& ttft) {
    json j = Bench(0, 0, 100);
    j.erase("mean_ttft_ms");
    j.erase("median_ttft_ms");
    j.erase("p99_ttft_ms");
    j["per_request"] = {{"ttft_ms", ttft}, {"tpot_ms", ttft}, {"e2el_ms", ttft}};
    return j;
  };
  // A 4% shift: under the 5% threshold, but 400 samples a side resolve it.
  auto r = Compare(Doc(with(Normal(100, 5, 400, 1))), Doc(with(Normal(104, 5, 400, 2))));
  ASSERT_TRUE(r.ok());
  const MetricDelta* mean = Find(*r, "bench", "mean_ttft_ms");
  ASSERT_NE(mean, nullptr);
  EXPECT_EQ(mean->method, NoiseMethod::kBootstrap);
  EXPECT_TRUE(mean->beyond_noise);
  EXPECT_EQ(mean->verdict, "worse");
  EXPECT_NEAR(*mean->a, 100, 1);  // computed from the samples when the summary is absent
  // The same distribution twice: within noise.
  auto same = Compare(Doc(with(Normal(100, 5, 400, 1))), Doc(with(Normal(100, 5, 400, 9))));
  EXPECT_FALSE(Find(*same, "bench", "mean_ttft_ms")->beyond_noise);
  EXPECT_FALSE(Find(*same, "bench", "median_ttft_ms")->beyond_noise);
}

TEST(CompareTest, SweepKneeAndStepsAtTheSameLoad) {
  auto sweep = [](double knee, double p99_at_64) {
    return json{{"schema", "latdoc.sweep/1"}, {"mode", "concurrency"},
                {"knee", {{"concurrency", knee}}}, {"highest_meeting_slo", nullptr},
                {"max_goodput", 64},
                {"recommendations", {{"max_num_seqs", {{"flag", "--max-num-seqs"}, {"value", knee}}}}},
                {"steps", json::array({json{{"concurrency", 32}, {"p99_e2el_ms", 100}, {"output_throughput", 900}},
                                       json{{"concurrency", 64}, {"p99_e2el_ms", p99_at_64}, {"output_throughput", 1500}}})}};
  };
  auto r = Compare(Doc(sweep(64, 200)), Doc(sweep(128, 150)));
  ASSERT_TRUE(r.ok());
  const MetricDelta* knee = Find(*r, "sweep", "knee_concurrency");
  ASSERT_NE(knee, nullptr);
  EXPECT_EQ(knee->verdict, "better");
  EXPECT_EQ(Find(*r, "sweep", "recommended_max_num_seqs")->verdict, "changed");
  EXPECT_EQ(Find(*r, "step conc=64", "p99_e2el_ms")->verdict, "better");
  EXPECT_EQ(Find(*r, "step conc=32", "p99_e2el_ms")->verdict, "same");
  EXPECT_EQ(Find(*r, "sweep", "highest_meeting_slo")->verdict, "n/a");
}

TEST(CompareTest, TraceKernelsAndFindings) {
  auto trace = [](double gemm_ns, const char* sev) {
    return json{{"schema", "latdoc.trace/1"},
                {"facts", {{"gpu_timeline", {{"total_ms", 10.0}, {"busy_ms", gemm_ns / 1e6}, {"idle_pct", 20.0}}},
                           {"kernels", json::array({json{{"name", "gemm"}, {"count", 10}, {"total_ns", gemm_ns}},
                                                    json{{"name", "copy"}, {"count", 10}, {"total_ns", 1e6}}})}}},
                {"findings", json::array({json{{"id", "kernel.slow"}, {"layer", "kernel"},
                                               {"severity", sev}, {"title", "t"}}})}};
  };
  auto r = Compare(Doc(trace(8e6, "fail")), Doc(trace(4e6, "ok")));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Find(*r, "trace kernel", "gemm")->verdict, "better");
  EXPECT_EQ(Find(*r, "trace kernel", "copy")->verdict, "same");
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].change, "severity");
  EXPECT_EQ(r->findings[0].severity_a, "fail");
  EXPECT_EQ(r->findings[0].severity_b, "ok");
}

// Several ranks: the devices' sum (each on its own window) is compared, not the one window over
// ranks on different clocks, whose idle share is the time between them.
TEST(CompareTest, SeveralDevicesCompareTheirSum) {
  auto trace = [](double summed_idle_pct) {
    return json{{"schema", "latdoc.trace/1"},
                {"facts", {{"gpu_timeline", {{"total_ms", 5000.0}, {"idle_pct", 99.6}}},
                           {"gpu_timeline_devices_summed", {{"total_ms", 20.0}, {"idle_pct", summed_idle_pct}}},
                           {"kernels", json::array()}}},
                {"findings", json::array()}};
  };
  auto r = Compare(Doc(trace(10.0)), Doc(trace(30.0)));
  ASSERT_TRUE(r.ok());
  const MetricDelta* idle = Find(*r, "trace", "idle_pct");
  ASSERT_NE(idle, nullptr);
  EXPECT_DOUBLE_EQ(*idle->a, 10.0);
  EXPECT_DOUBLE_EQ(*idle->b, 30.0);
  EXPECT_EQ(idle->verdict, "worse");
}

TEST(CompareTest, LongerCaptureOfTheSameWorkIsNotWorse) {
  // 100 and 200 steps of the same two kernels: every time doubles, nothing got slower.
  auto trace = [](double steps) {
    return json{{"schema", "latdoc.trace/1"},
                {"facts", {{"gpu_timeline", {{"total_ms", steps}, {"busy_ms", 0.8 * steps},
                                             {"idle_ms", 0.2 * steps}, {"idle_pct", 20.0},
                                             {"exposed_memcpy_ms", 0.05 * steps}}},
                           {"kernels", json::array({json{{"name", "gemm"}, {"count", steps}, {"total_ns", 6e5 * steps}},
                                                    json{{"name", "add"}, {"count", 2 * steps}, {"total_ns", 2e5 * steps}}})}}},
                {"findings", json::array()}};
  };
  auto r = Compare(Doc(trace(100)), Doc(trace(200)));
  ASSERT_TRUE(r.ok());
  for (const auto& m : r->metrics) EXPECT_NE(m.verdict, "worse") << m.group << " " << m.name;
  EXPECT_EQ(Find(*r, "trace", "busy_ms")->verdict, "changed");
  EXPECT_EQ(Find(*r, "trace", "exposed_memcpy_pct")->verdict, "same");
  EXPECT_EQ(Find(*r, "trace kernel", "gemm")->verdict, "same");
  EXPECT_EQ(Find(*r, "trace kernel", "gemm")->unit, "ms/call");
  // A kernel one trace lacks is n/a there, not "ran in no time".
  json fused = trace(100);
  fused["facts"]["kernels"].erase(1);
  auto f = Compare(Doc(trace(100)), Doc(fused));
  EXPECT_EQ(Find(*f, "trace kernel", "add")->verdict, "n/a");
}

TEST(CompareTest, FewSamplesAreJudgedByThresholdsAndLoadsCompared) {
  auto with = [](const std::vector<double>& v, int concurrency, int in_tokens) {
    json j = Bench(0, 0, 100);
    j.erase("mean_ttft_ms");
    j.erase("median_ttft_ms");
    j.erase("p99_ttft_ms");
    j["per_request"] = {{"ttft_ms", v}, {"tpot_ms", v}, {"e2el_ms", v}};
    j["max_concurrency"] = concurrency;
    j["total_input_tokens"] = in_tokens * 100;
    return j;
  };
  // Two requests a side, B's both a little slower: a bootstrap would call it worse every time.
  auto r = Compare(Doc(with({10.2, 10.3}, 1, 64)), Doc(with({10.35, 10.4}, 1, 64)));
  ASSERT_TRUE(r.ok());
  for (const char* name : {"mean_ttft_ms", "p99_ttft_ms", "mean_e2el_ms"}) {
    EXPECT_EQ(Find(*r, "bench", name)->method, NoiseMethod::kThreshold) << name;
    EXPECT_NE(Find(*r, "bench", name)->verdict, "worse") << name;
  }
  EXPECT_THAT(r->notes.back(), HasSubstr("fewer than 30 per-request samples"));
  // 100 samples a side: the bootstrap judges means, thresholds the p99.
  auto a = Normal(100, 5, 100, 1), b = Normal(100, 5, 100, 2);
  auto mid = Compare(Doc(with(a, 1, 64)), Doc(with(b, 1, 64)));
  EXPECT_EQ(Find(*mid, "bench", "mean_ttft_ms")->method, NoiseMethod::kBootstrap);
  EXPECT_EQ(Find(*mid, "bench", "p99_ttft_ms")->method, NoiseMethod::kThreshold);
  for (const auto& n : mid->notes) EXPECT_THAT(n, ::testing::Not(HasSubstr("different loads")));
  // Another load: said first.
  auto other = Compare(Doc(with(a, 1, 64)), Doc(with(b, 8, 512)));
  ASSERT_FALSE(other->notes.empty());
  EXPECT_THAT(other->notes.front(), HasSubstr("different loads (max_concurrency 1 vs 8; input tokens per request 64 vs 512)"));
}

TEST(CompareTest, DiagnoseNewAndResolvedFindings) {
  auto diag = [](std::vector<std::pair<std::string, std::string>> fs) {
    json f = json::array();
    for (auto& [id, sev] : fs) f.push_back({{"id", id}, {"layer", "load"}, {"severity", sev}, {"title", id}});
    return json{{"schema", "latdoc.diagnose/1"}, {"findings", f}};
  };
  auto r = Compare(Doc(diag({{"load.queueing", "fail"}, {"load.slo", "ok"}})),
                   Doc(diag({{"load.kv_pressure", "warn"}, {"load.slo", "ok"}})));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->findings.size(), 2u);
  EXPECT_EQ(r->findings[0].id, "load.kv_pressure");
  EXPECT_EQ(r->findings[0].change, "new");
  EXPECT_EQ(r->findings[1].id, "load.queueing");
  EXPECT_EQ(r->findings[1].change, "resolved");
  EXPECT_THAT(r->notes, ::testing::Contains(HasSubstr("load layer was not measured")));
}

// Two diagnoses with stall attribution: each cause's stalls and share of decode time compared. The
// log fix took attribution.log's 6 stalls (12% of decode time) away; prefill's 3 stayed; a cause
// on one side only counts 0 on the other.
TEST(CompareTest, DiagnoseStallsComparedCauseByCause) {
  auto diag = [](json causes, int stalls, int unexplained) {
    json st = json::array();
    for (int i = 0; i < stalls; ++i) st.push_back(json::object());
    return json{{"schema", "latdoc.diagnose/1"}, {"findings", json::array()},
                {"attribution", {{"stalls", st}, {"unexplained", unexplained}, {"causes", causes}}}};
  };
  json before = json::array({json{{"cause", "log"}, {"stalls", 6}, {"decode_share", 0.12}},
                             json{{"cause", "prefill"}, {"stalls", 3}, {"decode_share", 0.05}}});
  json after = json::array({json{{"cause", "prefill"}, {"stalls", 3}, {"decode_share", 0.05}},
                            json{{"cause", "swap"}, {"stalls", 1}, {"decode_share", 0.004}}});
  auto r = Compare(Doc(diag(before, 9, 0)), Doc(diag(after, 4, 0)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MetricDelta* total = Find(*r, "stalls", "stalls");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->verdict, "better");
  const MetricDelta* log = Find(*r, "stalls by cause", "log stalls");
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->a, 6);
  EXPECT_EQ(log->b, 0);
  EXPECT_EQ(log->verdict, "better");
  EXPECT_EQ(Find(*r, "stalls by cause", "log decode_share")->verdict, "better");
  EXPECT_DOUBLE_EQ(*Find(*r, "stalls by cause", "log decode_share")->a, 12);
  EXPECT_EQ(Find(*r, "stalls by cause", "prefill stalls")->verdict, "same");
  // One new swap stall is within the noise of a run's stall count.
  EXPECT_EQ(Find(*r, "stalls by cause", "swap stalls")->verdict, "within noise");
  EXPECT_EQ(Find(*r, "stalls", "unexplained")->verdict, "same");

  // Attribution in one diagnosis only: said, not compared.
  auto one = Compare(Doc(diag(before, 9, 0)), Doc(json{{"schema", "latdoc.diagnose/1"}, {"findings", json::array()}}));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(Find(*one, "stalls", "stalls"), nullptr);
  EXPECT_THAT(one->notes, ::testing::Contains(HasSubstr("stall attribution in only one diagnosis")));
}

// A rule that judges each GPU gives one finding per GPU under one id: matched by id and GPU,
// so GPU 0 going from ok to warn is one change (and counts as worse) while GPU 1 stays put.
TEST(CompareTest, FindingsOfOneIdPerGpuAreMatchedByGpu) {
  auto diag = [](const char* gpu0_sev, const char* gpu0_title) {
    json f = json::array();
    f.push_back({{"id", "gpu.power_cap"}, {"layer", "system"}, {"severity", gpu0_sev},
                 {"title", std::string("GPU 0 (0000:18:00.0): ") + gpu0_title}});
    f.push_back({{"id", "gpu.power_cap"}, {"layer", "system"}, {"severity", "ok"},
                 {"title", "GPU 1 (0000:3b:00.0): power limit 700 W (default)"}});
    return json{{"schema", "latdoc.diagnose/1"}, {"findings", f}};
  };
  auto r = Compare(Doc(diag("ok", "power limit 700 W (default)")),
                   Doc(diag("warn", "power limit 500 W below the default 700 W")));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].change, "severity");
  EXPECT_EQ(r->findings[0].severity_a, "ok");
  EXPECT_EQ(r->findings[0].severity_b, "warn");
  EXPECT_THAT(r->findings[0].title, HasSubstr("GPU 0"));
  EXPECT_EQ(r->findings_worse, 1);
  EXPECT_THAT(RenderCompareText(*r), HasSubstr("Findings: 1 new or more severe."));
  // The other way round it is better, not worse.
  auto back = Compare(Doc(diag("warn", "power limit 500 W below the default 700 W")),
                      Doc(diag("ok", "power limit 700 W (default)")));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->findings.size(), 1u);
  EXPECT_EQ(back->findings_worse, 0);
  // A check that was skipped and now passes (or now informs) is no worse.
  auto later = Compare(Doc(diag("skip", "no power limit reported")),
                       Doc(diag("info", "power limit 700 W (default)")));
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->findings.size(), 1u);
  EXPECT_EQ(later->findings_worse, 0);
}

// Files that pass the schema check but hold a null where a string belongs: an error naming
// both files, not an abort.
TEST(CompareTest, FieldOfTheWrongTypeIsAnErrorNotACrash) {
  const json sweep = {{"schema", "latdoc.sweep/1"}, {"mode", nullptr}, {"steps", json::array()}};
  auto r = Compare(Doc(sweep, "a.json"), Doc(sweep, "b.json"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("a.json / b.json: a field has an unexpected type"));
  const json bench_ok = Bench(100, 200, 50);
  json bad = bench_ok;
  bad["findings"] = json::array({{{"id", "x"}, {"severity", nullptr}}});
  bad["schema"] = "latdoc.diagnose/1";
  json good = bad;
  good["findings"] = json::array();
  EXPECT_TRUE(Compare(Doc(good), Doc(bad)).ok());  // a null severity reads as none
  // A bench figure of the wrong type: the file and the key (loadgen::LoadFactsFromJson).
  json typo = bench_ok;
  typo["p99_ttft_ms"] = "slow";
  auto t = Compare(Doc(bench_ok, "a.json"), Doc(typo, "b.json"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "b.json: p99_ttft_ms: expected a number");
  const json diag_ok = {{"schema", "latdoc.diagnose/1"}, {"bench", bench_ok}};
  const json diag_typo = {{"schema", "latdoc.diagnose/1"}, {"bench", typo}};
  auto d = Compare(Doc(diag_typo, "a.json"), Doc(diag_ok, "b.json"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "a.json: bench.p99_ttft_ms: expected a number");
}

TEST(CompareTest, JsonSaysHowNoiseWasJudged) {
  auto r = Compare(Doc(Bench(100, 200, 1000), "a.json"), Doc(Bench(150, 200, 1000), "b.json"));
  ASSERT_TRUE(r.ok());
  auto j = CompareToJson(*r);
  EXPECT_EQ(j["schema"], "latdoc.compare/1");
  EXPECT_EQ(j["kind"], "bench");
  bool seen = false;
  for (const auto& m : j["metrics"]) {
    if (m["metric"] != "mean_ttft_ms") continue;
    seen = true;
    EXPECT_EQ(m["noise_method"], "threshold");
    EXPECT_EQ(m["verdict"], "worse");
    EXPECT_DOUBLE_EQ(m["rel"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(m["threshold"].get<double>(), 0.05);
    EXPECT_DOUBLE_EQ(m["floor"].get<double>(), 0.5);  // ms: a change must pass both
  }
  EXPECT_TRUE(seen);
  std::string text = RenderCompareText(*r);
  EXPECT_THAT(text, HasSubstr("mean_ttft_ms"));
  EXPECT_THAT(text, HasSubstr("worse (threshold 5%, more than 0.5 ms)"));
  EXPECT_THAT(text, HasSubstr("Beyond noise: 0 better, 2 worse."));
}

}  // namespace
}  // namespace latdoc::compare
