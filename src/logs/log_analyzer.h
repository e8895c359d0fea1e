// LogAnalyzer: turns the lines of one or more server logs into LogFacts, in one pass and with
// bounded memory (fixed-size tables; series are merged down as they grow).
//
// Several inputs are read as one stream in the order given (rotated logs: vllm.log.1 vllm.log).
// Lines without a time of their own (uvicorn access lines, tracebacks) count at the time of
// the last timestamped line before them. Bad lines are counted and skipped; only an input
// that is binary from the start is an error (AnalyzeInputs). Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status.h"
#include "logs/line_reader.h"
#include "logs/log_facts.h"

namespace latdoc::logs {

class LogAnalyzer {
 public:
  LogAnalyzer();
  ~LogAnalyzer();
  LogAnalyzer(const LogAnalyzer&) = delete;
  LogAnalyzer& operator=(const LogAnalyzer&) = delete;

  // Starts the next input, which becomes the current one, and returns its index; its lines
  // follow those of the previous input.
  size_t BeginInput(const std::string& path, Compression compression);
  // Makes input `index` (from BeginInput) the current one again: lines, bytes and the binary
  // check count toward it (--follow reads several files in turns).
  void SelectInput(size_t index);
  void AddLine(const Line& line);
  // Records the input's size once it is read to its end (or for now, when following).
  void SetInputBytes(uint64_t raw_bytes, uint64_t bytes);

  // Lines of the current input that were recognised as some server format.
  uint64_t recognised_lines_in_input() const;
  uint64_t binary_bytes_in_input() const;
  uint64_t bytes_in_input() const;

  // The facts so far. May be called repeatedly (--follow prints snapshots).
  LogFacts Snapshot() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct AnalyzeOptions {
  size_t max_line_bytes = LineReader::kDefaultMaxLineBytes;
};

// Reads every input to its end (plain, gzip, zstd; "-" is stdin) and returns the facts.
// Errors: an unreadable input, corrupt compression, or an input whose first lines are binary
// ("PATH: byte N: binary data, not a text log") are kInvalidArgument/kDataLoss naming the path.
StatusOr<LogFacts> AnalyzeInputs(const std::vector<std::string>& paths,
                                 const AnalyzeOptions& opts = {});

// Feeds all complete lines of `in` to `analyzer` (and, when `at_end`, the unterminated last
// line). Returns the number of lines fed. Checks the first lines for binary data.
StatusOr<uint64_t> FeedLines(LineReader& reader, InputStream& in, LogAnalyzer& analyzer,
                             bool at_end);

}  // namespace latdoc::logs
