// An append-only table of plain rows that holds one block in memory and writes the rest to an
// unnamed temporary file, and the external sort over it.
//
// A trace's event tables grow with the trace (a 1.1 GB PyTorch trace has 2.5 M events), and the
// analyses read them in passes, in time order. So each table keeps its last block (8 MiB) in
// memory and, when that fills, appends it to a file in $TMPDIR, else /var/tmp (on disk where
// /tmp is often tmpfs), else /tmp; nothing is left behind, even after a crash (O_TMPFILE).
// Passes read the file back a chunk at a time. Sorting is a merge sort: sorted runs of one block
// each, then merged, at most kMergeFanIn at a time, into a new table. Memory stays at a few
// blocks however long the trace.
//
// Where no file can be made or written (no temporary directory, a full disk, a file size limit)
// the rows stay in memory: nothing is lost, only the bound. Not thread-safe to write; any number
// of threads may read a table no one writes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <queue>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace latdoc::trace {

// A spill file could not be read back (a disk error): the pass cannot go on.
class SpillReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace spill {

inline constexpr size_t kBlockBytes = size_t{8} << 20;
// Rows read per step of a pass over spilled rows.
inline constexpr size_t kReadBytes = size_t{1} << 20;

// The file and its I/O, shared by every row type (spill_table.cc).
class File {
 public:
  File() = default;
  ~File();
  File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Writes `n` bytes at `offset`, making the file first. False with `error` set when it cannot
  // (no file can be made, a write error, or a file size limit the write would pass: a write past
  // ulimit -f raises SIGXFSZ, which kills the process).
  bool Write(const void* p, size_t n, uint64_t offset, std::string& error);
  // Reads `n` bytes at `offset`. False with `error` set on a read error or a short file.
  bool Read(void* p, size_t n, uint64_t offset, std::string& error) const;
  void Close();

 private:
  int fd_ = -1;
};

}  // namespace spill

// Rows of T in the order appended; past one block, all but the last block are in the file.
template <typename T>
class SpillTable {
  static_assert(std::is_trivially_copyable_v<T>, "rows are written to a file as bytes");

 public:
  static constexpr size_t kDefaultBlockRows = std::max<size_t>(spill::kBlockBytes / sizeof(T), 1);

  explicit SpillTable(size_t block_rows = kDefaultBlockRows) : block_rows_(std::max<size_t>(block_rows, 1)) {}
  SpillTable(SpillTable&& other) noexcept { *this = std::move(other); }
  SpillTable& operator=(SpillTable&& other) noexcept {
    if (this != &other) {
      block_rows_ = other.block_rows_;
      mem_ = std::move(other.mem_);
      other.mem_.clear();
      spilled_ = std::exchange(other.spilled_, 0);
      file_ = std::move(other.file_);
      spill_error_ = std::move(other.spill_error_);
      other.spill_error_.clear();
    }
    return *this;
  }
  SpillTable(const SpillTable&) = delete;
  SpillTable& operator=(const SpillTable&) = delete;
  // These rows instead of the table's.
  SpillTable& operator=(std::initializer_list<T> rows) {
    clear();
    for (const T& row : rows) push_back(row);
    return *this;
  }

  void push_back(const T& row) {
    if (mem_.size() >= block_rows_ && spill_error_.empty()) Spill();
    if (mem_.capacity() == 0 && spill_error_.empty()) mem_.reserve(std::min<size_t>(block_rows_, 4096));
    mem_.push_back(row);
  }
  void Append(const T* rows, size_t n) {
    // Whole blocks go to the file straight from `rows` while the block in memory is empty.
    while (mem_.empty() && n >= block_rows_ && spill_error_.empty()) {
      if (!file_.Write(rows, block_rows_ * sizeof(T), uint64_t{spilled_} * sizeof(T), spill_error_)) break;
      spilled_ += block_rows_;
      rows += block_rows_;
      n -= block_rows_;
    }
    for (size_t i = 0; i < n; ++i) push_back(rows[i]);
  }
  void Append(const std::vector<T>& rows) { Append(rows.data(), rows.size()); }

  size_t size() const { return spilled_ + mem_.size(); }
  bool empty() const { return size() == 0; }
  size_t block_rows() const { return block_rows_; }
  // Rows in the file (the first ones); the rest are in memory.
  size_t spilled() const { return spilled_; }
  // Why the table stopped spilling and keeps everything in memory; empty while it has not.
  const std::string& spill_error() const { return spill_error_; }

  void clear() {
    mem_.clear();
    mem_.shrink_to_fit();
    spilled_ = 0;
    file_.Close();
    spill_error_.clear();
  }

  // The i-th row, by value (a spilled one is read back). REQUIRES: i < size(). For tests and
  // single lookups; a pass over the table is ForEach. Throws SpillReadError.
  T operator[](size_t i) const {
    if (i >= spilled_) return mem_[i - spilled_];
    T row;
    ReadOrThrow(i, 1, &row);
    return row;
  }
  T front() const { return (*this)[0]; }
  T back() const { return (*this)[size() - 1]; }
  // The row push_back added last, to finish it in place: it is in memory. REQUIRES: the last
  // row came from push_back.
  T& last() { return mem_.back(); }

