#include "trace/model/trace.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <random>
#include <vector>

namespace latdoc::trace {
namespace {

TEST(StringTableTest, InternsOnceAndKeepsViewsStable) {
  StringTable t;
  const NameId a = t.Intern("hipLaunchKernel");
  for (int i = 0; i < 1000; ++i) t.Intern("k" + std::to_string(i));
  EXPECT_EQ(t.Intern("hipLaunchKernel"), a);
  EXPECT_EQ(t.Get(a), "hipLaunchKernel");
  EXPECT_EQ(t.size(), 1001u);
}

CpuOp Op(int64_t i) {
  CpuOp c;
  c.start_ns = i * 100;
  c.dur_ns = i + 1;
  c.name = static_cast<NameId>(i % 5);
  c.pid = 10;
  c.tid = static_cast<int32_t>(i % 3);
  c.source = static_cast<uint16_t>(i % 2);
  c.kind = i % 4 == 0 ? CpuOpKind::kPython : CpuOpKind::kOp;
  return c;
}

void ExpectOps(const CpuOpTable& t, int64_t n) {
  ASSERT_EQ(t.size(), static_cast<size_t>(n));
  int64_t i = 0;
  ASSERT_TRUE(t.TryForEach([&](const CpuOp& c) {
    const CpuOp want = Op(i);
    EXPECT_EQ(c.start_ns, want.start_ns) << i;
    EXPECT_EQ(c.dur_ns, want.dur_ns) << i;
    EXPECT_EQ(c.name, want.name) << i;
    EXPECT_EQ(c.tid, want.tid) << i;
    EXPECT_EQ(c.source, want.source) << i;
    EXPECT_EQ(c.kind, want.kind) << i;
    ++i;
  }));
  EXPECT_EQ(i, n);
  for (int64_t k = 0; k < n; ++k) EXPECT_EQ(t[static_cast<size_t>(k)].start_ns, k * 100) << k;
}

// Past one block, full blocks go to the spill file; every op reads back, in the order added,
// whatever the block size, through ForEach and one by one.
TEST(CpuOpTableTest, SpillsFullBlocksAndReadsThemBackInOrder) {
  for (size_t block : {1, 2, 3, 7, 64}) {
    CpuOpTable t(block);
    for (int64_t i = 0; i < 20; ++i) t.push_back(Op(i));
    EXPECT_EQ(t.spilled(), block >= 20 ? 0 : (19 / block) * block) << block;
    EXPECT_TRUE(t.spill_error().empty()) << t.spill_error();
    ExpectOps(t, 20);
    CpuOpTable moved(std::move(t));
    ExpectOps(moved, 20);
    EXPECT_EQ(t.size(), 0u);  // NOLINT(bugprone-use-after-move): a moved-from table is empty
    CpuOpTable assigned;
    assigned = std::move(moved);
    ExpectOps(assigned, 20);
    assigned.clear();
    EXPECT_TRUE(assigned.empty());
    for (int64_t i = 0; i < 5; ++i) assigned.push_back(Op(i));
    ExpectOps(assigned, 5);
  }
}

// Under a file size limit (ulimit -f) a write past it would raise SIGXFSZ and kill the process:
// the table stays in memory instead. Run in a child, whose limit is its own.
TEST(CpuOpTableTest, StaysInMemoryUnderAFileSizeLimit) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
    CpuOpTable t(256);  // a block of 8 KiB: past the limit
    for (int64_t i = 0; i < 1000; ++i) t.push_back(Op(i));
    int64_t n = 0;
    const bool read = t.TryForEach([&](const CpuOp& c) { n += c.start_ns == n * 100; });
    ::_exit(read && n == 1000 && t.spilled() == 0 && !t.spill_error().empty() ? 0 : 11);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// No temporary directory to spill to: every op stays in memory, and the table says why.
TEST(CpuOpTableTest, KeepsEverythingInMemoryWhenItCannotSpill) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("TMPDIR", "/nonexistent/latdoc-test-dir", 1);
  CpuOpTable t(2);
  for (int64_t i = 0; i < 9; ++i) t.push_back(Op(i));
  if (old != nullptr) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  EXPECT_EQ(t.spilled(), 0u);
  EXPECT_NE(t.spill_error().find("/nonexistent/latdoc-test-dir"), std::string::npos) << t.spill_error();
  ExpectOps(t, 9);
}

TEST(ClassifyApiTest, NamesOfBothVendors) {
  EXPECT_EQ(ClassifyApi("cudaLaunchKernel_v7000"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("cuLaunchKernel"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("hipExtModuleLaunchKernel"), ApiKind::kKernelLaunch);
  EXPECT_EQ(ClassifyApi("hipGraphLaunch"), ApiKind::kGraphLaunch);
  EXPECT_EQ(ClassifyApi("cudaGraphLaunch_v10000"), ApiKind::kGraphLaunch);
  EXPECT_EQ(ClassifyApi("cudaMemcpyAsync"), ApiKind::kMemcpyAsync);
  EXPECT_EQ(ClassifyApi("hipMemcpyWithStream"), ApiKind::kMemcpy);
  EXPECT_EQ(ClassifyApi("cudaMemcpy_v3020"), ApiKind::kMemcpy);
  EXPECT_EQ(ClassifyApi("hipMemsetAsync"), ApiKind::kMemset);
  EXPECT_EQ(ClassifyApi("cudaStreamSynchronize"), ApiKind::kSync);
  EXPECT_EQ(ClassifyApi("hipDeviceSynchronize"), ApiKind::kSync);
  EXPECT_EQ(ClassifyApi("cudaEventSynchronize"), ApiKind::kSync);
  // The host does not wait: a stream waits on another's event.
  EXPECT_EQ(ClassifyApi("cudaStreamWaitEvent"), ApiKind::kOther);
  EXPECT_EQ(ClassifyApi("hipStreamWaitEvent"), ApiKind::kOther);
  EXPECT_EQ(ClassifyApi("hipMalloc"), ApiKind::kMalloc);
  EXPECT_EQ(ClassifyApi("cudaFreeHost"), ApiKind::kFree);
  EXPECT_EQ(ClassifyApi("cudaStreamIsCapturing"), ApiKind::kOther);
  EXPECT_EQ(ClassifyApi("aten::mm"), ApiKind::kOther);
}

// SortTable is std::stable_sort, whether the table is in memory (sorted there) or spilled:
// blocks sorted into runs, the runs merged, in several passes past kMergeFanIn runs.
TEST(SpillTableTest, SortTableIsStableSortAtEveryBlockSize) {
  struct Row {
    int32_t key;
    int32_t seq;
  };
  std::mt19937 rng(11);
  for (size_t block : {size_t{1}, size_t{2}, size_t{5}, size_t{64}, size_t{100000}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      SpillTable<Row> t(block);
      std::vector<Row> want;
      for (size_t i = 0; i < n; ++i) {
        const Row r{static_cast<int32_t>(rng() % 40), static_cast<int32_t>(i)};   // many ties
        t.push_back(r);
        want.push_back(r);
      }
      auto by_key = [](const Row& a, const Row& b) { return a.key < b.key; };
      std::stable_sort(want.begin(), want.end(), by_key);
      const SpillTable<Row> sorted = SortTable(std::move(t), by_key);
      ASSERT_EQ(sorted.size(), n);
      EXPECT_TRUE(t.empty());  // NOLINT(bugprone-use-after-move): the input is used up
      const std::vector<Row> got = sorted.ToVector();
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].seq, want[i].seq) << "block " << block << " n " << n << " i " << i;
      }
    }
  }
}

