#include "trace/importers/kineto/kineto_importer.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <zlib.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "base/file_util.h"
#include "base/strings.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

TEST(ParseMicrosToNsTest, ExactDecimalMicroseconds) {
  EXPECT_EQ(ParseMicrosToNs("5139252745624.543"), 5139252745624543);
  EXPECT_EQ(ParseMicrosToNs("2.272"), 2272);
  EXPECT_EQ(ParseMicrosToNs("12"), 12000);
  EXPECT_EQ(ParseMicrosToNs("0.5"), 500);
  EXPECT_EQ(ParseMicrosToNs("-1.25"), -1250);
  EXPECT_EQ(ParseMicrosToNs("1.0005"), 1001);
  EXPECT_EQ(ParseMicrosToNs("1e3"), 1000000);
  EXPECT_EQ(ParseMicrosToNs("abc"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs(""), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("1.2x"), std::nullopt);
  // At most 2^62 ns either way, in either notation, so a start plus a duration cannot overflow.
  EXPECT_EQ(ParseMicrosToNs("1.8e15"), 1800000000000000000);
  EXPECT_EQ(ParseMicrosToNs("1800000000000000"), 1800000000000000000);
  EXPECT_EQ(ParseMicrosToNs("9e15"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("9000000000000000"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("-9e15"), std::nullopt);
  EXPECT_EQ(ParseMicrosToNs("1e300"), std::nullopt);
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

constexpr char kSmall[] = R"JSON({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9, "computeMinor": 0}],
"traceEvents": [
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 100.000, "dur": 5.5, "args": {"correlation": 1}},
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 110.25, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 1}},
{"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 10, "tid": 11, "ts": 140, "dur": 9, "args": {"correlation": 2, "stream": "0x0", "size": "2560", "kind": "1"}},
{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 141, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 2, "bytes": 2560}},
{"ph": "X", "cat": "kernel", "name": "bad", "pid": 0, "tid": 7, "ts": 150, "dur": -3, "args": {"correlation": 9}},
{"ph": "X", "cat": "kernel", "name": "nots", "pid": 0, "tid": 7, "args": {"correlation": 9}},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 99, "dur": 10, "args": {"Input Dims": [[1, 2], []]}},
{"ph": "s", "id": 1, "pid": 10, "tid": 11, "ts": 100, "cat": "ac2g", "name": "ac2g"},
{"ph": "M", "name": "process_name", "pid": 10, "args": {"name": "python3"}}
]})JSON";

TEST(KinetoImporterTest, ReadsEveryCategoryAndCountsBadRecords) {
  Trace trace;
  auto results = ImportFiles({WriteTemp("small.json", kSmall)}, ImportOptions{}, trace);
  ASSERT_TRUE(results[0].status.ok()) << results[0].status.ToString();
  ASSERT_EQ(trace.gpu_ops.size(), 2u);
  ASSERT_EQ(trace.api_calls.size(), 2u);
  ASSERT_EQ(trace.cpu_ops.size(), 1u);
  const GpuOp& k = trace.gpu_ops[0];
  EXPECT_EQ(trace.Name(k.name), "gemm");
  EXPECT_EQ(k.start_ns, 110250);
  EXPECT_EQ(k.dur_ns, 20000);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.api, 0u);
  EXPECT_EQ(trace.Name(trace.api_calls[0].name), "cudaLaunchKernel");
  EXPECT_EQ(trace.api_calls[0].start_ns, 100000);
  EXPECT_EQ(trace.api_calls[0].dur_ns, 5500);
  EXPECT_EQ(trace.api_calls[0].tid, 11);
  EXPECT_EQ(trace.cpu_ops[0].start_ns, 99000);
  EXPECT_EQ(trace.cpu_ops[0].dur_ns, 10000);
  EXPECT_EQ(trace.cpu_ops[0].pid, 10);
  EXPECT_EQ(trace.cpu_ops[0].tid, 11);
  EXPECT_EQ(trace.Name(trace.cpu_ops[0].name), "aten::mm");
  const GpuOp& c = trace.gpu_ops[1];
  EXPECT_EQ(c.start_ns, 141000);
  EXPECT_EQ(c.dur_ns, 2000);
  EXPECT_EQ(c.api, 1u);
  EXPECT_EQ(c.kind, GpuOpKind::kMemcpy);
  EXPECT_EQ(c.direction, CopyDirection::kHtoD);
  EXPECT_EQ(c.src_kind, MemKind::kPageable);
  EXPECT_EQ(c.dst_kind, MemKind::kDevice);
  EXPECT_EQ(c.bytes, 2560);
  EXPECT_EQ(trace.api_calls[1].kind, ApiKind::kMemcpy);
  const SourceFile& src = trace.sources[0];
  EXPECT_EQ(src.issues.total(), 2);
  EXPECT_EQ(src.issues.count_by_reason.at("negative duration"), 1);
  EXPECT_EQ(src.issues.count_by_reason.at("missing or non-numeric ts"), 1);
  EXPECT_EQ(src.issues.examples[0].where,
            "byte " + std::to_string(std::string_view(kSmall).find("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"bad\"")));
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].arch, "sm90");
  EXPECT_EQ(trace.devices[0].name, "NVIDIA H200");
}

