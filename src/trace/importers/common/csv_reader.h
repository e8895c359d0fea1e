// CsvReader: streams a CSV file (plain or compressed, through InputStream) row by row, with
// RFC 4180 quoting ("a,b" and "" escapes, newlines inside quotes), and finds columns by header
// name case- and quote-insensitively, never by position (profilers write both quoted and
// unquoted headers, with differing capitalisation). Not thread-safe.
//
// An unbalanced quote does not swallow the rows after it: a quoted field that runs past its
// line and then does not end as a field does (its closing quote followed by something other
// than a comma or the end of the line), or reaches the end of the file, or runs over more than
// kMaxSpanningLines lines or kMaxSpanningField bytes, makes its row a bad row, reported to
// OnBadRow with its line, and reading goes on at the line after the one it started on. (So a
// file with an unbalanced quote on every line is read at most kMaxSpanningLines + 1 times.)
#pragma once

#include <cstdint>
#include <functional>
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
  // Called with the line of each row left out for an unbalanced quote, and why.
  void OnBadRow(std::function<void(int64_t line, std::string_view why)> fn) { on_bad_row_ = std::move(fn); }
  // How far a quoted field may run over lines (no profiler writes one; RFC 4180 allows it).
  static constexpr int64_t kMaxSpanningLines = 8;
  static constexpr size_t kMaxSpanningField = size_t{64} << 10;
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
  enum class RowEnd { kRow, kEnd, kDropped };
  // A row into `out`, skipping rows left out for an unbalanced quote; false at the end.
  StatusOr<bool> ReadRow(std::vector<std::string>& out);
  StatusOr<RowEnd> ReadOneRow(std::vector<std::string>& out);
  StatusOr<int> GetChar();
  // Leaves out the row that started at row_line_: reports it, and has reading go on from the
  // line after the one it started on (at keep_from_).
  RowEnd DropRow(std::string_view why);

  std::unique_ptr<InputStream> in_;
  std::string path_;
  std::string buf_;
  size_t pos_ = 0;
  // While a quoted field runs over lines: where the line after the row's first starts in buf_.
  size_t keep_from_ = std::string::npos;
  bool eof_ = false;
  std::vector<std::string> header_;
  std::vector<std::string> fields_;
  int64_t line_ = 1;
  int64_t row_line_ = 0;
  std::function<void(int64_t, std::string_view)> on_bad_row_;
};

}  // namespace latdoc::trace
