#include "trace/importers/rocprofv3/rocprofv3_importer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trace/analysis/trace_analysis.h"
#include "trace/importers/registry.h"

namespace latdoc::trace {
namespace {

constexpr char kDir[] = "tests/data/trace/handmade/";

TEST(Rocprofv3CsvTest, OneFileOfTheSetReadsItsSiblingsAsOneSource) {
  Trace trace;
  const std::string k = std::string(kDir) + "run1_kernel_trace.csv";
  const std::string h = std::string(kDir) + "run1_hip_api_trace.csv";
  auto r = ImportFiles({k, h}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].format, "rocprofv3_csv");
  EXPECT_EQ(r[1].format, "(read with its set)");
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.gpu_ops.size(), 3u + 2);   // one kernel row dropped (negative)
  EXPECT_EQ(trace.api_calls.size(), 7u);
  ASSERT_EQ(trace.sources[0].issues.total(), 1);
  EXPECT_EQ(trace.sources[0].issues.examples[0].where, "run1_kernel_trace.csv line 5");
  int copies = 0;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    EXPECT_NE(op.api, kNoLink) << trace.Name(op.name);
    if (op.kind == GpuOpKind::kMemcpy) ++copies;
    if (op.kind == GpuOpKind::kKernel) {
      EXPECT_EQ(op.device, 4);
    }
  }
  EXPECT_EQ(copies, 3);   // 2 SDMA copies + the rocclr copy kernel
  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  // hipMemcpyWithStream (sync) launched the rocclr copy; hipMemcpy the DtoH copy.
  int64_t sync = 0;
  for (const auto& d : rep.copies.by_direction) sync += d.sync_count;
  EXPECT_EQ(sync, 2);
  EXPECT_TRUE(rep.copies.pageable_is_heuristic);
}

TEST(Rocprofv3CsvTest, MissingColumnIsAnErrorNamingFileAndLine) {
  Trace trace;
  auto r = ImportFiles({std::string(kDir) + "badcols_kernel_trace.csv"}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.message(),
            std::string(kDir) + "badcols_kernel_trace.csv: line 1: missing column Start_Timestamp or End_Timestamp");
}

// The records wait for the names in spill tables: with blocks of one row, every wait but the
// last is read back from the file.
TEST(Rocprofv3JsonTest, ResolvesNamesDeclaredAfterTheRecords) {
  for (size_t block : {size_t{0}, size_t{1}}) {
    SCOPED_TRACE(block);
    Trace trace = block == 0 ? Trace() : Trace(block);
    auto r = ImportFiles({std::string(kDir) + "rocprofv3_results.json"}, ImportOptions{}, trace);
    ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
    EXPECT_EQ(r[0].format, "rocprofv3_json");
    ASSERT_EQ(trace.gpu_ops.size(), 2u);
    const GpuOp& copy = trace.gpu_ops[0];
    EXPECT_EQ(copy.kind, GpuOpKind::kMemcpy);
    EXPECT_EQ(copy.direction, CopyDirection::kHtoD);
    EXPECT_EQ(copy.bytes, 8192);
    ASSERT_NE(copy.api, kNoLink);
    EXPECT_EQ(trace.Name(trace.api_calls[copy.api].name), "hipMemcpyAsync");
    const GpuOp& k = trace.gpu_ops[1];
    EXPECT_EQ(trace.Name(k.name), "matmul(float*, float*)");
    EXPECT_EQ(k.device, 0);
    ASSERT_NE(k.api, kNoLink);
    EXPECT_EQ(trace.Name(trace.api_calls[k.api].name), "hipLaunchKernel");
    EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("negative duration"), 1);
    EXPECT_EQ(trace.sources[0].issues.examples[0].where, "buffer_records.kernel_dispatch[1]");
    ASSERT_EQ(trace.devices.size(), 1u);
    EXPECT_EQ(trace.devices[0].arch, "gfx942");
  }
}


