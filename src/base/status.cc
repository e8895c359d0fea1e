#include "base/status.h"

#include <cerrno>
#include <cstring>

namespace latdoc {

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  // A message that already starts with the context (a path named twice on the way up) keeps
  // one.
  if (message_.size() > context.size() + 1 && message_.compare(0, context.size(), context) == 0 &&
      message_.compare(context.size(), 2, ": ") == 0) {
    return *this;
  }
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Status(code_, std::move(msg));
}

std::string Status::ToString() const { return ok() ? "OK" : message_; }

Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
Status Unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
Status PermissionDenied(std::string m) { return Status(StatusCode::kPermissionDenied, std::move(m)); }
Status DeadlineExceeded(std::string m) { return Status(StatusCode::kDeadlineExceeded, std::move(m)); }
Status DataLoss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
Status Unimplemented(std::string m) { return Status(StatusCode::kUnimplemented, std::move(m)); }
Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

Status ErrnoStatus(int err, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case ENOENT: case ENOTDIR: code = StatusCode::kNotFound; break;
    case EACCES: case EPERM: case EROFS: code = StatusCode::kPermissionDenied; break;
    case ECONNREFUSED: case EHOSTUNREACH: case ENETUNREACH: case ECONNRESET:
      code = StatusCode::kUnavailable; break;
    case ETIMEDOUT: code = StatusCode::kDeadlineExceeded; break;
    case EISDIR: case EINVAL: code = StatusCode::kInvalidArgument; break;
    default: break;
  }
  return Status(code, std::move(msg));
}

}  // namespace latdoc
