#include "trace/importers/rocprof_v1/rocprof_v1_importer.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/common/csv_reader.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kDir[] = "tests/data/trace/rocprof_v1/hip_vecadd/";

TEST(RocprofV1JsonTest, ReadsHipTraceAndLinksFlows) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "results.json"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocprof_v1_json");
  int kernels = 0, h2d = 0, d2h = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind == GpuOpKind::kKernel) {
      ++kernels;
      EXPECT_EQ(trace.Name(op.name), "vector_add(float*, float*, float*, int)");
      EXPECT_EQ(op.start_ns, 622109244416840);
      EXPECT_EQ(op.dur_ns, 622109247848451 - 622109244416840);
      ASSERT_NE(op.api, kNoLink);
      EXPECT_EQ(trace.Name(trace.api_calls[op.api].name), "hipLaunchKernel");
    }
    if (op.direction == CopyDirection::kHtoD) ++h2d;
    if (op.direction == CopyDirection::kDtoH) ++d2h;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(h2d, 2);
  EXPECT_EQ(d2h, 1);
  EXPECT_EQ(trace.api_calls.size(), 13u);
  for (const GpuOp& op : trace.gpu_ops.ToVector()) EXPECT_NE(op.api, kNoLink) << trace.Name(op.name);
}

// The flow rule, written plainly (what the importer did with every event in memory): a point
// belongs to the last event on its (lane, tid) row by (start, end, position) that starts at or
// before it, if the point is not past its end; the last point of each kind given for an id
// counts; flows are taken by id, a call keeping its first id and an op taking its call's.
struct RefSpan {
  int64_t lane, tid, start_us, end_us;
  uint32_t index;
};
struct RefPoint {
  int64_t id, lane, tid, ts;
  bool start;
};
std::optional<uint32_t> RefContaining(const std::vector<RefSpan>& spans, int64_t lane, int64_t tid,
                                      int64_t ts) {
  const RefSpan* best = nullptr;
  for (const RefSpan& s : spans) {
    if (s.lane != lane || s.tid != tid || s.start_us > ts) continue;
    if (best == nullptr || std::tie(s.start_us, s.end_us, s.index) >
                               std::tie(best->start_us, best->end_us, best->index)) {
      best = &s;
    }
  }
  if (best == nullptr || ts > best->end_us) return std::nullopt;
  return best->index;
}