// The same events whatever the read slice size (the scanner's chunk boundaries).
TEST(KinetoImporterTest, SameTraceForEveryChunkSize) {
  const std::string path = WriteTemp("chunks.json", kSmall);
  Trace whole;
  ASSERT_TRUE(ImportFiles({path}, ImportOptions{}, whole)[0].status.ok());
  const std::string want = DumpTrace(whole);
  for (size_t chunk : {1, 2, 3, 7, 64, 333, 4096}) {
    Trace trace;
    ImportOptions o;
    o.chunk_bytes = chunk;
    auto r = ImportFiles({path}, o, trace);
    ASSERT_TRUE(r[0].status.ok());
    EXPECT_EQ(trace.gpu_ops.size(), 2u) << chunk;
    EXPECT_EQ(trace.api_calls.size(), 2u) << chunk;
    EXPECT_EQ(trace.sources[0].issues.total(), 2) << chunk;
    // Every field of every event, not only the counts: a value cut at a slice's end and
    // stitched wrong ("ts": 110.25 read as 110.2) shows here.
    EXPECT_EQ(DumpTrace(trace), want) << chunk;
  }
}

TEST(KinetoImporterTest, JsonCutMidEventKeepsEarlierEventsAndSaysWhere) {
  std::string cut(kSmall);
  cut.resize(cut.find("{\"ph\": \"X\", \"cat\": \"gpu_memcpy\"") + 20);
  Trace trace;
  auto r = ImportFiles({WriteTemp("cut.json", cut)}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.code(), StatusCode::kDataLoss);
  EXPECT_NE(r[0].status.message().find("cut.json: byte "), std::string::npos);
  EXPECT_NE(r[0].status.message().find("document cut inside the event that starts at byte"),
            std::string::npos);
  EXPECT_EQ(trace.gpu_ops.size(), 1u);
  EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("file cut short"), 1);
}

TEST(KinetoImporterTest, TruncatedGzipIsDataLossWithPath) {
  std::string data;
  {
    auto in = OpenInput("tests/data/trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz");
    ASSERT_TRUE(in.ok());
  }
  auto whole = ReadFileToString("tests/data/trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz");
  ASSERT_TRUE(whole.ok());
  const std::string path = WriteTemp("trunc.json.gz", whole->substr(0, whole->size() / 2));
  Trace trace;
  auto r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_FALSE(r[0].status.ok());
  EXPECT_EQ(r[0].status.message().rfind(path + ": byte ", 0), 0u) << r[0].status.message();
  EXPECT_EQ(r[0].status.message().find(path, 1), std::string::npos) << "path named twice";
  EXPECT_GT(trace.gpu_ops.size() + trace.cpu_ops.size(), 0u);
}

