#include "base/file_util.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace latdoc {
namespace {

std::string Gzip(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(static_cast<uLong>(in.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Text() {
  std::string s;
  for (int i = 0; i < 100000; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

TEST(InputStreamTest, PlainGzipAndZstdReadTheSameBytes) {
  std::string text = Text();
  std::string gz = Gzip(text);
  std::string zs(ZSTD_compressBound(text.size()), '\0');
  zs.resize(ZSTD_compress(zs.data(), zs.size(), text.data(), text.size(), 3));
  for (const std::string* data : {&text, &gz, &zs}) {
    auto in = OpenMemoryInput(*data);
    auto got = ReadAll(*in);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, text);
  }
  EXPECT_EQ(OpenMemoryInput(gz)->compression(), Compression::kGzip);
  EXPECT_EQ(OpenMemoryInput(zs)->compression(), Compression::kZstd);
}

TEST(InputStreamTest, TruncatedGzipIsDataLossWithPath) {
  std::string gz = Gzip(Text());
  gz.resize(gz.size() / 2);
  auto in = OpenMemoryInput(gz, "t.json.gz");
  auto got = ReadAll(*in);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("t.json.gz: byte "), std::string::npos)
      << got.status().message();
}

TEST(InputStreamTest, DirectoryAndMissingFileAreClearErrors) {
  auto d = OpenInput("/tmp");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "/tmp: is a directory, not a file");
  auto m = OpenInput("/nonexistent/x");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "/nonexistent/x: No such file or directory");
}

TEST(WriteFileAtomicTest, WritesAndLeavesNoTemporary) {
  std::string dir = ::testing::TempDir() + "/atomic_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string path = dir + "/out.json";
  ASSERT_TRUE(WriteFileAtomic(path, "{}").ok());
  EXPECT_EQ(*ReadFileToString(path), "{}");
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1);
  EXPECT_FALSE(WriteFileAtomic(dir + "/no/such/dir/x", "y").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace latdoc
