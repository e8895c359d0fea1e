// The sweep's analysis steps that the measuring loop (sweep.cc) also runs on a step of its own.
#pragma once

#include "loadgen/sweep.h"

namespace latdoc::loadgen {

// What the server's metrics say bends at one step (s.bend, s.bend_evidence): KV pressure,
// queueing, compute, or none (no metrics). kFrontEnd needs the lowest step (AnalyzeSweep).
void ClassifyStep(SweepStep& s, bool rate_mode);

}  // namespace latdoc::loadgen