// Random HIP traces (calls on two threads, ops on a copy and a GPU row, flows whose points fall
// inside, between or outside events, ids repeated, points on the wrong row) give, at every
// spill block size, the correlations the plain rule gives.
TEST(RocprofV1JsonTest, FlowsLinkAsThePlainRuleAtEveryBlockSize) {
  std::mt19937_64 rng(20261204);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int round = 0; round < 60; ++round) {
    // Events first (a call on lane 2, an op on lane 1, a copy row, or 6, GPU0; tid 0 or 1),
    // then points, most inside an event of their kind, some anywhere; then all shuffled.
    struct Item {
      bool point;
      int64_t lane, tid, ts, dur_ns, id;
      bool start;
    };
    std::vector<Item> items;
    const int events = static_cast<int>(pick(1, 30));
    for (int i = 0; i < events; ++i) {
      const bool call = pick(0, 1) == 0;
      items.push_back(Item{false, call ? 2 : (pick(0, 1) ? 1 : 6), pick(0, 1), pick(0, 400),
                           pick(0, 60000), 0, false});
    }
    const int npoints = static_cast<int>(pick(0, 40));
    for (int i = 0; i < npoints; ++i) {
      const bool start = pick(0, 1) == 0;
      const Item* e = &items[static_cast<size_t>(pick(0, events - 1))];
      for (int tries = 0; tries < 8 && (e->lane == 2) != start; ++tries) {  // one of its kind
        e = &items[static_cast<size_t>(pick(0, events - 1))];
      }
      Item p{true, e->lane, e->tid, e->ts + pick(0, e->dur_ns / 1000 + 2), 0, pick(1, 6), start};
      if (pick(0, 4) == 0) p.ts = pick(0, 460);
      if (pick(0, 6) == 0) p.lane = pick(0, 1) ? 2 : 6;
      items.push_back(p);
    }
    std::shuffle(items.begin(), items.end(), rng);
    std::vector<RefSpan> call_spans, op_spans;
    std::vector<RefPoint> points;
    std::string json = "{\"traceEvents\":[{}";
    for (const Item& it : items) {
      if (!it.point) {
        const bool call = it.lane == 2;
        const std::string name = call ? "hipLaunchKernel" : (it.lane == 1 ? "CopyHostToDevice" : "k");
        json += fmt::format(
            ",{{\"ph\":\"X\",\"name\":\"{}\",\"pid\":\"{}\",\"tid\":\"{}\",\"ts\":\"{}\","
            "\"args\":{{\"BeginNs\":\"{}\",\"EndNs\":\"{}\"}}}}",
            name, it.lane, it.tid, it.ts, it.ts * 1000, it.ts * 1000 + it.dur_ns);
        auto& spans = call ? call_spans : op_spans;
        spans.push_back(RefSpan{it.lane, it.tid, it.ts, it.ts + it.dur_ns / 1000 + 1,
                                static_cast<uint32_t>(spans.size())});
      } else {
        json += fmt::format(",{{\"ph\":\"{}\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}",
                            it.start ? "s" : (pick(0, 1) ? "t" : "f"), it.id, it.lane, it.tid, it.ts);
        points.push_back(RefPoint{it.id, it.lane, it.tid, it.ts, it.start});
      }
    }
    json += "]}";
    std::map<int64_t, std::pair<std::optional<uint32_t>, std::optional<uint32_t>>> flows;
    for (const RefPoint& p : points) {
      if (p.start) {
        flows[p.id].first = RefContaining(call_spans, p.lane, p.tid, p.ts);
      } else {
        flows[p.id].second = RefContaining(op_spans, p.lane, p.tid, p.ts);
      }
    }
    std::vector<int64_t> call_corr(call_spans.size(), kNoCorrelation),
        op_corr(op_spans.size(), kNoCorrelation);
    for (const auto& [id, pair] : flows) {
      if (!pair.first || !pair.second) continue;
      if (call_corr[*pair.first] == kNoCorrelation) call_corr[*pair.first] = id;
      op_corr[*pair.second] = call_corr[*pair.first];
    }

    const std::string path = ::testing::TempDir() + "v1_flows.json";
    std::ofstream(path) << json;
    for (size_t block : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
      Trace trace = block == 0 ? Trace() : Trace(block);
      std::vector<std::string> consumed;
      const Status st = RocprofV1JsonImporter().Import(path, ImportOptions{}, trace, consumed);
      ASSERT_TRUE(st.ok()) << st.ToString();
      ASSERT_EQ(trace.api_calls.size(), call_corr.size());
      ASSERT_EQ(trace.gpu_ops.size(), op_corr.size());
      for (size_t i = 0; i < call_corr.size(); ++i) {
        EXPECT_EQ(trace.api_calls[i].correlation, call_corr[i])
            << "round " << round << " block " << block << " call " << i;
      }
      for (size_t i = 0; i < op_corr.size(); ++i) {
        EXPECT_EQ(trace.gpu_ops[i].correlation, op_corr[i])
            << "round " << round << " block " << block << " op " << i;
      }
    }
  }
}

TEST(RocprofV1StatsTest, StatsFilesBecomeAggregatesByKind) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "results.stats.csv", std::string(kDir) + "results.hip_stats.csv",
                        std::string(kDir) + "results.copy_stats.csv"},
                       ImportOptions{}, trace);
  for (const auto& x : r) ASSERT_TRUE(x.status.ok()) << x.status.ToString();
  ASSERT_EQ(trace.aggregates.size(), 1u + 7 + 2);   // every row of the three files, once
  const AggregateRow& k = trace.aggregates[0];
  EXPECT_EQ(k.kind, AggregateKind::kKernel);
  EXPECT_EQ(trace.Name(k.name), "vector_add(float*, float*, float*, int)");
  EXPECT_EQ(k.calls, 1);
  EXPECT_EQ(k.total_ns, 3431611);
  EXPECT_EQ(trace.aggregates[1].kind, AggregateKind::kApi);
  EXPECT_EQ(trace.Name(trace.aggregates[1].name), "hipMemcpy");
  EXPECT_EQ(trace.aggregates[1].calls, 3);
  EXPECT_EQ(trace.aggregates[1].total_ns, 1342822760);
  EXPECT_EQ(trace.aggregates.back().kind, AggregateKind::kCopy);
  EXPECT_EQ(trace.Name(trace.aggregates.back().name), "CopyHostToDevice");
  EXPECT_EQ(trace.aggregates.back().calls, 2);
  EXPECT_EQ(trace.aggregates.back().total_ns, 180717650);
}

