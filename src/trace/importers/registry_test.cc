// ImportFiles and DetectFormat: which files are read, how often, and what a file that cannot be
// read leaves in the trace and its results.
#include "trace/importers/registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "trace/importers/common/csv_reader.h"

namespace latdoc::trace {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's temporary directory.
std::string Folder(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "registry_test_" + name + "/";
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

constexpr char kOneKernel[] =
    R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"device": 0, "stream": 7}}]})";

TEST(RegistryTest, FifoIsRefusedWithoutOpeningIt) {
  // No writer ever opens the FIFO: an open() would block for good, so the test would hang.
  const std::string fifo = Folder("fifo") + "trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Trace trace;
  const std::vector<FileResult> r = ImportFiles({fifo}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status.message(),
            fifo + ": not a regular file (a pipe, FIFO or device); latdoc trace reads a trace "
                   "more than once: save it to a file first");
  EXPECT_TRUE(trace.sources.empty());
}

TEST(RegistryTest, OneFileUnderTwoSpellingsIsReadOnce) {
  const std::string dir = Folder("spellings");
  const std::string path = Write(dir + "a.json", kOneKernel);
  fs::create_symlink(path, dir + "link.json");
  Trace trace;
  const std::vector<FileResult> r =
      ImportFiles({path, dir + "./a.json", dir + "link.json", path}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].format, "kineto");
  EXPECT_EQ(r[0].source, 0);
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i].format, "(already read)") << r[i].path;
    EXPECT_TRUE(r[i].status.ok());
    EXPECT_EQ(r[i].source, -1);
  }
  EXPECT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.gpu_ops.size(), 1u);
}

TEST(RegistryTest, EveryFailedImportNamesItsErrorOnItsSource) {
  // Without the rocpd_region view the fast path is out and the data path fails on the regions
  // view, after the file's source and its kernels were added: the source carries the error.
  const std::string dir = Folder("failed");
  const std::string db = dir + "noregion.db";
  fs::copy_file("tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db", db);
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(h, "DROP VIEW rocpd_region", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(h);
  }
  Trace trace;
  const std::vector<FileResult> r = ImportFiles({db}, ImportOptions{}, trace);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_FALSE(r[0].status.ok());
  EXPECT_NE(r[0].status.message().find("no such table: main.rocpd_region"), std::string::npos)
      << r[0].status.message();
  EXPECT_EQ(r[0].status.message().rfind(db + ": ", 0), 0u);
  EXPECT_EQ(r[0].status.message().find(db + ": " + db), std::string::npos);  // named once
  ASSERT_EQ(r[0].source, 0);
  ASSERT_EQ(trace.sources.size(), 1u);
  EXPECT_EQ(trace.sources[0].fatal_error, r[0].status.message());
  EXPECT_FALSE(trace.gpu_ops.empty());   // the kernels read before the break are kept

  // Refused before its source was added: no source, and the result says so.
  Trace other;
  const std::string empty_dir = Folder("failed_early");
  const std::vector<FileResult> early = ImportFiles({empty_dir}, ImportOptions{}, other);
  EXPECT_FALSE(early[0].status.ok());
  EXPECT_EQ(early[0].source, -1);
}

TEST(RegistryTest, DamagedSqliteSaysWhatSqliteSaw) {
  const std::string dir = Folder("sqlite");
  std::ifstream in("tests/data/trace/rocpd/mi300x_batched_gemm_15_results.db", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 700000u);
  const std::string cut = Write(dir + "cut.db", bytes.substr(0, 700000));
  Trace trace;
  std::vector<FileResult> r = ImportFiles({cut}, ImportOptions{}, trace);
  EXPECT_EQ(r[0].status.message(),
            cut + ": not a readable SQLite database: database disk image is malformed");
}

TEST(CsvReaderTest, ByteOrderMarkIsNotPartOfTheFirstColumn) {
  for (const char* header : {"\xEF\xBB\xBF\"Index\",\"KernelName\"\n", "\xEF\xBB\xBFIndex,KernelName\n"}) {
    auto csv = CsvReader::FromString(std::string(header) + "1,\"a,b\"\n", "results.csv");
    ASSERT_TRUE(csv.ok()) << csv.status().ToString();
    EXPECT_EQ((*csv)->Column({"Index"}), 0);
    EXPECT_EQ((*csv)->Column({"KernelName"}), 1);
    ASSERT_TRUE(*(*csv)->Next());
    EXPECT_EQ((*csv)->Field(1), "a,b");
    EXPECT_EQ((*csv)->line(), 2);
  }
  // A mark alone is an empty file; two bytes of one are data.
  EXPECT_FALSE(CsvReader::FromString("\xEF\xBB\xBF", "x.csv").ok());
  auto two = CsvReader::FromString("\xEF\xBB", "x.csv");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ((*two)->header()[0], "\xEF\xBB");
}

}  // namespace
}  // namespace latdoc::trace
