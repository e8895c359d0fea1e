// What runner.cc and runner_threads.cc share, private to src/loadgen: runner.cc's RunBench
// checks the options, finds the model and the thread count, then runs the load here.
#pragma once

#include <string>

#include "http/client.h"
#include "http/event_loop.h"
#include "loadgen/runner.h"

namespace latdoc::loadgen::runner_internal {

// Runs the load of `o` for `model` on `threads` event-loop threads (each its own client of
// `url`), coordinated from `loop` on the calling thread: warm-up, measured phase, /metrics
// scrapes, signals and the progress line. Returns the run with the threads' records merged
// (MergeThreadRuns); never fails: each record says how its request ended.
BenchRun RunLoadThreads(const BenchOptions& o, http::EventLoop& loop, const http::Url& url,
                        int threads, std::string model);

}  // namespace latdoc::loadgen::runner_internal
