// Differential: the Kineto importer's split parse (parts on several threads, each seam checked
// by the part before it) against one thread, on arbitrary file content, plain and compressed
// (the stream split: inflated on one thread, cut into parts of a few bytes to a few hundred). The two must give the
// same status, events, name ids, devices and bad records (kineto_importer.h), always. Only the
// place of a "file cut short" record may differ: it says where reading stopped, which depends
// on the read slices.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <zstd.h>

#include "base/strings.h"
#include "fuzz/fuzz_util.h"
#include "trace/importers/kineto/kineto_importer.h"

namespace {

std::string Import(const std::string& path, int parts, size_t part_bytes = 64) {
  latdoc::trace::ImportOptions o;
  o.chunk_bytes = 64;  // small slices: the first one ends before most seams
  o.split_min_bytes = 0;
  o.split_parts = parts;
  o.split_part_bytes = part_bytes;
  latdoc::trace::Trace trace;
  const latdoc::Status st = latdoc::trace::ImportKineto(path, o, trace, nullptr);
  std::string out = st.ToString() + "\n";
  const std::string dump = latdoc::trace::DumpTrace(trace);
  for (std::string_view line : latdoc::Split(dump, '\n')) {
    out += line.find("| file cut short") == std::string_view::npos ? std::string(line) : "(cut short)";
    out += "\n";
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = latdoc::fuzz::WriteScratch("trace.json", latdoc::fuzz::AsView(data, size));
  const std::string one = Import(path, 1);
  for (int parts : {2, 3 + static_cast<int>(size % 6)}) {
    const std::string split = Import(path, parts);
    if (split != one) {
      std::fprintf(stderr, "split into %d parts:\n%s\none thread:\n%s\n", parts, split.c_str(), one.c_str());
      std::abort();
    }
  }
  std::string zst(ZSTD_compressBound(size), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), data, size, 1));
  const std::string zpath = latdoc::fuzz::WriteScratch("trace.json.zst", zst);
  const std::string zone = Import(zpath, 1);
  for (size_t part_bytes : {size_t{1} + size % 97, size_t{256}}) {
    const std::string split = Import(zpath, 2 + static_cast<int>(size % 2), part_bytes);
    if (split != zone) {
      std::fprintf(stderr, "stream split in parts of %zu bytes:\n%s\none thread:\n%s\n", part_bytes, split.c_str(), zone.c_str());
      std::abort();
    }
  }
  return 0;
}
