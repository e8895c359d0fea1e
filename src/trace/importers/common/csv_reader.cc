#include "trace/importers/common/csv_reader.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace latdoc::trace {

StatusOr<std::unique_ptr<CsvReader>> CsvReader::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path));
  return Start(std::unique_ptr<CsvReader>(new CsvReader(std::move(in), path)));
}

StatusOr<std::unique_ptr<CsvReader>> CsvReader::FromString(std::string_view data, std::string name) {
  return Start(std::unique_ptr<CsvReader>(new CsvReader(OpenMemoryInput(data, name), name)));
}

StatusOr<std::unique_ptr<CsvReader>> CsvReader::Start(std::unique_ptr<CsvReader> r) {
  // A UTF-8 byte order mark (a spreadsheet's "CSV UTF-8") is not part of the first column's
  // name. The first read fills the buffer with up to 64 KiB, so the mark is whole in it.
  ASSIGN_OR_RETURN(int first, r->GetChar());
  if (first >= 0) r->pos_ = r->buf_.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  ASSIGN_OR_RETURN(bool got, r->ReadRow(r->header_));
  if (!got) return InvalidArgument(r->path_ + ": empty CSV file (no header)");
  for (std::string& h : r->header_) h = std::string(Trim(h));
  return r;
}

int CsvReader::Column(std::initializer_list<std::string_view> names) const {
  for (std::string_view n : names) {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (IEquals(header_[i], n)) return static_cast<int>(i);
    }
  }
  return -1;
}

StatusOr<int> CsvReader::GetChar() {
  if (pos_ >= buf_.size()) {
    if (eof_) return -1;
    // Bytes from keep_from_ on stay, for DropRow to read again; the rest makes room.
    const size_t keep = keep_from_ == std::string::npos ? buf_.size() : keep_from_;
    buf_.erase(0, keep);
    if (keep_from_ != std::string::npos) keep_from_ = 0;
    const size_t have = buf_.size();
    buf_.resize(have + (size_t{1} << 16));
    ASSIGN_OR_RETURN(size_t n, in_->Read(buf_.data() + have, size_t{1} << 16));
    buf_.resize(have + n);
    pos_ = have;
    if (n == 0) {
      eof_ = true;
      return -1;
    }
  }
  return static_cast<unsigned char>(buf_[pos_++]);
}

StatusOr<bool> CsvReader::ReadRow(std::vector<std::string>& out) {
  while (true) {
    ASSIGN_OR_RETURN(RowEnd end, ReadOneRow(out));
    if (end != RowEnd::kDropped) return end == RowEnd::kRow;
  }
}

CsvReader::RowEnd CsvReader::DropRow(std::string_view why) {
  if (on_bad_row_) on_bad_row_(row_line_, why);
  pos_ = keep_from_;
  keep_from_ = std::string::npos;
  line_ = row_line_ + 1;
  return RowEnd::kDropped;
}

// One record: fields split on commas outside quotes, ending at a newline outside quotes. Once a
// quoted field runs past the row's first line, the buffer keeps the bytes after that line
// (keep_from_), to be read again as rows should the quote turn out unbalanced.
StatusOr<CsvReader::RowEnd> CsvReader::ReadOneRow(std::vector<std::string>& out) {
  out.clear();
  row_line_ = line_;
  keep_from_ = std::string::npos;
  std::string field;
  bool quoted = false, any = false, was_quoted = false;
  while (true) {
    ASSIGN_OR_RETURN(int c, GetChar());
    if (c < 0) {
      if (quoted && keep_from_ != std::string::npos) return DropRow("a quote opened here is never closed");
      if (!any && field.empty()) return RowEnd::kEnd;
      out.push_back(std::move(field));
      return RowEnd::kRow;
    }
    any = true;
    if (quoted) {
      if (c == '"') {
        ASSIGN_OR_RETURN(int d, GetChar());
        if (d == '"') {
          field += '"';
        } else {
          quoted = false;
          if (d < 0) {
            out.push_back(std::move(field));
            return RowEnd::kRow;
          }
          // A quote that closes mid-field after running over lines was an unbalanced one.
          if (keep_from_ != std::string::npos && d != ',' && d != '\n' && d != '\r') {
            return DropRow("a quote opened here closes on a later line mid-field");
          }
          --pos_;  // re-read the byte after the closing quote
        }
      } else {
        field += static_cast<char>(c);
        if (c == '\n') {
          ++line_;
          if (keep_from_ == std::string::npos) keep_from_ = pos_;
        }
        if (keep_from_ != std::string::npos &&
            (line_ - row_line_ > kMaxSpanningLines || field.size() > kMaxSpanningField)) {
          return DropRow(fmt::format("a quoted field runs over more than {} lines or {} KiB",
                                     kMaxSpanningLines, kMaxSpanningField >> 10));
        }
      }
      continue;
    }
    if (c == '"' && !was_quoted && Trim(field).empty()) {
      quoted = true;
      was_quoted = true;
      field.clear();
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      ++line_;
      if (!field.empty() && field.back() == '\r') field.pop_back();
      if (out.empty() && field.empty() && !was_quoted) {
        row_line_ = line_;   // skip blank lines
        any = false;
        continue;
      }
      out.push_back(std::move(field));
      return RowEnd::kRow;
    } else {
      field += static_cast<char>(c);
    }
  }
}

StatusOr<bool> CsvReader::Next() { return ReadRow(fields_); }

std::string_view CsvReader::Field(int col) const {
  if (col < 0 || static_cast<size_t>(col) >= fields_.size()) return {};
  return fields_[col];
}

}  // namespace latdoc::trace
