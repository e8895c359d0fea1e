// CsvReader: streams a CSV file (plain or compressed, through InputStream) row by row, with
// RFC 4180 quoting ("a,b" and "" escapes, newlines inside quotes), and finds columns by header
// name case- and quote-insensitively, never by position (profilers write both quoted and
// unquoted headers, with differing capitalisation). Not thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"

namespace latdoc::trace {

class CsvReader {
 public:
  // Opens `path` and reads its header row.
  static StatusOr<std::unique_ptr<CsvReader>> Open(const std::string& path);
  // For tests: reads from memory.
  static StatusOr<std::unique_ptr<CsvReader>> FromString(std::string_view data, std::string name);

  // The index of the first header matching any of `names` (case-insensitive), or -1.
  int Column(std::initializer_list<std::string_view> names) const;
  const std::vector<std::string>& header() const { return header_; }

  // Reads the next row into fields; false at the end. A damaged stream is an error.
  StatusOr<bool> Next();
  // Field `col` of the current row; empty when the row is short or col < 0.
  std::string_view Field(int col) const;
  size_t fields() const { return fields_.size(); }
  // 1-based line number where the current row started (header = line 1).
  int64_t line() const { return row_line_; }
  const std::string& path() const { return path_; }

 private:
  explicit CsvReader(std::unique_ptr<InputStream> in, std::string path)
      : in_(std::move(in)), path_(std::move(path)) {}
  // Skips a byte order mark and reads the header row.
  static StatusOr<std::unique_ptr<CsvReader>> Start(std::unique_ptr<CsvReader> r);
  StatusOr<bool> ReadRow(std::vector<std::string>& out);
  StatusOr<int> GetChar();

  std::unique_ptr<InputStream> in_;
  std::string path_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
  std::vector<std::string> header_;
  std::vector<std::string> fields_;
  int64_t line_ = 1;
  int64_t row_line_ = 0;
};

}  // namespace latdoc::trace
