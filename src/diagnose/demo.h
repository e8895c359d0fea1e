// `latdoc demo`: the first thing a new user runs. Starts the built-in simulator in this
// process with a few pathologies switched on (an oversized max_num_seqs for its KV cache, a
// GIL-bound scheduler, synchronous request logging that stalls the engine), runs the whole
// diagnosis against it — load, logs, the bundled GPU trace when present, this host — and returns
// the result for the renderers.
#pragma once

#include <string>

#include "base/status.h"
#include "diagnose/diagnose.h"

namespace latdoc::diagnose {

struct DemoOptions {
  double time_scale = 0.25;          // the simulator runs 4x faster than model time
  std::string work_dir;              // where the simulator's log goes
  std::string trace_file;            // a GPU trace to include ("" = none)
  bool progress = true;
};

StatusOr<DiagnoseResult> RunDemo(const DemoOptions& options);

}  // namespace latdoc::diagnose
