#!/usr/bin/env bash
# ThreadSanitizer run of the multi-threaded parts: the HTTP server and client, the simulator
# (engine and server), the load runner, and the trace pipeline (read-ahead inflate, the Kineto
# split parse, the rocpd importer's reader threads, Finalize's and the analyses' second
# thread). Usage: scripts/tsan.sh
#   Builds those test programs only (the `tsan` preset; LATDOC_TSAN_BUILD_DIR, default
#   build/tsan) and runs their tests with ctest -R (the suites below). Exit 1 on any race
#   report or a test failing three times.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${LATDOC_TSAN_BUILD_DIR:-build/tsan}"
jobs="${LATDOC_JOBS:-$(nproc)}"
targets=(http_server_test http_client_test sim_engine_test sim_server_test runner_test base_test trace_test)
# SimPathologyTest is left out: it asserts wall-time effects (ms per step) that TSan's 5-15x
# slowdown distorts; its code paths are the ones SimServerTest and SimFaultTest run.
suites='^(ServerTest|HttpClientTest|ParseUrlTest|EngineTest|SimServerTest|SimFaultTest|SimLogTest|CountPromptTokensTest|RunnerTest'
suites+='|ReadAheadTest|InputStreamTest|TraceTest|KinetoImporterTest|KinetoSplitTest|NsysImporterTest|RocpdImporterTest'
suites+='|Fixtures/RocpdBothPathsTest|Fixtures/ReportGoldenTest|TraceLens/GpuTimelineFixtureTest)\.'

scripts/install-deps.sh >/dev/null
# TSan's runtime maps fixed shadow ranges that the kernel's full mmap randomisation
# (vm.mmap_rnd_bits = 32 on recent kernels) can collide with; run without ASLR.
norand=(setarch "$(uname -m)" -R)
"${norand[@]}" true 2>/dev/null || norand=()
cmake --preset tsan -B "$build" >/dev/null
"${norand[@]}" cmake --build "$build" -j "$jobs" --target "${targets[@]}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
# A test that fails on its timing alone (the machine loaded, TSan 5-15x slower) gets up to
# three runs; a race report in any run fails the step (TSan prints it; every run's output is
# kept in LastTest.log).
rc=0
"${norand[@]}" ctest --test-dir "$build" -R "$suites" --output-on-failure -j "$jobs" --timeout 600 \
  --repeat until-pass:3 || rc=$?
if grep -q "WARNING: ThreadSanitizer" "$build/Testing/Temporary/LastTest.log"; then
  grep -A12 "WARNING: ThreadSanitizer" "$build/Testing/Temporary/LastTest.log" | head -60
  echo "tsan: data race(s) reported (above; full output in $build/Testing/Temporary/LastTest.log)"
  exit 1
fi
exit "$rc"
