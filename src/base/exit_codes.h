// The process exit codes of every latdoc command (DESIGN.md, "Commands").
#pragma once

#include "base/status.h"

namespace latdoc {

enum ExitCode : int {
  kExitOk = 0,          // ran, and nothing failed
  kExitFindings = 1,    // ran, and at least one `fail` finding or a missed SLO
  kExitBadInput = 2,    // bad usage or bad input
  kExitCannotRun = 3,   // target unreachable, permission denied
};

// The exit code for a command that stopped with `status`.
inline int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk: return kExitOk;
    case StatusCode::kUnavailable:
    case StatusCode::kPermissionDenied:
    case StatusCode::kDeadlineExceeded: return kExitCannotRun;
    default: return kExitBadInput;
  }
}

}  // namespace latdoc
