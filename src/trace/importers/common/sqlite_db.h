// A small read-only wrapper over the sqlite3 C API for the SQLite trace formats (rocpd,
// Nsight Systems export). Errors name the file and the statement. Not thread-safe: a database
// is opened with SQLITE_OPEN_NOMUTEX (one thread per connection), so reading a column takes no
// lock; the file is memory-mapped and read with a large page cache. Several SqliteDb may read
// one file from several threads, one each (where sqlite3_threadsafe() is nonzero).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace latdoc::trace {

class SqliteStmt {
 public:
  SqliteStmt(sqlite3_stmt* s) : s_(s) {}
  SqliteStmt(SqliteStmt&& o) noexcept : s_(o.s_), rows_(o.rows_) { o.s_ = nullptr; }
  SqliteStmt(const SqliteStmt&) = delete;
  ~SqliteStmt() { sqlite3_finalize(s_); }
  // Binds text to parameter `index` (1-based; copied). False on error.
  bool BindText(int index, std::string_view text) {
    return sqlite3_bind_text(s_, index, text.data(), static_cast<int>(text.size()),
                             SQLITE_TRANSIENT) == SQLITE_OK;
  }
  // True with a row, false at the end; an error as a Status through `status`, naming the table
  // read and the rows read before it.
  bool Step(Status* status);
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  // Reads the column once (type and value from one sqlite3_value).
  std::optional<int64_t> OptInt(int col) const {
    sqlite3_value* v = sqlite3_column_value(s_, col);
    return sqlite3_value_type(v) == SQLITE_NULL ? std::nullopt
                                                 : std::optional<int64_t>(sqlite3_value_int64(v));
  }
  // Valid until the next Step() or a further read of the same column.
  std::string_view Text(int col) const;
  // The text of a column, or nullopt for NULL; same lifetime as Text().
  std::optional<std::string_view> OptText(int col) const;
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_;
  int64_t rows_ = 0;  // rows stepped to
};

class SqliteDb {
 public:
  // Opens `path` read-only; a file that is not SQLite is an error naming the path.
  static StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path);
  ~SqliteDb();
  StatusOr<SqliteStmt> Prepare(std::string_view sql);
  // True if a table or view of that name exists.
  bool Has(std::string_view name);
  // The columns of a table or view, in order (empty if there is no such table).
  std::vector<std::string> Columns(std::string_view name);
  // The first column of the first row of `sql`, as text (nullopt: no row or NULL).
  std::optional<std::string> QueryText(std::string_view sql);
  // The first column of the first row of `sql`, as an integer (nullopt: no row, NULL or error).
  std::optional<int64_t> QueryInt(std::string_view sql);
  // Calls `row(values)` for each row of `SELECT <columns> FROM <from>` (`from`: a table or view,
  // or "<table> LEFT JOIN <table> ON ...", and any WHERE clause; an error names what precedes
  // " ON ", else the first word), in SQLite's order, values[i] being column i, read with
  // sqlite3_value_*() and valid during the call only. `param1`, if set, is bound to ?1. The
  // columns are the arguments of an aggregate function that calls `row`, so SQLite runs the whole
  // scan inside one sqlite3_step(): no result row and no sqlite3_column_*() call per row, which
  // saves up to a fifth of a scan of many narrow columns. `row` must not use this connection.
  template <typename RowFn>
  Status ForEachRow(std::string_view columns, std::string_view from,
                    std::optional<std::string_view> param1, RowFn&& row) {
    using Fn = std::remove_reference_t<RowFn>;
    RowSink sink{[](void* fn, sqlite3_value** values) { (*static_cast<Fn*>(fn))(values); },
                 const_cast<void*>(static_cast<const void*>(std::addressof(row)))};
    return ForEachRow(columns, from, param1, sink);
  }
  const std::string& path() const { return path_; }

 private:
  struct RowSink {
    void (*call)(void* fn, sqlite3_value** values);
    void* fn;
    int64_t rows = 0;  // rows passed to `call`
  };
  Status ForEachRow(std::string_view columns, std::string_view from,
                    std::optional<std::string_view> param1, RowSink& sink);

  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// Maps the integer ids of a table's rows (StringIds.id, rocpd_event.id, ...) to their positions
// 0..n-1 in the order read, for joins done in C++: a flat array when the ids are dense
// (max - min < 2n + 1024, as AUTOINCREMENT keys are), else a hash map.
class IdIndex {
 public:
  static constexpr int32_t kNone = -1;
  // `ids[i]` is the id of position i; a repeated id keeps its first position. Returns false
  // when an id repeats. REQUIRES: ids.size() < 2^31.
  bool Build(const std::vector<int64_t>& ids);
  // The position of `id`, or kNone.
  int32_t Find(int64_t id) const {
    if (dense_) {
      const uint64_t k = static_cast<uint64_t>(id) - static_cast<uint64_t>(min_);
      return k < slots_.size() ? slots_[k] : kNone;
    }
    auto it = map_.find(id);
    return it == map_.end() ? kNone : it->second;
  }
  int32_t Find(std::optional<int64_t> id) const { return id ? Find(*id) : kNone; }

 private:
  bool dense_ = true;
  int64_t min_ = 0;
  std::vector<int32_t> slots_;
  std::unordered_map<int64_t, int32_t> map_;
};

// Runs `fn` on a thread of its own (to read a table through a connection of its own), or, where none can be had, on the caller's at Join().
// A library built single-threaded (SQLITE_THREADSAFE=0) may not be used from two threads at all,
// even through two connections, so then `fn` always waits for Join().
class SqliteWorker {
 public:
  explicit SqliteWorker(std::function<void()> fn) : fn_(std::move(fn)) {
    if (sqlite3_threadsafe() == 0) return;
    try {
      thread_ = std::thread(fn_);
      fn_ = nullptr;
    } catch (const std::system_error&) {
      // No thread to be had: Join() runs fn_.
    }
  }
  SqliteWorker(const SqliteWorker&) = delete;
  ~SqliteWorker() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
    if (fn_) std::exchange(fn_, nullptr)();
  }

 private:
  std::function<void()> fn_;
  std::thread thread_;
};

// True when `head` starts with the SQLite file magic.
bool IsSqliteHeader(std::string_view head);

}  // namespace latdoc::trace
