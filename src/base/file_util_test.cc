#include "base/file_util.h"
#include "base/read_ahead.h"

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

// Reads `in` to its end or its first error: the bytes read, and the error (OK at a clean end).
// `buf_size` bytes a Read.
Status ReadToEnd(InputStream& in, std::string* bytes, size_t buf_size = 4096) {
  return ForEachSlice(in, buf_size, [&](std::string_view slice) {
    EXPECT_LE(slice.size(), buf_size);
    EXPECT_FALSE(slice.empty());
    bytes->append(slice);
    return Status::Ok();
  });
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

// Any read size, and gzip members one after another (gzip -c a b > c), give the same bytes.
TEST(InputStreamTest, GzipAtEveryReadSizeAndConcatenatedMembers) {
  const std::string text = Text();
  const std::string two = Gzip(text.substr(0, 1000)) + Gzip(text.substr(1000));
  for (size_t buf_size : {size_t{1}, size_t{7}, size_t{4096}, size_t{300000}}) {
    std::string got;
    const Status st = ReadToEnd(*OpenMemoryInput(two), &got, buf_size);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(got, text) << "buffer " << buf_size;
  }
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

// ReadAhead hands over the same bytes whatever its slice size and the reader's buffer size.
TEST(ReadAheadTest, SameBytesForEverySliceAndBufferSize) {
  const std::string text = Text();
  const std::string gz = Gzip(text);
  for (size_t slice : {size_t{509}, size_t{4096}, size_t{1} << 20}) {
    for (size_t buf_size : {size_t{1}, size_t{13}, size_t{65536}}) {
      auto in = ReadAhead(OpenMemoryInput(gz, "t.gz"), slice, 3);
      EXPECT_EQ(in->compression(), Compression::kGzip);
      std::string got;
      const Status st = ReadToEnd(*in, &got, buf_size);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(got, text) << "slice " << slice << " buffer " << buf_size;
      EXPECT_EQ(in->raw_offset(), gz.size());
      char buf[16];
      auto again = in->Read(buf, sizeof buf);  // the end stays the end
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(*again, 0u);
    }
  }
}

// A damaged source: every byte before the damage arrives first, then the source's own error.
TEST(ReadAheadTest, ErrorComesAfterTheBytesBeforeIt) {
  std::string gz = Gzip(Text());
  gz.resize(gz.size() / 2);
  std::string want, got;
  const Status want_error = ReadToEnd(*OpenMemoryInput(gz, "t.json.gz"), &want);
  const Status got_error = ReadToEnd(*ReadAhead(OpenMemoryInput(gz, "t.json.gz"), 10000, 2), &got);
  EXPECT_GT(want.size(), 0u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got_error.code(), StatusCode::kDataLoss);
  EXPECT_EQ(got_error.message(), want_error.message());
}

// Dropping the stream half-read stops its reader thread (the test would hang otherwise).
TEST(ReadAheadTest, DestroyingMidStreamStopsTheReader) {
  const std::string gz = Gzip(Text());
  for (int i = 0; i < 20; ++i) {
    auto in = ReadAhead(OpenMemoryInput(gz), 1024, 2);
    char buf[100];
    ASSERT_TRUE(in->Read(buf, sizeof buf).ok());
  }
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