// Modify rewrites a range in place, on both sides of the spill (rows in the file and the block
// in memory); Read copies any range; TakeAll and InMemory move the rows out and back.
TEST(SpillTableTest, ModifyAndReadSpanTheFileAndMemory) {
  SpillTable<int64_t> t(4);
  for (int64_t i = 0; i < 10; ++i) t.push_back(i);
  ASSERT_EQ(t.spilled(), 8u);
  t.Modify(3, 9, [](int64_t& v) { v *= 10; });
  std::vector<int64_t> part(5);
  ASSERT_TRUE(t.Read(2, 5, part.data()));
  EXPECT_EQ(part, (std::vector<int64_t>{2, 30, 40, 50, 60}));
  EXPECT_EQ(t.ToVector(), (std::vector<int64_t>{0, 1, 2, 30, 40, 50, 60, 70, 80, 9}));
  EXPECT_EQ(t.back(), 9);
  t.last() = 90;
  std::vector<int64_t> all = t.TakeAll();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(all.back(), 90);
  all.push_back(100);
  const SpillTable<int64_t> back = SpillTable<int64_t>::InMemory(std::move(all), 4);
  EXPECT_EQ(back.size(), 11u);
  EXPECT_EQ(back.spilled(), 0u);
  EXPECT_EQ(back[10], 100);
}