// A copy of the handmade set under `dir` with rocprofv3's other outputs beside it, as
// `rocprofv3 --kernel-trace --hip-trace --rccl-trace --memory-allocation-trace ... --stats`
// writes them (generateCSV.cpp, ROCm 7.0; the headers are rocprofv3's, the rows made up).
std::string SetWithCompanions(const std::string& name, const std::string& prefix) {
  const std::string dir = ::testing::TempDir() + "rocprofv3_" + name + "/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const char* stem : {"kernel_trace.csv", "hip_api_trace.csv", "memory_copy_trace.csv"}) {
    std::filesystem::copy_file(std::string(kDir) + "run1_" + stem, dir + prefix + stem);
  }
  auto write = [&](const char* stem, const char* text) {
    std::ofstream(dir + prefix + stem, std::ios::binary) << text;
  };
  write("rccl_api_trace.csv",
        "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
        "\"RCCL_API\",\"ncclAllReduce\",3001,3001,90,1000400,1000420\n");
  write("memory_allocation_trace.csv",
        "\"Kind\",\"Operation\",\"Agent_Id\",\"Allocation_Size\",\"Address\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n"
        "\"MEMORY_ALLOCATION\",\"MEMORY_ALLOCATION_ALLOCATE\",\"Agent 4\",1048576,\"0x7f0000000000\",91,1000500,1000510\n");
  write("scratch_memory_trace.csv",
        "\"Kind\",\"Operation\",\"Agent_Id\",\"Queue_Id\",\"Thread_Id\",\"Alloc_Flags\",\"Start_Timestamp\",\"End_Timestamp\"\n");
  write("agent_info.csv", "\"Node_Id\",\"Logical_Node_Id\",\"Agent_Type\",\"Name\"\n0,0,\"CPU\",\"AMD EPYC\"\n");
  return dir;
}

TEST(Rocprofv3CsvTest, WholeOutputFolderIsOneSetReadOnce) {
  const std::string dir = SetWithCompanions("folder", "run1_");
  // In the order a shell glob gives: agent_info first, which has no event columns at all.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 7u);
  Trace trace;
  const std::vector<FileResult> r = ImportFiles(files, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(r[0].path, dir + "run1_agent_info.csv");
  EXPECT_EQ(r[0].format, "rocprofv3_csv");
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_TRUE(r[i].status.ok()) << r[i].path << ": " << r[i].status.ToString();
    EXPECT_EQ(r[i].format, "(read with its set)") << r[i].path;
  }
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.gpu_ops.size(), 5u);
  ASSERT_EQ(trace.api_calls.size(), 8u);  // the set's 7 HIP calls and the RCCL call
  const std::vector<ApiCall> calls = trace.api_calls.ToVector();
  EXPECT_EQ(std::count_if(calls.begin(), calls.end(),
                          [&](const ApiCall& a) { return trace.Name(a.name) == "ncclAllReduce"; }),
            1);
}