  // Copies rows [first, first + n) to `out`. False, with `error` set, when the file cannot be
  // read. REQUIRES: first + n <= size().
  bool Read(size_t first, size_t n, T* out, std::string* error = nullptr) const {
    if (first < spilled_) {
      const size_t from_file = std::min(n, spilled_ - first);
      std::string why;
      if (!file_.Read(out, from_file * sizeof(T), uint64_t{first} * sizeof(T), why)) {
        if (error != nullptr) *error = "cannot read back a spilled table: " + why;
        return false;
      }
      out += from_file;
      first += from_file;
      n -= from_file;
    }
    if (n > 0) std::copy_n(mem_.begin() + static_cast<std::ptrdiff_t>(first - spilled_), n, out);
    return true;
  }

  // Calls fn(const T&) for every row, in order, reading spilled rows back a chunk at a time.
  // Returns false, having called fn for the rows before it, when the file can no longer be read;
  // `error` (when given) then says why.
  template <typename Fn>
  bool TryForEach(Fn&& fn, std::string* error = nullptr) const {
    if (spilled_ > 0) {
      const size_t chunk = std::max<size_t>(spill::kReadBytes / sizeof(T), 1);
      std::vector<T> buf(std::min(chunk, spilled_));
      for (size_t first = 0; first < spilled_; first += chunk) {
        const size_t n = std::min(chunk, spilled_ - first);
        if (!Read(first, n, buf.data(), error)) return false;
        for (size_t i = 0; i < n; ++i) fn(buf[i]);
      }
    }
    for (const T& row : mem_) fn(row);
    return true;
  }
  // TryForEach that throws SpillReadError when the file cannot be read.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    std::string error;
    if (!TryForEach(std::forward<Fn>(fn), &error)) throw SpillReadError(error);
  }

  // Rewrites rows [first, last) in place: fn(T&) for each, in order. Throws SpillReadError.
  template <typename Fn>
  void Modify(size_t first, size_t last, Fn&& fn) {
    last = std::min(last, size());
    const size_t chunk = std::max<size_t>(spill::kReadBytes / sizeof(T), 1);
    std::vector<T> buf;
    while (first < last && first < spilled_) {
      const size_t n = std::min({chunk, last - first, spilled_ - first});
      buf.resize(n);
      ReadOrThrow(first, n, buf.data());
      for (T& row : buf) fn(row);
      std::string why;
      if (!file_.Write(buf.data(), n * sizeof(T), uint64_t{first} * sizeof(T), why)) {
        throw SpillReadError("cannot rewrite a spilled table: " + why);
      }
      first += n;
    }
    for (; first < last; ++first) fn(mem_[first - spilled_]);
  }

  // Every row, in one vector (for a table known to be small). Throws SpillReadError.
  std::vector<T> ToVector() const {
    std::vector<T> all(size());
    ReadOrThrow(0, size(), all.data());
    return all;
  }
  // Takes every row into one vector (for a table known to be small), leaving this table empty.
  std::vector<T> TakeAll() {
    std::vector<T> all;
    if (spilled_ == 0) {
      all = std::move(mem_);
    } else {
      all.resize(size());
      ReadOrThrow(0, size(), all.data());
    }
    clear();
    return all;
  }
  // A table of `rows`, all in memory (they are there already). Appending to it spills as usual.
  static SpillTable InMemory(std::vector<T> rows, size_t block_rows = kDefaultBlockRows) {
    SpillTable t(block_rows);
    t.mem_ = std::move(rows);
    return t;
  }
  // The rows in memory when nothing is spilled: for sorting them in place.
  std::vector<T>* unspilled() { return spilled_ == 0 ? &mem_ : nullptr; }

 private:
  void ReadOrThrow(size_t first, size_t n, T* out) const {
    std::string error;
    if (!Read(first, n, out, &error)) throw SpillReadError(error);
  }
  // Appends the block in memory to the file. A failed write leaves `spilled_` where it was
  // (what lies past it in the file is never read) and the rows in memory, for good.
  void Spill() {
    if (!file_.Write(mem_.data(), mem_.size() * sizeof(T), uint64_t{spilled_} * sizeof(T), spill_error_)) return;
    spilled_ += mem_.size();
    mem_.clear();  // keeps its capacity: the next block fills the same memory
  }

  size_t block_rows_ = kDefaultBlockRows;
  std::vector<T> mem_;   // rows [spilled_, size())
  size_t spilled_ = 0;   // rows [0, spilled_) are in the file, at sizeof(T) each
  spill::File file_;
  std::string spill_error_;
};

// Sorts `in` stably by `less` into a new table (`in` is left empty). A table that is all in
// memory is sorted there, using the ascending runs it already has; a spilled one is sorted a
// block at a time into runs, and the runs merged (earlier run first on ties, so stable), at most
// kMergeFanIn at a time, each run read through a small buffer. Throws SpillReadError.
inline constexpr size_t kMergeFanIn = 64;

