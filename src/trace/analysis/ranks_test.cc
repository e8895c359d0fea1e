#include "trace/analysis/ranks.h"

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

// Ranks on clocks of their own: each collective is given by its duration per rank.
class Ranks {
 public:
  explicit Ranks(int n) {
    for (int r = 0; r < n; ++r) {
      const uint16_t s = trace.AddSource("r" + std::to_string(r) + ".json", "test");
      trace.sources[s].rank = r;
      trace.sources[s].world_size = n;
      trace.devices.push_back({s, 0, "NVIDIA H200", "sm90"});
      clock_.push_back(1'000'000'000LL * (r + 1));
    }
  }
  void Collective(int rank, const char* name, int64_t dur_ns) {
    Kernel(rank, "gemm", 100'000);
    Kernel(rank, name, dur_ns);
  }
  TraceReport Analyze() {
    trace.Finalize();
    return trace::Analyze(trace, AnalysisOptions{});
  }
  Trace trace;

 private:
  void Kernel(int rank, const char* name, int64_t dur_ns) {
    GpuOp op;
    op.source = static_cast<uint16_t>(rank);
    op.start_ns = clock_[rank];
    op.dur_ns = dur_ns;
    op.name = trace.names.Intern(name);
    trace.gpu_ops.push_back(op);
    clock_[rank] += dur_ns + 5'000;
  }
  std::vector<int64_t> clock_;
};

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

// Rank 1 arrives 300 us late at every all-reduce: rank 0's kernel runs 300 us longer.
TEST(RanksTest, TheRankWithTheShortestCollectiveIsTheStraggler) {
  Ranks t(2);
  for (int k = 0; k < 5; ++k) {
    t.Collective(0, kAllReduce, 315'000);
    t.Collective(1, kAllReduce, 15'000);
  }
  const TraceReport r = t.Analyze();
  const RankStats& rs = r.ranks;
  ASSERT_EQ(rs.ranks.size(), 2u);
  EXPECT_EQ(rs.collectives_aligned, 5);
  EXPECT_EQ(rs.collectives_with_straggler, 5);
  ASSERT_TRUE(rs.usual_straggler.has_value());
  EXPECT_EQ(*rs.usual_straggler, 1u);
  EXPECT_EQ(rs.ranks[1].label, "rank 1 (device 0, NVIDIA H200, r1.json)");
  EXPECT_EQ(rs.ranks[1].straggler_count, 5);
  EXPECT_EQ(rs.ranks[1].caused_wait_ns, 5 * 300'000);
  EXPECT_EQ(rs.ranks[0].waited_ns, 5 * 300'000);
  EXPECT_EQ(rs.ranks[1].waited_ns, 0);
  EXPECT_TRUE(rs.problems.empty());
  const std::string text = RenderRanksText(rs);
  EXPECT_NE(text.find("\nRanks: 2 with collectives; 5 collectives aligned by order, 5 with a straggler (a wait of 20 us "
                      "or more)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  straggler: rank 1 (device 0, NVIDIA H200, r1.json) came last in 100% of the collectives with a "
                      "straggler\n"),
            std::string::npos)
      << text;
}

TEST(RanksTest, EvenRanksHaveNoStraggler) {
  Ranks t(2);
  for (int k = 0; k < 5; ++k) {
    t.Collective(0, kAllReduce, 15'000 + k * 1'000);
    t.Collective(1, kAllReduce, 15'000);
  }
  const RankStats rs = t.Analyze().ranks;
  EXPECT_EQ(rs.collectives_aligned, 5);
  EXPECT_EQ(rs.collectives_with_straggler, 0);
  EXPECT_FALSE(rs.usual_straggler.has_value());
}

// Files that do not fit: alignment stops where the ranks diverge, and says so.
TEST(RanksTest, DivergingAndShortRanksAreReported) {
  Ranks t(2);
  t.Collective(0, kAllReduce, 15'000);
  t.Collective(1, kAllReduce, 15'000);
  t.Collective(0, "ncclDevKernel_AllGather_RING_LL(x)", 15'000);
  t.Collective(1, kAllReduce, 15'000);
  t.Collective(1, kAllReduce, 15'000);
  const RankStats rs = t.Analyze().ranks;
  EXPECT_EQ(rs.collectives_aligned, 1);
  EXPECT_FALSE(rs.files_conflict);
  ASSERT_EQ(rs.problems.size(), 2u);
  EXPECT_EQ(rs.problems[0], "rank 1 (device 0, NVIDIA H200, r1.json) has 3 collectives, the fewest is 2: the first 2 are aligned");
  EXPECT_EQ(rs.problems[1],
            "collective 1: rank 0 (device 0, NVIDIA H200, r0.json) runs AllGather where rank 1 (device 0, NVIDIA H200, "
            "r1.json) runs AllReduce: the ranks diverge there, the first 1 are aligned");
}

TEST(RanksTest, TheSameRankTwiceIsAConflict) {
  Ranks t(2);
  t.trace.sources[1].rank = 0;
  t.Collective(0, kAllReduce, 15'000);
  t.Collective(1, kAllReduce, 15'000);
  const RankStats rs = t.Analyze().ranks;
  EXPECT_TRUE(rs.files_conflict);
  ASSERT_EQ(rs.problems.size(), 1u);
  EXPECT_EQ(rs.problems[0], "rank 0 appears in 2 files (r0.json, r1.json): the same rank twice");
}

TEST(RanksTest, OneRankIsNoRankAnalysis) {
  Ranks t(1);
  t.Collective(0, kAllReduce, 15'000);
  EXPECT_TRUE(t.Analyze().ranks.ranks.empty());
}

TEST(RanksTest, CollectiveKinds) {
  EXPECT_EQ(CollectiveKind("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"), "AllGather");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)"), "ReduceScatter");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), "SendRecv");
  EXPECT_EQ(CollectiveKind("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"), "Collective");
}

// The generated Kineto rank files (tools/gen_trace.py --ranks 2): distributedInfo is read, and
// clocks 123 ms apart do not matter.
TEST(RanksTest, GeneratedKinetoRankFiles) {
  Trace t;
  for (const auto& res : ImportFiles({"tests/data/trace/ranks/straggler_r0.json", "tests/data/trace/ranks/straggler_r1.json"},
                                     ImportOptions{}, t, nullptr)) {
    ASSERT_TRUE(res.status.ok()) << res.status.message();
  }
  ASSERT_EQ(t.sources.size(), 2u);
  EXPECT_EQ(t.sources[1].rank, 1);
  EXPECT_EQ(t.sources[1].world_size, 2);
  const RankStats rs = Analyze(t, AnalysisOptions{}).ranks;
  ASSERT_EQ(rs.ranks.size(), 2u);
  EXPECT_EQ(rs.collectives_aligned, 12);
  ASSERT_TRUE(rs.usual_straggler.has_value());
  EXPECT_EQ(rs.ranks[*rs.usual_straggler].rank, 1);
  EXPECT_EQ(rs.ranks[*rs.usual_straggler].label, "rank 1 (device 1, NVIDIA H200, tests/data/trace/ranks/straggler_r1.json)");
  // 300 us of extra compute a step, split over 8 kernels in whole nanoseconds: ~300 us a wait.
  EXPECT_NEAR(static_cast<double>(rs.ranks[0].waited_ns) / 12, 300'000, 5'000);

  Trace clean;
  for (const auto& res : ImportFiles({"tests/data/trace/ranks/clean_r0.json", "tests/data/trace/ranks/clean_r1.json"},
                                     ImportOptions{}, clean, nullptr)) {
    ASSERT_TRUE(res.status.ok()) << res.status.message();
  }
  const RankStats cs = Analyze(clean, AnalysisOptions{}).ranks;
  EXPECT_EQ(cs.collectives_aligned, 12);
  EXPECT_EQ(cs.collectives_with_straggler, 0);
}

}  // namespace
}  // namespace latdoc::trace