// The spill file cut short under the table (as a failing disk might leave it): a pass stops with
// SpillReadError saying why, never handing over rows that were not written; TryForEach returns
// false with the reason after the rows it could read.
TEST(SpillTableTest, FileCutShortIsAReadErrorNotMadeUpRows) {
  SpillTable<int64_t> t(4);
  for (int64_t i = 0; i < 18; ++i) t.push_back(i);
  ASSERT_EQ(t.spilled(), 16u);
  // The table's unnamed file: the open file of this process that is deleted and as long as the
  // rows spilled.
  int fd = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    const int n = std::atoi(entry.path().filename().c_str());
    struct stat st {};
    if (ec || target.find("(deleted)") == std::string::npos || ::fstat(n, &st) != 0) continue;
    if (S_ISREG(st.st_mode) && st.st_size == static_cast<off_t>(16 * sizeof(int64_t))) fd = n;
  }
  if (fd < 0) GTEST_SKIP() << "no spill file found (no writable temporary directory?)";
  ASSERT_EQ(::ftruncate(fd, 8 * sizeof(int64_t)), 0);
  std::vector<int64_t> seen;
  std::string error;
  EXPECT_FALSE(t.TryForEach([&](int64_t v) { seen.push_back(v); }, &error));
  EXPECT_NE(error.find("shorter than written"), std::string::npos) << error;
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i));
  EXPECT_LT(seen.size(), 16u);
  EXPECT_THROW(t.ForEach([](int64_t) {}), SpillReadError);
  EXPECT_THROW((void)t[12], SpillReadError);
  EXPECT_EQ(t[17], 17);  // the block in memory still reads
}

// Block sizes for the Finalize tests: all in memory (sorted in place, linked through an index),
// and spilled after a row or a few (sorted externally, linked by a merge join).
const size_t kBlocks[] = {SpillTable<GpuOp>::kDefaultBlockRows, 1, 2, 7};

TEST(TraceTest, FinalizeLinksByCorrelationWithinOneSourceOnly) {
  for (size_t block : kBlocks) {
    Trace t(block);
    const uint16_t a = t.AddSource("a", "test");
    const uint16_t b = t.AddSource("b", "test");
    ApiCall call;
    call.source = a;
    call.correlation = 7;
    call.start_ns = 5;
    t.api_calls.push_back(call);
    GpuOp same, other;
    same.source = a;
    same.correlation = 7;
    same.start_ns = 20;
    other.source = b;
    other.correlation = 7;
    other.start_ns = 10;
    t.gpu_ops = {same, other};
    t.Finalize();
    ASSERT_EQ(t.gpu_ops.size(), 2u);
    EXPECT_EQ(t.gpu_ops[0].source, b);  // sorted by start
    EXPECT_EQ(t.gpu_ops[0].api, kNoLink);
    EXPECT_EQ(t.gpu_ops[1].api, 0u);
  }
}

// Finalize sorts by (start, dur) stably, whatever the input's runs: the same order as
// std::stable_sort, for inputs of one run, a few runs (merged) and many (stable_sort itself).
TEST(TraceTest, FinalizeSortIsStableSort) {
  for (size_t block : kBlocks) {
    std::mt19937 rng(3);
    for (int runs : {1, 2, 3, 7, 500}) {
      Trace t(block);
      t.AddSource("a", "test");
      for (int r = 0; r < runs; ++r) {
        int64_t start = static_cast<int64_t>(rng() % 50);
        for (int i = 0; i < 1000 / runs; ++i) {
          GpuOp op;
          start += static_cast<int64_t>(rng() % 3);
          op.start_ns = start;
          op.dur_ns = static_cast<int64_t>(rng() % 2);
          op.stream = r;
          op.correlation = static_cast<int64_t>(t.gpu_ops.size());   // the input position
          t.gpu_ops.push_back(op);
        }
      }
      std::vector<GpuOp> want = t.gpu_ops.ToVector();
      std::stable_sort(want.begin(), want.end(), [](const GpuOp& a, const GpuOp& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.dur_ns < b.dur_ns;
      });
      t.Finalize();
      ASSERT_EQ(t.gpu_ops.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(t.gpu_ops[i].correlation, want[i].correlation) << "runs=" << runs << " i=" << i << " block=" << block;
      }
    }
  }
}