TEST(KinetoImporterTest, DirectoryAndMissingFileAreErrorsNamingThePath) {
  Trace trace;
  auto r = ImportFiles({"tests/data/trace", "tests/data/trace/nope.json"}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_FALSE(r[0].status.ok());
  EXPECT_NE(r[0].status.message().find("tests/data/trace"), std::string::npos);
  EXPECT_FALSE(r[1].status.ok());
  EXPECT_NE(r[1].status.message().find("nope.json"), std::string::npos);
}

TEST(KinetoImporterTest, H200FixtureCounts) {
  Trace trace;
  auto r = ImportFiles({"tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz"},
                       ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  // Counted with Python's json module: 16975 kernels + 1 memcpy + 16 memsets; 14672
  // cuda_runtime + 3250 cuda_driver; 59594 cpu_op.
  EXPECT_EQ(trace.gpu_ops.size(), 16975u + 1 + 16);
  EXPECT_EQ(trace.api_calls.size(), 14672u + 3250);
  EXPECT_EQ(trace.cpu_ops.size(), 59594u);
  EXPECT_EQ(trace.sources[0].issues.total(), 0);
  ASSERT_EQ(trace.devices.size(), 1u);
  EXPECT_EQ(trace.devices[0].arch, "sm90");
  int pageable = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    if (op.kind == GpuOpKind::kMemcpy && op.src_kind == MemKind::kPageable) ++pageable;
  }
  EXPECT_EQ(pageable, 1);
}


// ---- The split parse: a plain file read in parts on several threads gives exactly what one
// thread gives — the same events in the same order, the same name ids, bad records and errors.

// Everything an import produced, as text. Where reading stopped in a file cut short depends on
// the read slices, which differ between the two ways: that one example's place is left out.
std::string Dump(const Trace& t, const Status& st) {
  std::string out = "status " + st.ToString() + "\n";
  const std::string dump = DumpTrace(t);
  for (std::string_view line : Split(dump, '\n')) {
    if (line.find("| file cut short") == std::string_view::npos) {
      out += std::string(line) + "\n";
    } else {
      out += "  example (where reading stopped) | file cut short\n";
    }
  }
  return out;
}

struct SplitTally {
  int imports = 0, split = 0, fell_back = 0;
};

// `parts`: parts of a plain file, or parts parsed at once for a compressed one, cut every
// `part_bytes`.
std::string ImportDump(const std::string& path, int parts, size_t chunk, SplitTally* tally = nullptr,
                       size_t part_bytes = size_t{256} << 10) {
  ImportOptions o;
  o.chunk_bytes = chunk;
  o.split_parts = parts;
  o.split_min_bytes = 0;
  o.split_part_bytes = part_bytes;
  Trace t;
  KinetoSplitStats stats;
  Status st = ImportKineto(path, o, t, &stats);
  if (tally) {
    ++tally->imports;
    tally->split += stats.parts_taken > 0;
    tally->fell_back += stats.fell_back;
  }
  return Dump(t, st);
}

std::string Gunzip(const std::string& path) {
  auto in = OpenInput(path);
  EXPECT_TRUE(in.ok());
  auto text = ReadAll(**in);
  EXPECT_TRUE(text.ok());
  return *text;
}

SplitTally ExpectSplitEqualsOneThread(const std::string& path, std::vector<int> parts, std::vector<size_t> chunks,
                                      std::vector<size_t> part_sizes = {size_t{256} << 10}) {
  const std::string one = ImportDump(path, 1, size_t{1} << 20);
  SplitTally tally;
  for (size_t chunk : chunks) {
    for (int n : parts) {
      for (size_t part_bytes : part_sizes) {
        const std::string split = ImportDump(path, n, chunk, &tally, part_bytes);
        if (split == one) continue;
        const auto a = Split(one, '\n'), b = Split(split, '\n');
        size_t i = 0;
        while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
        ADD_FAILURE() << path << ": " << n << " parts, slices of " << chunk << " bytes, parts of "
                      << part_bytes << " bytes; line " << i << " is\n  " << (i < b.size() ? b[i] : "(none)")
                      << "\ninstead of\n  " << (i < a.size() ? a[i] : "(none)");
      }
    }
  }
  return tally;
}

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

TEST(KinetoSplitTest, RealTracesGiveTheOneThreadResult) {
  for (std::string gz : {"tests/data/trace/kineto/h200_llama0.85b_decode_b1_eager.json.gz",
                         "tests/data/trace/tracelens/mi300x_qwen0.5b/trace.json.gz",
                         "tests/data/trace/tracelens/h100_qwen0.5b/trace.json.gz",
                         "tests/data/trace/tracelens/vllm_rocm7_decode_fullgraph/trace.json.gz"}) {
    const std::string path = WriteTemp("split_real.json", Gunzip(gz));
    ExpectSplitEqualsOneThread(path, {2, 3, 8}, {size_t{1} << 20});
    SplitTally t = ExpectSplitEqualsOneThread(path, {2, 3, 8}, {65536});
    EXPECT_EQ(t.split, t.imports) << gz << ": every import was split";
    // The gzip file itself: inflated on this thread, parsed in parts of 256 KiB and 16 KiB.
    t = ExpectSplitEqualsOneThread(gz, {2, 3}, {65536}, {size_t{256} << 10, size_t{16} << 10});
    EXPECT_GE(t.split, t.imports / 2) << gz << ": at least every import in 16 KiB parts was split";
  }
}

// Seams land inside args (objects in arrays), inside strings that hold ", {", in a bare array,
// before keys that follow traceEvents, and in a file cut short: every part count from 2 to 40
// on a small file, so seams fall at every kind of place.
TEST(KinetoSplitTest, SeamsAnywhereGiveTheOneThreadResult) {
  std::string events;
  for (int i = 0; i < 60; ++i) {
    if (i) events += ", ";
    // Every fifth event holds false seams: ", {" in args and in strings.
    const std::string odd = i % 5 == 0 ? R"(, "shapes": [{"a": 1}, {"b": [2, {"c": 3}]}], "note": ", {\"ph\": 1}")" : "";
    events += fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "k{}{}", "pid": 0, "tid": {}, "ts": {}.5, "dur": 2, "args": {{"correlation": {}{}}}}})",
        i % 3 == 0 ? "kernel" : i % 3 == 1 ? "cuda_runtime" : "cpu_op", i % 7, i % 5 == 0 ? ", {x}" : "", i % 4,
        1000 + i * 10, i, odd);
    if (i == 31) events += R"(, {"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 1, "ts": 5, "dur": -1})";
  }
  const std::string object = R"({"schemaVersion": 1, "traceEvents": [)" + events +
                             R"(], "deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4}], "hip_runtime_version": 1})";
  std::vector<int> all;
  for (int n = 2; n <= 40; ++n) all.push_back(n);
  SplitTally t = ExpectSplitEqualsOneThread(WriteTemp("split_object.json", object), all, {4096, 97});
  // Both ways were taken: parts joined, and seams found inside an event.
  EXPECT_GT(t.split, t.imports / 2);
  EXPECT_GT(t.fell_back, 0);
  t = ExpectSplitEqualsOneThread(WriteTemp("split_bare.json", "[" + events + "]"), all, {4096});
  EXPECT_GT(t.split, 0);
  ExpectSplitEqualsOneThread(WriteTemp("split_cut.json", object.substr(0, object.size() * 2 / 3)), all, {4096});
  ExpectSplitEqualsOneThread(WriteTemp("split_garbage.json", object + " x"), all, {4096});
  std::string broken = object;
  broken[broken.size() / 2] = '@';
  ExpectSplitEqualsOneThread(WriteTemp("split_broken.json", broken), all, {4096});

  // The same documents compressed: cut into parts of 1 byte (every seam) to 4 KiB, 2 or 3 in
  // flight, read in slices of 4096 and 97 bytes.
  std::vector<size_t> sizes = {1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181};
  t = ExpectSplitEqualsOneThread(WriteTemp("split_object.json.zst", Zstd(object)), {2, 3}, {4096, 97}, sizes);
  EXPECT_GT(t.split, t.imports / 4);
  EXPECT_GT(t.fell_back, 0);
  EXPECT_LT(t.fell_back, t.imports);
  t = ExpectSplitEqualsOneThread(WriteTemp("split_bare.json.zst", Zstd("[" + events + "]")), {2, 3}, {4096}, sizes);
  EXPECT_GT(t.split, 0);
  ExpectSplitEqualsOneThread(WriteTemp("split_cut.json.zst", Zstd(object.substr(0, object.size() * 2 / 3))), {2}, {4096}, sizes);
  ExpectSplitEqualsOneThread(WriteTemp("split_garbage.json.zst", Zstd(object + " x")), {2}, {4096}, sizes);
  ExpectSplitEqualsOneThread(WriteTemp("split_broken.json.zst", Zstd(broken)), {2}, {4096}, sizes);
  // A compressed stream cut short: the read error comes after every byte inflated before it.
  const std::string zst = Zstd(object);
  ExpectSplitEqualsOneThread(WriteTemp("split_truncated.json.zst", zst.substr(0, zst.size() * 3 / 4)), {2, 3}, {4096, 97}, sizes);
}