TEST(Rocprofv3CsvTest, SetWithoutPrefixAndCompanionAlone) {
  const std::string dir = SetWithCompanions("bare", "");
  Trace trace;
  const std::vector<FileResult> r = ImportFiles({dir + "kernel_trace.csv"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  EXPECT_EQ(trace.gpu_ops.size(), 5u);
  EXPECT_EQ(trace.api_calls.size(), 8u);

  // An allocation trace with no event file of its set beside it has nothing to read.
  const std::string lone = ::testing::TempDir() + "rocprofv3_lone/";
  std::filesystem::remove_all(lone);
  std::filesystem::create_directories(lone);
  std::filesystem::copy_file(dir + "memory_allocation_trace.csv", lone + "x_memory_allocation_trace.csv");
  Trace none;
  const std::vector<FileResult> l =
      ImportFiles({lone + "x_memory_allocation_trace.csv"}, ImportOptions{}, none);
  EXPECT_EQ(l[0].status.message(),
            lone + "x_memory_allocation_trace.csv: holds nothing latdoc reads alone (counters need "
                   "the kernel trace of the same run: rocprofv3 --kernel-trace --pmc FETCH_SIZE "
                   "WRITE_SIZE), and no kernel_trace.csv, memory_copy_trace.csv or *_api_trace.csv "
                   "of its set (" +
                lone + "x_...) is beside it");
}

// `rocprofv3 --kernel-trace --pmc FETCH_SIZE WRITE_SIZE`: counter_collection.csv beside the
// kernel trace (header of generateCSV.cpp, ROCm 7.0; rows made up) gives each dispatch's bytes,
// FETCH_SIZE + WRITE_SIZE in KB, joined on Dispatch_Id; other counters are left; a value that is
// not a number is counted and skipped. The roofline then has the GEMM's achieved bandwidth.
TEST(Rocprofv3CsvTest, CounterCollectionGivesEachDispatchItsBytes) {
  const std::string dir = ::testing::TempDir() + "rocprofv3_pmc/";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(kDir) + "run1_kernel_trace.csv", dir + "p_kernel_trace.csv");
  const std::string head =
      "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
      "\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\","
      "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\","
      "\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";
  auto row = [](int dispatch, const char* counter, const char* value) {
    return fmt::format("{0},{0},\"Agent 4\",1,3001,3001,4096,10,\"k\",256,0,0,64,0,32,\"{1}\",{2},1,2\n",
                       dispatch, counter, value);
  };
  std::ofstream(dir + "p_counter_collection.csv", std::ios::binary)
      << head << row(1, "FETCH_SIZE", "40000") << row(1, "WRITE_SIZE", "8000.5")
      << row(1, "SQ_WAVES", "512") << row(3, "FETCH_SIZE", "12") << row(3, "WRITE_SIZE", "n/a");
  Trace trace;
  auto r = ImportFiles({dir + "p_kernel_trace.csv"}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  std::map<int64_t, int64_t> bytes_by_start;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) bytes_by_start[op.start_ns] = op.bytes;
  EXPECT_EQ(bytes_by_start[1000200], static_cast<int64_t>(48000.5 * 1024));  // dispatch 1
  EXPECT_EQ(bytes_by_start[1060000], -1);                                   // 2: no counters
  EXPECT_EQ(bytes_by_start[1100000], 12 * 1024);                            // 3: FETCH only
  EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("bad FETCH_SIZE/WRITE_SIZE"), 1);

  const TraceReport rep = Analyze(trace, AnalysisOptions{});
  auto gemm = std::find_if(rep.roofline.kernels.begin(), rep.roofline.kernels.end(),
                           [](const RooflineKernel& k) { return k.name.rfind("Cijk_", 0) == 0; });
  ASSERT_NE(gemm, rep.roofline.kernels.end());
  EXPECT_EQ(gemm->kind, "counters");
  ASSERT_TRUE(gemm->achieved_gbps.has_value());
  EXPECT_NEAR(*gemm->achieved_gbps, 48000.5 * 1024 / 50e-6 / 1e9, 1e-6);  // 50 us dispatch
}