// Links go to the first API call (in sorted order) of the op's source with its correlation,
// dense correlation ids or not; a correlation past 2^48 is just a larger id, never another
// source's.
TEST(TraceTest, FinalizeLinksFirstCallOfEachKey) {
  for (size_t block : kBlocks) {
    for (int64_t base : {int64_t{0}, int64_t{1} << 40}) {
      Trace t(block);
      t.AddSource("a", "test");
      t.AddSource("b", "test");
      for (int64_t i = 0; i < 10; ++i) {
        ApiCall call;
        call.start_ns = 100 + i;
        call.correlation = i % 5 == 4 ? base * 3 + i : base + i;   // sparse when base > 0
        call.source = 1;
        t.api_calls.push_back(call);
      }
      ApiCall dup = t.api_calls[2];
      dup.start_ns = 200;   // a later call with the same key: not the link
      t.api_calls.push_back(dup);
      GpuOp op;
      op.source = 1;
      op.correlation = base + 2;
      GpuOp alias;   // source 0 with the correlation's bit 48 set: not source 1's base + 3
      alias.correlation = (int64_t{1} << 48) + base + 3;
      GpuOp missing;
      missing.source = 1;
      missing.correlation = base + 100;
      t.gpu_ops = {op, alias, missing};
      t.Finalize();
      EXPECT_EQ(t.gpu_ops[0].api, 2u) << base << " block " << block;
      EXPECT_EQ(t.gpu_ops[0].launch.start_ns, 102) << base << " block " << block;  // the call, copied in
      EXPECT_EQ(t.gpu_ops[1].api, kNoLink) << base << " block " << block;
      EXPECT_EQ(t.gpu_ops[2].api, kNoLink) << base << " block " << block;
    }
  }
}

// Source 0's call with correlation 2^48 + 7 and source 1's call with 7 are different keys:
// each op links to its own source's call (sparse ids: the hash-map path; dense: the flat one).
TEST(TraceTest, FinalizeNeverLinksAcrossSources) {
  for (size_t block : kBlocks) {
    for (bool sparse : {true, false}) {
      Trace t(block);
      t.AddSource("rank0", "test");
      t.AddSource("rank1", "test");
      ApiCall a;
      a.source = 0;
      a.start_ns = 0;
      a.correlation = sparse ? (int64_t{1} << 48) + 7 : 8;
      ApiCall b;
      b.source = 1;
      b.start_ns = 10;
      b.correlation = 7;
      t.api_calls = {a, b};
      GpuOp op0, op1;
      op0.source = 0;
      op0.correlation = a.correlation;
      op0.start_ns = 20;
      op1.source = 1;
      op1.correlation = 7;
      op1.start_ns = 30;
      t.gpu_ops = {op0, op1};
      t.Finalize();
      EXPECT_EQ(t.gpu_ops[0].api, 0u) << sparse;
      EXPECT_EQ(t.gpu_ops[1].api, 1u) << sparse;
    }
  }
}

TEST(ImportIssuesTest, CountsEveryIssueButKeepsFewExamples) {
  ImportIssues is;
  for (int i = 0; i < 25; ++i) is.Add("negative duration", "row " + std::to_string(i));
  is.Add("missing ts", "byte 9");
  EXPECT_EQ(is.total(), 26);
  EXPECT_EQ(is.count_by_reason.at("negative duration"), 25);
  EXPECT_EQ(is.examples.size(), ImportIssues::kMaxExamples);
  EXPECT_EQ(is.examples[0].where, "row 0");
}

}  // namespace
}  // namespace latdoc::trace
