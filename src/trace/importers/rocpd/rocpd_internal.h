// What the files of the rocpd importer share, private to importers/rocpd: the small tables the
// fast path holds in memory (RocpdTables), the staged fact tables (StagedFacts) and the three
// steps of the fast path that RocpdImporter::Import (rocpd_importer.cc, with the plan) runs:
//   rocpd_tables.cc  LoadTables: the small tables
//   rocpd_stage.cc   StageFacts: the fact tables on two threads; JoinStaged: the events
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "trace/importers/common/sqlite_db.h"
#include "trace/model/spill_table.h"
#include "trace/model/trace.h"

namespace latdoc::trace::rocpd_internal {

// Counts a row whose end precedes its start as an issue; true when it does (the row is dropped).
inline bool Negative(SourceFile& src, std::string_view view, int64_t id, int64_t start,
                     int64_t end) {
  if (end >= start) return false;
  src.issues.Add("negative duration", fmt::format("{} row id={}", view, id),
                 fmt::format("end {} < start {}", end, start));
  return true;
}

constexpr NameId kUnset = UINT32_MAX;

// The fast path reads a NULL join key as kNullKey. LoadTables makes sure no small table's id
// equals kNullKey, so the sentinel joins nothing, as NULL does in SQL.
constexpr int64_t kNullKey = INT64_MIN;

// rocpd's small tables, in memory for the joins. Rows of another guid are left out (a join also
// matches guids); positions come from each table's IdIndex. rocpd_event is joined by SQLite.
struct RocpdTables {
  struct String {
    std::string value;
    bool marker = false;   // as a category: MARKER_*
    NameId name = kUnset;  // interned on first use, in row order as the data path
    bool api_classified = false;
    ApiKind api_kind = ApiKind::kOther;
    bool copy_classified = false;
    CopyDirection direction = CopyDirection::kUnknown;
  };
  struct Agent {
    bool gpu = false;
    int64_t type_index = 0;  // NULL reads 0, as SqliteStmt::Int on the data view
  };
  struct Symbol {
    std::string display_name;
    NameId name = kUnset;
    GpuOpKind kind = GpuOpKind::kKernel;
  };

  std::string guid;
  bool has_memory_copies = false;
  std::vector<String> strings;
  IdIndex string_index;
  std::vector<Agent> agents;
  IdIndex agent_index;
  std::vector<Symbol> symbols;
  IdIndex symbol_index;
  std::vector<int64_t> process_pids;
  IdIndex process_index;
  std::vector<int64_t> thread_tids;
  IdIndex thread_index;
  std::vector<bool> queue_has_process;  // the kernels view's INNER JOIN process ON P.id = Q.pid
  IdIndex queue_index;

  NameId Name(String& s, Trace& trace) {
    if (s.name == kUnset) s.name = trace.names.Intern(s.value);
    return s.name;
  }
};

// A fact row after every join, staged as the event it becomes (GpuOp or ApiCall) for JoinStaged
// to complete: `name` holds the row's position in the small table (symbols for kernels, strings
// otherwise) and `correlation` its event's stack_id. Interning names and counting issues wait
// for JoinStaged, which runs them in row order as the data path would: the three tables are
// staged on two threads. A row a join failed for has a StagedFailure.
struct StagedFailure {
  size_t row = 0;             // position in Staged::rows
  std::string what;           // the first join (in the data view's order) that found nothing
  bool missing_time = false;  // kernels: start or end is NULL (checked after every join)
};
template <typename Event>
struct Staged {
  struct Row {
    Event event;
    int64_t id = 0;  // the fact row's id, for the issues' "row id="
  };
  explicit Staged(size_t block_rows = SpillTable<Row>::kDefaultBlockRows) : rows(block_rows) {}
  SpillTable<Row> rows;                 // one block in memory, the rest in a temporary file
  std::vector<StagedFailure> failures;  // in row order
  // Set when a fact row came out twice in a row: its event_id found two rocpd_event rows.
  bool repeated = false;
  // Adds the row; `failure`, when set, is the row's (its `row` is filled in here).
  void Add(int64_t id, const Event& e, std::optional<StagedFailure> failure) {
    repeated |= !rows.empty() && id == last_id_;
    last_id_ = id;
    if (failure) {
      failure->row = rows.size();
      failures.push_back(std::move(*failure));
    }
    rows.push_back(Row{e, id});
  }

 private:
  int64_t last_id_ = 0;
};
struct StagedFacts {
  // Staged tables of `block_rows` rows a block.
  explicit StagedFacts(size_t block_rows)
      : kernels(block_rows), copies(block_rows), regions(block_rows) {}
  StagedFacts() = default;
  Staged<GpuOp> kernels;
  Staged<GpuOp> copies;
  Staged<ApiCall> regions;
};

// Loads the small tables the fast path joins against. Returns nullptr, with the reason in *why,
// when the file does not allow the fast path: not one guid, a view or column missing, a small
// table holding rows of another guid or a repeated id. (rocpd_event repeating an id shows only
// later, in StageFacts.)
StatusOr<std::unique_ptr<RocpdTables>> LoadTables(SqliteDb& db, std::string* why);

// Stages the fact tables on two threads, each with its own connection: kernel dispatches and
// memory copies (this one), regions and then the guid checks of the other two fact tables (the
// second). The shares take about equal time, each spent in SQLite's record decoding and B-tree
// searches rather than waiting on the disk (pages come from the OS's page cache, read with
// pread). A fact table that turns out to hold rows of another guid is staged again, with its
// guid column. Sets *repeated when rocpd_event repeats an id a fact row joins.
Status StageFacts(SqliteDb& db, const RocpdTables& t, StagedFacts& s, bool* repeated);

// Emits the staged rows' events: the same events, in the same order, with the same names
// interned in the same order, as ReadDataViews. Rows the data views would drop are counted as
// "unresolved reference". One pass over each staged table.
void JoinStaged(RocpdTables& t, const StagedFacts& s, uint16_t source, Trace& trace);

}  // namespace latdoc::trace::rocpd_internal