// A stable sort that uses the order the rows already have: importers append rows per thread,
// stream or table, each mostly in time order, so a table is usually a few ascending runs.
// Merging adjacent runs pairwise costs n log(runs) and gives std::stable_sort's result. Inputs
// with many runs go to std::stable_sort itself.
template <typename T, typename Less>
void StableSortRuns(std::vector<T>& v, Less less) {
  if (v.size() < 2) return;
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < v.size(); ++i) {
    if (less(v[i], v[i - 1])) bounds.push_back(i);
  }
  bounds.push_back(v.size());
  if (bounds.size() == 2) return;   // one run: already sorted
  if (bounds.size() - 1 > v.size() / 16) {
    std::stable_sort(v.begin(), v.end(), less);
    return;
  }
  std::vector<T> buf(v.size());
  std::vector<T>* from = &v;
  std::vector<T>* to = &buf;
  std::vector<size_t> next;
  while (bounds.size() > 2) {
    next.assign(1, 0);
    size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::merge(from->begin() + bounds[k], from->begin() + bounds[k + 1],
                 from->begin() + bounds[k + 1], from->begin() + bounds[k + 2],
                 to->begin() + bounds[k], less);
      next.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) {   // an odd run out: carried over as it is
      std::copy(from->begin() + bounds[k], from->begin() + bounds[k + 1], to->begin() + bounds[k]);
      next.push_back(bounds[k + 1]);
    }
    std::swap(from, to);
    bounds.swap(next);
  }
  if (from != &v) v.swap(buf);
}

namespace spill {

// Reads one run [pos, end) of a table through a buffer.
template <typename T>
class RunReader {
 public:
  RunReader(const SpillTable<T>& t, size_t begin, size_t end, size_t buffer_rows)
      : t_(&t), pos_(begin), end_(end), cap_(std::max<size_t>(buffer_rows, 1)) {
    Fill();
  }
  bool done() const { return at_ == buf_.size(); }
  const T& head() const { return buf_[at_]; }
  void Next() {
    if (++at_ == buf_.size()) Fill();
  }

 private:
  void Fill() {
    const size_t n = std::min(cap_, end_ - pos_);
    buf_.resize(n);
    std::string error;
    if (n > 0 && !t_->Read(pos_, n, buf_.data(), &error)) throw SpillReadError(error);
    pos_ += n;
    at_ = 0;
  }
  const SpillTable<T>* t_;
  size_t pos_, end_, cap_;
  std::vector<T> buf_;
  size_t at_ = 0;
};

// Merges the runs [bounds[i], bounds[i+1]) of `in` for i in [lo, hi) into `out`.
template <typename T, typename Less>
void MergeRuns(const SpillTable<T>& in, const std::vector<size_t>& bounds, size_t lo, size_t hi, Less less,
               SpillTable<T>& out) {
  const size_t buffer_rows = std::max<size_t>((size_t{64} << 10) / sizeof(T), 64);
  std::vector<RunReader<T>> runs;
  runs.reserve(hi - lo);
  for (size_t i = lo; i < hi; ++i) runs.emplace_back(in, bounds[i], bounds[i + 1], buffer_rows);
  // The heap's top is the smallest head; ties go to the earlier run.
  auto later = [&](size_t a, size_t b) {
    if (less(runs[b].head(), runs[a].head())) return true;
    if (less(runs[a].head(), runs[b].head())) return false;
    return a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heap(later);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].done()) heap.push(i);
  }
  while (!heap.empty()) {
    const size_t i = heap.top();
    heap.pop();
    out.push_back(runs[i].head());
    runs[i].Next();
    if (!runs[i].done()) heap.push(i);
  }
}

}  // namespace spill

template <typename T, typename Less>
SpillTable<T> SortTable(SpillTable<T>&& in, Less less) {
  const size_t block = in.block_rows();
  if (std::vector<T>* rows = in.unspilled()) {
    StableSortRuns(*rows, less);
    return std::move(in);
  }
  // Sorted runs of one block each.
  SpillTable<T> runs(block);
  std::vector<size_t> bounds{0};
  {
    std::vector<T> buf;
    for (size_t first = 0; first < in.size(); first += block) {
      const size_t n = std::min(block, in.size() - first);
      buf.resize(n);
      std::string error;
      if (!in.Read(first, n, buf.data(), &error)) throw SpillReadError(error);
      std::stable_sort(buf.begin(), buf.end(), less);
      runs.Append(buf);
      bounds.push_back(runs.size());
    }
  }
  in.clear();
  // Merge passes until one pass can merge every run.
  while (bounds.size() - 1 > kMergeFanIn) {
    SpillTable<T> merged(block);
    std::vector<size_t> next{0};
    for (size_t lo = 0; lo + 1 < bounds.size(); lo += kMergeFanIn) {
      const size_t hi = std::min(lo + kMergeFanIn, bounds.size() - 1);
      spill::MergeRuns(runs, bounds, lo, hi, less, merged);
      next.push_back(merged.size());
    }
    runs = std::move(merged);
    bounds.swap(next);
  }
  SpillTable<T> out(block);
  spill::MergeRuns(runs, bounds, 0, bounds.size() - 1, less, out);
  return out;
}

}  // namespace latdoc::trace