// Kineto's ts are microseconds after "baseTimeNanoseconds" on the wall clock (libkineto,
// output_json.cpp): the real H200 trace was captured on 2026-12-05 at 02:09 UTC.
TEST(KinetoImporterTest, WallClockOfTheGpuWorkFromBaseTimeNanoseconds) {
  Trace real;
  auto r = ImportFiles({"tests/data/trace/h200_pathologies/h200_decode_clean_eager.json.gz"},
                       ImportOptions{}, real);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(real.sources[0].wall_clock_base_ns, 1790857026000000000);
  std::optional<WallClockWindow> w = GpuWorkWallClockWindow(real);
  ASSERT_TRUE(w.has_value());
  EXPECT_GE(w->start_ns, int64_t{1796436540} * 1000000000);  // 2026-12-05 02:09:00 UTC
  EXPECT_LE(w->end_ns, int64_t{1796436600} * 1000000000);
  EXPECT_LT(w->start_ns, w->end_ns);

  // Without the field (older PyTorch, other formats): no wall clock.
  Trace plain;
  ImportFiles({WriteTemp("nobase.json", kSmall)}, ImportOptions{}, plain);
  EXPECT_FALSE(plain.sources[0].wall_clock_base_ns.has_value());
  EXPECT_FALSE(GpuWorkWallClockWindow(plain).has_value());

  // A value that is not a positive integer is a counted issue, not a clock.
  std::string bad = kSmall;
  bad.replace(bad.find("\"traceEvents\""), 0, "\"baseTimeNanoseconds\": -5, ");
  Trace t;
  ImportFiles({WriteTemp("badbase.json", bad)}, ImportOptions{}, t);
  EXPECT_FALSE(t.sources[0].wall_clock_base_ns.has_value());
  EXPECT_EQ(t.sources[0].issues.count_by_reason.count("bad baseTimeNanoseconds"), 1u);
}

// An Nsight Systems export: its times are ns after the capture's start, whose UTC time
// TARGET_INFO_SESSION_START_TIME records (2026-01-06 17:00:40 for the fixture).
TEST(NsysWallClockTest, SessionStartIsTheWallClockOfTimeZero) {
  Trace t;
  auto r = ImportFiles({"tests/data/trace/nsys/vecadd_pageable_report1.sqlite"}, ImportOptions{}, t);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(t.sources[0].wall_clock_base_ns, 1767718840395831670);
  std::optional<WallClockWindow> w = GpuWorkWallClockWindow(t);
  ASSERT_TRUE(w.has_value());
  EXPECT_GE(w->start_ns, int64_t{1767718840395831670} + 1'000'000'000);  // a second into the capture
  EXPECT_LT(w->end_ns, int64_t{1767718840395831670} + 10'000'000'000);
}

}  // namespace
}  // namespace latdoc::trace
