// Status and StatusOr<T>: how latdoc reports recoverable errors (leveldb style).
//
// A Status is either OK or carries a code and a message that says what went wrong and where
// ("trace.json: byte 1834221: expected ',' or ']'"). Callers add context as an error climbs
// with WithContext(). g++ 12 has no std::expected, so StatusOr<T> is a small variant.
// Neither type is thread-safe to mutate; both are cheap to move.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace latdoc {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad usage or bad input: exit code 2
  kNotFound,         // a file or a resource is not there
  kUnavailable,      // a target that cannot be reached: exit code 3
  kPermissionDenied,
  kDeadlineExceeded,
  kDataLoss,         // truncated or corrupt input
  kUnimplemented,    // a format or feature this build does not handle
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns this status with "context: " put in front of the message, unless it begins so
  // already. OK stays OK.
  Status WithContext(std::string_view context) const;
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status Unavailable(std::string message);
Status PermissionDenied(std::string message);
Status DeadlineExceeded(std::string message);
Status DataLoss(std::string message);
Status Unimplemented(std::string message);
Status Internal(std::string message);

// Maps an errno value to a Status with "what: strerror" as its message.
Status ErrnoStatus(int err, std::string_view what);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  // REQUIRES: ok().
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace latdoc

#define LATDOC_CONCAT_INNER(a, b) a##b
#define LATDOC_CONCAT(a, b) LATDOC_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::latdoc::Status _st = (expr);            \
    if (!_st.ok()) return _st;                \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(LATDOC_CONCAT(_status_or_, __LINE__), lhs, expr)