TEST(RocprofV1CsvTest, CountersOnlyFileSaysHowToGetTimes) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "output_vec_add_gpu.csv"}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].format, "rocprof_v1_csv");
  EXPECT_EQ(r[0].status.message(),
            std::string(kDir) + "output_vec_add_gpu.csv: line 1: no BeginNs/EndNs columns (a "
            "counters-only file; profile with `rocprof --timestamp on` to get kernel times)");
}

// A header with BeginNs but no EndNs is damaged, not a counters-only file (it was called one).
TEST(RocprofV1CsvTest, OneTimeColumnMissingIsNamed) {
  std::ifstream in("tests/data/trace/handmade/v1_results.csv", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"EndNs\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at + 1, 5, "EndNx");
  const std::string path = ::testing::TempDir() + "v1_no_endns.csv";
  std::ofstream(path, std::ios::binary) << text;
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.message(), path + ": line 1: missing column EndNs (the header has BeginNs but not EndNs)");
}

TEST(RocprofV1CsvTest, ClockDomainMismatchAndNegativeDurations) {
  Trace trace;
  auto r = ImportFiles({"tests/data/trace/handmade/v1_results.csv"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_EQ(trace.gpu_ops.size(), 2u);
  EXPECT_EQ(trace.Name(trace.gpu_ops[0].name), "gemm_kernel.kd");
  EXPECT_EQ(trace.gpu_ops[0].bytes, (4096 + 2048) * 1024);   // FETCH_SIZE + WRITE_SIZE, KB
  const auto& issues = trace.sources[0].issues;
  ASSERT_EQ(issues.total(), 1);
  EXPECT_EQ(issues.examples[0].where, "line 4");
  EXPECT_EQ(issues.examples[0].what, "negative duration: EndNs 10000350000 < BeginNs 10000400000");
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  // Row 0: DispatchNs -> BeginNs = 50 us; row 1's DispatchNs is 12.4 s off: rejected.
  EXPECT_EQ(rep.launch.delays_rejected, 1);
  ASSERT_TRUE(rep.launch.delay_p50_ns.has_value());
  EXPECT_EQ(*rep.launch.delay_p50_ns, 50000);
}

// Every split of the byte stream gives the same rows (quotes, commas and newlines inside
// quotes, CRLF).
TEST(CsvReaderTest, QuotedFieldsAndHeaderLookup) {
  const std::string data = "\"Name\",calls,\"Total\"\r\n\"a, \"\"b\"\"\",1,2\r\n\r\nplain,3,\"x\ny\"\n";
  auto r = CsvReader::FromString(data, "t.csv");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Column({"NAME"}), 0);
  EXPECT_EQ((*r)->Column({"nope", "Calls"}), 1);
  EXPECT_EQ((*r)->Column({"nope"}), -1);
  ASSERT_TRUE(*(*r)->Next());
  EXPECT_EQ((*r)->Field(0), "a, \"b\"");
  EXPECT_EQ((*r)->Field(2), "2");
  EXPECT_EQ((*r)->line(), 2);
  ASSERT_TRUE(*(*r)->Next());
  EXPECT_EQ((*r)->Field(0), "plain");
  EXPECT_EQ((*r)->Field(2), "x\ny");
  EXPECT_EQ((*r)->line(), 4);
  EXPECT_FALSE(*(*r)->Next());
}

// Every row of `data` as "line:field|field|...", and the lines of the rows left out.
struct ParsedCsv {
  std::vector<std::string> rows;
  std::vector<int64_t> bad;
};
ParsedCsv ParseAll(const std::string& data) {
  ParsedCsv p;
  auto r = CsvReader::FromString(data, "t.csv");
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return p;
  (*r)->OnBadRow([&](int64_t line, std::string_view) { p.bad.push_back(line); });
  while (true) {
    auto got = (*r)->Next();
    EXPECT_TRUE(got.ok());
    if (!got.ok() || !*got) break;
    std::string row = std::to_string((*r)->line()) + ":";
    for (size_t i = 0; i < (*r)->fields(); ++i) row += (i == 0 ? "" : "|") + std::string((*r)->Field(static_cast<int>(i)));
    p.rows.push_back(row);
  }
  return p;
}

// An unbalanced quote leaves out its own row only: a quote that runs over lines and then closes
// mid-field, or never closes, drops the row it opened in, and reading goes on at the next line;
// a quoted field that really spans lines stays one field. The reader's 64 KiB buffer boundary
// is moved across every byte of the text, with the same rows and bad lines each time.
TEST(CsvReaderTest, UnbalancedQuoteLeavesOutOnlyItsRowAtEveryBufferBoundary) {
  const std::string tricky =
      "1,\"x,2\n3,y,4\n5,\"z\",6\n7,\"a\nb\",8\n9,\"never\n10,k,11\n"
      "12,\"c\nd\",\"e\nf\"g,13\n14,h,15\n";
  // Line 10's row spans twice, the second time badly: it is left out, then line 11's (which
  // reads `"e` as opening a quote), and line 12 reads as a row of its own.
  const std::vector<std::string> want = {"4:3|y|4", "5:5|z|6", "6:7|a\nb|8", "9:10|k|11",
                                         "12:f\"g|13", "13:14|h|15"};
  const std::vector<int64_t> want_bad = {3, 8, 10, 11};
  for (size_t k = 0; k <= tricky.size(); ++k) {
    SCOPED_TRACE(k);
    const std::string header = "a,b,c\n";
    // One filler row puts the tricky text k bytes before the first 64 KiB boundary.
    const std::string filler = "f," + std::string(65536 - header.size() - k - 5, 'p') + ",f\n";
    ParsedCsv p = ParseAll(header + filler + tricky);
    ASSERT_FALSE(p.rows.empty());
    EXPECT_EQ(p.rows.front().substr(0, 4), "2:f|");
    p.rows.erase(p.rows.begin());
    EXPECT_EQ(p.rows, want);
    EXPECT_EQ(p.bad, want_bad);
  }
}

// A quote that opens and never closes in a long file gives up after kMaxSpanningLines lines
// (rather than holding the rest of the file as one field), and every later line is read.
TEST(CsvReaderTest, OpenQuoteGivesUpAfterItsLineLimit) {
  std::string data = "a,b\n1,\"open\n";
  for (int i = 0; i < 30; ++i) data += std::to_string(i) + ",v\n";
  const ParsedCsv p = ParseAll(data);
  EXPECT_EQ(p.bad, std::vector<int64_t>{2});
  ASSERT_EQ(p.rows.size(), 30u);
  EXPECT_EQ(p.rows.front(), "3:0|v");
  EXPECT_EQ(p.rows.back(), "32:29|v");
}

// In an importer: the row is counted as "unbalanced quote" at its line, the rows after it kept.
TEST(RocprofV1CsvTest, UnbalancedQuoteIsCountedAndTheRowsAfterItKept) {
  std::ifstream in("tests/data/trace/handmade/v1_results.csv", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"gemm_kernel.kd\"");  // row 0's name, line 2
  ASSERT_NE(at, std::string::npos);
  text.erase(at + 15, 1);                             // its closing quote
  const std::string path = ::testing::TempDir() + "v1_unbalanced.csv";
  std::ofstream(path, std::ios::binary) << text;
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(trace.gpu_ops.size(), 1u);  // row 1 (row 2 has a negative duration)
  const auto& issues = trace.sources[0].issues;
  EXPECT_EQ(issues.count_by_reason.at("unbalanced quote"), 1);
  EXPECT_EQ(issues.examples[0].where, "line 2");
  EXPECT_NE(issues.examples[0].what.find("a quote opened here closes on a later line mid-field"),
            std::string::npos)
      << issues.examples[0].what;
}

}  // namespace
}  // namespace latdoc::trace
