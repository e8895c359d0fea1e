// A small read-only wrapper over the sqlite3 C API for the SQLite trace formats (rocpd,
// Nsight Systems export). Errors name the file and the statement. Not thread-safe.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace latdoc::trace {

class SqliteStmt {
 public:
  SqliteStmt(sqlite3_stmt* s) : s_(s) {}
  SqliteStmt(SqliteStmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  SqliteStmt(const SqliteStmt&) = delete;
  ~SqliteStmt() { sqlite3_finalize(s_); }
  // True with a row, false at the end; an error as a Status through `status`.
  bool Step(Status* status);
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  std::optional<int64_t> OptInt(int col) const {
    return IsNull(col) ? std::nullopt : std::optional<int64_t>(Int(col));
  }
  std::string_view Text(int col) const;

 private:
  sqlite3_stmt* s_;
};

class SqliteDb {
 public:
  // Opens `path` read-only; a file that is not SQLite is an error naming the path.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  StatusOr<SqliteStmt> Prepare(std::string_view sql);
  // True if a table or view of that name exists.
  bool Has(std::string_view name);
  // The first column of the first row of `sql`, as text (nullopt: no row or NULL).
  std::optional<std::string> QueryText(std::string_view sql);
  const std::string& path() const { return path_; }

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// True when `head` starts with the SQLite file magic.
bool IsSqliteHeader(std::string_view head);

}  // namespace latdoc::trace