TEST(Rocprofv3JsonTest, DocumentCutShortKeepsTheRecordsBeforeTheCut) {
  std::ifstream in(std::string(kDir) + "rocprofv3_results.json", std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string path = ::testing::TempDir() + "rocprofv3_cut.json";
  struct Cut {
    size_t at;
    std::string inside;
    int64_t records;
  };
  // The handmade file's records: 2 kernel dispatches (one negative), 1 copy, 2 HIP calls; its
  // kernel symbols and strings come after them.
  const std::vector<Cut> cuts = {
      {100, "rocprofiler-sdk-tool[0]", 0},
      {700, "rocprofiler-sdk-tool[0].buffer_records.kernel_dispatch[1], which starts at byte 638", 1},
      {2000, "rocprofiler-sdk-tool[0].strings, which starts at byte 1758", 4},
      {whole.size() - 2, "the root", 4},
  };
  for (const Cut& c : cuts) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, c.at);
    Trace trace;
    const std::vector<FileResult> r = ImportFiles({path}, ImportOptions{}, trace);
    const std::string& m = r[0].status.message();
    EXPECT_EQ(r[0].status.code(), StatusCode::kDataLoss) << m;
    EXPECT_EQ(m, fmt::format("{}: byte {}: the document is cut short inside {}; {} record{} before it {} kept", path,
                             c.at, c.inside, c.records, c.records == 1 ? "" : "s", c.records == 1 ? "was" : "were"));
    EXPECT_EQ(static_cast<int64_t>(trace.gpu_ops.size() + trace.api_calls.size()), c.records) << c.at;
    ASSERT_EQ(trace.sources.size(), c.at > 20 ? 1u : 0u);
    EXPECT_EQ(trace.sources[0].fatal_error, m);
    EXPECT_EQ(trace.sources[0].issues.count_by_reason.count("file cut short"), c.records > 0 ? 1u : 0u);
  }
  // Cut after the strings: the calls read before them are named all the same.
  Trace trace;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, whole.size() - 2);
  ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_EQ(trace.api_calls.size(), 2u);
  EXPECT_EQ(trace.Name(trace.api_calls[0].name), "hipMemcpyAsync");
  EXPECT_EQ(trace.Name(trace.gpu_ops[1].name), "matmul(float*, float*)");
}

// Names before the records (rocprofv3's order), two processes in one file, metadata after the
// records of the second, records that are not objects or not JSON.
TEST(Rocprofv3JsonTest, ToolsNamesAndBadRecords) {
  const std::string path = ::testing::TempDir() + "rocprofv3_two_tools.json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << R"json({"rocprofiler-sdk-tool": [
 {"metadata": {"pid": 11},
  "agents": [{"id": {"handle": 5}, "type": 2, "name": "gfx950", "product_name": "AMD Instinct MI355X"}],
  "strings": {"buffer_records": [{"kind": "NONE", "operations": []},
                                 {"kind": "HIP_RUNTIME_API", "operations": ["hipLaunchKernel", "hipDeviceSynchronize"]}]},
  "kernel_symbols": [{"kernel_id": 3, "kernel_name": "k3.kd", "demangled_kernel_name": "k3()"}],
  "buffer_records": {
    "hip_api": [{"kind": 1, "operation": 0, "correlation_id": {"internal": 1}, "start_timestamp": 10, "end_timestamp": 20, "thread_id": 9},
                17,
                {"kind": 1, "operation": 1, "start_timestamp": 30, "end_timestamp": 90, "thread_id": 9},
                {"kind": 1, "operation": 1 "start_timestamp": 31, "end_timestamp": 91}],
    "kernel_dispatch": [{"correlation_id": {"internal": 1}, "start_timestamp": 25, "end_timestamp": 28,
                         "dispatch_info": {"agent_id": {"handle": 5}, "kernel_id": 3}}],
    "page_migration": [{"start_timestamp": 1, "end_timestamp": 2}]}},
 {"buffer_records": {"kernel_dispatch": [{"correlation_id": {"internal": 1}, "start_timestamp": 125, "end_timestamp": 128,
                                          "dispatch_info": {"agent_id": {"handle": 6}, "kernel_id": 4}}],
                     "hip_api": [{"kind": 1, "operation": 0, "correlation_id": {"internal": 1}, "start_timestamp": 110, "end_timestamp": 120, "thread_id": 4}]},
  "metadata": {"pid": 22},
  "strings": {"buffer_records": [{"kind": "NONE", "operations": []}, {"kind": "HIP_RUNTIME_API", "operations": ["hipLaunchKernel"]}]},
  "kernel_symbols": [{}, {}, {}, {}, {"kernel_id": 4, "kernel_name": "k4.kd"}],
  "agents": [{"id": {"handle": 6}, "type": 2, "name": "gfx942"}]}
]}
)json";
  Trace trace;
  const std::vector<FileResult> r = ImportFiles({path}, ImportOptions{}, trace);
  ASSERT_TRUE(r[0].status.ok()) << r[0].status.ToString();
  ASSERT_EQ(trace.sources.size(), 2u);
  EXPECT_EQ(trace.sources[0].events_read, 3);
  EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("record is not an object"), 1);
  EXPECT_EQ(trace.sources[0].issues.count_by_reason.at("bad record"), 1);
  EXPECT_EQ(trace.sources[0].issues.examples[0].where, "buffer_records.hip_api[1]");
  EXPECT_EQ(trace.sources[0].issues.examples[1].where, "buffer_records.hip_api[3]");
  EXPECT_EQ(trace.sources[1].events_read, 2);
  ASSERT_EQ(trace.gpu_ops.size(), 2u);
  ASSERT_EQ(trace.api_calls.size(), 3u);
  std::vector<std::string> names;
  for (const GpuOp& op : trace.gpu_ops.ToVector()) {
    names.push_back(std::string(trace.Name(op.name)));
    ASSERT_NE(op.api, kNoLink);
    EXPECT_EQ(trace.api_calls[op.api].source, op.source);
    EXPECT_EQ(trace.Name(trace.api_calls[op.api].name), "hipLaunchKernel");
    EXPECT_EQ(op.device, 0);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"k3()", "k4.kd"}));
  for (const ApiCall& a : trace.api_calls.ToVector()) EXPECT_EQ(a.pid, a.source == 0 ? 11 : 22);
  EXPECT_EQ(trace.api_calls[1].kind, ApiKind::kSync);
  ASSERT_EQ(trace.devices.size(), 2u);
  EXPECT_EQ(trace.devices[0].name, "AMD Instinct MI355X");
  EXPECT_EQ(trace.devices[1].arch, "gfx942");
}

