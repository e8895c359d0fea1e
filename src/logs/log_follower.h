// LogFollower: tails a growing plain log file (like `tail -F`) into a LogAnalyzer.
//
// Poll() reads whatever was appended since the last call; a partial last line waits for its
// '\n'. When the file shrinks (truncated) or the path names a new file (rotated), the follower
// reopens it and reads the new file from its beginning as the next input. Compressed files
// cannot be followed. Not thread-safe; the analyzer must outlive the follower.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/file_util.h"
#include "base/status.h"
#include "logs/line_reader.h"
#include "logs/log_analyzer.h"

namespace latdoc::logs {

class LogFollower {
 public:
  // Opens `path` and starts an input in `analyzer`. Errors name the path; a gzip or zstd file
  // is kInvalidArgument ("PATH: --follow needs an uncompressed file").
  static StatusOr<std::unique_ptr<LogFollower>> Open(const std::string& path,
                                                     LogAnalyzer* analyzer);

  // Feeds the complete lines appended since the last call; returns how many.
  StatusOr<uint64_t> Poll();
  // Feeds a held-back partial last line (call once when following stops).
  void Finish();

  uint64_t reopens() const { return reopens_; }

 private:
  LogFollower(std::string path, LogAnalyzer* analyzer) : path_(std::move(path)), an_(analyzer) {}
  Status Reopen();

  std::string path_;
  LogAnalyzer* an_;
  size_t input_ = 0;   // this file's input in the analyzer
  std::unique_ptr<InputStream> in_;
  std::unique_ptr<LineReader> reader_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t reopens_ = 0;
};

}  // namespace latdoc::logs
