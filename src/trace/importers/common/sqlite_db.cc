#include "trace/importers/common/sqlite_db.h"

#include <fmt/format.h>

namespace latdoc::trace {

bool SqliteStmt::Step(Status* status) {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) {
    *status = DataLoss(fmt::format("SQLite error {} while reading: {}", rc,
                                   sqlite3_errmsg(sqlite3_db_handle(s_))));
  }
  return false;
}

std::string_view SqliteStmt::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (t == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(t),
                          static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return InvalidArgument(fmt::format("{}: {}", path, msg));
  }
  auto out = std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
  // Touch the schema now so a non-database file fails here, with its path.
  if (!out->Prepare("SELECT count(*) FROM sqlite_master").ok()) {
    return InvalidArgument(fmt::format("{}: not an SQLite database", path));
  }
  return out;
}

SqliteDb::~SqliteDb() { sqlite3_close(db_); }

StatusOr<SqliteStmt> SqliteDb::Prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return InvalidArgument(fmt::format("{}: {} (in \"{}\")", path_, sqlite3_errmsg(db_),
                                       sql.substr(0, 80)));
  }
  return SqliteStmt(s);
}

bool SqliteDb::Has(std::string_view name) {
  auto st = Prepare(fmt::format(
      "SELECT 1 FROM sqlite_master WHERE (type='table' OR type='view') AND name='{}'", name));
  if (!st.ok()) return false;
  Status s;
  return st->Step(&s);
}

std::optional<std::string> SqliteDb::QueryText(std::string_view sql) {
  auto st = Prepare(sql);
  if (!st.ok()) return std::nullopt;
  Status s;
  if (!st->Step(&s) || st->IsNull(0)) return std::nullopt;
  return std::string(st->Text(0));
}

bool IsSqliteHeader(std::string_view head) {
  return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

}  // namespace latdoc::trace
