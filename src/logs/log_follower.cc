#include "logs/log_follower.h"

#include <sys/stat.h>

#include <cerrno>

namespace latdoc::logs {

StatusOr<std::unique_ptr<LogFollower>> LogFollower::Open(const std::string& path,
                                                         LogAnalyzer* analyzer) {
  std::unique_ptr<LogFollower> f(new LogFollower(path, analyzer));
  RETURN_IF_ERROR(f->Reopen());
  return f;
}

Status LogFollower::Reopen() {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return ErrnoStatus(errno, path_);
  ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, OpenInput(path_));
  if (in->compression() != Compression::kNone) {
    return InvalidArgument(path_ + ": --follow needs an uncompressed file");
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  in_ = std::move(in);
  reader_ = std::make_unique<LineReader>(in_.get());
  input_ = an_->BeginInput(path_, Compression::kNone);
  return Status::Ok();
}

StatusOr<uint64_t> LogFollower::Poll() {
  an_->SelectInput(input_);   // other followers may have read since
  ASSIGN_OR_RETURN(uint64_t n, FeedLines(*reader_, *in_, *an_, /*at_end=*/false));
  an_->SetInputBytes(in_->raw_offset(), reader_->bytes_consumed());
  // Was the file truncated or replaced? A missing path (between the rename and the creation
  // of the new file) is waited out.
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0) return n;
  bool replaced = st.st_dev != dev_ || st.st_ino != ino_;
  bool truncated = !replaced && static_cast<uint64_t>(st.st_size) < in_->raw_offset();
  if (!replaced && !truncated) return n;
  if (replaced) {
    // Drain what the old file got before it was rotated away.
    ASSIGN_OR_RETURN(uint64_t rest, FeedLines(*reader_, *in_, *an_, /*at_end=*/true));
    n += rest;
  } else {
    Line line;
    if (reader_->TakePartial(&line)) {
      an_->AddLine(line);
      ++n;
    }
  }
  an_->SetInputBytes(in_->raw_offset(), reader_->bytes_consumed());
  ++reopens_;
  RETURN_IF_ERROR(Reopen());
  ASSIGN_OR_RETURN(uint64_t m, FeedLines(*reader_, *in_, *an_, /*at_end=*/false));
  an_->SetInputBytes(in_->raw_offset(), reader_->bytes_consumed());
  return n + m;
}

void LogFollower::Finish() {
  if (!reader_) return;
  an_->SelectInput(input_);
  // Read what arrived since the last poll, then the partial last line. A read error here
  // has nothing left to stop, so it only ends the input early.
  (void)FeedLines(*reader_, *in_, *an_, /*at_end=*/true);
  an_->SetInputBytes(in_->raw_offset(), reader_->bytes_consumed());
}

}  // namespace latdoc::logs