// Damage that is not a cut is not called one, and is placed at its byte (it said "file cut
// short" at the end of the slice that held the damage).
TEST(Rocprofv3JsonTest, DamageMidDocumentIsPlacedAtItsByte) {
  std::ifstream in(std::string(kDir) + "rocprofv3_results.json", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"memory_copy\"");
  ASSERT_NE(at, std::string::npos);
  const size_t comma = text.rfind("],", at);
  text.insert(comma + 1, " x");
  const std::string path = ::testing::TempDir() + "rocprofv3_damaged.json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  Trace trace;
  const std::vector<FileResult> r = ImportFiles({path}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(trace.sources.size(), 1u);
  const ImportIssues& issues = trace.sources[0].issues;
  EXPECT_EQ(issues.count_by_reason.count("file cut short"), 0u);
  ASSERT_EQ(issues.count_by_reason.count("document damaged"), 1u);
  EXPECT_EQ(issues.examples.back().where, "byte " + std::to_string(comma + 2));
}

TEST(Rocprofv3JsonTest, ShapeErrorsNameWhatIsWrong) {
  const std::string path = ::testing::TempDir() + "rocprofv3_shape.json";
  struct Case {
    const char* doc;
    std::string error;
  } cases[] = {
      {R"({"rocprofiler-sdk-tool": {"a": 1}})", path + ": \"rocprofiler-sdk-tool\" is not an array"},
      {R"({"rocprofiler-sdk-tool": [{}, 3]})", path + ": rocprofiler-sdk-tool[1] is not an object"},
      {R"({"rocprofiler-sdk-tool": [{}] "x": 1})",
       path + ": byte 30: expected ',' or '}' in the root; 0 records before it were kept"},
      {R"({"other": [], "note": "rocprofiler-sdk-tool"})", path + ": no \"rocprofiler-sdk-tool\" array"},
  };
  for (const Case& c : cases) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << c.doc;
    Trace trace;
    const std::vector<FileResult> r = ImportFiles({path}, ImportOptions{}, trace);
    EXPECT_EQ(r[0].status.message(), c.error) << c.doc;
  }
}

}  // namespace
}  // namespace latdoc::trace
