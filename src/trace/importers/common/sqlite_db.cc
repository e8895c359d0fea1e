#include "trace/importers/common/sqlite_db.h"

#include <algorithm>

#include <fmt/format.h>

namespace latdoc::trace {

namespace {

// The table a statement reads: the word after its last " FROM " (a view's name for the views
// read), or the statement's start.
std::string_view TableOf(std::string_view sql) {
  const size_t from = sql.rfind(" FROM ");
  if (from == std::string_view::npos) return sql.substr(0, 60);
  std::string_view rest = sql.substr(from + 6);
  return rest.substr(0, rest.find(' '));
}

// "reading TABLE after N rows: SQLite's message (SQLite error RC)": where a scan broke off (a
// corrupt page, a file cut short), so the rows before it are known to be read.
Status ReadError(int rc, sqlite3* db, std::string_view table, int64_t rows) {
  return DataLoss(fmt::format("reading {} after {} row{}: {} (SQLite error {})", table, rows,
                              rows == 1 ? "" : "s", sqlite3_errmsg(db), rc));
}

}  // namespace

bool SqliteStmt::Step(Status* status) {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) {
    ++rows_;
    return true;
  }
  if (rc != SQLITE_DONE) {
    const char* sql = sqlite3_sql(s_);
    *status = ReadError(rc, sqlite3_db_handle(s_), TableOf(sql != nullptr ? sql : ""), rows_);
  }
  return false;
}

std::string_view SqliteStmt::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(s_, col);
  if (t == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(t),
                          static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

std::optional<std::string_view> SqliteStmt::OptText(int col) const {
  if (sqlite3_column_type(s_, col) == SQLITE_NULL) return std::nullopt;
  return Text(col);
}

StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path) {
  sqlite3* db = nullptr;
  // NOMUTEX: without it every sqlite3_column_* call takes the connection's mutex (~8% of a
  // table scan); a SqliteDb is never shared between threads.
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "cannot open";
    sqlite3_close(db);
    return InvalidArgument(fmt::format("{}: {}", path, msg));
  }
  auto out = std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
  // Touch the schema now so a non-database file fails here, with its path.
  // SQLite's own words: "file is not a database", "database is locked", "database disk image
  // is malformed".
  if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return InvalidArgument(fmt::format("{}: not a readable SQLite database: {}", path, sqlite3_errmsg(db)));
  }
  // Pages are read with pread into a small cache (2 MiB), not through a memory map: a trace's
  // tables are scanned once, where a map is no faster (rocpd) or a little (Nsight), and every
  // page it touches stays in the process's resident size until the connection closes (a 609 MB
  // rocpd file read to 612 MiB peak RSS with the map, 156 MiB without).
  sqlite3_exec(db, "PRAGMA mmap_size=0; PRAGMA cache_size=-2048", nullptr, nullptr, nullptr);
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

std::vector<std::string> SqliteDb::Columns(std::string_view name) {
  std::vector<std::string> out;
  auto st = Prepare(fmt::format("PRAGMA table_info(\"{}\")", name));
  if (!st.ok()) return out;
  Status s;
  while (st->Step(&s)) out.emplace_back(st->Text(1));
  return out;
}

std::optional<int64_t> SqliteDb::QueryInt(std::string_view sql) {
  auto st = Prepare(sql);
  if (!st.ok()) return std::nullopt;
  Status s;
  if (!st->Step(&s)) return std::nullopt;
  return st->OptInt(0);
}

std::optional<std::string> SqliteDb::QueryText(std::string_view sql) {
  auto st = Prepare(sql);
  if (!st.ok()) return std::nullopt;
  Status s;
  if (!st->Step(&s) || st->IsNull(0)) return std::nullopt;
  return std::string(st->Text(0));
}

namespace {

constexpr char kRowSinkFunction[] = "latdoc_row_sink";

}  // namespace

Status SqliteDb::ForEachRow(std::string_view columns, std::string_view from,
                            std::optional<std::string_view> param1, RowSink& sink) {
  // Registered for this one statement (SQLITE_DIRECTONLY: not callable from the file's views or
  // triggers), and removed once the statement is finalized.
  auto step = [](sqlite3_context* ctx, int, sqlite3_value** values) {
    RowSink* s = static_cast<RowSink*>(sqlite3_user_data(ctx));
    ++s->rows;
    s->call(s->fn, values);
  };
  auto finish = [](sqlite3_context* ctx) { sqlite3_result_null(ctx); };
  if (sqlite3_create_function_v2(db_, kRowSinkFunction, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                 &sink, nullptr, step, finish, nullptr) != SQLITE_OK) {
    return Internal(fmt::format("{}: cannot register a row function: {}", path_,
                                sqlite3_errmsg(db_)));
  }
  Status st;
  {
    StatusOr<SqliteStmt> q =
        Prepare(fmt::format("SELECT {}({}) FROM {}", kRowSinkFunction, columns, from));
    if (!q.ok()) {
      st = q.status();
    } else if (param1 && !q->BindText(1, *param1)) {
      st = Internal(fmt::format("{}: cannot bind ?1 (in \"{}\")", path_, from.substr(0, 80)));
    } else {
      const int rc = sqlite3_step(q->get());
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        // The table, or "<table> LEFT JOIN <table>", without the clauses after it.
        const size_t on = from.find(" ON ");
        st = ReadError(rc, db_, from.substr(0, on != std::string_view::npos ? on : from.find(' ')),
                       sink.rows);
      }
    }
  }
  sqlite3_create_function_v2(db_, kRowSinkFunction, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, nullptr,
                             nullptr, nullptr, nullptr, nullptr);
  return st;
}

bool IdIndex::Build(const std::vector<int64_t>& ids) {
  slots_.clear();
  map_.clear();
  dense_ = true;
  min_ = 0;
  if (ids.empty()) return true;
  bool unique = true;
  int64_t lo = ids[0], hi = ids[0];
  for (int64_t id : ids) {
    lo = std::min(lo, id);
    hi = std::max(hi, id);
  }
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  dense_ = span < 2 * static_cast<uint64_t>(ids.size()) + 1024;
  if (dense_) {
    min_ = lo;
    slots_.assign(span + 1, kNone);
    for (size_t i = 0; i < ids.size(); ++i) {
      int32_t& slot = slots_[static_cast<uint64_t>(ids[i]) - static_cast<uint64_t>(lo)];
      if (slot == kNone) {
        slot = static_cast<int32_t>(i);
      } else {
        unique = false;
      }
    }
  } else {
    map_.reserve(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      unique &= map_.emplace(ids[i], static_cast<int32_t>(i)).second;
    }
  }
  return unique;
}

bool IsSqliteHeader(std::string_view head) {
  return head.substr(0, 16) == std::string_view("SQLite format 3\0", 16);
}

}  // namespace latdoc::trace
