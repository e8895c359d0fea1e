// The process exit codes of every latdoc command (DESIGN.md, "Commands").
#pragma once

#include "base/status.h"

namespace latdoc {

enum ExitCode : int {
  kExitOk = 0,          // ran, and nothing failed
  kExitFindings = 1,    // ran, and at least one `fail` finding or a missed SLO
  kExitBadInput = 2,    // bad usage or bad input
  kExitCannotRun = 3,   // target unreachable, permission denied
  kExitInterrupted = 128,  // + the signal: 130 after SIGINT, 143 after SIGTERM (as shells say)
};

// The exit code of a run stopped by signal `sig` (SIGINT, SIGTERM) after writing what it had.
inline int ExitCodeForSignal(int sig) { return kExitInterrupted + sig; }

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
